// RMSNorm row kernels, built per instruction set (src/cpu/rms_norm.h). Each row is reduced
// by one thread in a fixed lane order, so results do not depend on the thread count.
#include "cpu/rms_norm.h"

#include "cpu/simd/float_vector.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

static inline float sqrt_of(float x) { return __builtin_sqrtf(x); }
static inline double sqrt_of(double x) { return __builtin_sqrt(x); }

// weight[i..i+width(V)) as V, or ones when there is no weight.
template <typename V, typename T>
static inline V weight_at(const T* weight, int64_t i) {
  return weight ? load_as<V>(weight + i) : splat<V>(1.0f);
}

// sum[i..i+width(V)) += value, in float64.
static inline void add_to(double* sum, Floats value) {
  Doubles8 lanes;
  std::memcpy(&lanes.low, sum, sizeof(lanes.low));
  std::memcpy(&lanes.high, sum + 4, sizeof(lanes.high));
  accumulate(lanes, value);
  std::memcpy(sum, &lanes.low, sizeof(lanes.low));
  std::memcpy(sum + 4, &lanes.high, sizeof(lanes.high));
}
static inline void add_to(double* sum, float value) { *sum += value; }
static inline void add_to(double* sum, double value) { *sum += value; }

// x * rstd * weight for one element (scalar V) or one vector of elements.
template <typename V, typename T>
static inline V normalized(const T* x, const T* weight, int64_t i, acc_t<T> rstd) {
  return load_as<V>(x + i) * rstd * weight_at<V>(weight, i);
}

template <typename V, typename T>
static inline void normalize_one(const T* x, const T* weight, T* y, int64_t i, acc_t<T> rstd) {
  store_as(y + i, normalized<V>(x, weight, i, rstd));
}

template <typename T>
static void forward_rows(const T* x, const T* weight, T* y, acc_t<T>* rstd, int64_t rows, int64_t n, acc_t<T> eps) {
  using V = vec_t<T>;
  using A = acc_t<T>;
  constexpr int W = width_v<V>;
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    V squares = splat<V>(0.0f);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      const V v = load_as<V>(x + i);
      squares += v * v;
    }
    A sum = lane_sum(squares);
    for (; i < n; ++i) sum += load(x + i) * load(x + i);
    const A inv_rms = A(1) / sqrt_of(sum / static_cast<A>(n) + eps);
    rstd[r] = inv_rms;
    i = 0;
    if constexpr (narrows_in_pairs_v<T>) {  // Note [Narrowing pairs]
      for (; i + 2 * W <= n; i += 2 * W)
        narrow_bf16_pair(reinterpret_cast<uint16_t*>(y + i), normalized<V>(x, weight, i, inv_rms),
                         normalized<V>(x, weight, i + W, inv_rms));
    }
    for (; i + W <= n; i += W) normalize_one<V>(x, weight, y, i, inv_rms);
    for (; i < n; ++i) normalize_one<A>(x, weight, y, i, inv_rms);
  }
}

// dx for one element (scalar V) or one vector: g * weight * r - x * correction.
template <typename V, typename T>
static inline V input_grad(const T* grad_y, const T* x, const T* weight, int64_t i, acc_t<T> rstd,
                           acc_t<T> correction) {
  return load_as<V>(grad_y + i) * weight_at<V>(weight, i) * rstd - load_as<V>(x + i) * correction;
}

// With h = g * weight and r = rstd of the row:
//   dx = r * h - x * r^3 * mean(h * x),   dweight += g * x * r.
template <typename T>
static void backward_rows(const T* grad_y, const T* x, const T* weight, const acc_t<T>* rstd, T* grad_x,
                          double* grad_weight_sum, int64_t rows, int64_t n) {
  using V = vec_t<T>;
  using A = acc_t<T>;
  constexpr int W = width_v<V>;
  for (int64_t r = 0; r < rows; ++r, grad_y += n, x += n) {
    const A inv_rms = rstd[r];
    int64_t i = 0;
    if (grad_x) {
      V dots = splat<V>(0.0f);
      for (; i + W <= n; i += W) dots += load_as<V>(grad_y + i) * weight_at<V>(weight, i) * load_as<V>(x + i);
      A dot = lane_sum(dots);
      for (; i < n; ++i) dot += load(grad_y + i) * weight_at<A>(weight, i) * load(x + i);
      const A correction = inv_rms * inv_rms * inv_rms * (dot / static_cast<A>(n));
      T* out = grad_x + r * n;
      i = 0;
      if constexpr (narrows_in_pairs_v<T>)  // Note [Narrowing pairs]
        for (; i + 2 * W <= n; i += 2 * W)
          narrow_bf16_pair(reinterpret_cast<uint16_t*>(out + i), input_grad<V>(grad_y, x, weight, i, inv_rms, correction),
                           input_grad<V>(grad_y, x, weight, i + W, inv_rms, correction));
      for (; i + W <= n; i += W) store_as(out + i, input_grad<V>(grad_y, x, weight, i, inv_rms, correction));
      for (; i < n; ++i) store_as(out + i, input_grad<A>(grad_y, x, weight, i, inv_rms, correction));
    }
    if (grad_weight_sum) {
      for (i = 0; i + W <= n; i += W) add_to(grad_weight_sum + i, load_as<V>(grad_y + i) * load_as<V>(x + i) * inv_rms);
      for (; i < n; ++i) add_to(grad_weight_sum + i, load(grad_y + i) * load(x + i) * inv_rms);
    }
  }
}

}  // namespace

void rms_norm_rows(ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                   int64_t width, double eps) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    forward_rows(static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(y),
                 static_cast<acc_t<T>*>(rstd), rows, width, static_cast<acc_t<T>>(eps));
  });
}

void rms_norm_backward_rows(ScalarType dtype, const void* grad_y, const void* x, const void* weight, const void* rstd,
                            void* grad_x, double* grad_weight_sum, int64_t rows, int64_t width) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    backward_rows(static_cast<const T*>(grad_y), static_cast<const T*>(x), static_cast<const T*>(weight),
                  static_cast<const acc_t<T>*>(rstd), static_cast<T*>(grad_x), grad_weight_sum, rows, width);
  });
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
