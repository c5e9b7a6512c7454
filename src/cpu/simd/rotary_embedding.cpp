// Rotary embedding row kernel, built per instruction set (src/cpu/rotary_embedding.h).
#include "cpu/rotary_embedding.h"

#include "cpu/simd/float_vector.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// Element i of both halves rotated (scalar V) or width(V) elements from i. `sign` is -1 for
// the inverse rotation.
template <typename V>
struct Rotated {
  V low, high;  // the first half's values, the second half's
};

template <typename V, typename T>
static inline Rotated<V> rotated(const T* x, const acc_t<T>* cos, const acc_t<T>* sin, int64_t i, int64_t half,
                                 acc_t<T> sign) {
  const V x1 = load_as<V>(x + i), x2 = load_as<V>(x + half + i);
  const V c = load_as<V>(cos + i), s = load_as<V>(sin + i) * sign;
  return {x1 * c - x2 * s, x1 * s + x2 * c};
}

template <typename V, typename T>
static inline void rotate_one(const T* x, const acc_t<T>* cos, const acc_t<T>* sin, T* out, int64_t i, int64_t half,
                              acc_t<T> sign) {
  const Rotated<V> r = rotated<V>(x, cos, sin, i, half, sign);
  store_as(out + i, r.low);
  store_as(out + half + i, r.high);
}

template <typename T>
static void rows_kernel(const T* x, int64_t x_row_stride, const acc_t<T>* cos, const acc_t<T>* sin, T* out,
                        int64_t out_row_stride, int64_t rows, int64_t half, bool inverse) {
  using V = vec_t<T>;
  using A = acc_t<T>;
  constexpr int W = width_v<V>;
  const A sign = inverse ? A(-1) : A(1);
  for (int64_t r = 0; r < rows; ++r, x += x_row_stride, cos += half, sin += half, out += out_row_stride) {
    int64_t i = 0;
    if constexpr (narrows_in_pairs_v<T>) {  // two vectors of each half rounded together
      for (; i + 2 * W <= half; i += 2 * W) {
        const Rotated<V> first = rotated<V>(x, cos, sin, i, half, sign), second = rotated<V>(x, cos, sin, i + W, half, sign);
        narrow_bf16_pair(reinterpret_cast<uint16_t*>(out + i), first.low, second.low);
        narrow_bf16_pair(reinterpret_cast<uint16_t*>(out + half + i), first.high, second.high);
      }
    }
    for (; i + W <= half; i += W) rotate_one<V>(x, cos, sin, out, i, half, sign);
    for (; i < half; ++i) rotate_one<A>(x, cos, sin, out, i, half, sign);
  }
}

}  // namespace

void rotary_rows(ScalarType dtype, const void* x, int64_t x_row_stride, const void* cos, const void* sin, void* out,
                 int64_t out_row_stride, int64_t rows, int64_t half, bool inverse) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    rows_kernel(static_cast<const T*>(x), x_row_stride, static_cast<const acc_t<T>*>(cos),
                static_cast<const acc_t<T>*>(sin), static_cast<T*>(out), out_row_stride, rows, half, inverse);
  });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
