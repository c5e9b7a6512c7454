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
// The sum, mean or max of each bag of embedding rows: input 1-D with options.offsets() (bag
// starts) or 2-D [B, N] (one bag per row) -> [B, dim]; padding_idx rows are left out (empty
// bags give zeros).
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});
// y = x1^T W x2 + b: input1 [*, in1], input2 [*, in2], weight [out, in1, in2], bias [out].
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});
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
// Zero whole channels: input [N, C, *spatial] times a mask [N, C, 1, ...] of 0 (probability
// p) or 1 / (1 - p) in training; the identity otherwise. An input of one dim less than
// [N, C, *spatial] is unbatched [C, *spatial]; dropout2d/3d read any other rank (at least 2)
// as [N, C, ...], as PyTorch's Python forms and libtorch 1.x do (current libtorch C++ instead
// adds a batch dim to every rank but the batched one). dropout1d takes [N, C, L] or [C, L] only.
Tensor dropout1d(const Tensor& input, const Dropout1dFuncOptions& options = {});
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& options = {});
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& options = {});
// Alpha dropout (training only): dropped values become SELU's negative saturation value
// -1.7581, then out = a * x' + b with a, b such that a zero-mean, unit-variance input keeps
// both; feature_alpha_dropout drops whole channels [N, C, 1, ...].
Tensor alpha_dropout(const Tensor& input, const AlphaDropoutFuncOptions& options = {});
Tensor feature_alpha_dropout(const Tensor& input, const FeatureAlphaDropoutFuncOptions& options = {});
namespace detail {
Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace);
Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, bool inplace);
}  // namespace detail

// ---- vision (input [N, C, *spatial] or unbatched [C, *spatial]) --------------------------------
// Convolutions as ember::conv1d/2d/3d, with padding kSame / kValid too; kSame with an even
// kernel pads one more at the end, as PyTorch.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options = {});
// Transposed convolutions as ember::conv_transpose1d/2d/3d (the adjoint of conv1d/2d/3d
// with the same stride, padding, dilation and groups; weight [in, out / groups, *kernel]).
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options = {});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options = {});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& options = {});
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

// Resizes the spatial dims of input [N, C, *] (1-3 of them) to options.size() or by
// options.scale_factor(), with PyTorch's source-index formulas (aten/src/ATen/native/
// UpSample.h): nearest (floor(dst * scale), in float), nearest-exact (floor((dst + 0.5) *
// scale)), linear/bilinear/trilinear (align_corners: src = dst * (in - 1) / (out - 1); else
// src = max((dst + 0.5) * scale - 0.5, 0)) and area (adaptive average pooling). scale is
// 1 / scale_factor when one is given (and recompute_scale_factor is not true), else in / out.
// Linear modes interpolate one dim at a time, innermost first. Differentiable (index_select).
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});

// Normalises each group of num_groups consecutive channels of input [N, C, *] over its
// channels and positions (biased variance), then * weight + bias [C]. Composed of ordinary ops.
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
// x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta (input [N, C, *];
// integer inputs compute in float32).
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options);
// Normalises each (instance, channel) plane of input [N, C, *] over its positions, as
// batch_norm on the input viewed as [1, N * C, *] (PyTorch's formulation): with
// use_input_stats the running stats, if given, move by momentum towards the mean of the
// instances' statistics (variance unbiased); otherwise they are used to normalise.
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {});

// (sum over each window of x^p)^(1/p), as avg_pool of x^p (libtorch's formula: negative window
// averages give 0).
Tensor lp_pool1d(const Tensor& input, const LPPool1dFuncOptions& options);
Tensor lp_pool2d(const Tensor& input, const LPPool2dFuncOptions& options);
// The inverse of max_pool with indices: each input value lands at its index in a zero output.
Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dFuncOptions& options);
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dFuncOptions& options);
Tensor max_unpool3d(const Tensor& input, const Tensor& indices, const MaxUnpool3dFuncOptions& options);
// Max pooling over windows at PyTorch's pseudo-random starts (one sample in [0, 1) per
// sample, channel and spatial dim, from options._random_samples() or drawn); the indices are
// flat positions within each input plane.
Tensor fractional_max_pool2d(const Tensor& input, const FractionalMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool2dFuncOptions& options);
Tensor fractional_max_pool3d(const Tensor& input, const FractionalMaxPool3dFuncOptions& options);
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input,
                                                              const FractionalMaxPool3dFuncOptions& options);
