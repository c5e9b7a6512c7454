// Softmax kernels and the polynomial expf they use, built per instruction set. Float work
// runs on the 8-lane vectors of float_vector.h. Sums accumulate in double in a fixed order,
// so results do not depend on the thread count.
#include "cpu/simd/float_vector.h"
#include "cpu/softmax.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// Max that propagates NaN: a NaN anywhere makes the slice NaN, as in PyTorch.
template <typename V>
static inline V max_nan(V a, V b) {
  return (b > a || b != b) && !(a != a) ? b : a;
}

// Stored exps are rescaled in place for float and double; half types recompute the exp in
// the scale pass instead, so the result is rounded to 16 bits once.
template <typename T, bool log>
constexpr bool keeps_exp = !log && !is_half_v<T>;

// `factor` is 1/sum for softmax and log(sum) for log_softmax, per lane.
template <bool log>
static inline double factor_of(double sum) {
  return log ? __builtin_log(sum) : 1.0 / sum;
}

template <typename V, bool log>
static inline V factors(const sum_t<V>& sum) {
  V out = splat<V>(0.0f);
  if constexpr (is_vector_v<V>) {
    for (int j = 0; j < kWidth; ++j) out[j] = static_cast<float>(factor_of<log>(lane(sum, j)));
  } else {
    out = static_cast<V>(factor_of<log>(sum));
  }
  return out;
}

// The three passes for one element (scalar V) or one vector of elements.
template <typename V, typename T, bool keep>
static inline V exp_one(const T* x, T* out, V max) {
  const V e = exp_of(load_as<V>(x) - max);
  if constexpr (keep) store_as(out, e);
  return e;
}

template <typename V, typename T, bool log>
static inline void finish_one(const T* x, T* out, V max, V factor) {
  if constexpr (log) store_as(out, (load_as<V>(x) - max) - factor);
  else if constexpr (keeps_exp<T, log>) store_as(out, load_as<V>(out) * factor);
  else store_as(out, exp_of(load_as<V>(x) - max) * factor);
}

// ---- rows: the softmax dim is contiguous ------------------------------------------------

template <typename T>
static inline acc_t<T> row_max(const T* x, int64_t n) {
  using V = vec_t<T>;
  constexpr int W = width_v<V>;
  V lanes = splat<V>(-__builtin_inf());
  int64_t i = 0;
  for (; i + W <= n; i += W) lanes = max_nan(lanes, load_as<V>(x + i));
  acc_t<T> result = lane(lanes, 0);
  for (int j = 1; j < W; ++j) result = max_nan<acc_t<T>>(result, lane(lanes, j));
  for (; i < n; ++i) result = max_nan(result, load(x + i));
  return result;
}

template <typename T, bool keep>
static inline double row_exp_sum(const T* x, T* out, int64_t n, acc_t<T> max) {
  using V = vec_t<T>;
  constexpr int W = width_v<V>;
  sum_t<V> lanes{};
  int64_t i = 0;
  for (; i + W <= n; i += W) accumulate(lanes, exp_one<V, T, keep>(x + i, out + i, splat<V>(max)));
  double sum = 0;
  for (int j = 0; j < W; ++j) sum += lane(lanes, j);
  for (; i < n; ++i) sum += exp_one<acc_t<T>, T, keep>(x + i, out + i, max);
  return sum;
}

template <typename T, bool log>
static void rows_kernel(const T* x, T* out, int64_t rows, int64_t n) {
  using V = vec_t<T>;
  using C = acc_t<T>;
  constexpr int W = width_v<V>;
  for (int64_t row = 0; row < rows; ++row, x += n, out += n) {
    const C max = row_max(x, n);
    const C factor = static_cast<C>(factor_of<log>(row_exp_sum<T, keeps_exp<T, log>>(x, out, n, max)));
    int64_t i = 0;
    for (; i + W <= n; i += W) finish_one<V, T, log>(x + i, out + i, splat<V>(max), splat<V>(factor));
    for (; i < n; ++i) finish_one<C, T, log>(x + i, out + i, max, factor);
  }
}

// ---- columns: the softmax dim has stride `inner` ------------------------------------------

// The three passes over `groups` groups of width(V) adjacent columns starting at x; rows
// are the outer loop so each pass streams through memory once.
template <typename V, typename T, bool log>
static void column_groups(const T* x, T* out, int64_t R, int64_t inner, int64_t groups) {
  constexpr int W = width_v<V>;
  constexpr int64_t kMaxGroups = kSoftmaxColumnBlock / W;
  V max[kMaxGroups];
  sum_t<V> sum[kMaxGroups];
  V factor[kMaxGroups];
  for (int64_t g = 0; g < groups; ++g) {
    max[g] = splat<V>(-__builtin_inf());
    sum[g] = sum_t<V>{};
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t g = 0; g < groups; ++g) max[g] = max_nan(max[g], load_as<V>(x + r * inner + g * W));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t g = 0; g < groups; ++g)
      accumulate(sum[g], exp_one<V, T, keeps_exp<T, log>>(x + r * inner + g * W, out + r * inner + g * W, max[g]));
  for (int64_t g = 0; g < groups; ++g) factor[g] = factors<V, log>(sum[g]);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t g = 0; g < groups; ++g)
      finish_one<V, T, log>(x + r * inner + g * W, out + r * inner + g * W, max[g], factor[g]);
}

template <typename T, bool log>
static void columns_kernel(const T* x, T* out, int64_t R, int64_t inner, int64_t count) {
  using V = vec_t<T>;
  constexpr int W = width_v<V>;
  const int64_t full = count / W * W;
  column_groups<V, T, log>(x, out, R, inner, count / W);
  column_groups<acc_t<T>, T, log>(x + full, out + full, R, inner, count - full);
}

}  // namespace

void softmax_rows(ScalarType dtype, const void* x, void* out, int64_t rows, int64_t n, bool log) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* result = static_cast<T*>(out);
    if (log) rows_kernel<T, true>(in, result, rows, n);
    else rows_kernel<T, false>(in, result, rows, n);
  });
}

void softmax_columns(ScalarType dtype, const void* x, void* out, int64_t R, int64_t inner, int64_t count, bool log) {
  by_float_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* result = static_cast<T*>(out);
    if (log) columns_kernel<T, true>(in, result, R, inner, count);
    else columns_kernel<T, false>(in, result, R, inner, count);
  });
}

void exp_f32(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) store_as(out + i, expf_poly(load_as<Floats>(x + i)));
  for (; i < n; ++i) out[i] = expf_poly(x[i]);
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
