#include "run_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ember/io/safetensors.h"
#include "ember/random.h"

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

void save_checkpoint(const std::string& path, models::GPTImpl& model, const optim::Optimizer* optimizer,
                     const CheckpointInfo& info) {
  io::TensorList tensors;
  for (const auto& item : model.state_dict()) tensors.emplace_back("model." + item.key(), item.value());
  nlohmann::json state = {{"step", info.step},
                          {"tokenizer_kind", info.tokenizer_kind},
                          {"tokenizer_state", info.tokenizer_state},
                          {"train", nlohmann::json::parse(info.train_json.empty() ? "{}" : info.train_json)}};
  if (optimizer) {
    optim::OptimizerStateDict optimizer_state = optimizer->state_dict();
    for (const auto& [key, t] : optimizer_state.tensors) tensors.emplace_back("optim." + key, t);
    state["optim_scalars"] = optimizer_state.scalars;
    GeneratorState rng = default_generator().get_state();
    state["rng_seed"] = rng.seed;
    state["rng_offset"] = rng.offset;
  }
  io::save_safetensors(path, tensors, {{"config", info.config.to_json()}, {"state", state.dump()}});
}

namespace {

nlohmann::json checkpoint_state(const io::Metadata& metadata, const std::string& path) {
  auto it = metadata.find("state");
  EMBER_CHECK(it != metadata.end() && metadata.count("config"), "checkpoint", "'", path,
              "' is not an ember training checkpoint (no config/state metadata)");
  try {
    return nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL("checkpoint", "'", path, "' has corrupt state metadata: ", e.what());
  }
}

}  // namespace

CheckpointInfo read_checkpoint_info(const std::string& path) {
  io::SafeOpen file(path);
  nlohmann::json state = checkpoint_state(file.metadata(), path);
  CheckpointInfo info;
  info.config = models::GPTConfig::from_json(file.metadata().at("config"));
  info.step = state.value("step", int64_t{0});
  info.tokenizer_kind = state.value("tokenizer_kind", std::string("byte"));
  info.tokenizer_state = state.value("tokenizer_state", std::string());
  info.train_json = state.contains("train") ? state["train"].dump() : "{}";
  return info;
}

void load_checkpoint(const std::string& path, models::GPTImpl& model, optim::Optimizer* optimizer) {
  io::LoadedTensors loaded = io::load_safetensors(path);
  nlohmann::json state = checkpoint_state(loaded.metadata, path);
  OrderedDict<std::string, Tensor> model_state;
  optim::OptimizerStateDict optimizer_state;
  for (const auto& [name, t] : loaded.tensors) {
    if (name.rfind("model.", 0) == 0) model_state.insert(name.substr(6), t);
    else if (name.rfind("optim.", 0) == 0) optimizer_state.tensors[name.substr(6)] = t.clone();
  }
  model.load_state_dict(model_state, /*strict=*/true);
  if (optimizer) {
    EMBER_CHECK(state.contains("optim_scalars"), "checkpoint", "'", path, "' holds no optimizer state");
    optimizer_state.scalars = state["optim_scalars"].get<std::map<std::string, double>>();
    optimizer->load_state_dict(optimizer_state);
    default_generator().set_state({state["rng_seed"].get<uint64_t>(), state["rng_offset"].get<uint64_t>()});
  }
}

}  // namespace ember::cli
