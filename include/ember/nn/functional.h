// ember::nn::functional: the stateless forms of the layers and losses, as
// torch::nn::functional (namespace alias F in user code: namespace F = ember::nn::functional).
#pragma once
#include <tuple>

#include "ember/nn/options.h"
#include "ember/tensor.h"

namespace ember::nn::functional {

// ---- layers ---------------------------------------------------------------------------------
// input [*, in], weight [out, in], bias [out] -> [*, out].
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// input: integer indices of any shape, weight [num_embeddings, dim] -> [*input, dim].
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options = {});
// [*tensor, num_classes] int64 (num_classes -1: max + 1), as ember::one_hot.
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);
// Normalises over the trailing dims named by normalized_shape: (x - mean) / sqrt(var + eps)
// with the biased variance, then * weight + bias. Reduced-precision inputs compute in float32.
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
// x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims, as one fused
// kernel computing in float32 for float16/bfloat16. A weight of another dtype promotes the
// result. First-order gradients only (create_graph=true throws).
Tensor rms_norm(const Tensor& input, const RMSNormFuncOptions& options);
// Rotary position embedding, fused. x [..., T, head_dim] (any layout), cos and sin
// [T, head_dim / 2]: with x1, x2 the first and second halves of the last dim,
//   out = cat(x1 * cos - x2 * sin, x1 * sin + x2 * cos, -1)
// (cos and sin broadcast over the leading dims). The result is contiguous in x's dtype; cos
// and sin are read in x's compute type (float32 for float16/bfloat16). They are position
// tables and get no gradient: passing ones that require grad throws. x gets gradients of any
// order.
Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor dropout(const Tensor& input, const DropoutFuncOptions& options = {});

// ---- vision (input [N, C, *spatial] or unbatched [C, *spatial]) --------------------------------
// Convolutions as ember::conv1d/2d/3d, with padding kSame / kValid too; kSame with an even
// kernel pads one more at the end, as PyTorch.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options = {});
// Pads the trailing dims by options.pad() (before, after pairs from the last dim backwards);
// kReflect needs pads < the dim's size, kCircular pads <= it. Differentiable (index_select).
Tensor pad(const Tensor& input, const PadFuncOptions& options);
// Pooling over 1, 2 or 3 spatial dims (avg_pool1d ignores divisor_override).
Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options);
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options);
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options);
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options);
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options);
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options);
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options);
// Normalises each channel (dim 1) of input [N, C, *]: with the batch's mean and biased
// variance when training (then running_mean/running_var, if defined, move by momentum, the
// variance unbiased; momentum unset is not allowed here), else with the running stats.
// Then * weight + bias [C]. Composed of ordinary ops: gradients of any order.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});

// ---- activations -----------------------------------------------------------------------------
Tensor relu(const Tensor& input);
Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& input);
// silu(a) * b in one pass (the gate of a SwiGLU feed-forward); a and b have the same shape,
// mixed dtypes promote. First-order gradients only (create_graph=true throws).
Tensor swiglu(const Tensor& a, const Tensor& b);
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

// ---- losses ---------------------------------------------------------------------------------
// input: logits [N, C] or [C] or [N, C, d1, ...]. target: class indices (int64, [N] or
// [N, d1, ...]) or class probabilities (floating, the input's shape). With indices and
// label smoothing eps: loss = (1 - eps) * nll + (eps / C) * (-sum_c w_c * log p_c), zero on
// ignored rows; kMean divides both terms by the summed target weights of the kept rows (NaN
// when none is kept). With probabilities: -sum_c w_c * t_c * log p_c with t smoothed to
// t * (1 - eps) + eps / C; kMean divides by the number of rows.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
// input: log-probabilities [N, C] or [C] or [N, C, d1, ...]; target: class indices.
// loss_i = -weight[t_i] * input[i, t_i]; kMean divides by the summed weights of kept rows.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
// Numerically stable sigmoid + binary cross-entropy:
// loss = weight * ((1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x)).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
// input: log-probabilities. Pointwise t * (log t - input), or exp(t) * (t - input) when
// log_target; kBatchMean divides the sum by input.size(0).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});

}  // namespace ember::nn::functional
