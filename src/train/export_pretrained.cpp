#include "train/export_pretrained.h"

namespace ember::train {

CachedDecoder cached_decoder(const models::CausalLM& model) {
  const models::PretrainedConfig& c = model->config();
  CachedDecoder decoder{.module = model.get(),
                        .constants = models::quantized_block_tensors(model),
                        .layers = c.num_hidden_layers,
                        .kv_heads = c.num_key_value_heads,
                        .head_dim = c.head_dim,
                        .max_seq_len = model->max_seq_len(),
                        .vocab_size = c.vocab_size,
                        .cache_dtype = model->compute_dtype(),
                        .forward = [model = models::CausalLM(model)](const Tensor& tokens, std::vector<nn::attention::KVCache>& caches, bool prefill) mutable {
    models::DecoderCache cache{caches};
    Tensor logits = model->forward_cached(tokens, cache, prefill ? 1 : 0);
    caches = std::move(cache.layers);
    return logits;
  }};
  return decoder;
}

std::string encode_token_bytes(const std::vector<std::string>& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t id = 0; id < bytes.size(); ++id) {
    if (id > 0) out.push_back(',');
    for (unsigned char b : bytes[id]) {
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

ExportedProgram export_pretrained(const models::CausalLM& model, const std::vector<int64_t>& eos_token_ids,
                                  const tokenizers::Tokenizer* tokenizer) {
  const models::PretrainedConfig& config = model->config();
  if (tokenizer != nullptr)
    EMBER_CHECK(tokenizer->vocab_size() <= config.vocab_size, "export", "the tokenizer has ", tokenizer->vocab_size(),
                " ids, more than the model's vocab_size ", config.vocab_size);
  ExportedProgram program = export_cached_decoder(cached_decoder(model));
  program.set_metadata("architecture", models::architecture_name(config.architecture));
  if (!model->quantization().empty()) program.set_metadata("quantization", model->quantization());
  std::string eos;
  for (int64_t id : eos_token_ids) eos += (eos.empty() ? "" : " ") + std::to_string(id);
  program.set_metadata("eos_token_ids", eos);
  if (tokenizer != nullptr) {
    // Ids the model has beyond the tokenizer's (padded embedding tables) print nothing.
    std::vector<std::string> bytes = tokenizer->token_bytes();
    bytes.resize(static_cast<size_t>(config.vocab_size));
    program.set_metadata("token_bytes", encode_token_bytes(bytes));
  }
  return program;
}

}  // namespace ember::train
