// F::max_pool1d/2d/3d, avg_pool*, adaptive_*: options onto ember's pooling ops.
#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return std::get<0>(max_pool1d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return ember::max_pool1d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options) {
  return ember::avg_pool1d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad());
}
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options) {
  return ember::adaptive_avg_pool1d(input, options.output_size());
}
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options) {
  return ember::adaptive_max_pool1d(input, options.output_size());
}

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return std::get<0>(max_pool2d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return ember::max_pool2d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return ember::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad(), options.divisor_override());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
  return ember::adaptive_avg_pool2d(input, options.output_size());
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
  return ember::adaptive_max_pool2d(input, options.output_size());
}

Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& options) {
  return std::get<0>(max_pool3d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, const MaxPool3dFuncOptions& options) {
  return ember::max_pool3d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                        options.dilation(), options.ceil_mode());
}
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& options) {
  return ember::avg_pool3d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                           options.count_include_pad(), options.divisor_override());
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& options) {
  return ember::adaptive_avg_pool3d(input, options.output_size());
}
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, options));
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options) {
  return ember::adaptive_max_pool3d(input, options.output_size());
}

}  // namespace ember::nn::functional
