// SwiGLU kernels, built per instruction set (src/cpu/swiglu.h). The sigmoid uses the
// vectorized expf of float_vector.h (libm's exp for float64); bf16/f16 results narrow from
// float32 blocks (Note [Narrowing in blocks] in float_vector.h).
#include "cpu/swiglu.h"

#include "cpu/simd/float_vector.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

template <typename V>
static inline V sigmoid_of(V a) {
  return splat<V>(1.0f) / (splat<V>(1.0f) + exp_of(-a));
}

template <typename V, typename T>
static inline V forward_value(const T* a, const T* b, int64_t i) {
  const V value = load_as<V>(a + i);
  return value * sigmoid_of(value) * load_as<V>(b + i);
}

// d/da and d/db of silu(a) * b, times grad.
template <typename V, typename T>
static inline void backward_values(const T* grad, const T* a, const T* b, int64_t i, V& grad_a, V& grad_b) {
  const V g = load_as<V>(grad + i), value = load_as<V>(a + i), s = sigmoid_of(value);
  grad_a = g * load_as<V>(b + i) * s * (splat<V>(1.0f) + value * (splat<V>(1.0f) - s));
  grad_b = g * value * s;
}

}  // namespace

void swiglu_forward_run(ScalarType dtype, const void* a, const void* b, void* out, int64_t n) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using V = vec_t<T>;
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* result = static_cast<T*>(out);
    int64_t i = 0;
    if constexpr (is_half_v<T>) {
      alignas(64) float block[kNarrowBlock];
      for (; i + kNarrowBlock <= n; i += kNarrowBlock) {
        for (int64_t j = 0; j < kNarrowBlock; j += kWidth) store_as(block + j, forward_value<Floats>(x, y, i + j));
        narrow_floats(block, result + i, kNarrowBlock);
      }
    }
    for (; i + width_v<V> <= n; i += width_v<V>) store_as(result + i, forward_value<V>(x, y, i));
    for (; i < n; ++i) store_as(result + i, forward_value<acc_t<T>>(x, y, i));
  });
}

void swiglu_backward_run(ScalarType dtype, const void* grad, const void* a, const void* b, void* grad_a, void* grad_b,
                         int64_t n) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using V = vec_t<T>;
    const T* g = static_cast<const T*>(grad);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* da = static_cast<T*>(grad_a);
    T* db = static_cast<T*>(grad_b);
    auto one = [&](auto lane_tag, int64_t i) {
      using L = decltype(lane_tag);
      L value_a, value_b;
      backward_values<L>(g, x, y, i, value_a, value_b);
      if (da) store_as(da + i, value_a);
      if (db) store_as(db + i, value_b);
    };
    int64_t i = 0;
    if constexpr (is_half_v<T>) {
      alignas(64) float block_a[kNarrowBlock], block_b[kNarrowBlock];
      for (; i + kNarrowBlock <= n; i += kNarrowBlock) {
        for (int64_t j = 0; j < kNarrowBlock; j += kWidth) {
          Floats value_a, value_b;
          backward_values<Floats>(g, x, y, i + j, value_a, value_b);
          store_as(block_a + j, value_a);
          store_as(block_b + j, value_b);
        }
        if (da) narrow_floats(block_a, da + i, kNarrowBlock);
        if (db) narrow_floats(block_b, db + i, kNarrowBlock);
      }
    }
    for (; i + width_v<V> <= n; i += width_v<V>) one(V{}, i);
    for (; i < n; ++i) one(acc_t<T>{}, i);
  });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
