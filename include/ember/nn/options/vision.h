// Options of the vision layers (convolution, padding, pooling, batch norm), as libtorch's
// torch::nn::Conv2dOptions, PadFuncOptions, MaxPool2dOptions, BatchNormOptions, ...
// Where ember differs: ConvOptions has no transposed/output_padding (the transposed
// convolutions have their own ConvTransposeOptions, as libtorch's modules do), and adaptive
// pooling sizes are plain ExpandingArrays (no "None" entries).
#pragma once
#include <optional>
#include <variant>
#include <vector>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/nn/expanding_array.h"
#include "ember/tensor.h"

namespace ember::nn {

// ---- convolution ------------------------------------------------------------------------------

// The padding of a convolution: per-dim values, kValid (none) or kSame (output size = input
// size; stride 1 only; PyTorch puts the odd extra one on the right for even kernels).
template <size_t D>
using ConvPadding = std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame>;
using ConvPaddingMode = std::variant<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;

// The padding setter shared by the module and functional options: .padding(1),
// .padding({1, 2}) or .padding(ember::kSame).
template <size_t D, typename Self>
class ConvPaddingArg {
 public:
  Self& padding(ExpandingArray<D> values) { return set(values); }
  Self& padding(enumtype::kValid) { return set(enumtype::kValid{}); }
  Self& padding(enumtype::kSame) { return set(enumtype::kSame{}); }
  const ConvPadding<D>& padding() const { return padding_; }

 private:
  Self& set(ConvPadding<D> value) {
    padding_ = std::move(value);
    return static_cast<Self&>(*this);
  }
  ConvPadding<D> padding_ = ExpandingArray<D>(0);
};

template <size_t D>
struct ConvOptions : ConvPaddingArg<D, ConvOptions<D>> {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(ConvPaddingMode, padding_mode) = enumtype::kZeros{};
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

template <size_t D>
struct ConvFuncOptions : ConvPaddingArg<D, ConvFuncOptions<D>> {
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

// The transposed convolution (the gradient of a convolution with respect to its input):
// weight [in_channels, out_channels / groups, *kernel]; output size per dim
// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1. Only
// kZeros padding_mode exists, as in PyTorch.
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  // Added to one side of the output; must be smaller than the stride or the dilation.
  EMBER_ARG(ExpandingArray<D>, output_padding) = 0;
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(ConvPaddingMode, padding_mode) = enumtype::kZeros{};
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

template <size_t D>
struct ConvTransposeFuncOptions {
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, output_padding) = 0;
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

// ---- padding ----------------------------------------------------------------------------------

using PadMode = std::variant<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;

// pad: (before, after) pairs from the last dim backwards, as F.pad; negative values crop.
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  EMBER_ARG(std::vector<int64_t>, pad);
  EMBER_ARG(PadMode, mode) = enumtype::kConstant{};
  EMBER_ARG(double, value) = 0;
};

// ---- pooling ----------------------------------------------------------------------------------

// stride defaults to kernel_size.
template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;
using MaxPool1dFuncOptions = MaxPoolOptions<1>;
using MaxPool2dFuncOptions = MaxPoolOptions<2>;
using MaxPool3dFuncOptions = MaxPoolOptions<3>;

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(bool, ceil_mode) = false;
  EMBER_ARG(bool, count_include_pad) = true;
  EMBER_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
// divisor_override is ignored by 1-d pooling, as PyTorch's avg_pool1d has none.
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;
using AvgPool1dFuncOptions = AvgPoolOptions<1>;
using AvgPool2dFuncOptions = AvgPoolOptions<2>;
using AvgPool3dFuncOptions = AvgPoolOptions<3>;

template <size_t D>
struct AdaptivePoolOptions {
  AdaptivePoolOptions(ExpandingArray<D> output_size) : output_size_(output_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, output_size);
};
using AdaptiveAvgPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveAvgPool2dOptions = AdaptivePoolOptions<2>;
using AdaptiveAvgPool3dOptions = AdaptivePoolOptions<3>;
using AdaptiveMaxPool1dOptions = AdaptivePoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptivePoolOptions<2>;
using AdaptiveMaxPool3dOptions = AdaptivePoolOptions<3>;
using AdaptiveAvgPool1dFuncOptions = AdaptivePoolOptions<1>;
using AdaptiveAvgPool2dFuncOptions = AdaptivePoolOptions<2>;
using AdaptiveAvgPool3dFuncOptions = AdaptivePoolOptions<3>;
using AdaptiveMaxPool1dFuncOptions = AdaptivePoolOptions<1>;
using AdaptiveMaxPool2dFuncOptions = AdaptivePoolOptions<2>;
using AdaptiveMaxPool3dFuncOptions = AdaptivePoolOptions<3>;

// ---- batch norm -------------------------------------------------------------------------------

// momentum unset: running stats are the cumulative average over num_batches_tracked.
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_ARG(bool, affine) = true;
  EMBER_ARG(bool, track_running_stats) = true;
};

// One options type for every rank, as libtorch's.
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

struct BatchNormFuncOptions {
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_ARG(double, eps) = 1e-5;
};

// ---- more pooling ----------------------------------------------------------------------------

// (sum over the window of x^p)^(1/p): avg_pool of x^p times the window size, to the 1/p.
template <size_t D>
struct LPPoolOptions {
  LPPoolOptions(double norm_type, ExpandingArray<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_ARG(double, norm_type);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(bool, ceil_mode) = false;
};
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;
using LPPool1dFuncOptions = LPPoolOptions<1>;
using LPPool2dFuncOptions = LPPoolOptions<2>;

// The inverse of max pooling: each value goes to the position its index names in an output
// of (in - 1) * stride - 2 * padding + kernel_size per spatial dim (or output_size).
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;

template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  // The output's size: D spatial values, or the whole shape (its last D values are used).
  EMBER_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;

// Fractional max pooling (Graham, 2014): windows of kernel_size at pseudo-random increasing
// starts; the output size is output_size, or output_ratio times the input's (one of the two).
// _random_samples [N, C, D] in [0, 1) fixes the starts (drawn when undefined).
template <size_t D>
using ExpandingArrayDouble = ExpandingArray<D, double>;

template <size_t D>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(std::optional<ExpandingArray<D>>, output_size) = std::nullopt;
  EMBER_ARG(std::optional<ExpandingArrayDouble<D>>, output_ratio) = std::nullopt;
  EMBER_ARG(Tensor, _random_samples) = {};
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;
using FractionalMaxPool2dFuncOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dFuncOptions = FractionalMaxPoolOptions<3>;

// ---- rearranging ------------------------------------------------------------------------------

// [*, C * r^2, H, W] -> [*, C, H * r, W * r].
struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  EMBER_ARG(int64_t, upscale_factor);
};
using PixelShuffleFuncOptions = PixelShuffleOptions;

// [*, C, H * r, W * r] -> [*, C * r^2, H, W], the inverse of PixelShuffle.
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  EMBER_ARG(int64_t, downscale_factor);
};
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;

