// One layer of the pretrained decoder, configured by flags (private to src/models): pre-norm
// attention (fused or separate q/k/v, optional biases and qk-norm, RoPE or none, GQA through
// flex attention) and a gated or plain MLP, each around a residual.
#pragma once
#include <array>
#include <string>

#include "decoder_layout.h"
#include "ember/models/pretrained_config.h"
#include "ember/nn.h"
#include "ember/nn/attention/block_mask.h"
#include "ember/nn/attention/kv_cache.h"

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

class DecoderLayerImpl : public nn::Module {
 public:
  DecoderLayerImpl(const PretrainedConfig& config, int64_t index);

  // Registers a checkpoint tensor of this layer; `name` is its key after "model.layers.N.".
  void add_weight(WeightRole role, const std::string& name, Tensor tensor, bool requires_grad);

  // x [B, T, hidden] -> [B, T, hidden]. rope_cos/rope_sin [T, rotary_dim / 2] in x's dtype
  // (undefined without RoPE). With a cache, the new keys and values join it and the queries
  // attend to everything cached under `mask`.
  Tensor forward(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin, const nn::attention::BlockMask& mask,
                 nn::attention::KVCache* cache);

 private:
  Tensor attention(const Tensor& h, const Tensor& rope_cos, const Tensor& rope_sin,
                   const nn::attention::BlockMask& mask, nn::attention::KVCache* cache);
  Tensor mlp(const Tensor& h);
  Tensor rotate(const Tensor& x, const Tensor& rope_cos, const Tensor& rope_sin) const;
  const Tensor& weight(WeightRole role) const { return weights_[static_cast<size_t>(role)]; }

  DecoderLayout layout_;
  int64_t heads_, kv_heads_, head_dim_, rotary_dim_, intermediate_;
  double eps_, attention_scale_;
  Activation activation_;
  bool rope_;
  std::array<Tensor, static_cast<size_t>(WeightRole::kDownBias) + 1> weights_;
};
EMBER_MODULE(DecoderLayer);

}  // namespace ember::models::detail
