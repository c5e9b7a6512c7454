// F::interpolate: per spatial dim, PyTorch's source indices (and linear weights) are computed
// on the host exactly as aten/src/ATen/native/UpSample.h does (in float for float32 and
// narrower inputs, in double for float64), then applied with index_select, so the gradient is
// index_select's (a scatter-add, as PyTorch's upsample backward kernels).
#include <cmath>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn {

InterpolateMode::InterpolateMode(Nonlinearity linear) : kind_(Kind::Linear) {
  EMBER_CHECK(linear == Nonlinearity::Linear, "interpolate",
              "mode must be kNearest, kLinear, kBilinear, kBicubic, kTrilinear, kArea or kNearestExact, got another "
              "nonlinearity constant");
}

const char* InterpolateMode::name() const {
  switch (kind_) {
    case Kind::Nearest:
      return "nearest";
    case Kind::NearestExact:
      return "nearest-exact";
    case Kind::Linear:
      return "linear";
    case Kind::Bilinear:
      return "bilinear";
    case Kind::Bicubic:
      return "bicubic";
    case Kind::Trilinear:
      return "trilinear";
    case Kind::Area:
      return "area";
  }
  return "unknown";
}

}  // namespace ember::nn

namespace ember::nn::functional {
namespace {

using Kind = InterpolateMode::Kind;

// PyTorch's compute_scales_value: 1 / scale_factor when one is given, else in / out.
template <typename T>
T scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

std::vector<int64_t> nearest_indices(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  std::vector<int64_t> index(static_cast<size_t>(out));
  const float s = scales_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (exact) {
      // (o + 0.5) is a double in PyTorch's formula; floorf rounds the product to float.
      index[o] =
          std::min(static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * s))), in - 1);
    } else if (out == in) {
      index[o] = o;
    } else if (out == 2 * in) {
      index[o] = o >> 1;
    } else {
      index[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
    }
  }
  return index;
}

// out[o] = lambda0[o] * in[index0[o]] + lambda1[o] * in[index1[o]].
struct LinearTaps {
  std::vector<int64_t> index0, index1;
  std::vector<double> lambda0, lambda1;
};

template <typename T>
LinearTaps linear_taps(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  LinearTaps taps;
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scales_value<T>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = o, i1 = o;
    T l0 = 1, l1 = 0;
    if (out != in) {
      T real = align_corners ? ratio * static_cast<T>(o) : ratio * (static_cast<T>(o) + T(0.5)) - T(0.5);
      if (!align_corners && real < 0) real = 0;
      // guard_index_and_lambda (floorf, as PyTorch, for both float and double).
      i0 = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
      l1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
      l0 = T(1) - l1;
    }
    taps.index0.push_back(i0);
    taps.index1.push_back(i1);
    taps.lambda0.push_back(static_cast<double>(l0));
    taps.lambda1.push_back(static_cast<double>(l1));
  }
  return taps;
}

// A [n] vector of weights laid along `dim` of a `dims`-dim tensor.
Tensor along(const std::vector<double>& weights, int64_t dim, int64_t dims, ScalarType dtype) {
  std::vector<int64_t> shape(static_cast<size_t>(dims), 1);
  shape[dim] = static_cast<int64_t>(weights.size());
  return tensor(weights, dtype).view(shape);
}

int64_t mode_dims(Kind kind) {
  switch (kind) {
    case Kind::Linear:
      return 1;
    case Kind::Bilinear:
    case Kind::Bicubic:
      return 2;
    case Kind::Trilinear:
      return 3;
    default:
      return 0;  // any
  }
}

