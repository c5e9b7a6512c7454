// F::conv1d/2d/3d with padding kSame / kValid, and the padding amounts the Conv modules share.
#include "nn/conv.h"

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace detail {

std::vector<int64_t> PadAmounts::pad_list() const {
  std::vector<int64_t> list;
  for (size_t d = before.size(); d-- > 0;) {
    list.push_back(before[d]);
    list.push_back(after[d]);
  }
  return list;
}

PadAmounts pad_amounts(bool same, bool valid, IntArrayRef values, IntArrayRef kernel, IntArrayRef dilation,
                       IntArrayRef stride, const char* op) {
  const size_t rank = kernel.size();
  PadAmounts pads{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  if (valid) return pads;
  for (size_t d = 0; d < rank; ++d) {
    if (same) {
      EMBER_CHECK(stride[d] == 1, op, "padding='same' is not supported for strided convolutions, got stride ",
                  stride);
      const int64_t total = dilation[d] * (kernel[d] - 1);
      pads.before[d] = total / 2;
      pads.after[d] = total - total / 2;
    } else {
      pads.before[d] = pads.after[d] = values[d];
    }
  }
  return pads;
}

}  // namespace detail

namespace functional {
namespace {

using ConvFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                          int64_t);

template <size_t D>
Tensor conv(const Tensor& input, const Tensor& weight, const ConvFuncOptions<D>& options, ConvFn fn, const char* op) {
  EMBER_CHECK(weight.defined() && weight.dim() == static_cast<int64_t>(D) + 2, op, "expected a ", D + 2,
              "-d weight [out_channels, in_channels / groups, *kernel], got ",
              weight.defined() ? weight.sizes() : IntArrayRef());
  const std::vector<int64_t> kernel(weight.sizes().begin() + 2, weight.sizes().end());
  const auto pads = nn::detail::pad_amounts<D>(options.padding(), kernel, options.dilation(), options.stride(), op);
  // An even kernel under kSame pads one more after: that extra zero goes in by F::pad.
  Tensor x = input;
  if (!pads.symmetric()) {
    nn::detail::PadAmounts extra{std::vector<int64_t>(D, 0), std::vector<int64_t>(D, 0)};
    for (size_t d = 0; d < D; ++d) extra.after[d] = pads.after[d] - pads.before[d];
    x = pad(input, PadFuncOptions(extra.pad_list()));
  }
  return fn(x, weight, options.bias(), options.stride(), pads.before, options.dilation(), options.groups());
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
  return conv<1>(input, weight, options, &ember::conv1d, "conv1d");
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
  return conv<2>(input, weight, options, &ember::conv2d, "conv2d");
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options) {
  return conv<3>(input, weight, options, &ember::conv3d, "conv3d");
}

}  // namespace functional
}  // namespace ember::nn
