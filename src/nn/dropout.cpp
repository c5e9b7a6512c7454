// Channel-wise dropout over 1-3 spatial dims (F::dropout1d/2d/3d): one mask value per
// (sample, channel), broadcast over the spatial dims.
#include <string>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {
namespace {

Tensor feature_dropout(const Tensor& input, const DropoutFuncOptions& options, int64_t spatial_dims, const char* op) {
  const double p = options.p();
  EMBER_CHECK(p >= 0 && p <= 1, op, "dropout probability has to be between 0 and 1, but got ", p);
  EMBER_CHECK(input.dim() == spatial_dims + 1 || input.dim() == spatial_dims + 2, op, "expected an input [N, C, ",
              spatial_dims, " spatial dims] or unbatched [C, ", spatial_dims, " spatial dims], got ", input.dim(),
              " dimensions ", input.sizes());
  if (!options.training() || p == 0) return input;
  if (p == 1) return input * zeros({}, input.scalar_type());
  // The mask keeps the batch and channel dims (the channel alone when unbatched).
  std::vector<int64_t> mask_shape = input.sizes();
  for (int64_t d = 0; d < spatial_dims; ++d) mask_shape[mask_shape.size() - 1 - d] = 1;
  Tensor mask = bernoulli(empty(mask_shape, input.scalar_type()), 1 - p).div_(1 - p);
  return input * mask;
}

}  // namespace

Tensor dropout1d(const Tensor& input, const Dropout1dFuncOptions& options) {
  return feature_dropout(input, options, 1, "dropout1d");
}
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& options) {
  return feature_dropout(input, options, 2, "dropout2d");
}
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& options) {
  return feature_dropout(input, options, 3, "dropout3d");
}

}  // namespace ember::nn::functional
