// One layer of the pretrained decoder: the arithmetic of every architecture's block, chosen by
// the layout's flags (see decoder_layer.h).
#include "decoder_layer.h"

#include <cmath>

#include "ember/functions.h"
#include "ember/nn/attention/flex_attention.h"

namespace ember::models::detail {
namespace F = ember::nn::functional;

Tensor& register_dotted(nn::Module& root, const std::string& dotted_name, Tensor tensor, bool requires_grad) {
  nn::Module* module = &root;
  size_t begin = 0;
  for (size_t dot = dotted_name.find('.'); dot != std::string::npos; dot = dotted_name.find('.', begin)) {
    const std::string part = dotted_name.substr(begin, dot - begin);
    auto children = module->named_children();
    if (const auto* child = children.find(part)) {
      module = child->get();
    } else {
      module = module->register_module(part, std::make_shared<nn::Module>(part)).get();
    }
    begin = dot + 1;
  }
  return module->register_parameter(dotted_name.substr(begin), std::move(tensor), requires_grad);
}

Tensor normalize(const Tensor& x, const Tensor& weight, const Tensor& bias, const DecoderLayout& layout, double eps) {
  const int64_t width = x.size(-1);
  const ScalarType dtype = x.scalar_type();
  if (layout.layer_norm)
    return F::layer_norm(x, F::LayerNormFuncOptions({width}).weight(weight.to(dtype)).bias(bias.to(dtype)).eps(eps));
  if (layout.norm_weight_plus_one) {
    // Gemma scales by (1 + weight) in float32 and rounds the product once, as transformers'
    // GemmaRMSNorm: a float32 weight makes the fused kernel return float32.
    return F::rms_norm(x, F::RMSNormFuncOptions({width}).weight(weight.to(kFloat32) + 1.0).eps(eps)).to(dtype);
  }
  return F::rms_norm(x, F::RMSNormFuncOptions({width}).weight(weight.to(dtype)).eps(eps));
}

Tensor project(const Tensor& x, const Tensor& weight, const Tensor& bias, bool weight_in_by_out) {
  const ScalarType dtype = x.scalar_type();
  const Tensor b = bias.defined() ? bias.to(dtype) : Tensor();
  // A weight stored [in, out] (GPT-2's Conv1D) goes through linear as its transposed view:
  // the same one product x @ W and bias add, and one op an exported program can call.
  return F::linear(x, weight_in_by_out ? weight.to(dtype).t() : weight.to(dtype), b);
}

namespace {

Tensor activate(const Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::kSiLU: return F::silu(x);
    case Activation::kGELU: return F::gelu(x);
    case Activation::kGELUTanh: return F::gelu(x, F::GELUFuncOptions().approximate("tanh"));
    case Activation::kReLU: return F::relu(x);
  }
  return x;
}

}  // namespace

DecoderLayerImpl::DecoderLayerImpl(const PretrainedConfig& config, int64_t index)
    : nn::Module(config.architecture == Architecture::kGPT2 ? "GPT2Block" : "DecoderLayer"),
      layout_(decoder_layout(config)),
      heads_(config.num_attention_heads),
      kv_heads_(config.num_key_value_heads),
      head_dim_(config.head_dim),
      rotary_dim_(config.uses_rope() ? config.rotary_dim() : 0),
      intermediate_(config.intermediate_size),
      eps_(config.norm_eps),
      activation_(config.activation),
      rope_(config.uses_rope()) {
  attention_scale_ = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (config.architecture == Architecture::kGPT2) {
    if (!config.scale_attn_weights) attention_scale_ = 1.0;
    if (config.scale_attn_by_inverse_layer_idx) attention_scale_ /= static_cast<double>(index + 1);
  }
}

void DecoderLayerImpl::add_weight(WeightRole role, const std::string& name, Tensor tensor, bool requires_grad) {
  weights_[static_cast<size_t>(role)] = register_dotted(*this, name, std::move(tensor), requires_grad);
}

Tensor DecoderLayerImpl::forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                 const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  using R = WeightRole;
  Tensor h = x + attention(normalize(x, weight(R::kInputNorm), weight(R::kInputNormBias), layout_, eps_), rope_cos,
                           rope_sin, mask, cache);
  return h + mlp(normalize(h, weight(R::kPostAttentionNorm), weight(R::kPostAttentionNormBias), layout_, eps_));
}

