// nn::Upsample.
#include "ember/nn/modules/upsampling.h"

#include <cctype>
#include <string>

#include "ember/nn/functional.h"

namespace ember::nn {

UpsampleImpl::UpsampleImpl(const UpsampleOptions& options_) : options(options_) {
  const auto kind = options.mode().kind();
  EMBER_CHECK(kind != InterpolateMode::Kind::Area && kind != InterpolateMode::Kind::NearestExact, "Upsample",
              "mode must be kNearest, kLinear, kBilinear, kBicubic or kTrilinear, got '", options.mode().name(), "'");
}

Tensor UpsampleImpl::forward(const Tensor& input) {
  return functional::interpolate(input, InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

void UpsampleImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Upsample(";
  if (options.scale_factor()) {
    stream << "scale_factor=[";
    for (size_t i = 0; i < options.scale_factor()->size(); ++i)
      stream << (i ? ", " : "") << (*options.scale_factor())[i];
    stream << "]";
  } else if (options.size()) {
    stream << "size=" << IntArrayRef(*options.size());
  }
  // The mode as its enum's name (kBilinear), as libtorch's.
  const std::string mode = options.mode().name();
  stream << ", mode=k" << static_cast<char>(std::toupper(static_cast<unsigned char>(mode[0]))) << mode.substr(1) << ")";
}

}  // namespace ember::nn
