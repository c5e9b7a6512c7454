// MaxPool, AvgPool, AdaptiveAvgPool, AdaptiveMaxPool over 1-3 spatial dims.
#include "ember/nn/modules/pooling.h"

#include <sstream>
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

// A size as libtorch prints it in the layers that print 1-d sizes as one number.
template <size_t D>
std::string size_text(const ExpandingArray<D>& size) {
  if constexpr (D == 1) return std::to_string(size[0]);
  std::ostringstream text;
  text << IntArrayRef(size);
  return text.str();
}

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

template <size_t D>
Tensor MaxUnpoolNdImpl<D>::forward(const Tensor& input, const Tensor& indices,
                                   const std::optional<std::vector<int64_t>>& output_size) {
  MaxUnpoolFuncOptions<D> f(options.kernel_size());
  f.stride(options.stride()).padding(options.padding()).output_size(output_size);
  if constexpr (D == 1) return F::max_unpool1d(input, indices, f);
  if constexpr (D == 2) return F::max_unpool2d(input, indices, f);
  if constexpr (D == 3) return F::max_unpool3d(input, indices, f);
}
template <size_t D>
void MaxUnpoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("MaxUnpool", D) << "(kernel_size=" << size_text(options.kernel_size())
         << ", stride=" << size_text(options.stride()) << ", padding=" << size_text(options.padding()) << ")";
}

template <size_t D>
Tensor LPPoolNdImpl<D>::forward(const Tensor& input) {
  if constexpr (D == 1) return F::lp_pool1d(input, options);
  if constexpr (D == 2) return F::lp_pool2d(input, options);
}
template <size_t D>
void LPPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("LPPool", D) << "(norm_type=" << options.norm_type()
         << ", kernel_size=" << size_text(options.kernel_size()) << ", stride=" << size_text(options.stride())
         << ", ceil_mode=" << (options.ceil_mode() ? "true" : "false") << ")";
}

template <size_t D>
FractionalMaxPoolNdImpl<D>::FractionalMaxPoolNdImpl(const FractionalMaxPoolOptions<D>& options_) : options(options_) {
  reset();
}
template <size_t D>
void FractionalMaxPoolNdImpl<D>::reset() {
  const std::string name = rank_name("FractionalMaxPool", D);
  const char* op = name.c_str();
  _random_samples = register_buffer("_random_samples", options._random_samples());
  EMBER_CHECK(options.output_size() || options.output_ratio(), op,
              "requires specifying either an output size, or a pooling ratio");
  EMBER_CHECK(!(options.output_size() && options.output_ratio()), op,
              "only one of output_size and output_ratio may be specified");
  if (const auto& ratio = options.output_ratio())
    for (size_t i = 0; i < D; ++i)
      EMBER_CHECK((*ratio)[i] > 0 && (*ratio)[i] < 1, op, "output_ratio must be between 0 and 1 (got ", (*ratio)[i],
                  ")");
}
template <size_t D>
std::tuple<Tensor, Tensor> FractionalMaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) {
  FractionalMaxPoolOptions<D> f = options;
  f._random_samples(_random_samples);
  if constexpr (D == 2) return F::fractional_max_pool2d_with_indices(input, f);
  if constexpr (D == 3) return F::fractional_max_pool3d_with_indices(input, f);
}
template <size_t D>
Tensor FractionalMaxPoolNdImpl<D>::forward(const Tensor& input) {
  return std::get<0>(forward_with_indices(input));
}
template <size_t D>
void FractionalMaxPoolNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << rank_name("FractionalMaxPool", D) << "()";  // libtorch prints no options
}

template class MaxUnpoolNdImpl<1>;
template class MaxUnpoolNdImpl<2>;
template class MaxUnpoolNdImpl<3>;
template class LPPoolNdImpl<1>;
template class LPPoolNdImpl<2>;
template class FractionalMaxPoolNdImpl<2>;
template class FractionalMaxPoolNdImpl<3>;

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
