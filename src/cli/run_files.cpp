#include "run_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ember/atomic_file.h"

namespace ember::cli {

namespace {

struct Series {
  const std::vector<MetricPoint>* points;
  const char* color;
  const char* label;
};

// One chart: axes with ticks, the series as polylines and their labels, in the band of the
// image that starts `offset` pixels down and is `height` tall.
void draw_panel(std::ostringstream& svg, double offset, double height, double max_step,
                const std::vector<Series>& series, const std::string& y_label) {
  const double width = 720, left = 70, right = 20, top = 30, bottom = 55;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series)
    for (const auto& p : *s.points) {
      lo = std::min(lo, p.value);
      hi = std::max(hi, p.value);
    }
  if (!(lo < hi)) {
    lo = std::isfinite(lo) ? lo - 0.5 : 0;
    hi = lo + 1;
  }
  auto x = [&](double step) { return left + (width - left - right) * step / max_step; };
  auto y = [&](double v) { return offset + top + (height - top - bottom) * (1 - (v - lo) / (hi - lo)); };
  const double axis_y = offset + height - bottom;
  svg << "<line x1='" << left << "' y1='" << axis_y << "' x2='" << width - right << "' y2='" << axis_y
      << "' stroke='black'/>\n<line x1='" << left << "' y1='" << offset + top << "' x2='" << left << "' y2='" << axis_y
      << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4, s = max_step * i / 4;
    const double shown = std::abs(hi) >= 1000 ? std::round(v) : std::round(v * 100) / 100;
    svg << "<text x='" << left - 8 << "' y='" << y(v) + 4 << "' text-anchor='end'>" << shown << "</text>\n<text x='"
        << x(s) << "' y='" << axis_y + 18 << "' text-anchor='middle'>" << static_cast<int64_t>(s) << "</text>\n";
  }
  svg << "<text x='" << (left + width - right) / 2 << "' y='" << offset + height - 12
      << "' text-anchor='middle'>step</text>\n<text transform='translate(18," << offset + (top + height - bottom) / 2
      << ") rotate(-90)' text-anchor='middle'>" << y_label << "</text>\n";
  double label_x = width - right - 70.0 * static_cast<double>(series.size());
  for (const Series& s : series) {
    if (!s.points->empty()) {
      svg << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5' points='";
      for (const auto& p : *s.points) svg << x(static_cast<double>(p.step)) << ',' << y(p.value) << ' ';
      svg << "'/>\n";
    }
    svg << "<text x='" << label_x << "' y='" << offset + top << "' fill='" << s.color << "'>" << s.label << "</text>\n";
    label_x += 70;
  }
}

}  // namespace

void write_loss_svg(const std::string& path, const std::vector<MetricPoint>& train, const std::vector<MetricPoint>& val,
                    const std::vector<MetricPoint>& tokens_per_s) {
  const double loss_height = 420, throughput_height = 260;
  double max_step = 1;
  for (const auto* series : {&train, &val, &tokens_per_s})
    for (const auto& p : *series) max_step = std::max(max_step, static_cast<double>(p.step));
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='720' height='" << loss_height + throughput_height
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  draw_panel(svg, 0, loss_height, max_step, {{&train, "#1f77b4", "train"}, {&val, "#d62728", "validation"}},
             "loss (nats per token)");
  draw_panel(svg, loss_height, throughput_height, max_step, {{&tokens_per_s, "#2ca02c", "tokens/s"}},
             "tokens per second");
  svg << "</svg>\n";
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

std::vector<nlohmann::json> keep_metrics_until(const std::string& path, int64_t last_step) {
  std::vector<nlohmann::json> kept;
  std::string text;
  std::ifstream old(path);
  for (std::string line; std::getline(old, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || j["step"].get<int64_t>() > last_step) continue;
    text += line + "\n";
    kept.push_back(std::move(j));
  }
  write_file_atomically(path, text, "train");
  return kept;
}

}  // namespace ember::cli
