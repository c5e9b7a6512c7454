// Tensor factories.
#include <cmath>
#include <cstring>
#include <algorithm>
#include <optional>
#include <string>

#include "ops/op_utils.h"

namespace ember {
namespace {

// The dtype a factory `op` creates; every factory comes here, so every one refuses a device
// ember does not have.
ScalarType dtype_or(const TensorOptions& options, ScalarType fallback, const char* op) {
  check_device_available(options.device(), op);
  return options.has_dtype() ? options.dtype() : fallback;
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

TensorOptions like_options(const Tensor& t, const std::optional<TensorOptions>& options) {
  TensorOptions o = options.value_or(TensorOptions());
  return o.has_dtype() ? o : o.dtype(t.scalar_type());
}

}  // namespace

Tensor empty(IntArrayRef sizes, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "empty");
  return finish(core::make_tensor(sizes, dtype_or(options, get_default_dtype_as_scalartype(), "empty")), options);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  EMBER_CHECK(sizes.size() == strides.size(), "empty_strided", "sizes ", sizes, " and strides ", strides,
              " differ in length");
  core::check_sizes(sizes, "empty_strided");
  int64_t extent = 1;
  bool empty_tensor = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(strides[i] >= 0, "empty_strided", "negative stride ", strides[i]);
    if (sizes[i] == 0) empty_tensor = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  ScalarType dtype = dtype_or(options, get_default_dtype_as_scalartype(), "empty_strided");
  Tensor base = core::make_tensor({empty_tensor ? 0 : extent}, dtype);
  return finish(core::make_view(base.storage(), sizes.vec(), strides.vec(), 0, dtype), options);
}

Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "full");
  ScalarType natural = value.isFloatingPoint() ? get_default_dtype_as_scalartype() : value.isBoolean() ? kBool : kInt64;
  Tensor t = core::make_tensor(sizes, dtype_or(options, natural, "full"));
  ops::copy_into(t, ops::scalar_to_tensor(value, t.scalar_type()));
  return finish(t, options);
}

Tensor zeros(IntArrayRef sizes, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "zeros");
  Tensor t = core::make_tensor(sizes, dtype_or(options, get_default_dtype_as_scalartype(), "zeros"));
  core::launch("zeros", [&] { return [p = t.data_ptr(), n = t.nbytes()] { std::memset(p, 0, n); }; });
  return finish(t, options);
}

Tensor ones(IntArrayRef sizes, const TensorOptions& options) {
  core::check_sizes(sizes, "ones");
  return full(sizes, 1, options.has_dtype() ? options : options.dtype(get_default_dtype_as_scalartype()));
}

Tensor arange(const Scalar& end, const TensorOptions& options) { return arange(0, end, 1, options); }
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options) {
  return arange(start, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  const bool floating = start.isFloatingPoint() || end.isFloatingPoint() || step.isFloatingPoint();
  ScalarType dtype = dtype_or(options, floating ? get_default_dtype_as_scalartype() : kInt64, "arange");
  const double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  EMBER_CHECK(st != 0, "arange", "step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "arange", "unsupported range: ", s, " -> ", e);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange", "upper bound and larger bound inconsistent with step sign (start ",
              s, ", end ", e, ", step ", st, ")");
  const int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  Tensor values = core::make_tensor({n}, floating || is_floating_point(dtype) ? kFloat64 : kInt64);
  if (values.scalar_type() == kFloat64) {
    core::launch("arange", [&] {
      return [p = values.data_ptr<double>(), n, s, st] {
        for (int64_t i = 0; i < n; ++i) p[i] = s + st * static_cast<double>(i);
      };
    });
  } else {
    core::launch("arange", [&] {
      return [p = values.data_ptr<int64_t>(), n, first = start.toLong(), delta = step.toLong()] {
        for (int64_t i = 0; i < n; ++i) p[i] = first + delta * i;
      };
    });
  }
  return finish(values.to(dtype), options);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  EMBER_CHECK(steps >= 0, "linspace", "number of steps must be non-negative, got ", steps);
  Tensor values = core::make_tensor({steps}, kFloat64);
  const double s = start.toDouble(), e = end.toDouble();
  const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0;
  // Fill from both ends symmetrically, as PyTorch does, so the last value is exactly `end`;
  // a single step is `start`.
  core::launch("linspace", [&] {
    return [p = values.data_ptr<double>(), steps, s, e, step] {
      const int64_t half = steps / 2;
      for (int64_t i = 0; i < steps; ++i) p[i] = i < half || steps == 1 ? s + step * i : e - step * (steps - 1 - i);
    };
  });
  return finish(values.to(dtype_or(options, get_default_dtype_as_scalartype(), "linspace")), options);
}

Tensor eye(int64_t n, const TensorOptions& options) { return eye(n, n, options); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  EMBER_CHECK(n >= 0 && m >= 0, "eye", "n and m must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, options.dtype(dtype_or(options, get_default_dtype_as_scalartype(), "eye")).requires_grad(false));
  if (std::min(n, m) > 0) t.diagonal().fill_(1);
  return finish(t, options);
}

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> options) { return empty(t.sizes(), like_options(t, options)); }
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> options) { return zeros(t.sizes(), like_options(t, options)); }
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> options) { return ones(t.sizes(), like_options(t, options)); }
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> options) {
  return full(t.sizes(), value, like_options(t, options));
}
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> options) { return rand(t.sizes(), like_options(t, options)); }
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> options) { return randn(t.sizes(), like_options(t, options)); }
Tensor randint_like(const Tensor& t, int64_t high, std::optional<TensorOptions> options) {
  return randint(0, high, t.sizes(), like_options(t, options));
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, std::optional<TensorOptions> options) {
  return randint(low, high, t.sizes(), like_options(t, options));
}

