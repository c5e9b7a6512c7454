// The padding layers (F::pad with a fixed mode and padding), as libtorch's
// torch::nn::ReflectionPad1d ... ConstantPad3d; no parameters.
#pragma once
#include <type_traits>

#include "ember/nn/module.h"
#include "ember/nn/options.h"
#include "ember/nn/options/padding.h"

namespace ember::nn {

// One template per mode over the padded rank D; Options holds `padding` (and `value`).
template <size_t D, typename Options>
class PadNdImpl : public Module {
 public:
  explicit PadNdImpl(const Options& options) : options(options) {}
  explicit PadNdImpl(ExpandingArray<D * 2> padding)
    requires std::is_constructible_v<Options, ExpandingArray<D * 2>>
      : options(padding) {}
  PadNdImpl(ExpandingArray<D * 2> padding, double value)
    requires std::is_constructible_v<Options, ExpandingArray<D * 2>, double>
      : options(padding, value) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  Options options;
};

#define EMBER_PAD_MODULE(Name, D, Options)               \
  class Name##Impl : public PadNdImpl<D, Options> {      \
   public:                                               \
    using PadNdImpl<D, Options>::PadNdImpl;              \
  };                                                     \
  EMBER_MODULE(Name)

EMBER_PAD_MODULE(ReflectionPad1d, 1, ReflectionPad1dOptions);
EMBER_PAD_MODULE(ReflectionPad2d, 2, ReflectionPad2dOptions);
EMBER_PAD_MODULE(ReflectionPad3d, 3, ReflectionPad3dOptions);
EMBER_PAD_MODULE(ReplicationPad1d, 1, ReplicationPad1dOptions);
EMBER_PAD_MODULE(ReplicationPad2d, 2, ReplicationPad2dOptions);
EMBER_PAD_MODULE(ReplicationPad3d, 3, ReplicationPad3dOptions);
EMBER_PAD_MODULE(ZeroPad2d, 2, ZeroPad2dOptions);
EMBER_PAD_MODULE(ConstantPad1d, 1, ConstantPad1dOptions);
EMBER_PAD_MODULE(ConstantPad2d, 2, ConstantPad2dOptions);
EMBER_PAD_MODULE(ConstantPad3d, 3, ConstantPad3dOptions);
#undef EMBER_PAD_MODULE

}  // namespace ember::nn
