// Reduction inner kernels, built per instruction set. 16 independent accumulators give the
// compiler room to vectorize while fixing the summation order for every ISA.
#include "cpu/reduce.h"
#include "cpu/simd/simd_common.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

template <typename T>
constexpr bool is_float_type = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T>
using wide_t = std::conditional_t<is_float_type<T>, double, int64_t>;

template <ReduceOp op, typename W>
static inline W combine(W a, W b) {
  if constexpr (op == ReduceOp::Sum) return a + b;
  else if constexpr (op == ReduceOp::Prod) return a * b;
  else if constexpr (op == ReduceOp::Max) return (b > a || b != b) && !(a != a) ? b : a;
  else if constexpr (op == ReduceOp::Min) return (b < a || b != b) && !(a != a) ? b : a;
  else if constexpr (op == ReduceOp::Any) return (a != W(0)) || (b != W(0));
  else return (a != W(0)) && (b != W(0));
}

template <ReduceOp op, typename W>
static inline W identity() {
  if constexpr (op == ReduceOp::Sum || op == ReduceOp::Any) return W(0);
  else if constexpr (op == ReduceOp::Prod || op == ReduceOp::All) return W(1);
  else if constexpr (op == ReduceOp::Max) {
    if constexpr (std::is_floating_point_v<W>) return -__builtin_inf();
    else return INT64_MIN;
  } else {
    if constexpr (std::is_floating_point_v<W>) return __builtin_inf();
    else return INT64_MAX;
  }
}

template <typename T, ReduceOp op>
static inline wide_t<T> run(const T* x, int64_t n) {
  using W = wide_t<T>;
  constexpr int kLanes = 16;
  W acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = identity<op, W>();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = combine<op, W>(acc[j], static_cast<W>(load(x + i + j)));
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] = combine<op, W>(acc[j], acc[j + width]);
  W result = acc[0];
  for (; i < n; ++i) result = combine<op, W>(result, static_cast<W>(load(x + i)));
  return result;
}

template <typename T, ReduceOp op>
static inline void columns(const T* x, int64_t rows, int64_t row_stride, int64_t count, ReduceValue* acc) {
  using W = wide_t<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    if constexpr (std::is_same_v<W, double>) {
      for (int64_t j = 0; j < count; ++j) acc[j].f = combine<op, W>(acc[j].f, static_cast<W>(load(row + j)));
    } else {
      for (int64_t j = 0; j < count; ++j) acc[j].i = combine<op, W>(acc[j].i, static_cast<W>(load(row + j)));
    }
  }
}

template <typename F>
static inline void by_op(ReduceOp op, F f) {
  switch (op) {
    case ReduceOp::Sum: f(std::integral_constant<ReduceOp, ReduceOp::Sum>{}); break;
    case ReduceOp::Prod: f(std::integral_constant<ReduceOp, ReduceOp::Prod>{}); break;
    case ReduceOp::Max: f(std::integral_constant<ReduceOp, ReduceOp::Max>{}); break;
    case ReduceOp::Min: f(std::integral_constant<ReduceOp, ReduceOp::Min>{}); break;
    case ReduceOp::Any: f(std::integral_constant<ReduceOp, ReduceOp::Any>{}); break;
    case ReduceOp::All: f(std::integral_constant<ReduceOp, ReduceOp::All>{}); break;
  }
}

template <typename F>
static inline void by_dtype(ScalarType dtype, F f) {
  switch (dtype) {
    case ScalarType::Bool: f(uint8_t{}); break;  // bool bytes are 0/1
    case ScalarType::UInt8: f(uint8_t{}); break;
    case ScalarType::Int8: f(int8_t{}); break;
    case ScalarType::Int32: f(int32_t{}); break;
    case ScalarType::Int64: f(int64_t{}); break;
    case ScalarType::Float16: f(Half{}); break;
    case ScalarType::BFloat16: f(BFloat16{}); break;
    case ScalarType::Float32: f(float{}); break;
    case ScalarType::Float64: f(double{}); break;
  }
}

}  // namespace

void reduce_run(ReduceOp op, ScalarType dtype, const void* data, int64_t n, ReduceValue* out) {
  by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    by_op(op, [&](auto op_tag) {
      auto r = run<T, decltype(op_tag)::value>(static_cast<const T*>(data), n);
      if constexpr (std::is_same_v<decltype(r), double>) out->f = r;
      else out->i = r;
    });
  });
}

double float_sum_run(ScalarType dtype, const void* data, int64_t n) {
  if (dtype == ScalarType::Float64) return run<double, ReduceOp::Sum>(static_cast<const double*>(data), n);
  return run<float, ReduceOp::Sum>(static_cast<const float*>(data), n);
}

void reduce_columns(ReduceOp op, ScalarType dtype, const void* data, int64_t rows, int64_t row_stride, int64_t count,
                    ReduceValue* acc) {
  by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    by_op(op, [&](auto op_tag) {
      columns<T, decltype(op_tag)::value>(static_cast<const T*>(data), rows, row_stride, count, acc);
    });
  });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