// [*, C * r^2, H, W] -> [*, C, H * r, W * r] and back.
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options);
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options);
// Sliding blocks: unfold [N, C, H, W] -> [N, C * kh * kw, L]; fold sums [N, C * kh * kw, L] back
// into [N, C, output_size] (unbatched forms without N too).
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options);
Tensor fold(const Tensor& input, const FoldFuncOptions& options);
// theta [N, 2, 3] (size [N, C, H, W]) or [N, 3, 4] (size [N, C, D, H, W]) -> the sampling grid
// [N, H, W, 2] / [N, D, H, W, 3] of theta applied to the output's normalised pixel centres.
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);
// input [N, C, H, W] sampled at grid [N, H_out, W_out, 2] of (x, y) in [-1, 1] -> [N, C, H_out,
// W_out], bilinear or nearest (round half to even), with zeros / border / reflection padding.
// Differs from libtorch: 5-D inputs and bicubic are not supported.
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options = {});

// ---- attention ---------------------------------------------------------------------------------
// PyTorch's multi_head_attention_forward: query [L, N, E] (or [L, E]), key [S, N, kdim], value
// [S, N, vdim] -> (output [L, N, E], weights [N, L, S] averaged over heads, [N, H, L, S]
// without average_attn_weights, undefined when need_weights is false).
std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& options);

// ---- activations -----------------------------------------------------------------------------
Tensor relu(const Tensor& input, const ReLUFuncOptions& options = {});
Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& input);
// silu(a) * b in one pass (the gate of a SwiGLU feed-forward); a and b have the same shape,
// mixed dtypes promote. First-order gradients only (create_graph=true throws).
Tensor swiglu(const Tensor& a, const Tensor& b);
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);
// PyTorch's formulas and gradients (aten/src/ATen/native/Activation.cpp), composed of ember
// ops (gradients of any order). The inplace options write the result into input and return it.
// x > 0 ? x : negative_slope * x.
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options = {});
// x > 0 ? x : alpha * (exp(x) - 1).
Tensor elu(const Tensor& input, const ELUFuncOptions& options = {});
// x > 0 ? x : weight * x; weight [1] or [C] (C = input.size(1), or 1 for inputs of < 2 dims).
Tensor prelu(const Tensor& input, const Tensor& weight);
// min(max(x, 0), 6), with hardtanh's gradient.
Tensor relu6(const Tensor& input, const ReLU6FuncOptions& options = {});
// beta * x > threshold ? x : log(1 + exp(beta * x)) / beta.
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {});
// min(max(x, min_val), max_val) for any bounds (nn::Hardtanh checks min_val < max_val); the
// gradient is zero where x <= min_val or x >= max_val.
Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options = {});
// x * tanh(softplus(x)).
Tensor mish(const Tensor& input);
// a * sigmoid(b) where a and b are the two halves of input along options.dim() (even size).
Tensor glu(const Tensor& input, const GLUFuncOptions& options = {});
// scale * (x > 0 ? x : alpha * (exp(x) - 1)) with PyTorch's scale and alpha.
Tensor selu(const Tensor& input, const SELUFuncOptions& options = {});
// x > 0 ? x : alpha * (exp(x / alpha) - 1).
Tensor celu(const Tensor& input, const CELUFuncOptions& options = {});
// |x| > lambda ? x : 0.
Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options = {});
// x > lambda ? x - lambda : x < -lambda ? x + lambda : 0 (lambda >= 0).
Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options = {});
// x > threshold ? x : value.
Tensor threshold(const Tensor& input, const ThresholdFuncOptions& options);
// x >= 0 ? x : slope * x, slope drawn per element from U[lower, upper] in training, else
// (lower + upper) / 2.
Tensor rrelu(const Tensor& input, const RReLUFuncOptions& options = {});
// log(sigmoid(x)) = -softplus(-x), stable for large |x|.
Tensor logsigmoid(const Tensor& input);
// softmax(-x) along options.dim().
Tensor softmin(const Tensor& input, const SoftminFuncOptions& options);
// x / (1 + |x|).
Tensor softsign(const Tensor& input);
// x - tanh(x).
Tensor tanhshrink(const Tensor& input);
// softmax((logits + g) / tau) along dim with g drawn from the standard Gumbel distribution;
// hard: the one-hot of its argmax in the forward, the soft sample's gradient in the backward.
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options = {});

