// `ember bench train`: training throughput of the default GPT of `ember train` (the same
// model, optimizer, clipping and packed byte batches of the default corpus), in float32
// and bfloat16 compute. Where a Python with PyTorch is found (EMBER_TORCH_PYTHON, else
// python3), bench/peers/gpt_torch.py trains the same model with PyTorch, eager and
// torch.compile'd (bf16 rows: under bf16 autocast), in turns with ember's own steps, and the
// rows carry its figures and ember's ratios to them.
#include <map>
#include <memory>

#include "bench.h"
#include "gpt_step.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

std::string row_name(const models::GPTConfig& c, int64_t batch, int64_t seq_len, ScalarType dtype) {
  return "gpt_d" + std::to_string(c.dim) + "_l" + std::to_string(c.n_layers) + "_h" + std::to_string(c.n_heads) +
         "_kv" + std::to_string(c.n_kv_heads) + "_f" + std::to_string(c.hidden_dim) + "_t" + std::to_string(seq_len) +
         "_b" + std::to_string(batch) + (dtype == kBFloat16 ? "_bf16" : "_f32");
}

// The peer's tokens_per_s by mode ("eager", "compile"); empty when it did not run.
std::map<std::string, double> torch_tokens_per_s(const std::string& python, ScalarType dtype, int steps) {
  std::map<std::string, double> figures;
  for (const nlohmann::json& row :
       run_peer(python, "gpt_torch.py",
                "--steps " + std::to_string(steps) + " --attention sdpa --modes eager,compile --dtype " +
                    (dtype == kBFloat16 ? "bfloat16" : "float32")))
    figures[row.at("mode").get<std::string>()] = row.at("tokens_per_s").get<double>();
  return figures;
}

nlohmann::json run(const Options& options) {
  const int64_t batch = GptStep::kBatch, seq_len = GptStep::kSeqLen;
  const int warmup_steps = 3, turns = options.quick ? 1 : 3, steps_per_turn = options.quick ? 6 : 10;
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  // Turns of ember's float32 steps, the peer in float32, ember's bf16 steps, the peer in bf16,
  // so that each ratio compares figures taken minutes apart at most (this shared machine's
  // speed moves by 1.5-2x between minutes): every vs_torch_* is the median of the turns' ratios.
  const std::vector<ScalarType> dtypes = {kFloat32, kBFloat16};
  std::map<ScalarType, std::unique_ptr<GptStep>> models;
  std::map<ScalarType, std::vector<double>> step_ms;
  std::map<ScalarType, std::map<std::string, std::vector<double>>> torch_turns, ratio_turns;
  for (ScalarType dtype : dtypes) {
    models[dtype] = std::make_unique<GptStep>(dtype);
    for (int i = 0; i < warmup_steps; ++i) models[dtype]->run();
  }
  const double tokens = static_cast<double>(batch * seq_len);
  for (int turn = 0; turn < turns; ++turn) {
    double eager_f32 = 0;  // PyTorch's float32 eager step of this turn, where it ran
    for (ScalarType dtype : dtypes) {
      std::vector<double> turn_ms;
      for (int i = 0; i < steps_per_turn; ++i) turn_ms.push_back(models[dtype]->run());
      step_ms[dtype].insert(step_ms[dtype].end(), turn_ms.begin(), turn_ms.end());
      if (python.empty()) continue;
      const double tokens_per_s = tokens / median(turn_ms) * 1e3;
      for (const auto& [mode, figure] : torch_tokens_per_s(python, dtype, options.quick ? 6 : 20)) {
        torch_turns[dtype][mode].push_back(figure);
        ratio_turns[dtype]["vs_torch_" + mode].push_back(tokens_per_s / figure);
        if (dtype == kFloat32 && mode == "eager") eager_f32 = figure;
      }
      // bf16 against PyTorch's float32 eager step of the same turn.
      if (dtype == kBFloat16 && eager_f32 > 0)
        ratio_turns[dtype]["vs_torch_eager_f32"].push_back(tokens_per_s / eager_f32);
    }
  }
  nlohmann::json results = nlohmann::json::array();
  for (ScalarType dtype : dtypes) {
    const double median_ms = median(step_ms[dtype]);
    nlohmann::json r = {{"name", row_name(models[dtype]->config(), batch, seq_len, dtype)},
                        {"step_ms", median_ms},
                        {"tokens_per_s", tokens / median_ms * 1e3},
                        {"threads", get_num_threads()},
                        {"turns", turns}};
    for (const auto& [mode, figures] : torch_turns[dtype]) r["torch_" + mode + "_tokens_per_s"] = median(figures);
    for (const auto& [name, ratios] : ratio_turns[dtype]) {
      r[name] = median(ratios);
      r[name + "_turns"] = ratios;
    }
    note(r.dump());
    results.push_back(r);
  }
  return results;
}

Register reg("train", run);

}  // namespace
}  // namespace ember::bench
