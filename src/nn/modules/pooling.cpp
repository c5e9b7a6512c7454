// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d.
#include "ember/nn/modules/pooling.h"

#include "ember/nn/functional.h"

namespace ember::nn {

Tensor MaxPool2dImpl::forward(const Tensor& input) { return functional::max_pool2d(input, options); }
std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return functional::max_pool2d_with_indices(input, options);
}
void MaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "MaxPool2d(kernel_size=" << IntArrayRef(options.kernel_size()) << ", stride="
         << IntArrayRef(options.stride()) << ", padding=" << IntArrayRef(options.padding()) << ", dilation="
         << IntArrayRef(options.dilation()) << ", ceil_mode=" << (options.ceil_mode() ? "true" : "false") << ")";
}

Tensor AvgPool2dImpl::forward(const Tensor& input) { return functional::avg_pool2d(input, options); }
void AvgPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "AvgPool2d(kernel_size=" << IntArrayRef(options.kernel_size()) << ", stride="
         << IntArrayRef(options.stride()) << ", padding=" << IntArrayRef(options.padding()) << ")";
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) { return functional::adaptive_avg_pool2d(input, options); }
void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "AdaptiveAvgPool2d(output_size=" << IntArrayRef(options.output_size()) << ")";
}

Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& input) { return functional::adaptive_max_pool2d(input, options); }
std::tuple<Tensor, Tensor> AdaptiveMaxPool2dImpl::forward_with_indices(const Tensor& input) {
  return functional::adaptive_max_pool2d_with_indices(input, options);
}
void AdaptiveMaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "AdaptiveMaxPool2d(output_size=" << IntArrayRef(options.output_size()) << ")";
}

}  // namespace ember::nn