// Sliding blocks: unfold [N, C, H, W] -> [N, C * kh * kw, L] (L blocks), fold the sum back.
struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  EMBER_ARG(ExpandingArray<2>, output_size);
  EMBER_ARG(ExpandingArray<2>, kernel_size);
  EMBER_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_ARG(ExpandingArray<2>, stride) = 1;
};
using FoldFuncOptions = FoldOptions;

struct UnfoldOptions {
  UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(ExpandingArray<2>, kernel_size);
  EMBER_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_ARG(ExpandingArray<2>, stride) = 1;
};
using UnfoldFuncOptions = UnfoldOptions;

// ---- sampling ---------------------------------------------------------------------------------

using GridSampleMode = std::variant<enumtype::kBilinear, enumtype::kNearest>;
using GridSamplePaddingMode = std::variant<enumtype::kZeros, enumtype::kBorder, enumtype::kReflection>;

struct GridSampleFuncOptions {
  EMBER_ARG(GridSampleMode, mode) = enumtype::kBilinear{};
  EMBER_ARG(GridSamplePaddingMode, padding_mode) = enumtype::kZeros{};
  // true: -1 and 1 are the centres of the corner pixels; unset means false.
  EMBER_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// ---- normalisation ----------------------------------------------------------------------------

// x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta.
struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT
  EMBER_ARG(int64_t, size);
  EMBER_ARG(double, alpha) = 1e-4;
  EMBER_ARG(double, beta) = 0.75;
  EMBER_ARG(double, k) = 1.0;
};
using LocalResponseNormFuncOptions = LocalResponseNormOptions;

namespace functional {
using nn::FoldFuncOptions;
using nn::FractionalMaxPool2dFuncOptions;
using nn::FractionalMaxPool3dFuncOptions;
using nn::GridSampleFuncOptions;
using nn::LocalResponseNormFuncOptions;
using nn::LPPool1dFuncOptions;
using nn::LPPool2dFuncOptions;
using nn::MaxUnpool1dFuncOptions;
using nn::MaxUnpool2dFuncOptions;
using nn::MaxUnpool3dFuncOptions;
using nn::PixelShuffleFuncOptions;
using nn::PixelUnshuffleFuncOptions;
using nn::UnfoldFuncOptions;
using nn::ConvTranspose1dFuncOptions;
using nn::ConvTranspose2dFuncOptions;
using nn::ConvTranspose3dFuncOptions;
using nn::AdaptiveAvgPool1dFuncOptions;
using nn::AdaptiveAvgPool2dFuncOptions;
using nn::AdaptiveAvgPool3dFuncOptions;
using nn::AdaptiveMaxPool1dFuncOptions;
using nn::AdaptiveMaxPool2dFuncOptions;
using nn::AdaptiveMaxPool3dFuncOptions;
using nn::AvgPool1dFuncOptions;
using nn::AvgPool2dFuncOptions;
using nn::AvgPool3dFuncOptions;
using nn::BatchNormFuncOptions;
using nn::Conv1dFuncOptions;
using nn::Conv2dFuncOptions;
using nn::Conv3dFuncOptions;
using nn::MaxPool1dFuncOptions;
using nn::MaxPool2dFuncOptions;
using nn::MaxPool3dFuncOptions;
using nn::PadFuncOptions;
}  // namespace functional

}  // namespace ember::nn
