// Softmax kernels and the polynomial expf they use, built per instruction set.
//
// Float work runs on 8-lane GCC vector types (one AVX2 register, two SSE registers at
// baseline) rather than relying on auto-vectorization, which -O3 turns into slow shuffles
// for these loops. Each function is written once over V = the 8-lane vector or a plain
// scalar (row tails, leftover columns, float64); every lane does exactly the scalar math.
// Sums accumulate in double in a fixed order, so results do not depend on the thread count.
// The vectors only pass between inline functions of this file, so the baseline build's
// note about the AVX calling convention does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <type_traits>

#include "cpu/simd/simd_common.h"
#include "cpu/softmax.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

constexpr int kWidth = 8;
typedef float Floats __attribute__((vector_size(32)));
typedef int32_t Ints __attribute__((vector_size(32)));
typedef uint32_t UInts __attribute__((vector_size(32)));
typedef float Floats4 __attribute__((vector_size(16)));
typedef double Doubles4 __attribute__((vector_size(32)));

template <typename V>
constexpr bool is_vector_v = std::is_same_v<V, Floats>;
template <typename V>
constexpr int width_v = is_vector_v<V> ? kWidth : 1;

template <typename To, typename From>
static inline To bits_as(const From& value) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(static_cast<void*>(&out), &value, sizeof(To));
  return out;
}

// `value` in every lane of V.
template <typename V, typename S>
static inline V splat(S value) {
  if constexpr (is_vector_v<V>) return Floats{} + static_cast<float>(value);
  else return static_cast<V>(value);
}

// Note [Vectorizable expf]
// exp(x) = 2^n * exp(r) with n = round(x / ln2) and r = x - n*ln2, where ln2 is split into
// a short high part (n*hi is exact) and a low part, so |r| <= ln2/2 to float precision.
// exp(r) is Cephes' degree-6 polynomial (about 1 ulp in all). 2^n is built from exponent
// bits in two halves, 2^(n/2) * 2^(n - n/2), so subnormal results round once and results
// past FLT_MAX overflow to inf. Inputs are clamped first: below -104 the result rounds to 0
// (so -inf -> 0), above 88.8 to inf; NaN passes through the arithmetic. Straight-line code
// with selects only, written once for a float or an 8-lane vector.
template <typename V>
static inline V expf_poly(V x) {
  using I = std::conditional_t<is_vector_v<V>, Ints, int32_t>;
  using U = std::conditional_t<is_vector_v<V>, UInts, uint32_t>;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  V clamped = x > 88.8f ? splat<V>(88.8f) : x;
  clamped = clamped < -104.0f ? splat<V>(-104.0f) : clamped;
  const V shifted = clamped * kLog2e + kRoundShift;
  const V n = shifted - kRoundShift;
  V r = clamped - n * kLn2Hi;
  r = r - n * kLn2Lo;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const V exp_r = p * r * r + r + 1.0f;
  // n as an integer (subtracted unsigned: a NaN's bits must not overflow a signed int).
  const I k = bits_as<I>(bits_as<U>(shifted) - bits_as<U>(splat<V>(kRoundShift)));
  const I k_low = k >> 1, k_high = k - k_low;
  const V scale_low = bits_as<V>((k_low + 127) << 23);
  const V scale_high = bits_as<V>((k_high + 127) << 23);
  return exp_r * scale_low * scale_high;
}

static inline Floats exp_of(Floats x) { return expf_poly(x); }
static inline float exp_of(float x) { return expf_poly(x); }
static inline double exp_of(double x) { return __builtin_exp(x); }

// Max that propagates NaN: a NaN anywhere makes the slice NaN, as in PyTorch.
template <typename V>
static inline V max_nan(V a, V b) {
  return (b > a || b != b) && !(a != a) ? b : a;
}

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Stored exps are rescaled in place for float and double; half types recompute the exp in
// the scale pass instead, so the result is rounded to 16 bits once.
template <typename T, bool log>
constexpr bool keeps_exp = !log && !is_half_v<T>;

// The vector type for storage type T: 8 float lanes, or plain double for float64.
template <typename T>
using vec_t = std::conditional_t<std::is_same_v<T, double>, double, Floats>;

// One element (scalar V) or kWidth elements (vector V) of T, as V.
template <typename V, typename T>
static inline V load_as(const T* p) {
  if constexpr (!is_vector_v<V>) {
    return load(p);
  } else if constexpr (std::is_same_v<T, float>) {
    Floats value;
    std::memcpy(&value, p, sizeof(value));
    return value;
  } else {
    float lanes[kWidth];
    for (int j = 0; j < kWidth; ++j) lanes[j] = load(p + j);
    return bits_as<Floats>(lanes);
  }
}

template <typename T, typename V>
static inline void store_as(T* p, V value) {
  if constexpr (!is_vector_v<V>) {
    store(p, value);
  } else if constexpr (std::is_same_v<T, float>) {
    std::memcpy(p, &value, sizeof(value));
  } else {
    float lanes[kWidth];
    std::memcpy(lanes, &value, sizeof(lanes));
    for (int j = 0; j < kWidth; ++j) store(p + j, lanes[j]);
  }
}

// Double accumulators: one per lane of V.
struct Doubles8 {
  Doubles4 low = {}, high = {};
};
template <typename V>
using sum_t = std::conditional_t<is_vector_v<V>, Doubles8, double>;

static inline void accumulate(double& sum, float value) { sum += value; }
static inline void accumulate(double& sum, double value) { sum += value; }
static inline void accumulate(Doubles8& sum, Floats value) {
  const Floats4 low = {value[0], value[1], value[2], value[3]};
  const Floats4 high = {value[4], value[5], value[6], value[7]};
  sum.low += __builtin_convertvector(low, Doubles4);
  sum.high += __builtin_convertvector(high, Doubles4);
}

static inline double lane(double sum, int) { return sum; }
static inline double lane(const Doubles8& sum, int j) { return j < 4 ? sum.low[j] : sum.high[j - 4]; }
static inline float lane(Floats value, int j) { return value[j]; }
static inline float lane(float value, int) { return value; }

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

template <typename F>
static inline void by_float_dtype(ScalarType dtype, F f) {
  switch (dtype) {
    case ScalarType::Float16: f(Half{}); break;
    case ScalarType::BFloat16: f(BFloat16{}); break;
    case ScalarType::Float32: f(float{}); break;
    case ScalarType::Float64: f(double{}); break;
    default: break;  // callers only pass floating dtypes
  }
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
