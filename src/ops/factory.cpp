// Tensor factories.
#include <cmath>
#include <cstring>
#include <optional>

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

// `values` are stored as `storage` (their C++ type), then converted to the options' dtype: a
// 1-dim tensor of n values, or `sizes` when given (one value with sizes {} is 0-dim).
template <typename T>
Tensor from_values(const T* values, size_t n, const TensorOptions& options, ScalarType storage,
                   std::optional<std::vector<int64_t>> sizes = std::nullopt) {
  check_device_available(options.device(), "tensor");
  Tensor t = core::make_tensor(sizes.value_or(std::vector<int64_t>{static_cast<int64_t>(n)}), storage);
  core::launch("tensor", [&] {
    return [copied = std::vector<T>(values, values + n), out = static_cast<T*>(t.data_ptr())] {
      std::copy(copied.begin(), copied.end(), out);
    };
  });
  return finish(t.to(options.dtype()), options);
}

}  // namespace

Tensor empty(IntArrayRef sizes, const TensorOptions& options) {
  core::check_sizes(sizes, "empty");
  return finish(core::make_tensor(sizes, dtype_or(options, kFloat32, "empty")), options);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
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
  ScalarType dtype = dtype_or(options, kFloat32, "empty_strided");
  Tensor base = core::make_tensor({empty_tensor ? 0 : extent}, dtype);
  return finish(core::make_view(base.storage(), sizes.vec(), strides.vec(), 0, dtype), options);
}

Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options) {
  core::check_sizes(sizes, "full");
  ScalarType natural = value.isFloatingPoint() ? kFloat32 : value.isBoolean() ? kBool : kInt64;
  Tensor t = core::make_tensor(sizes, dtype_or(options, natural, "full"));
  ops::copy_into(t, ops::scalar_to_tensor(value, t.scalar_type()));
  return finish(t, options);
}

Tensor zeros(IntArrayRef sizes, const TensorOptions& options) {
  core::check_sizes(sizes, "zeros");
  Tensor t = core::make_tensor(sizes, dtype_or(options, kFloat32, "zeros"));
  core::launch("zeros", [&] { return [p = t.data_ptr(), n = t.nbytes()] { std::memset(p, 0, n); }; });
  return finish(t, options);
}

Tensor ones(IntArrayRef sizes, const TensorOptions& options) {
  core::check_sizes(sizes, "ones");
  return full(sizes, 1, options.has_dtype() ? options : options.dtype(kFloat32));
}

Tensor arange(const Scalar& end, const TensorOptions& options) { return arange(0, end, 1, options); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  const bool floating = start.isFloatingPoint() || end.isFloatingPoint() || step.isFloatingPoint();
  ScalarType dtype = dtype_or(options, floating ? kFloat32 : kInt64, "arange");
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
  return finish(values.to(dtype_or(options, kFloat32, "linspace")), options);
}

Tensor eye(int64_t n, const TensorOptions& options) { return eye(n, n, options); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& options) {
  EMBER_CHECK(n >= 0 && m >= 0, "eye", "n and m must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, options.dtype(dtype_or(options, kFloat32, "eye")).requires_grad(false));
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
  return finish(ops::scalar_to_tensor(value, dtype_or(options, kFloat32, "scalar_tensor")), options);
}

Tensor tensor(std::initializer_list<double> v, const TensorOptions& o) { return from_values(v.begin(), v.size(), o, kFloat64); }
Tensor tensor(std::initializer_list<float> v, const TensorOptions& o) { return from_values(v.begin(), v.size(), o, kFloat32); }
Tensor tensor(std::initializer_list<int64_t> v, const TensorOptions& o) { return from_values(v.begin(), v.size(), o, kInt64); }
Tensor tensor(std::initializer_list<int> v, const TensorOptions& o) {
  std::vector<int64_t> wide(v.begin(), v.end());
  return from_values(wide.data(), wide.size(), o, kInt64);
}
Tensor tensor(std::initializer_list<bool> v, const TensorOptions& o) { return from_values(v.begin(), v.size(), o, kBool); }
Tensor tensor(const std::vector<double>& v, const TensorOptions& o) { return from_values(v.data(), v.size(), o, kFloat64); }
Tensor tensor(const std::vector<float>& v, const TensorOptions& o) { return from_values(v.data(), v.size(), o, kFloat32); }
Tensor tensor(const std::vector<int64_t>& v, const TensorOptions& o) { return from_values(v.data(), v.size(), o, kInt64); }
Tensor tensor(double value, const TensorOptions& o) { return from_values(&value, 1, o, kFloat64, std::vector<int64_t>{}); }
Tensor tensor(int64_t value, const TensorOptions& o) { return from_values(&value, 1, o, kInt64, std::vector<int64_t>{}); }
Tensor tensor(int value, const TensorOptions& o) { return tensor(static_cast<int64_t>(value), o); }
Tensor tensor(bool value, const TensorOptions& o) { return from_values(&value, 1, o, kBool, std::vector<int64_t>{}); }

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  return from_blob(data, sizes, core::contiguous_strides(sizes.vec()), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  EMBER_CHECK(sizes.size() == strides.size(), "from_blob", "sizes ", sizes, " and strides ", strides,
              " differ in length");
  core::check_sizes(sizes, "from_blob");
  ScalarType dtype = dtype_or(options, kFloat32, "from_blob");
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
  core::check_sizes(sizes, "from_blob");
  ScalarType dtype = dtype_or(options, kFloat32, "from_blob");
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  Storage storage = Storage::borrow(data, static_cast<size_t>(numel) * element_size(dtype), std::move(deleter));
  return finish(core::make_view(storage, sizes.vec(), core::contiguous_strides(sizes.vec()), 0, dtype), options);
}

}  // namespace ember
