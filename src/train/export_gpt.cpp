#include "train/export_gpt.h"

namespace ember::train {
namespace {

// The model's forward_cached over caches given as tensors (the methods' cache inputs).
std::vector<Tensor> forward_over_caches(models::GPT model, const Tensor& tokens, int64_t position,
                                        const std::vector<Tensor>& inputs, size_t first_cache) {
  models::GPTCache cache;
  for (size_t i = first_cache; i + 1 < inputs.size(); i += 2) cache.layers.emplace_back(inputs[i], inputs[i + 1], position);
  return {model->forward_cached(tokens, cache)};
}

}  // namespace

std::vector<Tensor> make_gpt_cache_inputs(const models::GPT& model) {
  const models::GPTConfig& c = model->config;
  std::vector<Tensor> caches;
  for (int64_t i = 0; i < 2 * c.n_layers; ++i)
    caches.push_back(zeros({1, c.n_kv_heads, c.max_seq_len, c.head_dim()}, TensorOptions().dtype(model->compute_dtype())));
  return caches;
}

ExportedProgram export_gpt(const models::GPT& model) {
  const int64_t max_len = model->config.max_seq_len;
  EMBER_CHECK(max_len >= 3, "export_gpt", "max_seq_len ", max_len, " is too short to trace (needs >= 3)");
  const int64_t prompt = std::min<int64_t>(8, max_len - 1);
  std::vector<Tensor> prefill_inputs = {zeros({1, prompt}, TensorOptions().dtype(kInt64))};
  std::vector<Tensor> decode_inputs = {zeros({1, 1}, TensorOptions().dtype(kInt64)),
                                       full({}, prompt, TensorOptions().dtype(kInt64))};
  for (const Tensor& cache : make_gpt_cache_inputs(model)) {
    prefill_inputs.push_back(cache);
    decode_inputs.push_back(cache.clone());
  }
  ExportMethod prefill{
      "prefill",
      [model](const std::vector<Tensor>& in) { return forward_over_caches(model, in[0], 0, in, 1); },
      prefill_inputs, ExportOptions().dynamic_dim(0, 1, Dim("T", 1, max_len))};
  ExportMethod decode{
      "decode",
      [model](const std::vector<Tensor>& in) { return forward_over_caches(model, in[0], in[1].item<int64_t>(), in, 2); },
      decode_inputs, ExportOptions().symbolic_value(1, Dim("pos", 0, max_len - 1))};
  ExportedProgram program = export_program(*model, {prefill, decode});
  program.set_metadata("max_seq_len", std::to_string(max_len));
  program.set_metadata("gpt_config", model->config.to_json());
  return program;
}

}  // namespace ember::train
