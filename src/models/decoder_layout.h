// How each pretrained architecture lays out the one decoder (Note [One decoder for seven
// families] in causal_lm.cpp): its flags, and the checkpoint key,
// shape and role of every weight (private to src/models).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/models/pretrained_config.h"

namespace ember::models::detail {

// What a checkpoint tensor is to the decoder.
enum class WeightRole : uint8_t {
  kEmbedding, kPositions, kFinalNorm, kFinalNormBias, kLmHead,
  // per layer
  kInputNorm, kInputNormBias, kQuery, kQueryBias, kKey, kKeyBias, kValue, kValueBias, kQKV, kQKVBias,
  kQueryNorm, kKeyNorm, kOutput, kOutputBias, kPostAttentionNorm, kPostAttentionNormBias,
  kGate, kGateBias, kUp, kUpBias, kGateUp, kDown, kDownBias,
};

struct CheckpointEntry {
  std::string name;
  std::vector<int64_t> shape;
  WeightRole role;
  int64_t layer = -1;  // -1 outside the layers
};

// The flags of the decoder for one config.
struct DecoderLayout {
  bool layer_norm = false;            // LayerNorm with bias (GPT-2) instead of RMSNorm
  bool norm_weight_plus_one = false;  // Gemma: RMSNorm scales by 1 + weight, in float32
  bool scale_embedding = false;       // Gemma: embeddings * sqrt(hidden) in the compute dtype
  bool learned_positions = false;     // GPT-2's wpe instead of rotary embeddings
  bool fused_qkv = false;             // one projection whose rows are [q | k | v]
  bool fused_gate_up = false;         // one projection whose rows are [gate | up]
  bool gated_mlp = true;              // down(act(gate x) * up x); else down(act(up x))
  bool weights_in_by_out = false;     // GPT-2's Conv1D: weights stored [in, out], x @ W + b
  bool qk_norm = false;               // Qwen3: RMSNorm over head_dim on q and k before RoPE
  bool tied_head = false;
};

DecoderLayout decoder_layout(const PretrainedConfig& config);

// Every checkpoint tensor of the config (no tied head), in transformers' order.
std::vector<CheckpointEntry> checkpoint_entries(const PretrainedConfig& config);

// Keys a checkpoint may hold that are no weights: GPT-2's attention-mask buffers, old Llama
// files' rotary inv_freq, and a tied head some writers store anyway.
bool is_ignorable_key(const PretrainedConfig& config, const std::string& name);

// GPT-2 files from before transformers' GPT2LMHeadModel keys lack the "transformer." prefix:
// the key as this decoder names it.
std::string canonical_key(const PretrainedConfig& config, const std::string& name);

}  // namespace ember::models::detail
