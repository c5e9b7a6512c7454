// F::conv_transpose1d/2d/3d over ember::conv_transpose1d/2d/3d (src/ops/conv.cpp).
#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options) {
  return ember::conv_transpose1d(input, weight, options.bias(), options.stride(), options.padding(),
                                 options.output_padding(), options.groups(), options.dilation());
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options) {
  return ember::conv_transpose2d(input, weight, options.bias(), options.stride(), options.padding(),
                                 options.output_padding(), options.groups(), options.dilation());
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& options) {
  return ember::conv_transpose3d(input, weight, options.bias(), options.stride(), options.padding(),
                                 options.output_padding(), options.groups(), options.dilation());
}

}  // namespace ember::nn::functional
