// One layer of the pretrained decoder: the arithmetic of every architecture's block, chosen by
// the layout's flags (see decoder_layer.h).
#include "decoder_layer.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/detail/autocast_linear.h"
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
  if (!weight_in_by_out) return ember::detail::autocast_linear(x, weight, bias);
  // A weight stored [in, out] (GPT-2's Conv1D) goes through linear as its transposed view:
  // the same one product x @ W and bias add, and one op an exported program can call.
  const ScalarType dtype = x.scalar_type();
  return F::linear(x, weight.to(dtype).t(), bias.defined() ? bias.to(dtype) : Tensor());
}

Tensor add_adapter_output(const Tensor& y, const Tensor& x, const LoraAdapter& adapter, bool training) {
  Tensor input = x.to(kFloat32);
  if (adapter.dropout > 0) input = F::dropout(input, F::DropoutFuncOptions().p(adapter.dropout).training(training));
  const Tensor delta = F::linear(F::linear(input, adapter.lora_A), adapter.lora_B) * adapter.scale;
  if (y.scalar_type() == kFloat32) return y + delta;
  return (y.to(kFloat32) + delta).to(y.scalar_type());
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
  names_[static_cast<size_t>(role)] = name;
}

namespace {

// "self_attn.q_proj.weight" -> "self_attn.q_proj": the projection's module.
std::string module_of(const std::string& weight_name) { return weight_name.substr(0, weight_name.rfind('.')); }

}  // namespace

void DecoderLayerImpl::add_adapter(WeightRole role, Tensor lora_A, Tensor lora_B, double scale, double dropout) {
  const std::string module = module_of(weight_name(role));
  LoraAdapter& adapter = adapters_[static_cast<size_t>(role)];
  adapter.lora_A = register_dotted(*this, module + ".lora_A.weight", std::move(lora_A), true);
  adapter.lora_B = register_dotted(*this, module + ".lora_B.weight", std::move(lora_B), true);
  adapter.scale = scale;
  adapter.dropout = dropout;
}

void DecoderLayerImpl::merge_adapter(WeightRole role) {
  const size_t index = static_cast<size_t>(role);
  LoraAdapter& adapter = adapters_[index];
  const Tensor& base = weights_[index];
  Tensor merged;
  {
    NoGradGuard no_grad;
    Tensor delta = adapter.lora_B.matmul(adapter.lora_A) * adapter.scale;  // [out, in]
    if (layout_.weights_in_by_out) delta = delta.t();
    merged = (base.to(kFloat32) + delta).to(base.scalar_type()).contiguous();
  }
  // The projection's module (a plain holder of weight and bias, the adapters its children) is
  // rebuilt with the merged weight and without the adapters: the old weight may be a read-only
  // view of a file, and a module's parameters cannot be removed one by one.
  nn::Module* parent = this;
  std::string leaf = module_of(names_[index]);
  for (size_t dot = leaf.find('.'); dot != std::string::npos; dot = leaf.find('.')) {
    parent = parent->named_children()[leaf.substr(0, dot)].get();
    leaf = leaf.substr(dot + 1);
  }
  const std::string weight_key = names_[index].substr(names_[index].rfind('.') + 1);
  auto rebuilt = std::make_shared<nn::Module>(leaf);
  for (const auto& item : parent->named_children()[leaf]->named_parameters(/*recurse=*/false)) {
    const bool is_weight = item.key() == weight_key;
    Tensor& stored = rebuilt->register_parameter(item.key(), is_weight ? merged : item.value(),
                                                 item.value().requires_grad());
    if (is_weight) weights_[index] = stored;
  }
  parent->replace_module(leaf, rebuilt);
  adapter = LoraAdapter{};
}

namespace {
constexpr WeightRole kProjections[] = {WeightRole::kQuery, WeightRole::kKey,  WeightRole::kValue,
                                       WeightRole::kQKV,   WeightRole::kOutput, WeightRole::kGate,
                                       WeightRole::kUp,    WeightRole::kGateUp, WeightRole::kDown};
}  // namespace

void DecoderLayerImpl::quantize_projections(quantized::Format format) {
  std::map<std::string, quantized::QuantizedWeight> blocks;
  for (WeightRole role : kProjections) {
    const Tensor& w = weight(role);
    if (!w.defined()) continue;
    blocks[weight_name(role)] = quantized::quantize(layout_.weights_in_by_out ? w.t() : w, format);
  }
  set_quantized_projections(blocks, "quantize");
}

