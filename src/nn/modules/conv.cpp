// Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d.
#include "ember/nn/modules/conv.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "nn/conv.h"

namespace ember::nn {
namespace {

constexpr const char* kConvNames[] = {"", "Conv1d", "Conv2d", "Conv3d"};

// What libtorch prints after the padding: the options that differ from their defaults.
template <size_t D>
void print_conv_tail(std::ostream& stream, const ExpandingArray<D>& dilation, const ExpandingArray<D>& output_padding,
                     int64_t groups, bool bias, const ConvPaddingMode& padding_mode) {
  if (*dilation != *ExpandingArray<D>(1)) stream << ", dilation=" << dilation;
  if (*output_padding != *ExpandingArray<D>(0)) stream << ", output_padding=" << output_padding;
  if (groups != 1) stream << ", groups=" << groups;
  if (!bias) stream << ", bias=false";
  if (!std::holds_alternative<enumtype::kZeros>(padding_mode)) {
    stream << ", padding_mode="
           << (std::holds_alternative<enumtype::kReflect>(padding_mode)     ? "kReflect"
               : std::holds_alternative<enumtype::kReplicate>(padding_mode) ? "kReplicate"
                                                                            : "kCircular");
  }
  stream << ")";
}
constexpr const char* kConvTransposeNames[] = {"", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"};

template <typename Options>
std::vector<int64_t> kernel_of(const Options& options) {
  return {options.kernel_size()->begin(), options.kernel_size()->end()};
}

// The channel and kernel checks both kinds share.
void check_conv_arguments(int64_t in, int64_t out, int64_t groups, IntArrayRef kernel, const char* name) {
  EMBER_CHECK(groups > 0, name, "groups must be positive, got ", groups);
  EMBER_CHECK(in > 0 && in % groups == 0, name, "in_channels (", in, ") must be positive and divisible by groups (",
              groups, ")");
  EMBER_CHECK(out > 0 && out % groups == 0, name, "out_channels (", out,
              ") must be positive and divisible by groups (", groups, ")");
  for (int64_t k : kernel) EMBER_CHECK(k > 0, name, "kernel_size must be positive, got ", kernel);
}

// kaiming_uniform(a=sqrt(5)) weight and U(+-1/sqrt(fan_in)) bias, as PyTorch's _ConvNd.
void reset_conv_parameters(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_) : options(options_) {
  const char* name = kConvNames[D];
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  check_conv_arguments(in, out, groups, kernel_of(options), name);
  for (size_t d = 0; d < D; ++d) {
    if (const auto* padding = std::get_if<ExpandingArray<D>>(&options.padding()))
      EMBER_CHECK((*padding)[d] >= 0, name, "negative padding is not supported, got ", IntArrayRef(*padding));
  }
  // Checks kSame against the stride now rather than at the first forward.
  detail::pad_amounts<D>(options.padding(), kernel_of(options), options.dilation(), options.stride(), name);
  register_parameters();
}

template <size_t D>
void ConvNdImpl<D>::register_parameters() {
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  std::vector<int64_t> shape = {out, in / groups};
  for (int64_t k : kernel_of(options)) shape.push_back(k);
  weight = register_parameter("weight", ember::empty(shape));
  bias = register_parameter("bias", options.bias() ? ember::empty({out}) : Tensor(), options.bias());
  reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
  reset_conv_parameters(weight, bias);
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
  stream << "ember::nn::" << kConvNames[D] << "(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=" << options.kernel_size() << ", stride=" << options.stride();
  if (const auto* padding = std::get_if<ExpandingArray<D>>(&options.padding())) {
    if (**padding != *ExpandingArray<D>(0)) stream << ", padding=" << *padding;
  } else {
    stream << ", padding=" << (std::holds_alternative<enumtype::kSame>(options.padding()) ? "'same'" : "'valid'");
  }
  print_conv_tail(stream, options.dilation(), ExpandingArray<D>(0), options.groups(), options.bias(),
                  options.padding_mode());
}

template <size_t D>
ConvTransposeNdImpl<D>::ConvTransposeNdImpl(const ConvTransposeOptions<D>& options_) : options(options_) {
  const char* name = kConvTransposeNames[D];
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  check_conv_arguments(in, out, groups, kernel_of(options), name);
  register_parameters();
}

template <size_t D>
void ConvTransposeNdImpl<D>::register_parameters() {
  const int64_t in = options.in_channels(), out = options.out_channels(), groups = options.groups();
  std::vector<int64_t> shape = {in, out / groups};
  for (int64_t k : kernel_of(options)) shape.push_back(k);
  weight = register_parameter("weight", ember::empty(shape));
  bias = register_parameter("bias", options.bias() ? ember::empty({out}) : Tensor(), options.bias());
  reset_parameters();
}

template <size_t D>
void ConvTransposeNdImpl<D>::reset_parameters() {
  reset_conv_parameters(weight, bias);
}

template <size_t D>
Tensor ConvTransposeNdImpl<D>::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
  const char* name = kConvTransposeNames[D];
  // Checked here, not at construction, as libtorch: such a module can be built and printed.
  EMBER_CHECK(std::holds_alternative<enumtype::kZeros>(options.padding_mode()), name,
              "only padding_mode kZeros is supported for transposed convolutions");
  std::vector<int64_t> output_padding(options.output_padding()->begin(), options.output_padding()->end());
  if (output_size) {
    IntArrayRef requested = *output_size;
    const int64_t spatial = static_cast<int64_t>(D);
    EMBER_CHECK(input.defined() && input.dim() >= spatial + 1, name, "expected an input [N, C, *spatial] or ",
                "[C, *spatial], got ", input.defined() ? input.sizes() : IntArrayRef());
    if (static_cast<int64_t>(requested.size()) == spatial + 2)
      requested = IntArrayRef(requested.data() + 2, static_cast<size_t>(spatial));
    EMBER_CHECK(static_cast<int64_t>(requested.size()) == spatial, name, "output_size must have ", spatial, " or ",
                spatial + 2, " values, got ", *output_size);
    const int64_t first_spatial = input.dim() - spatial;
    std::vector<int64_t> min_sizes, max_sizes;
    for (int64_t d = 0; d < spatial; ++d) {
      const int64_t min_size = (input.size(first_spatial + d) - 1) * options.stride()[d] - 2 * options.padding()[d] +
                               options.dilation()[d] * (options.kernel_size()[d] - 1) + 1;
      min_sizes.push_back(min_size);
      max_sizes.push_back(min_size + options.stride()[d] - 1);
    }
    for (int64_t d = 0; d < spatial; ++d) {
      EMBER_CHECK(requested[d] >= min_sizes[d] && requested[d] <= max_sizes[d], name, "requested an output_size of ",
                  requested, ", but valid sizes range from ", IntArrayRef(min_sizes), " to ", IntArrayRef(max_sizes),
                  " (for an input of ", input.sizes(), ")");
      output_padding[d] = requested[d] - min_sizes[d];
    }
  }
  ConvTransposeFuncOptions<D> conv;
  conv.bias(bias).stride(options.stride()).padding(options.padding()).groups(options.groups())
      .dilation(options.dilation());
  std::copy(output_padding.begin(), output_padding.end(), conv.output_padding()->begin());
  if constexpr (D == 1) return functional::conv_transpose1d(input, weight, conv);
  if constexpr (D == 2) return functional::conv_transpose2d(input, weight, conv);
  if constexpr (D == 3) return functional::conv_transpose3d(input, weight, conv);
}

template <size_t D>
void ConvTransposeNdImpl<D>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << kConvTransposeNames[D] << "(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=" << options.kernel_size() << ", stride=" << options.stride();
  if (*options.padding() != *ExpandingArray<D>(0)) stream << ", padding=" << options.padding();
  print_conv_tail(stream, options.dilation(), options.output_padding(), options.groups(), options.bias(),
                  options.padding_mode());
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;
template class ConvTransposeNdImpl<1>;
template class ConvTransposeNdImpl<2>;
template class ConvTransposeNdImpl<3>;

}  // namespace ember::nn
