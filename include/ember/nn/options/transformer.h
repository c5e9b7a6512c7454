// Options of MultiheadAttention and the Transformer modules, as libtorch's
// torch::nn::MultiheadAttentionOptions, MultiheadAttentionForwardFuncOptions,
// TransformerEncoderLayerOptions, TransformerDecoderLayerOptions, TransformerEncoderOptions,
// TransformerDecoderOptions and TransformerOptions, with the same defaults. Where ember
// differs: batch_first (MultiheadAttention and the layers), norm_first and layer_norm_eps
// (the layers) come from PyTorch's Python modules, which libtorch lacks; the activation is an
// ember::TransformerActivation built from ember::kReLU, ember::kGELU or a function.
#pragma once
#include <cstdint>
#include <functional>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/tensor.h"

namespace ember::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  EMBER_ARG(int64_t, embed_dim);
  EMBER_ARG(int64_t, num_heads);
  // Dropout on the attention weights in training mode.
  EMBER_ARG(double, dropout) = 0.0;
  // Biases of the input and output projections.
  EMBER_ARG(bool, bias) = true;
  // Learnt bias_k, bias_v [1, 1, embed_dim] appended to the keys and values.
  EMBER_ARG(bool, add_bias_kv) = false;
  // A zero key and value appended after the projections.
  EMBER_ARG(bool, add_zero_attn) = false;
  EMBER_ARG(int64_t, kdim);
  EMBER_ARG(int64_t, vdim);
  // Inputs and output as [N, L, E] instead of [L, N, E].
  EMBER_ARG(bool, batch_first) = false;
};

struct MultiheadAttentionForwardFuncOptions {
  MultiheadAttentionForwardFuncOptions(int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight,
                                       Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                       double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
      : embed_dim_to_check_(embed_dim_to_check),
        num_heads_(num_heads),
        in_proj_weight_(std::move(in_proj_weight)),
        in_proj_bias_(std::move(in_proj_bias)),
        bias_k_(std::move(bias_k)),
        bias_v_(std::move(bias_v)),
        add_zero_attn_(add_zero_attn),
        dropout_p_(dropout_p),
        out_proj_weight_(std::move(out_proj_weight)),
        out_proj_bias_(std::move(out_proj_bias)) {}
  EMBER_ARG(int64_t, embed_dim_to_check);
  EMBER_ARG(int64_t, num_heads);
  EMBER_ARG(Tensor, in_proj_weight);
  EMBER_ARG(Tensor, in_proj_bias);
  EMBER_ARG(Tensor, bias_k);
  EMBER_ARG(Tensor, bias_v);
  EMBER_ARG(bool, add_zero_attn);
  EMBER_ARG(double, dropout_p);
  EMBER_ARG(Tensor, out_proj_weight);
  EMBER_ARG(Tensor, out_proj_bias);
  EMBER_ARG(bool, training) = false;
  // [N, S]: bool (true: the key is ignored) or floating (added to the scores).
  EMBER_ARG(Tensor, key_padding_mask) = {};
  EMBER_ARG(bool, need_weights) = true;
  // [L, S] or [N * num_heads, L, S]: bool (true: not attended) or floating (added).
  EMBER_ARG(Tensor, attn_mask) = {};
  EMBER_ARG(bool, use_separate_proj_weight) = false;
  EMBER_ARG(Tensor, q_proj_weight) = {};
  EMBER_ARG(Tensor, k_proj_weight) = {};
  EMBER_ARG(Tensor, v_proj_weight) = {};
  // Precomputed keys/values [N * num_heads, S, head_dim] used instead of the projections.
  EMBER_ARG(Tensor, static_k) = {};
  EMBER_ARG(Tensor, static_v) = {};
  EMBER_ARG(bool, average_attn_weights) = true;
};

// The feed-forward activation of the transformer layers: ember::kReLU, ember::kGELU or any
// Tensor -> Tensor function.
class TransformerActivation {
 public:
  TransformerActivation(Nonlinearity relu);                              // NOLINT: ember::kReLU only
  TransformerActivation(enumtype::kGELU);                                // NOLINT
  TransformerActivation(std::function<Tensor(const Tensor&)> function);  // NOLINT
  Tensor operator()(const Tensor& x) const;
  const char* name() const;

 private:
  enum class Kind { ReLU, GELU, Function } kind_;
  std::function<Tensor(const Tensor&)> function_;
};

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  EMBER_ARG(int64_t, d_model);
  EMBER_ARG(int64_t, nhead);
  EMBER_ARG(int64_t, dim_feedforward) = 2048;
  EMBER_ARG(double, dropout) = 0.1;
  EMBER_ARG(TransformerActivation, activation) = Nonlinearity::ReLU;
  EMBER_ARG(double, layer_norm_eps) = 1e-5;
  EMBER_ARG(bool, batch_first) = false;
  // LayerNorm before attention and feed-forward (pre-norm) instead of after each residual add.
  EMBER_ARG(bool, norm_first) = false;
};

using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

namespace functional {
using nn::MultiheadAttentionForwardFuncOptions;
}  // namespace functional

}  // namespace ember::nn
