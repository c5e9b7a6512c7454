// The configuration of a Hugging Face checkpoint directory (config.json and
// generation_config.json) as plain fields, with the defaults of transformers' config class of
// each architecture. Tensor-free, so that a fuzzer compiles the parser on its own.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::models {

// The architectures ember builds, by config.json's `architectures[0]` (else `model_type`).
enum class Architecture { kLlama, kMistral, kQwen2, kQwen3, kGemma, kPhi3, kGPT2 };
// transformers' class name: "LlamaForCausalLM", ..., "GPT2LMHeadModel".
const char* architecture_name(Architecture architecture);

// The MLP's activation. kGELUTanh is transformers' gelu_new / gelu_pytorch_tanh / gelu_fast
// (one formula); kGELU the exact erf form.
enum class Activation { kSiLU, kGELU, kGELUTanh, kReLU };

// rope_scaling / rope_parameters: "default" (none), "linear" (positions divided by factor) or
// "llama3" (Llama 3.1's smooth rescaling of the low frequencies).
struct RopeScaling {
  std::string type = "default";
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;  // llama3
};

struct PretrainedConfig {
  std::string file;  // the config.json it was read from, for error messages
  std::string json;  // its original text, written back by save_pretrained
  std::string generation_json;  // generation_config.json's text when the directory has one
  Architecture architecture = Architecture::kLlama;
  std::string model_type;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double norm_eps = 1e-6;  // rms_norm_eps, or GPT-2's layer_norm_epsilon
  Activation activation = Activation::kSiLU;
  std::string activation_name;  // as the file spells it
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // q/k/v projections (Qwen2 always; attention_bias elsewhere)
  bool o_bias = false;    // output projection (attention_bias for Llama, Qwen3, Gemma)
  bool mlp_bias = false;  // Llama's mlp_bias

  // Rotary positions (every architecture but GPT-2).
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;  // rotated fraction of each head (Phi-3 family)
  RopeScaling rope_scaling;

  // Sliding-window width per layer; 0 where a layer attends to the whole causal past.
  std::vector<int64_t> layer_windows;

  // GPT-2's attention scale: 1/sqrt(head_dim) when scale_attn_weights, divided by (layer + 1)
  // when scale_attn_by_inverse_layer_idx.
  bool scale_attn_weights = true;
  bool scale_attn_by_inverse_layer_idx = false;

  std::optional<int64_t> bos_token_id, pad_token_id;
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;  // `torch_dtype` (or transformers 5's `dtype`) as written; "" when absent

  // Width of the rotated part of each head: head_dim * partial_rotary_factor (even).
  int64_t rotary_dim() const;
  bool uses_rope() const { return architecture != Architecture::kGPT2; }
};

// Parses config.json's text; `file` names it in errors. Throws ember::Error naming the file,
// the key, the value and what was expected for anything unknown or inconsistent.
PretrainedConfig parse_pretrained_config(const std::string& json_text, const std::string& file);

// The token ids and sampling settings generation starts from.
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;  // `eos_token_id`: an int or a list
  std::optional<int64_t> bos_token_id, pad_token_id;
  std::optional<int64_t> max_new_tokens, max_length, top_k;
  std::optional<double> temperature, top_p;
  std::optional<bool> do_sample;
};

// The fields of generation_config.json's (or config.json's) text present in it, over `base`.
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& file,
                                         GenerationConfig base = {});

// Inverse frequencies [rotary_dim / 2] of the rotary embedding, theta^(-2i / rotary_dim) with
// the config's scaling applied, computed in float64.
std::vector<double> rope_inverse_frequencies(const PretrainedConfig& config);

}  // namespace ember::models
