// Conv1d, Conv2d, Conv3d.
#include "ember/nn/modules/conv.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "nn/conv.h"

namespace ember::nn {
namespace {

constexpr const char* kConvNames[] = {"", "Conv1d", "Conv2d", "Conv3d"};

template <size_t D>
std::vector<int64_t> kernel_of(const ConvOptions<D>& options) {
  return {options.kernel_size()->begin(), options.kernel_size()->end()};
}

}  // namespace

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_) : options(options_) {
  const char* name = kConvNames[D];
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  EMBER_CHECK(groups > 0, name, "groups must be positive, got ", groups);
  EMBER_CHECK(in > 0 && in % groups == 0, name, "in_channels (", in, ") must be positive and divisible by groups (",
              groups, ")");
  EMBER_CHECK(out > 0 && out % groups == 0, name, "out_channels (", out,
              ") must be positive and divisible by groups (", groups, ")");
  for (size_t d = 0; d < D; ++d) {
    EMBER_CHECK(options.kernel_size()[d] > 0, name, "kernel_size must be positive, got ",
                IntArrayRef(options.kernel_size()));
    if (const auto* padding = std::get_if<ExpandingArray<D>>(&options.padding()))
      EMBER_CHECK((*padding)[d] >= 0, name, "negative padding is not supported, got ", IntArrayRef(*padding));
  }
  // Checks kSame against the stride now rather than at the first forward.
  detail::pad_amounts<D>(options.padding(), kernel_of(options), options.dilation(), options.stride(), name);
  std::vector<int64_t> shape = {out, in / groups};
  for (int64_t k : kernel_of(options)) shape.push_back(k);
  weight = register_parameter("weight", ember::empty(shape));
  bias = register_parameter("bias", options.bias() ? ember::empty({out}) : Tensor(), options.bias());
  reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D>
Tensor ConvNdImpl<D>::forward(const Tensor& input) {
  ConvFuncOptions<D> conv;
  conv.bias(bias).stride(options.stride()).dilation(options.dilation()).groups(options.groups());
  Tensor x = input;
  if (std::holds_alternative<enumtype::kZeros>(options.padding_mode())) {
    std::visit([&](const auto& padding) { conv.padding(padding); }, options.padding());
  } else {
    const auto pads = detail::pad_amounts<D>(options.padding(), kernel_of(options), options.dilation(),
                                             options.stride(), kConvNames[D]);
    const PadMode mode = std::visit(
        [](auto m) -> PadMode {
          if constexpr (std::is_same_v<decltype(m), enumtype::kZeros>) {
            return enumtype::kConstant{};
          } else {
            return m;
          }
        },
        options.padding_mode());
    x = functional::pad(input, PadFuncOptions(pads.pad_list()).mode(mode));
    conv.padding(kValid);
  }
  if constexpr (D == 1) return functional::conv1d(x, weight, conv);
  if constexpr (D == 2) return functional::conv2d(x, weight, conv);
  if constexpr (D == 3) return functional::conv3d(x, weight, conv);
}

template <size_t D>
void ConvNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << kConvNames[D] << "(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=" << IntArrayRef(options.kernel_size()) << ", stride=" << IntArrayRef(options.stride());
  if (const auto* padding = std::get_if<ExpandingArray<D>>(&options.padding()))
    stream << ", padding=" << IntArrayRef(*padding);
  else
    stream << ", padding=" << (std::holds_alternative<enumtype::kSame>(options.padding()) ? "same" : "valid");
  if (options.groups() != 1) stream << ", groups=" << options.groups();
  if (!options.bias()) stream << ", bias=false";
  stream << ")";
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;

}  // namespace ember::nn
