// The GPT the runtime's tests export: small, with grouped-query attention and two layers.
#pragma once
#include "ember/models/gpt.h"

namespace ember::rt::testing {

inline models::GPTConfig tiny_gpt_config(int64_t window = 0) {
  models::GPTConfig config;
  config.vocab_size = 40;
  config.dim = 32;
  config.n_layers = 2;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.hidden_dim = 64;
  config.max_seq_len = 48;
  config.window = window;
  return config;
}

}  // namespace ember::rt::testing
