#include "ops/op_utils.h"

#include <algorithm>
#include <array>

#include "core/tensor_impl.h"
#include "core/trace.h"

namespace ember::ops {

std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, op, "shapes ", a, " and ", b,
                " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

enum Category { kNone = -1, kBoolCat = 0, kIntCat = 1, kFloatCat = 2 };

Category category(ScalarType t) {
  return t == kBool ? kBoolCat : is_floating_point(t) ? kFloatCat : kIntCat;
}

// PyTorch's combine_categories: `lower` only matters if it is of a higher category.
std::optional<ScalarType> combine(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

std::optional<ScalarType> merge(std::optional<ScalarType> state, ScalarType t) {
  return state ? promote_types(*state, t) : t;
}

}  // namespace

ScalarType result_type(const Tensor& a, const Tensor& b) {
  std::optional<ScalarType> dims, zeros;
  for (const Tensor* t : {&a, &b}) {
    if (t->dim() == 0) zeros = merge(zeros, t->scalar_type());
    else dims = merge(dims, t->scalar_type());
  }
  return *combine(dims, zeros);
}

ScalarType result_type(const Tensor& a, const Scalar& b) {
  ScalarType wrapped = b.isFloatingPoint() ? default_floating_dtype() : b.isBoolean() ? kBool : kInt64;
  std::optional<ScalarType> dims, zeros;
  if (a.dim() == 0) zeros = a.scalar_type();
  else dims = a.scalar_type();
  return *combine(dims, combine(zeros, wrapped));
}

bool can_cast(ScalarType from, ScalarType to) {
  return category(from) <= category(to);
}

Tensor scalar_to_tensor(const Scalar& value, ScalarType dtype) {
  core::TracePause constant;  // a scalar operand is a constant to an export (Note [Export trace])
  Tensor t = core::make_tensor({}, dtype);
  core::launch("scalar_to_tensor", [&] {
    char* p = static_cast<char*>(t.data_ptr());
    return [p, dtype, value] {
      switch (dtype) {
        case kBool: *reinterpret_cast<bool*>(p) = value.toBool(); break;
        case kUInt8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(value.toLong()); break;
        case kInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(value.toLong()); break;
        case kInt32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(value.toLong()); break;
        case kInt64: *reinterpret_cast<int64_t*>(p) = value.toLong(); break;
        case kFloat16: *reinterpret_cast<Half*>(p) = Half(static_cast<float>(value.toDouble())); break;
        case kBFloat16: *reinterpret_cast<BFloat16*>(p) = BFloat16(static_cast<float>(value.toDouble())); break;
        case kFloat32: *reinterpret_cast<float*>(p) = static_cast<float>(value.toDouble()); break;
        case kFloat64: *reinterpret_cast<double*>(p) = value.toDouble(); break;
      }
    };
  });
  return t;
}

std::vector<int64_t> broadcast_strides(const Tensor& t, IntArrayRef sizes, const char* op) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  const int64_t lead = n - t.dim();
  EMBER_CHECK(lead >= 0, op, "tensor of shape ", t.sizes(), " cannot be broadcast to ", sizes);
  std::vector<int64_t> strides(n, 0);
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t size = t.size(d);
    EMBER_CHECK(size == sizes[d + lead] || size == 1, op, "tensor of shape ", t.sizes(), " cannot be broadcast to ",
                sizes);
    strides[d + lead] = size == 1 ? 0 : t.stride(d);
  }
  return strides;
}

void run_loop(const Tensor& out, const std::vector<Tensor>& inputs, cpu::InnerLoop loop,
              const cpu::ElementwiseParams& params) {
  core::launch("elementwise", [&] {
    std::vector<std::vector<int64_t>> strides{out.strides()};
    std::vector<int64_t> element_sizes{static_cast<int64_t>(out.element_size())};
    std::array<char*, cpu::kMaxOperands> base{};
    base[0] = static_cast<char*>(out.data_ptr());
    for (size_t k = 0; k < inputs.size(); ++k) {
      strides.push_back(broadcast_strides(inputs[k], out.sizes(), "elementwise"));
      element_sizes.push_back(static_cast<int64_t>(inputs[k].element_size()));
      base[k + 1] = static_cast<char*>(inputs[k].data_ptr());
    }
    return [g = cpu::make_geometry(out.sizes(), strides, element_sizes), base, loop, params] {
      cpu::run_elementwise(g, base.data(), loop, &params);
    };
  });
}

Tensor unaliased(const Tensor& src, const Tensor& dst) {
  const bool same_view = src.storage_offset() == dst.storage_offset() && src.strides() == dst.strides();
  return src.storage().is_alias_of(dst.storage()) && !same_view ? src.clone() : src;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  core::check_writable(dst, "copy_");
  cpu::InnerLoop loop = EMBER_KERNEL(cast_loop)(src.scalar_type(), dst.scalar_type());
  run_loop(dst, {unaliased(src, dst)}, loop);  // x.copy_(x.t()) reads the old values
}

namespace {

// like's dimensions from the largest stride to the smallest (outermost first).
std::vector<int64_t> stride_order(const Tensor& like) {
  std::vector<int64_t> order(static_cast<size_t>(like.dim()));
  for (int64_t d = 0; d < like.dim(); ++d) order[static_cast<size_t>(d)] = d;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  return order;
}

}  // namespace

bool is_dense_permutation(const Tensor& t) {
  int64_t expected = 1;
  const std::vector<int64_t> order = stride_order(t);
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    if (t.size(*d) == 1) continue;
    if (t.stride(*d) != expected) return false;
    expected *= t.size(*d);
  }
  return true;
}

Tensor empty_in_layout_of(const Tensor& like, IntArrayRef sizes, ScalarType dtype) {
  const int64_t rank = like.dim();
  const std::vector<int64_t> order = stride_order(like);
  const bool permuted = rank > 0 && order.back() == rank - 1 && like.stride(rank - 1) == 1 &&
                        !std::is_sorted(order.begin(), order.end());
  if (!permuted || core::any_thread_traces()) return core::make_tensor(sizes, dtype);
  std::vector<int64_t> stored(static_cast<size_t>(rank)), inverse(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    stored[static_cast<size_t>(i)] = sizes[static_cast<size_t>(order[static_cast<size_t>(i)])];
    inverse[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
  }
  return core::make_tensor(stored, dtype).permute(inverse);
}

}  // namespace ember::ops
