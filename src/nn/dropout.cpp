// Channel-wise and alpha dropout (F::dropout1d/2d/3d, F::alpha_dropout,
// F::feature_alpha_dropout) with PyTorch's masks (aten/src/ATen/native/Dropout.cpp): a feature
// mask has one value per (sample, channel), broadcast over the other dims.
#include <cmath>
#include <string>

#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "nn/activation.h"

namespace ember::nn::functional {
namespace {

void check_probability(double p, const char* op) {
  EMBER_CHECK(p >= 0 && p <= 1, op, "dropout probability has to be between 0 and 1, but got ", p);
}

using nn::detail::maybe_inplace;

// PyTorch's _dropout_impl: a Bernoulli(1 - p) mask of the input's shape, or [N, C, 1, ...]
// for feature dropout; plain dropout scales kept values by 1 / (1 - p), alpha dropout maps
// dropped values to SELU's negative saturation and rescales so that a zero-mean,
// unit-variance input keeps its mean and variance.
Tensor dropout_impl(const Tensor& input, double p, bool training, bool inplace, bool feature, bool alpha,
                    const char* op) {
  check_probability(p, op);
  if (p == 0 || !training || input.numel() == 0) return input;
  if (p == 1) return maybe_inplace(input, input * zeros({}, input.scalar_type()), inplace);
  std::vector<int64_t> mask_shape = input.sizes().vec();
  if (feature) {
    EMBER_CHECK(input.dim() >= 2, op, "feature dropout requires at least 2 dimensions in the input, got shape ",
                input.sizes());
    for (size_t d = 2; d < mask_shape.size(); ++d) mask_shape[d] = 1;
  }
  Tensor keep = bernoulli(empty(mask_shape, input.scalar_type()), 1 - p);
  if (!alpha) return maybe_inplace(input, input * keep.div_(1 - p), inplace);
  constexpr double kSeluSaturation = 1.7580993408473766;  // -alpha * scale of SELU
  const double a = 1 / std::sqrt((kSeluSaturation * kSeluSaturation * p + 1) * (1 - p));
  Tensor shift = (keep - 1) * (kSeluSaturation * a) + kSeluSaturation * a * p;
  return maybe_inplace(input, input * (keep * a) + shift, inplace);
}

// dropout1d/2d/3d: an input of one dim less than [N, C, *spatial] is unbatched [C, *spatial]
// and gets a batch dim of 1; any other rank is read as [N, C, ...] (PyTorch's feature dropout).
Tensor dropout_nd(const Tensor& input, const DropoutFuncOptions& options, int64_t batched_dim, const char* op) {
  check_probability(options.p(), op);
  if (input.dim() != batched_dim - 1) {
    return dropout_impl(input, options.p(), options.training(), options.inplace(), true, false, op);
  }
  Tensor result =
      dropout_impl(input.unsqueeze(0), options.p(), options.training(), false, true, false, op).squeeze(0);
  return maybe_inplace(input, result, options.inplace() && options.training());
}

}  // namespace

Tensor dropout(const Tensor& input, const DropoutFuncOptions& options) {
  check_probability(options.p(), "dropout");
  return maybe_inplace(input, ember::dropout(input, options.p(), options.training()),
                       options.inplace() && options.training());
}

Tensor dropout1d(const Tensor& input, const Dropout1dFuncOptions& options) {
  const char* op = "dropout1d";
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op,
              "expected an input [N, C, L] or unbatched [C, L], got ", input.dim(), " dimensions ", input.sizes());
  return dropout_nd(input, options, 3, op);
}
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& options) {
  return dropout_nd(input, options, 4, "dropout2d");
}
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& options) {
  return dropout_nd(input, options, 5, "dropout3d");
}

namespace detail {

Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  return dropout_impl(input, p, training, inplace, false, true, "alpha_dropout");
}

Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  return dropout_impl(input, p, training, inplace, true, true, "feature_alpha_dropout");
}

}  // namespace detail

Tensor alpha_dropout(const Tensor& input, const AlphaDropoutFuncOptions& options) {
  return detail::alpha_dropout(input, options.p(), options.training(), options.inplace());
}

Tensor feature_alpha_dropout(const Tensor& input, const FeatureAlphaDropoutFuncOptions& options) {
  return detail::feature_alpha_dropout(input, options.p(), options.training(), options.inplace());
}

}  // namespace ember::nn::functional