// ---- distances ------------------------------------------------------------------------------
// <x1, x2> / (max(||x1||, eps) * max(||x2||, eps)) along options.dim() (inputs broadcast).
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options = {});
// ||x1 - x2 + eps||_p over the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options = {});
// input [N, M] -> [N * (N - 1) / 2]: ||x_i - x_j||_p for every i < j, in row-major order.
Tensor pdist(const Tensor& input, double p = 2.0);
// input / max(||input||_p, eps) along options.dim().
Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options = {});

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
// input: probabilities in [0, 1]; target: the input's shape.
// loss = -weight * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
// z = |x - y|: z < beta ? 0.5 z^2 / beta : z - 0.5 beta (beta = 0: the L1 loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {});
// The same with beta given apart, as libtorch's overload; options.beta() must then be unset.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options, double beta);
// z = |x - y|: z < delta ? 0.5 z^2 : delta * (z - 0.5 delta).
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
// max(0, -target * (input1 - input2) + margin); the three have the same number of dims.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options = {});
// max(0, margin + d(a, p) - d(a, n)) with d(x, y) = ||x - y + eps||_p over the last dim
// (with swap, d(a, n) becomes min(d(a, n), d(p, n))).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options = {});
// input1, input2 [N, D] with target [N] (or [D] with a 0-dim target) of 1 / -1:
// cos = <x1, x2> / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)); 1 - cos where t = 1,
// max(0, cos - margin) where t = -1, 0 elsewhere.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options = {});
// Connectionist temporal classification. log_probs [T, N, C] (or [T, C]) of log-softmax
// outputs; targets [N, S] padded or 1-D concatenated (sum of target_lengths); input_lengths
// and target_lengths [N] integer tensors (or 0-dim when unbatched). The forward is the alpha
// recursion in log space; the gradient with respect to log_probs is PyTorch's
// exp(log_probs) - exp(log(alpha * beta) + nll - log_probs) (the gradient through a
// log_softmax, as in PyTorch, so check it through one). First-order gradients only.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options = {});
// max(0, margin + d(a, p) - d(a, n)) with options.distance_function() (default
// F::pairwise_distance); swap as triplet_margin_loss.
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options = {});
// log(1 + exp(-target * input)).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options = {});
// input, target [N, C]: per sample -mean_c w_c (t_c log sigmoid(x_c) + (1 - t_c) log sigmoid(-x_c)).
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options = {});
// input where target != -1, plus max(0, margin - input) where target != 1.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                            const HingeEmbeddingLossFuncOptions& options = {});
// input [N, C] (or [C]), target class indices [N] (or 0-dim):
// sum_{j != y} w_y * max(0, margin - x_y + x_j)^p / C.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options = {});
// input [N, C] (or [C]), target of the same shape holding class indices up to the first -1:
// sum over targets j and other classes k of max(0, 1 - (x_j - x_k)) / C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options = {});
// exp(input) - target * input (log_input), else input - target * log(input + eps); full adds
// Stirling's approximation of log(target!) where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options = {});

}  // namespace ember::nn::functional

namespace ember {

// libtorch's at::embedding_bag: mode 0 sum, 1 mean, 2 max; padding_idx -1 for none. Returns
// (output [B, dim], each index's bag [count], each bag's size [B], max_indices: [B, dim] rows
// of the maxima in mode 2, zeros [B] otherwise). scale_grad_by_freq and sparse must be false.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(const Tensor& weight, const Tensor& indices,
                                                         const Tensor& offsets, bool scale_grad_by_freq = false,
                                                         int64_t mode = 0, bool sparse = false,
                                                         const Tensor& per_sample_weights = {},
                                                         bool include_last_offset = false, int64_t padding_idx = -1);

// The normalisations as libtorch's at:: functions (cudnn_enable is ignored: CPU only).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, bool cudnn_enable = true);
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, bool cudnn_enabled = true);
// The distances as libtorch's at:: functions (F::pairwise_distance / F::cosine_similarity).
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6, bool keepdim = false);
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);

// The losses as libtorch's at:: functions: reduction an int64 (0 none, 1 mean, 2 sum, as
// at::Reduction); the overloads taking ember::Reduction let ported code write
// ember::Reduction::Mean where it wrote at::Reduction::Mean.
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight = {},
                            int64_t reduction = 1);
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight, Reduction reduction);
Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction = 1);
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction reduction);
Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction = 1);
Tensor l1_loss(const Tensor& self, const Tensor& target, Reduction reduction);
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction = 1, double beta = 1.0);
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, Reduction reduction, double beta = 1.0);
Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction = 1, double delta = 1.0);
Tensor huber_loss(const Tensor& self, const Tensor& target, Reduction reduction, double delta = 1.0);
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           int64_t reduction = 1);
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2, double eps = 1e-6, bool swap = false, int64_t reduction = 1);
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             int64_t reduction = 1);
Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight = {}, int64_t reduction = 1,
                int64_t ignore_index = -100);
Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index = -100);
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, int64_t reduction = 1, bool zero_infinity = false);
// The lengths as integer lists, as libtorch's IntArrayRef overload.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths, IntArrayRef target_lengths,
                int64_t blank = 0, int64_t reduction = 1, bool zero_infinity = false);

// at::elu: scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1).
Tensor elu(const Tensor& input, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);

}  // namespace ember
