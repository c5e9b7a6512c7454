// libFuzzer target for the pretrained config parser (config.json and generation_config.json):
// any input must either parse into a consistent config or throw ember::Error, never crash.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/error.h"
#include "ember/models/pretrained_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ember::models::PretrainedConfig config = ember::models::parse_pretrained_config(text, "fuzz");
    // What the decoder relies on once a config parses.
    if (config.num_attention_heads % config.num_key_value_heads != 0) __builtin_trap();
    if (config.layer_windows.size() != static_cast<size_t>(config.num_hidden_layers)) __builtin_trap();
    if (config.uses_rope()) {
      if (config.rotary_dim() < 2 || config.rotary_dim() % 2 != 0 || config.rotary_dim() > config.head_dim)
        __builtin_trap();
      for (double f : ember::models::rope_inverse_frequencies(config))
        if (!std::isfinite(f) || f < 0) __builtin_trap();
    }
  } catch (const ember::Error&) {
  }
  try {
    ember::models::parse_generation_config(text, "fuzz");
  } catch (const ember::Error&) {
  }
  return 0;
}
