// Options of nn::Upsample and F::interpolate, as libtorch's torch::nn::UpsampleOptions and
// InterpolateFuncOptions (same fields and defaults). Where ember differs: the mode is an
// InterpolateMode built from the same constants (ember::kNearest, kLinear, kBilinear,
// kTrilinear, kBicubic, kArea, kNearestExact) rather than a std::variant, because ember's
// kLinear is the Nonlinearity value that nn::init also takes; kBicubic and antialias are not
// implemented (an error says so).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/arg.h"
#include "ember/nn/enums.h"

namespace ember::nn {

class InterpolateMode {
 public:
  enum class Kind { Nearest, NearestExact, Linear, Bilinear, Bicubic, Trilinear, Area };
  InterpolateMode(enumtype::kNearest) : kind_(Kind::Nearest) {}            // NOLINT
  InterpolateMode(enumtype::kNearestExact) : kind_(Kind::NearestExact) {}  // NOLINT
  InterpolateMode(enumtype::kBilinear) : kind_(Kind::Bilinear) {}          // NOLINT
  InterpolateMode(enumtype::kBicubic) : kind_(Kind::Bicubic) {}            // NOLINT
  InterpolateMode(enumtype::kTrilinear) : kind_(Kind::Trilinear) {}        // NOLINT
  InterpolateMode(enumtype::kArea) : kind_(Kind::Area) {}                  // NOLINT
  // ember::kLinear; any other Nonlinearity is an error.
  InterpolateMode(Nonlinearity linear);  // NOLINT
  Kind kind() const { return kind_; }
  // PyTorch's name of the mode ("nearest", "bilinear", ...).
  const char* name() const;

 private:
  Kind kind_;
};

struct UpsampleOptions {
  // The output's spatial size, one value per spatial dim.
  EMBER_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  // Multipliers of the spatial sizes, one per spatial dim (output = floor(input * factor)).
  EMBER_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  EMBER_ARG(InterpolateMode, mode) = enumtype::kNearest{};
  // Linear modes: true maps the corner pixels' centres onto each other; unset means false.
  EMBER_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

struct InterpolateFuncOptions {
  EMBER_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  EMBER_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  EMBER_ARG(InterpolateMode, mode) = enumtype::kNearest{};
  EMBER_ARG(std::optional<bool>, align_corners) = std::nullopt;
  // true: the kernel's scale is recomputed from the sizes instead of using scale_factor.
  EMBER_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  EMBER_ARG(bool, antialias) = false;
};

namespace functional {
using nn::InterpolateFuncOptions;
}  // namespace functional

}  // namespace ember::nn
