// MaxPool, AvgPool, AdaptiveAvgPool, AdaptiveMaxPool over 1-3 spatial dims.
#include "ember/nn/modules/pooling.h"

#include <string>

#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

namespace F = functional;

// The functional form of each rank, picked at compile time.
template <size_t D>
std::tuple<Tensor, Tensor> max_pool(const Tensor& x, const MaxPoolOptions<D>& o) {
  if constexpr (D == 1) return F::max_pool1d_with_indices(x, o);
  if constexpr (D == 2) return F::max_pool2d_with_indices(x, o);
  if constexpr (D == 3) return F::max_pool3d_with_indices(x, o);
}
template <size_t D>
Tensor avg_pool(const Tensor& x, const AvgPoolOptions<D>& o) {
  if constexpr (D == 1) return F::avg_pool1d(x, o);
  if constexpr (D == 2) return F::avg_pool2d(x, o);
  if constexpr (D == 3) return F::avg_pool3d(x, o);
}
template <size_t D>
Tensor adaptive_avg_pool(const Tensor& x, const AdaptivePoolOptions<D>& o) {
  if constexpr (D == 1) return F::adaptive_avg_pool1d(x, o);
  if constexpr (D == 2) return F::adaptive_avg_pool2d(x, o);
  if constexpr (D == 3) return F::adaptive_avg_pool3d(x, o);
}
template <size_t D>
std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& x, const AdaptivePoolOptions<D>& o) {
  if constexpr (D == 1) return F::adaptive_max_pool1d_with_indices(x, o);
  if constexpr (D == 2) return F::adaptive_max_pool2d_with_indices(x, o);
  if constexpr (D == 3) return F::adaptive_max_pool3d_with_indices(x, o);
}

std::string rank_name(const char* kind, size_t d) { return std::string(kind) + std::to_string(d) + "d"; }

}  // namespace

template <size_t D>
Tensor MaxPoolNdImpl<D>::forward(const Tensor& input) { return std::get<0>(max_pool<D>(input, options)); }
template <size_t D>
std::tuple<Tensor, Tensor> MaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) {
  return max_pool<D>(input, options);
}
template <size_t D>
void MaxPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("MaxPool", D) << "(kernel_size=" << options.kernel_size()
         << ", stride=" << options.stride() << ", padding=" << options.padding()
         << ", dilation=" << options.dilation()
         << ", ceil_mode=" << (options.ceil_mode() ? "true" : "false") << ")";
}

template <size_t D>
Tensor AvgPoolNdImpl<D>::forward(const Tensor& input) { return avg_pool<D>(input, options); }
template <size_t D>
void AvgPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("AvgPool", D) << "(kernel_size=" << options.kernel_size()
         << ", stride=" << options.stride() << ", padding=" << options.padding() << ")";
}

template <size_t D>
Tensor AdaptiveAvgPoolNdImpl<D>::forward(const Tensor& input) { return adaptive_avg_pool<D>(input, options); }
template <size_t D>
void AdaptiveAvgPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("AdaptiveAvgPool", D) << "(output_size=" << options.output_size() << ")";
}

template <size_t D>
Tensor AdaptiveMaxPoolNdImpl<D>::forward(const Tensor& input) {
  return std::get<0>(adaptive_max_pool<D>(input, options));
}
template <size_t D>
std::tuple<Tensor, Tensor> AdaptiveMaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) {
  return adaptive_max_pool<D>(input, options);
}
template <size_t D>
void AdaptiveMaxPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("AdaptiveMaxPool", D) << "(output_size=" << options.output_size() << ")";
}

template class MaxPoolNdImpl<1>;
template class MaxPoolNdImpl<2>;
template class MaxPoolNdImpl<3>;
template class AvgPoolNdImpl<1>;
template class AvgPoolNdImpl<2>;
template class AvgPoolNdImpl<3>;
template class AdaptiveAvgPoolNdImpl<1>;
template class AdaptiveAvgPoolNdImpl<2>;
template class AdaptiveAvgPoolNdImpl<3>;
template class AdaptiveMaxPoolNdImpl<1>;
template class AdaptiveMaxPoolNdImpl<2>;
template class AdaptiveMaxPoolNdImpl<3>;

}  // namespace ember::nn
