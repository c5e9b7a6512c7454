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

// `values` (row-major, of shape `sizes`) are stored as `storage` (their C++ type), then
// converted to the options' dtype.
template <typename T>
Tensor from_values(const std::vector<T>& values, IntArrayRef sizes, const TensorOptions& options, ScalarType storage) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  check_device_available(options.device(), "tensor");
  Tensor t = core::make_tensor(sizes.vec(), storage);
  core::launch("tensor", [&] {
    return [copied = values, out = static_cast<T*>(t.data_ptr())] {
      std::copy(copied.begin(), copied.end(), out);
    };
  });
  return finish(t.to(options.dtype()), options);
}

}  // namespace

Tensor empty(IntArrayRef sizes, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "empty");
  return finish(core::make_tensor(sizes, dtype_or(options, kFloat32, "empty")), options);
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
  ScalarType dtype = dtype_or(options, kFloat32, "empty_strided");
  Tensor base = core::make_tensor({empty_tensor ? 0 : extent}, dtype);
  return finish(core::make_view(base.storage(), sizes.vec(), strides.vec(), 0, dtype), options);
}

Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "full");
  ScalarType natural = value.isFloatingPoint() ? kFloat32 : value.isBoolean() ? kBool : kInt64;
  Tensor t = core::make_tensor(sizes, dtype_or(options, natural, "full"));
  ops::copy_into(t, ops::scalar_to_tensor(value, t.scalar_type()));
  return finish(t, options);
}

Tensor zeros(IntArrayRef sizes, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
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

Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options) {
  return arange(start, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
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
  return finish(values.to(dtype_or(options, kFloat32, "linspace")), options);
}

Tensor eye(int64_t n, const TensorOptions& options) { return eye(n, n, options); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
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
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  return finish(ops::scalar_to_tensor(value, dtype_or(options, kFloat32, "scalar_tensor")), options);
}

namespace {

std::string position_name(const std::vector<int64_t>& position) {
  if (position.empty()) return "the value";
  std::string out = "element ";
  for (int64_t i : position) {
    out += '[';
    out += std::to_string(i);
    out += ']';
  }
  return out;
}

// The values of a nested list in row-major order, its sizes taken along the first elements
// and every other list checked against them.
struct NestedValues {
  std::vector<int64_t> sizes;
  std::vector<Scalar> values;
  std::vector<ScalarType> source_types;

  explicit NestedValues(const detail::TensorDataContainer& data) {
    for (const auto* node = &data; !node->is_scalar(); node = &node->elements().front()) {
      sizes.push_back(node->is_tensor() ? node->tensor().numel() : static_cast<int64_t>(node->elements().size()));
      if (node->is_tensor() || node->elements().empty()) break;
    }
    std::vector<int64_t> position;
    visit(data, position);
  }

  void visit(const detail::TensorDataContainer& node, std::vector<int64_t>& position) {
    const size_t depth = position.size();
    if (node.is_scalar()) {
      EMBER_CHECK(depth == sizes.size(), "tensor", "ragged nested list: ", position_name(position),
                  " is a value where a list of ", sizes[depth], " elements was expected (as in element [0]...)");
      add(node.scalar(), node.source_type());
      return;
    }
    const int64_t count = node.is_tensor() ? node.tensor().numel() : static_cast<int64_t>(node.elements().size());
    EMBER_CHECK(depth < sizes.size(), "tensor", "ragged nested list: ", position_name(position), " is a list of ",
                count, " elements where a value was expected (as in element [0]...)");
    EMBER_CHECK(count == sizes[depth], "tensor", "ragged nested list: ", position_name(position), " has ", count,
                " elements, expected ", sizes[depth], " (as in element [0]...)");
    if (node.is_tensor()) {
      EMBER_CHECK(depth + 1 == sizes.size(), "tensor", "ragged nested list: ", position_name(position),
                  " is a vector of values where lists were expected (as in element [0]...)");
      const Tensor& t = node.tensor();
      const bool floating = t.is_floating_point();
      const Tensor wide = t.to(floating ? kFloat64 : kInt64);
      for (int64_t i = 0; i < count; ++i) {
        add(floating ? Scalar(wide.data_ptr<double>()[i]) : Scalar(wide.data_ptr<int64_t>()[i]), node.source_type());
      }
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      position.push_back(i);
      visit(node.elements()[i], position);
      position.pop_back();
    }
  }

  void add(const Scalar& value, ScalarType source_type) {
    values.push_back(value);
    if (std::find(source_types.begin(), source_types.end(), source_type) == source_types.end())
      source_types.push_back(source_type);
  }
};

// torch::tensor's defaults: C++ int and int64 give int64, float and double the default
// float32, other element types their own. Differs from libtorch, which refuses mixed element
// types: they take the widest category, as Python's torch.tensor([1, 2.5]).
ScalarType default_dtype(const std::vector<ScalarType>& source_types) {
  if (source_types.empty()) return kFloat32;
  if (source_types.size() == 1) {
    const ScalarType t = source_types[0];
    return t == kInt32 || t == kInt64 ? kInt64 : t == kFloat32 || t == kFloat64 ? kFloat32 : t;
  }
  bool floating = false, integral = false;
  for (ScalarType t : source_types) {
    floating = floating || is_floating_point(t);
    integral = integral || is_integral(t, /*include_bool=*/false);
  }
  return floating ? kFloat32 : integral ? kInt64 : kBool;
}

}  // namespace

namespace detail {

namespace {
template <typename T>
Tensor vector_tensor(const std::vector<T>& values) {
  const ScalarType dtype = CppTypeToScalarType<T>::value;
  return from_values(values, {static_cast<int64_t>(values.size())}, dtype, dtype);
}
}  // namespace

TensorDataContainer::TensorDataContainer(const std::vector<double>& values) : TensorDataContainer(vector_tensor(values)) {}
TensorDataContainer::TensorDataContainer(const std::vector<float>& values) : TensorDataContainer(vector_tensor(values)) {}
TensorDataContainer::TensorDataContainer(const std::vector<int64_t>& values) : TensorDataContainer(vector_tensor(values)) {}
TensorDataContainer::TensorDataContainer(const std::vector<int32_t>& values) : TensorDataContainer(vector_tensor(values)) {}

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& o) {
  if (data.is_tensor()) {  // a vector: one conversion, no per-value walk
    check_device_available(o.device(), "tensor");
    const ScalarType dtype = o.has_dtype() ? o.dtype() : default_dtype({data.source_type()});
    return finish(data.tensor().to(dtype), o);
  }
  const NestedValues nested(data);
  const ScalarType dtype = o.has_dtype() ? o.dtype() : default_dtype(nested.source_types);
  const TensorOptions options = TensorOptions(o).dtype(dtype);
  const size_t n = nested.values.size();
  if (is_floating_point(dtype)) {
    std::vector<double> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = nested.values[i].toDouble();
    return from_values(values, nested.sizes, options, kFloat64);
  }
  std::vector<int64_t> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = nested.values[i].toLong();
  return from_values(values, nested.sizes, options, kInt64);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
  return from_blob(data, sizes, core::contiguous_strides(sizes.vec()), options);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
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
  core::TracePause constant;  // a factory's result is a constant to an export (Note [Export trace])
  core::check_sizes(sizes, "from_blob");
  ScalarType dtype = dtype_or(options, kFloat32, "from_blob");
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  Storage storage = Storage::borrow(data, static_cast<size_t>(numel) * element_size(dtype), std::move(deleter));
  return finish(core::make_view(storage, sizes.vec(), core::contiguous_strides(sizes.vec()), 0, dtype), options);
}

}  // namespace ember