Tensor DecoderLayerImpl::rotate(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin) const {
  if (rotary_dim_ == head_dim_) return F::rotary_embedding(x, rope_cos, rope_sin);
  // Partial rotary (Phi-3 family): the first rotary_dim features rotate, the rest pass.
  return cat({F::rotary_embedding(x.narrow(-1, 0, rotary_dim_), rope_cos, rope_sin),
              x.narrow(-1, rotary_dim_, head_dim_ - rotary_dim_)},
             -1);
}

Tensor DecoderLayerImpl::attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin,
                                   const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  using R = WeightRole;
  // h: [B, T, hidden]; q [B, T, Hq * hd], k and v [B, T, Hkv * hd].
  const int64_t B = h.size(0), T = h.size(1), q_width = heads_ * head_dim_, kv_width = kv_heads_ * head_dim_;
  const bool in_by_out = layout_.weights_in_by_out;
  Tensor q, k, v;
  if (layout_.fused_qkv) {
    // One product for the three: the weight's rows (columns for [in, out]) are [q | k | v].
    Tensor qkv = project(h, weight(R::kQKV), weight(R::kQKVBias), in_by_out);
    q = qkv.narrow(-1, 0, q_width);
    k = qkv.narrow(-1, q_width, kv_width);
    v = qkv.narrow(-1, q_width + kv_width, kv_width);
  } else {
    q = project(h, weight(R::kQuery), weight(R::kQueryBias), in_by_out);
    k = project(h, weight(R::kKey), weight(R::kKeyBias), in_by_out);
    v = project(h, weight(R::kValue), weight(R::kValueBias), in_by_out);
  }
  q = q.reshape({B, T, heads_, head_dim_});
  k = k.reshape({B, T, kv_heads_, head_dim_});
  v = v.reshape({B, T, kv_heads_, head_dim_}).transpose(1, 2);
  if (layout_.qk_norm) {
    // Qwen3: RMSNorm over each head's features, before RoPE.
    q = normalize(q, weight(R::kQueryNorm), {}, layout_, eps_);
    k = normalize(k, weight(R::kKeyNorm), {}, layout_, eps_);
  }
  q = q.transpose(1, 2);  // [B, Hq, T, hd]
  k = k.transpose(1, 2);  // [B, Hkv, T, hd]
  if (rope_) {
    q = rotate(q, rope_cos, rope_sin);
    k = rotate(k, rope_cos, rope_sin);
  }
  if (cache) {
    cache->append(k, v);
    k = cache->keys();
    v = cache->values();
  }
  Tensor out = nn::attention::flex_attention(
      q, k, v, mask, nn::attention::FlexAttentionOptions().set_enable_gqa(heads_ != kv_heads_).set_scale(attention_scale_));
  return project(out.transpose(1, 2).reshape({B, T, q_width}), weight(R::kOutput), weight(R::kOutputBias), in_by_out);
}

Tensor DecoderLayerImpl::mlp(const Tensor& h) {
  using R = WeightRole;
  const bool in_by_out = layout_.weights_in_by_out;
  Tensor inner;
  if (!layout_.gated_mlp) {
    inner = activate(project(h, weight(R::kUp), weight(R::kUpBias), in_by_out), activation_);
  } else {
    Tensor gate, up;
    if (layout_.fused_gate_up) {
      Tensor gate_up = project(h, weight(R::kGateUp), {}, in_by_out);
      gate = gate_up.narrow(-1, 0, intermediate_);
      up = gate_up.narrow(-1, intermediate_, intermediate_);
    } else {
      gate = project(h, weight(R::kGate), weight(R::kGateBias), in_by_out);
      up = project(h, weight(R::kUp), weight(R::kUpBias), in_by_out);
    }
    inner = activation_ == Activation::kSiLU ? F::swiglu(gate, up) : activate(gate, activation_) * up;
  }
  return project(inner, weight(R::kDown), weight(R::kDownBias), in_by_out);
}

}  // namespace ember::models::detail
