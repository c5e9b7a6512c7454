#include "run_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>


namespace ember::cli {

void write_loss_svg(const std::string& path, const std::vector<MetricPoint>& train, const std::vector<MetricPoint>& val) {
  const double width = 720, height = 420, left = 70, right = 20, top = 30, bottom = 55;
  double max_step = 1, lo = INFINITY, hi = -INFINITY;
  for (const auto* series : {&train, &val})
    for (const auto& p : *series) {
      max_step = std::max(max_step, static_cast<double>(p.step));
      lo = std::min(lo, p.value);
      hi = std::max(hi, p.value);
    }
  if (!(lo < hi)) {
    lo = std::isfinite(lo) ? lo - 0.5 : 0;
    hi = lo + 1;
  }
  auto x = [&](double step) { return left + (width - left - right) * step / max_step; };
  auto y = [&](double v) { return top + (height - top - bottom) * (1 - (v - lo) / (hi - lo)); };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<line x1='" << left << "' y1='" << height - bottom << "' x2='" << width - right << "' y2='" << height - bottom
      << "' stroke='black'/>\n<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << height - bottom
      << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4, s = max_step * i / 4;
    svg << "<text x='" << left - 8 << "' y='" << y(v) + 4 << "' text-anchor='end'>" << std::round(v * 100) / 100
        << "</text>\n<text x='" << x(s) << "' y='" << height - bottom + 18 << "' text-anchor='middle'>"
        << static_cast<int64_t>(s) << "</text>\n";
  }
  svg << "<text x='" << (left + width - right) / 2 << "' y='" << height - 12 << "' text-anchor='middle'>step</text>\n"
      << "<text transform='translate(18," << (top + height - bottom) / 2
      << ") rotate(-90)' text-anchor='middle'>loss (nats per token)</text>\n";
  auto polyline = [&](const std::vector<MetricPoint>& series, const char* color) {
    if (series.empty()) return;
    svg << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (const auto& p : series) svg << x(static_cast<double>(p.step)) << ',' << y(p.value) << ' ';
    svg << "'/>\n";
  };
  polyline(train, "#1f77b4");
  polyline(val, "#d62728");
  svg << "<text x='" << width - right - 150 << "' y='" << top << "' fill='#1f77b4'>train</text>\n"
      << "<text x='" << width - right - 80 << "' y='" << top << "' fill='#d62728'>validation</text>\n</svg>\n";
  std::ofstream(path) << svg.str();
}

io::Metadata run_metadata(const RunInfo& info) {
  nlohmann::json run = {{"tokenizer_kind", info.tokenizer_kind},
                        {"tokenizer_state", info.tokenizer_state},
                        {"train", nlohmann::json::parse(info.train_json.empty() ? "{}" : info.train_json)}};
  return {{"config", info.config.to_json()}, {"run", run.dump()}};
}

RunInfo read_run_info(const std::string& checkpoint_path) {
  return run_info_from(io::checkpoint_extra_metadata(checkpoint_path), checkpoint_path);
}

RunInfo run_info_from(const io::Metadata& metadata, const std::string& checkpoint) {
  EMBER_CHECK(metadata.count("config") && metadata.count("run"), "checkpoint", "'", checkpoint,
              "' is not an ember train checkpoint (no config/run metadata)");
  nlohmann::json run = nlohmann::json::parse(metadata.at("run"), nullptr, false);
  EMBER_CHECK(run.is_object(), "checkpoint", "'", checkpoint, "' has corrupt run metadata");
  RunInfo info;
  info.config = models::GPTConfig::from_json(metadata.at("config"));
  info.tokenizer_kind = run.value("tokenizer_kind", std::string("byte"));
  info.tokenizer_state = run.value("tokenizer_state", std::string());
  info.train_json = run.contains("train") ? run["train"].dump() : "{}";
  return info;
}

}  // namespace ember::cli
