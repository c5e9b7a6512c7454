// Conv1d/2d/3d and ConvTranspose1d/2d/3d: one implementation each over the number of spatial
// dims.
#pragma once
#include <optional>

#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
#include "ember/nn/options.h"

namespace ember::nn {

// weight [out, in / groups, *kernel] ~ kaiming_uniform(a=sqrt(5)); bias [out] ~
// U(+-1/sqrt(fan_in)), fan_in = in / groups * prod(kernel), as PyTorch. A padding_mode other
// than kZeros pads the input with F::pad first, then convolves without padding.
template <size_t D>
class ConvNdImpl : public Module {
 public:
  explicit ConvNdImpl(const ConvOptions<D>& options);

  // input [N, in, *spatial] (or [in, *spatial]) -> [N, out, *spatial_out].
  Tensor forward(const Tensor& input);
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  ConvOptions<D> options;
  Tensor weight;
  Tensor bias;  // undefined when options.bias() is false

 protected:
  // Registers weight and bias and initialises them: the constructor's work, and reset()'s in a clone.
  void register_parameters();
};

class Conv1dImpl : public Cloneable<Conv1dImpl, ConvNdImpl<1>> {
 public:
  using Cloneable::Cloneable;
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Cloneable(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(Conv1d);

class Conv2dImpl : public Cloneable<Conv2dImpl, ConvNdImpl<2>> {
 public:
  using Cloneable::Cloneable;
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Cloneable(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(Conv2d);

class Conv3dImpl : public Cloneable<Conv3dImpl, ConvNdImpl<3>> {
 public:
  using Cloneable::Cloneable;
  Conv3dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<3> kernel_size)
      : Cloneable(Conv3dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(Conv3d);

// weight [in, out / groups, *kernel] ~ kaiming_uniform(a=sqrt(5)); bias [out] ~
// U(+-1/sqrt(fan_in)) with fan_in = out / groups * prod(kernel) (the weight's dim 1), as
// PyTorch. Only padding_mode kZeros.
template <size_t D>
class ConvTransposeNdImpl : public Module {
 public:
  explicit ConvTransposeNdImpl(const ConvTransposeOptions<D>& options);

  // input [N, in, *spatial] (or [in, *spatial]) -> [N, out, *spatial_out]. output_size (D
  // or D + 2 values) picks the output_padding that gives that size; it must lie within
  // [min, min + stride - 1] with min = (in - 1) * stride - 2 * padding + dilation *
  // (kernel - 1) + 1 (PyTorch's Python formula; libtorch's C++ one leaves out the dilation).
  Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(std::optional<IntArrayRef>())})
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  ConvTransposeOptions<D> options;
  Tensor weight;
  Tensor bias;  // undefined when options.bias() is false

 protected:
  // Registers weight and bias and initialises them: the constructor's work, and reset()'s in a clone.
  void register_parameters();
};

class ConvTranspose1dImpl : public Cloneable<ConvTranspose1dImpl, ConvTransposeNdImpl<1>> {
 public:
  using Cloneable::Cloneable;
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Cloneable(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public Cloneable<ConvTranspose2dImpl, ConvTransposeNdImpl<2>> {
 public:
  using Cloneable::Cloneable;
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Cloneable(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(ConvTranspose2d);

class ConvTranspose3dImpl : public Cloneable<ConvTranspose3dImpl, ConvTransposeNdImpl<3>> {
 public:
  using Cloneable::Cloneable;
  ConvTranspose3dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<3> kernel_size)
      : Cloneable(ConvTranspose3dOptions(in_channels, out_channels, kernel_size)) {}
  void reset() override { register_parameters(); }
};
EMBER_MODULE(ConvTranspose3d);

extern template class ConvNdImpl<1>;
extern template class ConvNdImpl<2>;
extern template class ConvNdImpl<3>;
extern template class ConvTransposeNdImpl<1>;
extern template class ConvTransposeNdImpl<2>;
extern template class ConvTransposeNdImpl<3>;

}  // namespace ember::nn