std::map<std::string, quantized::QuantizedWeight> DecoderLayerImpl::quantized_projections() const {
  std::map<std::string, quantized::QuantizedWeight> out;
  for (WeightRole role : kProjections)
    if (quantized_[static_cast<size_t>(role)].defined()) out[weight_name(role)] = quantized_[static_cast<size_t>(role)];
  return out;
}

void DecoderLayerImpl::set_quantized_projections(const std::map<std::string, quantized::QuantizedWeight>& blocks,
                                                 const std::string& where) {
  for (WeightRole role : kProjections) {
    const Tensor& w = weight(role);
    if (!w.defined()) continue;
    const std::string& name = weight_name(role);
    EMBER_CHECK(!adapter(role).defined(), "quantize", "layer weight ", name, " carries a LoRA adapter: merge it first");
    auto it = blocks.find(name);
    EMBER_CHECK(it != blocks.end(), "quantize", where, ": no quantized blocks for layer weight ", name);
    const int64_t out = layout_.weights_in_by_out ? w.size(1) : w.size(0);
    const int64_t in = layout_.weights_in_by_out ? w.size(0) : w.size(1);
    EMBER_CHECK(it->second.out_features() == out && it->second.in_features() == in, "quantize", where,
                ": the blocks of layer weight ", name, " are [", it->second.out_features(), ", ",
                it->second.in_features(), "], expected [", out, ", ", in, "]");
  }
  for (WeightRole role : kProjections)
    if (weight(role).defined()) quantized_[static_cast<size_t>(role)] = blocks.at(weight_name(role));
}

Tensor DecoderLayerImpl::projection(const Tensor& x, WeightRole role, const Tensor& bias) {
  const quantized::QuantizedWeight& quantized = quantized_[static_cast<size_t>(role)];
  if (quantized.defined()) return quantized::linear(x, quantized, bias);
  Tensor y = project(x, weight(role), bias, layout_.weights_in_by_out);
  const LoraAdapter& lora = adapter(role);
  return lora.defined() ? add_adapter_output(y, x, lora, is_training()) : y;
}

std::vector<Tensor> DecoderLayerImpl::projections(const Tensor& x, std::initializer_list<WeightRole> roles,
                                                  std::initializer_list<WeightRole> biases) {
  size_t plain_weights = 0, quantized_weights = 0;
  for (WeightRole role : roles) {
    const bool has_blocks = quantized_[static_cast<size_t>(role)].defined();
    plain_weights += !layout_.weights_in_by_out && !has_blocks && !adapter(role).defined();
    quantized_weights += has_blocks;
  }
  std::vector<Tensor> out;
  const WeightRole* bias = biases.begin();
  const ScalarType dtype = x.scalar_type();
  if (quantized_weights == roles.size()) {
    std::vector<quantized::QuantizedWeight> blocks;
    for (WeightRole role : roles) blocks.push_back(quantized_[static_cast<size_t>(role)]);
    out = quantized::linear_group(x, blocks);
  } else if (plain_weights == roles.size()) {
    // As project(): the weight in x's dtype, then the bias added to the product.
    std::vector<Tensor> weights;
    for (WeightRole role : roles) weights.push_back(weight(role));
    out = ember::detail::autocast_linear_group(x, weights);
  } else {
    for (WeightRole role : roles) out.push_back(projection(x, role, weight(*bias++)));
    return out;
  }
  for (Tensor& y : out) {
    const Tensor& b = weight(*bias++);
    if (b.defined()) y = y + b.to(dtype);
  }
  return out;
}

template <class Attend>
Tensor DecoderLayerImpl::residual_block(const Tensor& x, Attend attend) {
  using R = WeightRole;
  Tensor h = x + attend(normalize(x, weight(R::kInputNorm), weight(R::kInputNormBias), layout_, eps_));
  return h + mlp(normalize(h, weight(R::kPostAttentionNorm), weight(R::kPostAttentionNormBias), layout_, eps_));
}

Tensor DecoderLayerImpl::forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                 const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  return residual_block(x, [&](const Tensor& h) { return attention(h, rope_cos, rope_sin, mask, cache); });
}

