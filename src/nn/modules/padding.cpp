// The padding layers: F::pad with the mode their class names.
#include "ember/nn/modules/padding.h"

#include <string>
#include <type_traits>

#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

template <typename Options>
PadMode mode_of() {
  if constexpr (std::is_same_v<Options, ReflectionPad1dOptions> || std::is_same_v<Options, ReflectionPad2dOptions> ||
                std::is_same_v<Options, ReflectionPad3dOptions>)
    return enumtype::kReflect{};
  else if constexpr (std::is_same_v<Options, ReplicationPad1dOptions> ||
                     std::is_same_v<Options, ReplicationPad2dOptions> ||
                     std::is_same_v<Options, ReplicationPad3dOptions>)
    return enumtype::kReplicate{};
  else
    return enumtype::kConstant{};
}

template <typename Options>
const char* kind_of() {
  if constexpr (std::is_same_v<Options, ZeroPad2dOptions>) return "ZeroPad";
  static const char* const names[] = {"ConstantPad", "ReflectionPad", "ReplicationPad"};
  return names[mode_of<Options>().index()];
}

template <typename Options>
double value_of(const Options& options) {
  if constexpr (requires { options.value(); }) return options.value();
  else return 0.0;
}

}  // namespace

template <size_t D, typename Options>
Tensor PadNdImpl<D, Options>::forward(const Tensor& input) {
  const IntArrayRef padding = options.padding();
  return functional::pad(input, PadFuncOptions(padding.vec()).mode(mode_of<Options>()).value(value_of(options)));
}

template <size_t D, typename Options>
void PadNdImpl<D, Options>::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::" << kind_of<Options>() << D << "d(padding=" << IntArrayRef(options.padding());
  if constexpr (requires { options.value(); }) stream << ", value=" << options.value();
  stream << ")";
}

template class PadNdImpl<1, ReflectionPad1dOptions>;
template class PadNdImpl<2, ReflectionPad2dOptions>;
template class PadNdImpl<3, ReflectionPad3dOptions>;
template class PadNdImpl<1, ReplicationPad1dOptions>;
template class PadNdImpl<2, ReplicationPad2dOptions>;
template class PadNdImpl<3, ReplicationPad3dOptions>;
template class PadNdImpl<2, ZeroPad2dOptions>;
template class PadNdImpl<1, ConstantPad1dOptions>;
template class PadNdImpl<2, ConstantPad2dOptions>;
template class PadNdImpl<3, ConstantPad3dOptions>;

}  // namespace ember::nn
