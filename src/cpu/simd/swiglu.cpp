// SwiGLU kernels, built per instruction set (src/cpu/swiglu.h). The sigmoid uses the
// vectorized expf of float_vector.h (libm's exp for float64).
#include "cpu/swiglu.h"

#include "cpu/simd/float_vector.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

template <typename V>
static inline V sigmoid_of(V a) {
  return splat<V>(1.0f) / (splat<V>(1.0f) + exp_of(-a));
}

template <typename V, typename T>
static inline void forward_one(const T* a, const T* b, T* out, int64_t i) {
  const V value = load_as<V>(a + i);
  store_as(out + i, value * sigmoid_of(value) * load_as<V>(b + i));
}

template <typename V, typename T>
static inline void backward_one(const T* grad, const T* a, const T* b, T* grad_a, T* grad_b, int64_t i) {
  const V g = load_as<V>(grad + i), value = load_as<V>(a + i), s = sigmoid_of(value);
  if (grad_a) store_as(grad_a + i, g * load_as<V>(b + i) * s * (splat<V>(1.0f) + value * (splat<V>(1.0f) - s)));
  if (grad_b) store_as(grad_b + i, g * value * s);
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
    for (; i + width_v<V> <= n; i += width_v<V>) forward_one<V>(x, y, result, i);
    for (; i < n; ++i) forward_one<acc_t<T>>(x, y, result, i);
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
    int64_t i = 0;
    for (; i + width_v<V> <= n; i += width_v<V>) backward_one<V>(g, x, y, da, db, i);
    for (; i < n; ++i) backward_one<acc_t<T>>(g, x, y, da, db, i);
  });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
