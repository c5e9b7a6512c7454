#include "cpu/scan.h"

#include <cassert>
#include <type_traits>

#include "cpu/column_blocks.h"
#include "cpu/type_dispatch.h"

namespace ember::cpu {
namespace {

constexpr int64_t kColumnBlock = 256;

template <typename T>
using accumulate_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

template <typename A, typename T>
inline A widen(T value) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(value);
  else return static_cast<A>(value);
}

template <typename A>
inline A combine(ScanOp op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {  // wrap around like PyTorch instead of overflowing (UB)
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    return static_cast<A>(op == ScanOp::Sum ? ua + ub : ua * ub);
  } else {
    return op == ScanOp::Sum ? a + b : a * b;
  }
}

// Scans `count` adjacent columns of one [R, inner] slab; the column loop is innermost so
// it vectorizes across columns.
template <typename T>
void scan_block(ScanOp op, const T* x, T* out, int64_t R, int64_t inner, int64_t count, bool reverse) {
  using A = accumulate_t<T>;
  A acc[kColumnBlock];
  const A identity = op == ScanOp::Sum ? A(0) : A(1);
  for (int64_t j = 0; j < count; ++j) acc[j] = identity;
  for (int64_t step = 0; step < R; ++step) {
    const int64_t r = reverse ? R - 1 - step : step;
    const T* in_row = x + r * inner;
    T* out_row = out + r * inner;
    for (int64_t j = 0; j < count; ++j) {
      acc[j] = combine(op, acc[j], widen<A>(in_row[j]));
      out_row[j] = static_cast<T>(acc[j]);
    }
  }
}

}  // namespace

void scan(ScanOp op, ScalarType dtype, const void* x, void* out, int64_t outer, int64_t R, int64_t inner, bool reverse) {
  assert(dtype != kBool);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = static_cast<const T*>(x);
      T* result = static_cast<T*>(out);
      for_each_column_block(outer, R, inner, kColumnBlock, [&](int64_t o, int64_t first, int64_t count) {
        const int64_t at = o * R * inner + first;
        scan_block<T>(op, in + at, result + at, R, inner, count, reverse);
      });
    }
  });
}

}  // namespace ember::cpu
