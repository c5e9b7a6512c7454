// The decoder's flags and the checkpoint keys of each architecture: the only place that knows
// transformers' names (Llama-style "model.layers.N.self_attn.q_proj", GPT-2's
// "transformer.h.N.attn.c_attn").
#include "decoder_layout.h"

#include <string_view>

namespace ember::models::detail {

DecoderLayout decoder_layout(const PretrainedConfig& config) {
  DecoderLayout layout;
  layout.tied_head = config.tie_word_embeddings;
  switch (config.architecture) {
    case Architecture::kGPT2:
      layout.layer_norm = true;
      layout.learned_positions = true;
      layout.fused_qkv = true;
      layout.gated_mlp = false;
      layout.weights_in_by_out = true;
      break;
    case Architecture::kGemma:
      layout.norm_weight_plus_one = true;
      layout.scale_embedding = true;
      break;
    case Architecture::kPhi3:
      layout.fused_qkv = true;
      layout.fused_gate_up = true;
      break;
    case Architecture::kQwen3: layout.qk_norm = true; break;
    default: break;
  }
  return layout;
}

namespace {

// Appends entries under one prefix; `weight` takes the shape as the checkpoint stores it.
class EntryList {
 public:
  explicit EntryList(std::vector<CheckpointEntry>& out) : out_(out) {}
  void add(std::string name, std::vector<int64_t> shape, WeightRole role, int64_t layer = -1) {
    out_.push_back({std::move(name), std::move(shape), role, layer});
  }

 private:
  std::vector<CheckpointEntry>& out_;
};

void gpt2_entries(const PretrainedConfig& c, EntryList& list) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  list.add("transformer.wte.weight", {c.vocab_size, H}, WeightRole::kEmbedding);
  list.add("transformer.wpe.weight", {c.max_position_embeddings, H}, WeightRole::kPositions);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    // Conv1D weights are [in, out].
    list.add(p + "ln_1.weight", {H}, WeightRole::kInputNorm, i);
    list.add(p + "ln_1.bias", {H}, WeightRole::kInputNormBias, i);
    list.add(p + "attn.c_attn.weight", {H, 3 * H}, WeightRole::kQKV, i);
    list.add(p + "attn.c_attn.bias", {3 * H}, WeightRole::kQKVBias, i);
    list.add(p + "attn.c_proj.weight", {H, H}, WeightRole::kOutput, i);
    list.add(p + "attn.c_proj.bias", {H}, WeightRole::kOutputBias, i);
    list.add(p + "ln_2.weight", {H}, WeightRole::kPostAttentionNorm, i);
    list.add(p + "ln_2.bias", {H}, WeightRole::kPostAttentionNormBias, i);
    list.add(p + "mlp.c_fc.weight", {H, I}, WeightRole::kUp, i);
    list.add(p + "mlp.c_fc.bias", {I}, WeightRole::kUpBias, i);
    list.add(p + "mlp.c_proj.weight", {I, H}, WeightRole::kDown, i);
    list.add(p + "mlp.c_proj.bias", {H}, WeightRole::kDownBias, i);
  }
  list.add("transformer.ln_f.weight", {H}, WeightRole::kFinalNorm);
  list.add("transformer.ln_f.bias", {H}, WeightRole::kFinalNormBias);
  if (!c.tie_word_embeddings) list.add("lm_head.weight", {c.vocab_size, H}, WeightRole::kLmHead);
}

void llama_entries(const PretrainedConfig& c, const DecoderLayout& layout, EntryList& list) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t q_width = c.num_attention_heads * hd, kv_width = c.num_key_value_heads * hd;
  list.add("model.embed_tokens.weight", {c.vocab_size, H}, WeightRole::kEmbedding);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    if (layout.fused_qkv) {
      list.add(p + "self_attn.qkv_proj.weight", {q_width + 2 * kv_width, H}, WeightRole::kQKV, i);
    } else {
      list.add(p + "self_attn.q_proj.weight", {q_width, H}, WeightRole::kQuery, i);
      if (c.qkv_bias) list.add(p + "self_attn.q_proj.bias", {q_width}, WeightRole::kQueryBias, i);
      list.add(p + "self_attn.k_proj.weight", {kv_width, H}, WeightRole::kKey, i);
      if (c.qkv_bias) list.add(p + "self_attn.k_proj.bias", {kv_width}, WeightRole::kKeyBias, i);
      list.add(p + "self_attn.v_proj.weight", {kv_width, H}, WeightRole::kValue, i);
      if (c.qkv_bias) list.add(p + "self_attn.v_proj.bias", {kv_width}, WeightRole::kValueBias, i);
    }
    list.add(p + "self_attn.o_proj.weight", {H, q_width}, WeightRole::kOutput, i);
    if (c.o_bias) list.add(p + "self_attn.o_proj.bias", {H}, WeightRole::kOutputBias, i);
    if (layout.qk_norm) {
      list.add(p + "self_attn.q_norm.weight", {hd}, WeightRole::kQueryNorm, i);
      list.add(p + "self_attn.k_norm.weight", {hd}, WeightRole::kKeyNorm, i);
    }
    if (layout.fused_gate_up) {
      list.add(p + "mlp.gate_up_proj.weight", {2 * I, H}, WeightRole::kGateUp, i);
    } else {
      list.add(p + "mlp.gate_proj.weight", {I, H}, WeightRole::kGate, i);
      if (c.mlp_bias) list.add(p + "mlp.gate_proj.bias", {I}, WeightRole::kGateBias, i);
      list.add(p + "mlp.up_proj.weight", {I, H}, WeightRole::kUp, i);
      if (c.mlp_bias) list.add(p + "mlp.up_proj.bias", {I}, WeightRole::kUpBias, i);
    }
    list.add(p + "mlp.down_proj.weight", {H, I}, WeightRole::kDown, i);
    if (c.mlp_bias) list.add(p + "mlp.down_proj.bias", {H}, WeightRole::kDownBias, i);
    list.add(p + "input_layernorm.weight", {H}, WeightRole::kInputNorm, i);
    list.add(p + "post_attention_layernorm.weight", {H}, WeightRole::kPostAttentionNorm, i);
  }
  list.add("model.norm.weight", {H}, WeightRole::kFinalNorm);
  if (!c.tie_word_embeddings) list.add("lm_head.weight", {c.vocab_size, H}, WeightRole::kLmHead);
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::vector<CheckpointEntry> checkpoint_entries(const PretrainedConfig& config) {
  std::vector<CheckpointEntry> entries;
  EntryList list(entries);
  if (config.architecture == Architecture::kGPT2) {
    gpt2_entries(config, list);
  } else {
    llama_entries(config, decoder_layout(config), list);
  }
  return entries;
}

bool is_ignorable_key(const PretrainedConfig& config, const std::string& name) {
  if (config.tie_word_embeddings && name == "lm_head.weight") return true;
  if (config.architecture == Architecture::kGPT2)
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");
  return ends_with(name, ".self_attn.rotary_emb.inv_freq");
}

std::string canonical_key(const PretrainedConfig& config, const std::string& name) {
  if (config.architecture != Architecture::kGPT2) return name;
  for (std::string_view bare : {"wte.", "wpe.", "h.", "ln_f."})
    if (name.starts_with(bare)) return "transformer." + name;
  return name;
}

}  // namespace ember::models::detail
