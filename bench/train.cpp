// `ember bench train`: training throughput of the default GPT of `ember train` (the same
// model, optimizer, clipping and packed byte batches of the default corpus), in float32
// and bfloat16 compute. Where a Python with PyTorch is found (EMBER_TORCH_PYTHON, else
// python3), bench/peers/gpt_torch.py trains the same model with PyTorch, eager and
// torch.compile'd (bf16 rows: under bf16 autocast), between the two halves of ember's own
// steps, and the rows carry its figures and ember's ratios to them.
#include <map>

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
  const int warmup_steps = 3, steps = options.quick ? 6 : 30;
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  nlohmann::json results = nlohmann::json::array();
  double torch_eager_f32 = 0;
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    GptStep gpt(dtype);
    const models::GPTConfig& config = gpt.config();
    std::vector<double> step_ms;
    auto run_steps = [&](int count, bool timed) {
      for (int i = 0; i < count; ++i) {
        const double ms = gpt.run();
        if (timed) step_ms.push_back(ms);
      }
    };
    run_steps(warmup_steps, false);
    run_steps(steps / 2, true);
    const std::map<std::string, double> torch =
        python.empty() ? std::map<std::string, double>{} : torch_tokens_per_s(python, dtype, options.quick ? 6 : 20);
    run_steps(steps - steps / 2, true);
    const double median_ms = median(step_ms);
    const double tokens_per_s = static_cast<double>(batch * seq_len) / median_ms * 1e3;
    nlohmann::json r = {{"name", row_name(config, batch, seq_len, dtype)},
                        {"step_ms", median_ms},
                        {"tokens_per_s", tokens_per_s},
                        {"threads", get_num_threads()}};
    for (const auto& [mode, figure] : torch) {
      r["torch_" + mode + "_tokens_per_s"] = figure;
      r["vs_torch_" + mode] = tokens_per_s / figure;
    }
    if (dtype == kFloat32 && torch.count("eager")) torch_eager_f32 = torch.at("eager");
    if (dtype == kBFloat16 && torch_eager_f32 > 0) r["vs_torch_eager_f32"] = tokens_per_s / torch_eager_f32;
    note(r.dump());
    results.push_back(r);
  }
  return results;
}

Register reg("train", run);

}  // namespace
}  // namespace ember::bench