Tensor scalar_tensor(const Scalar& value, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  return finish(ops::scalar_to_tensor(value, dtype_or(options, get_default_dtype_as_scalartype(), "scalar_tensor")), options);
}

namespace detail {

ScalarType tensor_default_dtype(ScalarType source) {
  if (source == kInt32 || source == kInt64) return kInt64;
  if (source == kFloat32 || source == kFloat64) return get_default_dtype_as_scalartype();
  return source;
}

Tensor tensor_from_values(const void* values, int64_t count, ScalarType dtype) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  Tensor t = core::make_tensor({count}, dtype);
  const auto* bytes = static_cast<const char*>(values);
  core::launch("tensor", [&] {
    return [copied = std::vector<char>(bytes, bytes + count * element_size(dtype)), out = t.data_ptr()] {
      std::copy(copied.begin(), copied.end(), static_cast<char*>(out));
    };
  });
  return t;
}

namespace {

// Writes the scalars of a nested list in row-major order, each converted to T.
template <typename T>
void flatten_values(const TensorDataContainer& data, std::vector<T>& out) {
  if (data.is_scalar()) {
    out.push_back(data.scalar().to<T>());
  } else if (data.is_tensor()) {
    const Tensor wide = data.tensor().to(CppTypeToScalarType<T>::value);
    const T* p = wide.data_ptr<T>();
    out.insert(out.end(), p, p + wide.numel());
  } else {
    for (const TensorDataContainer& element : data.init_list()) flatten_values(element, out);
  }
}

// One value as its C++ type streams (float values at float precision, bools as 0 and 1).
void print_value(std::ostream& out, const Scalar& value, ScalarType type) {
  if (type == kFloat64) out << value.toDouble();
  else if (is_floating_point(type)) out << static_cast<float>(value.toDouble());
  else if (type == kBool) out << static_cast<int>(value.toBool());
  else out << value.toLong();
}

}  // namespace

void TensorDataContainer::pretty_print_recursive(std::ostream& out) const {
  if (is_scalar()) return print_value(out, scalar_, scalar_type_);
  out << '{';
  if (is_init_list()) {
    for (size_t i = 0; i < init_list_.size(); ++i) out << (i ? ", " : "") << init_list_[i];
  } else {
    for (int64_t i = 0; i < tensor_.numel(); ++i) {
      out << (i ? ", " : "");
      print_value(out, tensor_[i].item(), scalar_type_);
    }
  }
  out << '}';
}

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& o) {
  check_device_available(o.device(), "tensor");
  const ScalarType dtype = o.has_dtype() ? o.dtype() : detail::tensor_default_dtype(data.scalar_type());
  if (data.is_tensor()) return finish(data.tensor().to(dtype, false, /*copy=*/true), o);
  if (data.is_scalar()) return finish(ops::scalar_to_tensor(data.scalar(), dtype), o);
  // Floating values, or a floating result, go through float64; integers through int64, which
  // keeps int64 values beyond 2^53 exact.
  Tensor values;
  if (is_floating_point(dtype) || is_floating_point(data.scalar_type())) {
    std::vector<double> flat;
    detail::flatten_values(data, flat);
    values = detail::tensor_from_values(flat.data(), static_cast<int64_t>(flat.size()), kFloat64);
  } else {
    std::vector<int64_t> flat;
    detail::flatten_values(data, flat);
    values = detail::tensor_from_values(flat.data(), static_cast<int64_t>(flat.size()), kInt64);
  }
  return finish(values.view(data.sizes()).to(dtype, false, /*copy=*/true), o);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  return from_blob(data, sizes, core::contiguous_strides(sizes.vec()), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  EMBER_CHECK(sizes.size() == strides.size(), "from_blob", "sizes ", sizes, " and strides ", strides,
              " differ in length");
  core::check_sizes(sizes, "from_blob");
  ScalarType dtype = dtype_or(options, get_default_dtype_as_scalartype(), "from_blob");
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(strides[i] >= 0, "from_blob", "negative stride ", strides[i]);
    if (sizes[i] == 0) extent = 0;
  }
  if (extent != 0)
    for (size_t i = 0; i < sizes.size(); ++i) extent += (sizes[i] - 1) * strides[i];
  EMBER_CHECK(data != nullptr || extent == 0, "from_blob", "null data pointer for ", extent, " elements");
  Storage storage = Storage::borrow(data, static_cast<size_t>(extent) * element_size(dtype));
  return finish(core::make_view(storage, sizes.vec(), strides.vec(), 0, dtype), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "from_blob");
  ScalarType dtype = dtype_or(options, get_default_dtype_as_scalartype(), "from_blob");
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  Storage storage = Storage::borrow(data, static_cast<size_t>(numel) * element_size(dtype), std::move(deleter));
  return finish(core::make_view(storage, sizes.vec(), core::contiguous_strides(sizes.vec()), 0, dtype), options);
}

}  // namespace ember