// libtorch's name of the mode's tag (kNearest, kBilinear, ...), which its messages print.
const char* enum_name(Kind kind) {
  switch (kind) {
    case Kind::Nearest: return "kNearest";
    case Kind::NearestExact: return "kNearestExact";
    case Kind::Linear: return "kLinear";
    case Kind::Bilinear: return "kBilinear";
    case Kind::Bicubic: return "kBicubic";
    case Kind::Trilinear: return "kTrilinear";
    case Kind::Area: return "kArea";
  }
  return "unknown";
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  const char* op = "interpolate";
  const InterpolateMode mode = options.mode();
  const Kind kind = mode.kind();
  EMBER_CHECK(input.dim() >= 3 && input.dim() <= 5, op, "Input Error: Only 3D, 4D and 5D input Tensors supported (got ",
              input.dim(), "D) for the modes: nearest | linear | bilinear | bicubic | trilinear (got ",
              enum_name(kind), "); input shape ", input.sizes());
  EMBER_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", dtype_name(input.scalar_type()));
  const int64_t spatial = input.dim() - 2;
  EMBER_CHECK(mode_dims(kind) == 0 || mode_dims(kind) == spatial, op, "got ", input.dim(), "-d input, but mode '",
              mode.name(), "' needs ", mode_dims(kind) + 2, "-d input");
  EMBER_CHECK(kind != Kind::Bicubic, op, "mode 'bicubic' is not implemented in ember");
  EMBER_CHECK(!options.antialias(), op, "antialias=true is not implemented in ember");
  const bool linear = kind == Kind::Linear || kind == Kind::Bilinear || kind == Kind::Trilinear;
  EMBER_CHECK(linear || !options.align_corners().has_value(), op,
              "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
              "trilinear (got mode '",
              mode.name(), "')");
  const auto& size = options.size();
  const auto& scale_factor = options.scale_factor();
  EMBER_CHECK(
      size.has_value() != scale_factor.has_value(), op,
      size ? "only one of size or scale_factor should be defined" : "either size or scale_factor should be defined");
  if (size) {
    EMBER_CHECK(static_cast<int64_t>(size->size()) == spatial, op, "size ", IntArrayRef(*size),
                " must have one value per spatial dim (", spatial, ") of input ", input.sizes());
  } else {
    EMBER_CHECK(static_cast<int64_t>(scale_factor->size()) == spatial, op,
                "scale_factor shape must match input shape. Input is ", spatial, "D, scale_factor size is ",
                *scale_factor, " (", scale_factor->size(), " values for input ", input.sizes(), ")");
  }
  std::vector<int64_t> out_sizes;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t in = input.size(2 + i);
    const int64_t out =
        size ? (*size)[i] : static_cast<int64_t>(std::floor(static_cast<double>(in) * (*scale_factor)[i]));
    EMBER_CHECK(in > 0 && out > 0, op, "input and output sizes should be greater than 0, got input ", input.sizes(),
                " and output spatial size ", out, " at spatial dim ", i, scale_factor ? " (from scale_factor)" : "");
    out_sizes.push_back(out);
  }
  if (kind == Kind::Area) {
    if (spatial == 1) return ember::adaptive_avg_pool1d(input, out_sizes);
    if (spatial == 2) return ember::adaptive_avg_pool2d(input, out_sizes);
    return ember::adaptive_avg_pool3d(input, out_sizes);
  }
  const bool use_scale = scale_factor.has_value() && !options.recompute_scale_factor().value_or(false);
  const ScalarType dtype = input.scalar_type();
  const ScalarType compute = dtype == kFloat64 ? kFloat64 : kFloat32;
  Tensor out = input.to(compute);
  for (int64_t i = spatial - 1; i >= 0; --i) {  // innermost first, as PyTorch's nested lerps
    const int64_t dim = 2 + i, in = input.size(dim);
    const std::optional<double> scale = use_scale ? std::optional<double>((*scale_factor)[i]) : std::nullopt;
    if (!linear) {
      const auto index = nearest_indices(in, out_sizes[i], scale, kind == Kind::NearestExact);
      out = out.index_select(dim, tensor(index));
      continue;
    }
    const bool align_corners = options.align_corners().value_or(false);
    const LinearTaps taps = compute == kFloat64 ? linear_taps<double>(in, out_sizes[i], scale, align_corners)
                                                : linear_taps<float>(in, out_sizes[i], scale, align_corners);
    out = out.index_select(dim, tensor(taps.index0)) * along(taps.lambda0, dim, out.dim(), compute) +
          out.index_select(dim, tensor(taps.index1)) * along(taps.lambda1, dim, out.dim(), compute);
  }
  return out.to(dtype);
}

}  // namespace ember::nn::functional
