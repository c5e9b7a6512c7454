#include "train/export_gpt.h"

namespace ember::train {

CachedDecoder cached_decoder(const models::GPT& model) {
  const models::GPTConfig& c = model->config;
  CachedDecoder decoder{.module = model.get(),
                        .constants = {},  // the GPT holds every tensor in its state
                        .layers = c.n_layers,
                        .kv_heads = c.n_kv_heads,
                        .head_dim = c.head_dim(),
                        .max_seq_len = c.max_seq_len,
                        .vocab_size = c.vocab_size,
                        .cache_dtype = model->compute_dtype(),
                        .forward = [model = models::GPT(model)](const Tensor& tokens, std::vector<nn::attention::KVCache>& caches, bool) mutable {
    models::GPTCache cache{caches};
    Tensor logits = model->forward_cached(tokens, cache);
    caches = std::move(cache.layers);
    return logits;
  }};
  return decoder;
}

std::vector<Tensor> make_gpt_cache_inputs(const models::GPT& model) { return make_cache_inputs(cached_decoder(model)); }

ExportedProgram export_gpt(const models::GPT& model) {
  ExportedProgram program = export_cached_decoder(cached_decoder(model));
  program.set_metadata("gpt_config", model->config.to_json());
  return program;
}

}  // namespace ember::train