Tensor DecoderLayerImpl::decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin,
                                     const Tensor& input_pos, nn::attention::KVCache& cache, int64_t window) {
  return residual_block(x, [&](const Tensor& h) { return decode_attention(h, rope_cos, rope_sin, input_pos, cache, window); });
}

Tensor DecoderLayerImpl::rotate(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin) const {
  if (rotary_dim_ == head_dim_) return F::rotary_embedding(x, rope_cos, rope_sin);
  // Partial rotary (Phi-3 family): the first rotary_dim features rotate, the rest pass.
  return cat({F::rotary_embedding(x.narrow(-1, 0, rotary_dim_), rope_cos, rope_sin),
              x.narrow(-1, rotary_dim_, head_dim_ - rotary_dim_)},
             -1);
}

DecoderLayerImpl::QueryKeyValue DecoderLayerImpl::query_key_value(const Tensor& h, const Tensor& rope_cos,
                                                                   const Tensor& rope_sin) {
  using R = WeightRole;
  // h: [B, T, hidden]; q [B, T, Hq * hd], k and v [B, T, Hkv * hd].
  const int64_t B = h.size(0), T = h.size(1), q_width = heads_ * head_dim_, kv_width = kv_heads_ * head_dim_;
  Tensor q, k, v;
  if (layout_.fused_qkv) {
    // One product for the three: the weight's rows (columns for [in, out]) are [q | k | v].
    Tensor qkv = projection(h, R::kQKV, weight(R::kQKVBias));
    q = qkv.narrow(-1, 0, q_width);
    k = qkv.narrow(-1, q_width, kv_width);
    v = qkv.narrow(-1, q_width + kv_width, kv_width);
  } else {
    std::vector<Tensor> qkv = projections(h, {R::kQuery, R::kKey, R::kValue}, {R::kQueryBias, R::kKeyBias, R::kValueBias});
    q = qkv[0];
    k = qkv[1];
    v = qkv[2];
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
  return {q, k, v};
}

Tensor DecoderLayerImpl::attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin,
                                   const nn::attention::BlockMask& mask, nn::attention::KVCache* cache) {
  const int64_t B = h.size(0), T = h.size(1);
  auto [q, k, v] = query_key_value(h, rope_cos, rope_sin);
  if (cache) {
    cache->append(k, v);
    k = cache->keys();
    v = cache->values();
  }
  Tensor out = nn::attention::flex_attention(
      q, k, v, mask, nn::attention::FlexAttentionOptions().set_enable_gqa(heads_ != kv_heads_).set_scale(attention_scale_));
  return projection(out.transpose(1, 2).reshape({B, T, heads_ * head_dim_}), WeightRole::kOutput,
                    weight(WeightRole::kOutputBias));
}

Tensor DecoderLayerImpl::decode_attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin,
                                          const Tensor& input_pos, nn::attention::KVCache& cache, int64_t window) {
  const QueryKeyValue qkv = query_key_value(h, rope_cos, rope_sin);
  cache.assign(input_pos, qkv.k, qkv.v);
  const Tensor out = nn::attention::decode_attention(qkv.q, cache, input_pos, attention_scale_, window);
  return projection(out.reshape({h.size(0), 1, heads_ * head_dim_}), WeightRole::kOutput,
                    weight(WeightRole::kOutputBias));
}

Tensor DecoderLayerImpl::mlp(const Tensor& h) {
  using R = WeightRole;
  Tensor inner;
  if (!layout_.gated_mlp) {
    inner = activate(projection(h, R::kUp, weight(R::kUpBias)), activation_);
  } else {
    Tensor gate, up;
    if (layout_.fused_gate_up) {
      Tensor gate_up = projection(h, R::kGateUp);
      gate = gate_up.narrow(-1, 0, intermediate_);
      up = gate_up.narrow(-1, intermediate_, intermediate_);
    } else {
      std::vector<Tensor> gate_up = projections(h, {R::kGate, R::kUp}, {R::kGateBias, R::kUpBias});
      gate = gate_up[0];
      up = gate_up[1];
    }
    inner = activation_ == Activation::kSiLU ? F::swiglu(gate, up) : activate(gate, activation_) * up;
  }
  return projection(inner, R::kDown, weight(R::kDownBias));
}

}  // namespace ember::models::detail
