// One layer of the pretrained decoder, configured by flags (private to src/models): pre-norm
// attention (fused or separate q/k/v, optional biases and qk-norm, RoPE or none, GQA through
// flex attention) and a gated or plain MLP, each around a residual.
#pragma once
#include <array>
#include <map>
#include <string>

#include "decoder_layout.h"
#include "ember/models/pretrained_config.h"
#include "ember/nn.h"
#include "ember/nn/attention/block_mask.h"
#include "ember/nn/attention/kv_cache.h"
#include "ember/quantized.h"

namespace ember::models::detail {

// Registers `tensor` as the parameter `dotted_name` ("self_attn.q_proj.weight") under `root`,
// creating plain child modules for the leading parts, so that named_parameters() gives the
// checkpoint's keys. Returns the stored tensor.
Tensor& register_dotted(nn::Module& root, const std::string& dotted_name, Tensor tensor, bool requires_grad);

// RMSNorm (optionally by 1 + weight in float32, Gemma) or LayerNorm with bias, over the last
// dim, in x's dtype.
Tensor normalize(const Tensor& x, const Tensor& weight, const Tensor& bias, const DecoderLayout& layout, double eps);

// x @ weight^T + bias, or x @ weight + bias for weights stored [in, out]; weights of another
// dtype than x are converted at this use.
Tensor project(const Tensor& x, const Tensor& weight, const Tensor& bias, bool weight_in_by_out);

// A LoRA adapter on one projection (see lora.h): lora_A [rank, in] and lora_B [out, rank], float32.
struct LoraAdapter {
  Tensor lora_A, lora_B;
  double scale = 0, dropout = 0;
  bool defined() const { return lora_A.defined(); }
};

// y + scale * (dropout(x) A^T) B^T, computed in float32 and rounded once to y's dtype, as PEFT
// runs float32 adapters beside bfloat16 layers.
Tensor add_adapter_output(const Tensor& y, const Tensor& x, const LoraAdapter& adapter, bool training);

class DecoderLayerImpl : public nn::Module {
 public:
  DecoderLayerImpl(const PretrainedConfig& config, int64_t index);

  // Registers a checkpoint tensor of this layer; `name` is its key after "model.layers.N.".
  void add_weight(WeightRole role, const std::string& name, Tensor tensor, bool requires_grad);
  // The key after "model.layers.N." of the weight with `role` (empty when the layer has none).
  const std::string& weight_name(WeightRole role) const { return names_[static_cast<size_t>(role)]; }

  // LoRA (lora.cpp): registers lora_A and lora_B beside the projection's weight (its module gets
  // children "lora_A" and "lora_B", as PEFT names them) and adds their output to the projection.
  void add_adapter(WeightRole role, Tensor lora_A, Tensor lora_B, double scale, double dropout);
  const LoraAdapter& adapter(WeightRole role) const { return adapters_[static_cast<size_t>(role)]; }
  // Replaces the projection's weight by an owned W + scale B A (transposed for [in, out]
  // weights) in W's dtype and drops the adapter.
  void merge_adapter(WeightRole role);

  // Weight-only quantization (ember/quantized.h): every projection's weight gets a quantized
  // copy [out, in] that its products use from then on (inference only; the float weights stay
  // the parameters).
  void quantize_projections(quantized::Format format);
  // The quantized copies by weight key after "model.layers.N." (empty before quantization).
  std::map<std::string, quantized::QuantizedWeight> quantized_projections() const;
  // Installs a copy for every projection (blocks read from a file): each must be there, of its
  // weight's shape; `where` names the source for errors.
  void set_quantized_projections(const std::map<std::string, quantized::QuantizedWeight>& blocks,
                                 const std::string& where);

  // x [B, T, hidden] -> [B, T, hidden]. rope_cos/rope_sin [T, rotary_dim / 2] in x's dtype
  // (undefined without RoPE). With a cache, the new keys and values join it and the queries
  // attend to everything cached under `mask`.
  Tensor forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const nn::attention::BlockMask& mask,
                 nn::attention::KVCache* cache);
  // One token a sequence over a fixed-size cache (CausalLMImpl::decode_step): x [B, 1, hidden];
  // its key and value are written at input_pos [1] (int64), which the kernels read when they
  // run, and the queries attend to the cache's keys up to it (window > 0: the last `window`),
  // so that ember::Graph can capture the step once.
  Tensor decode_step(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const Tensor& input_pos,
                     nn::attention::KVCache& cache, int64_t window);

 private:
  struct QueryKeyValue {
    Tensor q, k, v;  // [B, Hq, T, hd], [B, Hkv, T, hd], [B, Hkv, T, hd]; q and k rotated
  };
  QueryKeyValue query_key_value(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin);
  // x + attend(norm(x)), then the MLP around its residual.
  template <class Attend>
  Tensor residual_block(const Tensor& x, Attend attend);
  Tensor attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin,
                   const nn::attention::BlockMask& mask, nn::attention::KVCache* cache);
  Tensor decode_attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin, const Tensor& input_pos,
                          nn::attention::KVCache& cache, int64_t window);
  Tensor mlp(const Tensor& h);
  Tensor rotate(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin) const;
  const Tensor& weight(WeightRole role) const { return weights_[static_cast<size_t>(role)]; }
  // project() on the weight with `role`, plus its LoRA adapter if it has one.
  Tensor projection(const Tensor& x, WeightRole role, const Tensor& bias = {});
  // projection(x, roles[i], weight(biases[i])) for each i: one grouped product (Note [Grouped
  // products]) where the weights are plain [out, in] tensors without adapters.
  std::vector<Tensor> projections(const Tensor& x, std::initializer_list<WeightRole> roles,
                                  std::initializer_list<WeightRole> biases);

  DecoderLayout layout_;
  int64_t heads_, kv_heads_, head_dim_, rotary_dim_, intermediate_;
  double eps_, attention_scale_;
  Activation activation_;
  bool rope_;
  static constexpr size_t kRoles = static_cast<size_t>(WeightRole::kDownBias) + 1;
  std::array<Tensor, kRoles> weights_;
  std::array<std::string, kRoles> names_;
  std::array<LoraAdapter, kRoles> adapters_;
  std::array<quantized::QuantizedWeight, kRoles> quantized_;
};
EMBER_MODULE(DecoderLayer);

}  // namespace ember::models::detail
