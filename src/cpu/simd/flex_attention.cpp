// Tile operations of the fused attention kernels (cpu/attention/flex_attention_tiles.h), built per
// instruction set. float32 has an in-register micro-kernel and a vector exp; float64 (the
// gradcheck path) uses plain loops the compiler vectorizes; the AVX-512 build adds bfloat16
// products on VDPBF16PS (Note [Attention products]).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "cpu/attention/flex_attention_tiles.h"
#include "cpu/simd/amx.h"
#include "cpu/simd/float_vector.h"
#include "cpu/simd/pair_panels.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

using attention::ProductKernels;
using attention::TileKernels;

// Micro-kernel rows: as many accumulators as the registers hold.
#if defined(__AVX512F__)
constexpr int kRows = 8;  // 2 x 8 accumulators + 2 B vectors
#elif defined(__AVX2__)
constexpr int kRows = 6;  // 2 x 6 accumulators + 2 B vectors + 1 broadcast of 16 registers
#else
constexpr int kRows = 4;
#endif

constexpr int kPanel = 2 * kNativeWidth;
constexpr float kNegInf = -__builtin_inff();

// The polynomial `coefficients` (highest degree first) at f, by Horner's rule.
template <int Terms>
static inline vf vpolynomial(vf f, const float (&coefficients)[Terms]) {
  vf p = vset(coefficients[0]);
  for (int i = 1; i < Terms; ++i) p = vfma(p, f, vset(coefficients[i]));
  return p;
}

// exp(x - shift) for x - shift <= 0 (softmax arguments) as 2^t, t = (x - shift) * log2(e) in
// one FMA; 2^f by a degree-5 minimax polynomial. Folding the shift into the FMA costs up to
// ~1e-5 relative error for scores near 100 (as flash kernels do with exp2). Lanes with t below
// -126 are exactly 0, so -inf scores give 0 (as do NaN ones).
#if defined(__AVX512F__)
// 2^t as 2^floor(t) * 2^f: f = t - floor(t) in [0, 1) by one VREDUCEPS, 2^f by the polynomial
// `coefficients` on [0, 1), and 2^floor(t) applied by VSCALEFPS (which takes the floor
// itself): 0.79x the time of a round, a subtract and a clamp in the bf16 softmax's exp loop.
template <int Terms>
static inline vf vexp2_unit(vf t, const float (&coefficients)[Terms]) {
  const vf p = vpolynomial(_mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC), coefficients);
  return vzero_below(t, _mm512_scalef_ps(p, t), -126.0f);
}

// Relative error 9e-8 on [0, 1).
constexpr float kExp2UnitDegree5[] = {1.8775766948e-03f, 8.9893396944e-03f, 5.5826317519e-02f,
                                      2.4015361071e-01f, 6.9315308332e-01f, 9.9999994040e-01f};
static inline vf vexp_shifted(vf x, vf shift_log2e) {
  return vexp2_unit(vfma(x, vset(1.44269504088896341f), shift_log2e), kExp2UnitDegree5);
}

// 2^t for the probabilities that become bfloat16 operands: degree 4 (relative error 2.6e-6 on
// [0, 1), against bfloat16's rounding of 2e-3).
constexpr float kExp2UnitDegree4[] = {1.3534167781e-02f, 5.2011460066e-02f, 2.4144275486e-01f, 6.9300383329e-01f,
                                      1.0000026226e+00f};
static inline vf vexp2_for_bf16(vf t) { return vexp2_unit(t, kExp2UnitDegree4); }
#else
// 2^t as 2^n * 2^f with n = round(t) of t clamped to -127 (so that 2^n is made from an int32's
// exponent bits) and f = t - n in [-1/2, 1/2] (relative error under 2e-7).
constexpr float kExp2Degree5[] = {1.3333558146e-3f, 9.6181291076e-3f, 5.5504108665e-2f,
                                  2.4022650696e-1f, 6.9314718056e-1f, 1.0f};
static inline vf vexp_shifted(vf x, vf shift_log2e) {
  const vf t = vfma(x, vset(1.44269504088896341f), shift_log2e);
  const vf u = vmax(t, vset(-127.0f));
  const vf n = vround(u);
  const vf p = vpolynomial(vsub(u, n), kExp2Degree5);
  const vf scale = vfloat_bits(vi_exponent(vi_add(vto_int(n), vi_set(127))));
  return vzero_below(t, vmul(p, scale), -126.0f);
}
#endif

// ---- float32 micro-kernel ----------------------------------------------------------------

// c[i][0, 2 * kNativeWidth) = alpha * (c0[i], c1[i]) (+ c[i]) for i < rows <= M.
template <int M>
static inline void store_scaled(const vf* c0, const vf* c1, float* c, int64_t ldc, float alpha, bool accumulate,
                                int64_t rows = M) {
  const vf scale = vset(alpha);
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    if (i >= rows) break;
    float* row = c + i * ldc;
    vstore(row, accumulate ? vfma(scale, c0[i], vload(row)) : vmul(scale, c0[i]));
    vstore(row + kNativeWidth, accumulate ? vfma(scale, c1[i], vload(row + kNativeWidth)) : vmul(scale, c1[i]));
  }
}

// A[i][p] = a[i * row_stride + p * k_stride]: a row-major A (k_stride 1), or A = aᵀ for a tile
// read where it lies (row_stride 1). One kernel for both, strides at run time: a copy per
// layout would double the micro-kernels in ember-rt, which runs only the forward.

// C[M rows][kPanel] = alpha * A[M][k] * panel[k][kPanel] (+ C), accumulators in registers.
template <int M>
static inline void micro_kernel(const float* a, int64_t row_stride, int64_t k_stride, const float* panel, float* c,
                                int64_t ldc, int64_t k, float alpha, bool accumulate) {
  vf c0[M], c1[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) c0[i] = c1[i] = vset(0.0f);
  for (int64_t p = 0; p < k; ++p) {
    const vf b0 = vload(panel + p * kPanel);
    const vf b1 = vload(panel + p * kPanel + kNativeWidth);
    const float* a_p = a + p * k_stride;
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      const vf ai = vset(a_p[i * row_stride]);
      c0[i] = vfma(ai, b0, c0[i]);
      c1[i] = vfma(ai, b1, c1[i]);
    }
  }
  store_scaled<M>(c0, c1, c, ldc, alpha, accumulate);
}

// The last m < kRows rows of a panel.
template <int M>
static inline void micro_tail(int64_t m, const float* a, int64_t row_stride, int64_t k_stride, const float* panel,
                              float* c, int64_t ldc, int64_t k, float alpha, bool accumulate) {
  if constexpr (M > 0) {
    if (m == M) micro_kernel<M>(a, row_stride, k_stride, panel, c, ldc, k, alpha, accumulate);
    else micro_tail<M - 1>(m, a, row_stride, k_stride, panel, c, ldc, k, alpha, accumulate);
  }
}

static void gemm_f32_strided(const float* a, int64_t row_stride, int64_t k_stride, const float* b_panels, float* c,
                             int64_t ldc, int64_t m, int64_t n, int64_t k, float alpha, bool accumulate) {
  for (int64_t j = 0; j < n; j += kPanel) {
    const float* panel = b_panels + j * k;
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows)
      micro_kernel<kRows>(a + i * row_stride, row_stride, k_stride, panel, c + i * ldc + j, ldc, k, alpha, accumulate);
    if (i < m)
      micro_tail<kRows - 1>(m - i, a + i * row_stride, row_stride, k_stride, panel, c + i * ldc + j, ldc, k, alpha,
                            accumulate);
  }
}

void gemm_f32(const void* a, int64_t lda, const void* b_panels, float* c, int64_t ldc, int64_t m, int64_t n, int64_t k,
              float alpha, bool accumulate) {
  gemm_f32_strided(static_cast<const float*>(a), lda, 1, static_cast<const float*>(b_panels), c, ldc, m, n, k, alpha,
                   accumulate);
}

void gemm_transposed_tile_f32(const float* a, int64_t lda, const void* b_panels, float* c, int64_t ldc, int64_t m,
                              int64_t n, int64_t k, float alpha, bool accumulate) {
  gemm_f32_strided(a, 1, lda, static_cast<const float*>(b_panels), c, ldc, m, n, k, alpha, accumulate);
}

// ---- float32 softmax pieces -----------------------------------------------------------------

// Calls fn(vector, store_back) over cols values of s, the tail through a buffer padded
// with `pad`.
template <typename F>
static inline void for_each_vector(float* s, int64_t cols, float pad, F fn) {
  int64_t c = 0;
  for (; c + kNativeWidth <= cols; c += kNativeWidth) vstore(s + c, fn(vload(s + c)));
  if (c < cols) {
    float buffer[kNativeWidth];
    for (int i = 0; i < kNativeWidth; ++i) buffer[i] = c + i < cols ? s[c + i] : pad;
    vstore(buffer, fn(vload(buffer)));
    for (int64_t i = 0; c + i < cols; ++i) s[c + i] = buffer[i];
  }
}

// The row reductions run as trees: a lane-by-lane chain per row cost a third of the softmax.
static inline float row_max_f32(const float* s, int64_t cols) {
  vf m = vset(kNegInf);
  int64_t c = 0;
  for (; c + kNativeWidth <= cols; c += kNativeWidth) m = vmax(m, vload(s + c));
#if defined(__AVX512F__)
  float result = _mm512_reduce_max_ps(m);
#else
  float result = hmax(m);
#endif
  for (; c < cols; ++c) result = s[c] > result ? s[c] : result;
  return result;
}

// The rows' new running maxima, the larger of the tile's max (times score_scale) and the
// running one, for `count` rows: a group's maxima are found before the group's exp passes, so
// that their chains of dependent max instructions overlap (one row's at a time held up its
// exp pass: bf16 forward 0.93x at S=8192 W=256, one thread).
constexpr int64_t kMaxGroup = 32;
static inline void new_row_maxima(const float* scores, int64_t ld, int64_t count, int64_t cols, float score_scale,
                                  const float* row_max, float* new_max) {
  for (int64_t i = 0; i < count; ++i) new_max[i] = row_max_f32(scores + i * ld, cols) * score_scale;
  for (int64_t i = 0; i < count; ++i) new_max[i] = new_max[i] > row_max[i] ? new_max[i] : row_max[i];
}

// s = exp(s - max) in place; returns the sum (padding lanes contribute exp(-inf) = 0).
static inline float exp_sum_f32(float* s, int64_t cols, float max) {
  const vf shift = vset(-max * 1.44269504088896341f);
  vf sum = vset(0.0f);
  for_each_vector(s, cols, kNegInf, [&](vf x) {
    const vf e = vexp_shifted(x, shift);
    sum = vadd(sum, e);
    return e;
  });
  return hsum_tree(sum);
}

static inline void scale_row_f32(float* row, int64_t cols, float factor) {
  const vf f = vset(factor);
  for_each_vector(row, cols, 0.0f, [&](vf x) { return vmul(x, f); });
}

// A tile's part of a row's online softmax: the running max moves to new_max (the running sum
// and the accumulator row rescaled by exp(old - new)), then the tile's sum (taken at new_max)
// joins the running sum.
static inline void add_to_row(float new_max, float tile_sum, float& row_max, float& row_sum, float* acc_row,
                              int64_t acc_cols) {
  if (new_max != row_max) {
    const float alpha = row_max == kNegInf ? 0.0f : __builtin_expf(row_max - new_max);
    row_sum *= alpha;
    scale_row_f32(acc_row, acc_cols, alpha);
    row_max = new_max;
  }
  row_sum += tile_sum;
}

void softmax_step_f32(float* scores, int64_t ld, int64_t rows, int64_t cols, float* row_max, float* row_sum,
                      float* acc, int64_t ld_acc, int64_t acc_cols) {
  float group_max[kMaxGroup];
  for (int64_t r = 0; r < rows; ++r) {
    if (r % kMaxGroup == 0)
      new_row_maxima(scores + r * ld, ld, rows - r < kMaxGroup ? rows - r : kMaxGroup, cols, 1.0f, row_max + r,
                     group_max);
    float* s = scores + r * ld;
    const float new_max = group_max[r % kMaxGroup];
    if (new_max == kNegInf) {  // nothing visible in this row so far
      for (int64_t c = 0; c < cols; ++c) s[c] = 0.0f;
      continue;
    }
    const float sum = exp_sum_f32(s, cols, new_max);
    add_to_row(new_max, sum, row_max[r], row_sum[r], acc + r * ld_acc, acc_cols);
  }
}

void probabilities_f32(float* scores, int64_t ld, int64_t rows, int64_t cols, const float* lse) {
  for (int64_t r = 0; r < rows; ++r) {
    float* s = scores + r * ld;
    if (lse[r] == kNegInf) {
      for (int64_t c = 0; c < cols; ++c) s[c] = 0.0f;
      continue;
    }
    const vf shift = vset(-lse[r] * 1.44269504088896341f);
    for_each_vector(s, cols, kNegInf, [&](vf x) { return vexp_shifted(x, shift); });
  }
}

// ---- float64 (plain loops, in the baseline build only) ---------------------------------------
// These loops give the same bits on every instruction set (no FMA contraction, no
// reassociation) and ran no faster in the wider builds (S = 1024, causal, forward and backward:
// 540 ms at avx512, 550 at baseline), so the baseline build's copy serves every level
// (flex_attention_tiles.h).
#if !defined(__AVX2__)

constexpr int kPanel64 = 8;

// A[i][p] = a[i * row_stride + p * k_stride], as gemm_f32_strided.
static void gemm_f64_strided(const double* a, int64_t row_stride, int64_t k_stride, const double* b_panels, double* c,
                             int64_t ldc, int64_t m, int64_t n, int64_t k, double alpha, bool accumulate) {
  for (int64_t j = 0; j < n; j += kPanel64) {
    const double* panel = b_panels + j * k;
    for (int64_t i = 0; i < m; ++i) {
      double sums[kPanel64] = {};
      for (int64_t p = 0; p < k; ++p) {
        const double ai = a[i * row_stride + p * k_stride];
        for (int q = 0; q < kPanel64; ++q) sums[q] += ai * panel[p * kPanel64 + q];
      }
      for (int q = 0; q < kPanel64; ++q) c[i * ldc + j + q] = alpha * sums[q] + (accumulate ? c[i * ldc + j + q] : 0.0);
    }
  }
}

void gemm_f64(const void* a, int64_t lda, const void* b_panels, double* c, int64_t ldc, int64_t m, int64_t n,
              int64_t k, double alpha, bool accumulate) {
  gemm_f64_strided(static_cast<const double*>(a), lda, 1, static_cast<const double*>(b_panels), c, ldc, m, n, k, alpha,
                   accumulate);
}

void gemm_transposed_tile_f64(const double* a, int64_t lda, const void* b_panels, double* c, int64_t ldc, int64_t m,
                              int64_t n, int64_t k, double alpha, bool accumulate) {
  gemm_f64_strided(a, 1, lda, static_cast<const double*>(b_panels), c, ldc, m, n, k, alpha, accumulate);
}

void softmax_step_f64(double* scores, int64_t ld, int64_t rows, int64_t cols, double* row_max, double* row_sum,
                      double* acc, int64_t ld_acc, int64_t acc_cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double* s = scores + r * ld;
    double new_max = row_max[r];
    for (int64_t c = 0; c < cols; ++c) new_max = s[c] > new_max ? s[c] : new_max;
    if (new_max == -__builtin_inf()) {
      for (int64_t c = 0; c < cols; ++c) s[c] = 0.0;
      continue;
    }
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += (s[c] = __builtin_exp(s[c] - new_max));
    if (new_max != row_max[r]) {
      const double alpha = __builtin_exp(row_max[r] - new_max);
      row_sum[r] *= alpha;
      for (int64_t c = 0; c < acc_cols; ++c) acc[r * ld_acc + c] *= alpha;
      row_max[r] = new_max;
    }
    row_sum[r] += sum;
  }
}

void probabilities_f64(double* scores, int64_t ld, int64_t rows, int64_t cols, const double* lse) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      scores[r * ld + c] = lse[r] == -__builtin_inf() ? 0.0 : __builtin_exp(scores[r * ld + c] - lse[r]);
}
#endif

// ---- shared by all ------------------------------------------------------------------------

// A value as a product operand: bfloat16 bits for O = uint16_t.
template <typename O, typename A>
static inline O as_operand(A value) {
  if constexpr (std::is_same_v<O, uint16_t>) return float_to_bf16(static_cast<float>(value));
  else return static_cast<O>(value);
}

// An element of a source tensor as an operand: bfloat16 into bfloat16 copies the bits.
template <typename O, typename S>
static inline O operand_at(const S* p) {
  if constexpr (std::is_same_v<O, uint16_t> && std::is_same_v<S, BFloat16>) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return bits;
  } else {
    return as_operand<O>(load(p));
  }
}

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

template <typename O, int KGroup>
void pack_rows(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols,
               void* dst_operand, int64_t ld) {
  O* dst = static_cast<O*>(dst_operand);
  by_float_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S* in = static_cast<const S*>(src);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) dst[r * ld + c] = operand_at<O>(in + r * row_stride + c * col_stride);
      for (int64_t c = cols; c < round_up(cols, KGroup); ++c) dst[r * ld + c] = O(0);
    }
  });
}

// Rows of out and dO as T, for the backward's row sums.
template <typename T>
void widen_rows(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols,
                T* dst, int64_t ld) {
  pack_rows<T, 1>(dtype, src, row_stride, col_stride, rows, cols, dst, ld);
}

template <typename O, int Width, int KGroup>
void pack_panels(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t k, int64_t n,
                 void* dst_operand) {
  O* dst = static_cast<O*>(dst_operand);
  const int64_t k_padded = round_up(k, KGroup);
  by_float_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S* in = static_cast<const S*>(src);
    for (int64_t j0 = 0; j0 < n; j0 += Width) {
      O* panel = dst + j0 * k_padded;
      const int64_t width = n - j0 < Width ? n - j0 : Width;
      for (int64_t p = 0; p < k_padded; ++p) {
        O* group = panel + (p / KGroup) * Width * KGroup + p % KGroup;
        const int64_t filled = p < k ? width : 0;
        for (int64_t j = 0; j < filled; ++j)
          group[j * KGroup] = operand_at<O>(in + p * row_stride + (j0 + j) * col_stride);
        for (int64_t j = filled; j < Width; ++j) group[j * KGroup] = O(0);
      }
    }
  });
}

template <typename T, typename O, int KGroup>
void operand_rows(const T* src, int64_t ld_src, int64_t rows, int64_t cols, bool transpose, void* dst_operand,
                  int64_t ld_dst) {
  O* dst = static_cast<O*>(dst_operand);
  const int64_t out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
  constexpr int64_t kBlock = 8;  // transposed in 8 x 8 blocks, for the cache
  if (transpose) {
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
        for (int64_t r = r0; r < r0 + kBlock && r < rows; ++r)
          for (int64_t c = c0; c < c0 + kBlock && c < cols; ++c) dst[c * ld_dst + r] = as_operand<O>(src[r * ld_src + c]);
  } else {
    for (int64_t r = 0; r < out_rows; ++r)
      for (int64_t c = 0; c < out_cols; ++c) dst[r * ld_dst + c] = as_operand<O>(src[r * ld_src + c]);
  }
  for (int64_t r = 0; r < out_rows; ++r)
    for (int64_t c = out_cols; c < round_up(out_cols, KGroup); ++c) dst[r * ld_dst + c] = O(0);
}

template <typename T>
void score_grad(const T* p, T* dp, const T* dmod, int64_t ld, int64_t rows, int64_t cols, const T* delta) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* pr = p + r * ld;
    T* dr = dp + r * ld;
    if (dmod) {
      const T* mr = dmod + r * ld;
      for (int64_t c = 0; c < cols; ++c) dr[c] = pr[c] == T(0) ? T(0) : pr[c] * (dr[c] - delta[r]) * mr[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) dr[c] = pr[c] * (dr[c] - delta[r]);
    }
  }
}

template <typename T>
void store_rows(const T* src, int64_t ld, int64_t rows, int64_t cols, const T* row_scale, ScalarType dtype, void* dst,
                int64_t row_stride, int64_t col_stride) {
  by_float_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    S* out = static_cast<S*>(dst);
    for (int64_t r = 0; r < rows; ++r) {
      const T factor = row_scale ? row_scale[r] : T(1);
      for (int64_t c = 0; c < cols; ++c) store(out + r * row_stride + c * col_stride, src[r * ld + c] * factor);
    }
  });
}

const TileKernels<float> kFloatKernels = {widen_rows<float>, softmax_step_f32, probabilities_f32, score_grad<float>,
                                          store_rows<float>};
const ProductKernels<float> kFloatProducts = {
    .panel_width = kPanel, .k_group = 1, .operand_bytes = sizeof(float), .tiles_are_operands = true, .gemm = gemm_f32,
    .gemm_transposed_tile = gemm_transposed_tile_f32, .pack_rows = pack_rows<float, 1>,
    .pack_panels = pack_panels<float, kPanel, 1>, .operand_rows = operand_rows<float, float, 1>};
#if !defined(__AVX2__)
const TileKernels<double> kDoubleKernels = {widen_rows<double>, softmax_step_f64, probabilities_f64,
                                            score_grad<double>, store_rows<double>};
const ProductKernels<double> kDoubleProducts = {
    .panel_width = kPanel64, .k_group = 1, .operand_bytes = sizeof(double), .tiles_are_operands = true,
    .gemm = gemm_f64, .gemm_transposed_tile = gemm_transposed_tile_f64, .pack_rows = pack_rows<double, 1>,
    .pack_panels = pack_panels<double, kPanel64, 1>, .operand_rows = operand_rows<double, double, 1>};
#endif

#if defined(__AVX512F__)
// ---- bfloat16 products on VDPBF16PS (AVX512-BF16) ------------------------------------------
// Panels of 32 columns, each row a pair of k values per column: one VDPBF16PS multiplies a
// broadcast pair of A by 16 columns' pairs and adds both products into float32 lanes.
#define EMBER_BF16_TARGET __attribute__((target("avx512bf16")))

constexpr int kBf16Rows = 8;

static inline __m512i broadcast_pair(const uint16_t* p) {
  int32_t pair;
  std::memcpy(&pair, p, 4);
  return _mm512_set1_epi32(pair);
}

// C[rows][kPanel] = alpha * A[rows][2 * k_pairs] * panel (+ C), rows <= kBf16Rows. A short
// block computes its last row again in the rows past it and stores only its own: one kernel
// for every size.
EMBER_BF16_TARGET static inline void bf16_micro_kernel(const uint16_t* a, int64_t lda, int64_t rows,
                                                       const uint16_t* panel, float* c, int64_t ldc, int64_t k_pairs,
                                                       float alpha, bool accumulate) {
  constexpr int M = kBf16Rows;
  const uint16_t* a_rows[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) a_rows[i] = a + (i < rows ? i : rows - 1) * lda;
  vf c0[M], c1[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) c0[i] = c1[i] = vset(0.0f);
  for (int64_t p = 0; p < k_pairs; ++p) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + p * 2 * kPanel));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(panel + p * 2 * kPanel + 2 * kNativeWidth));
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      const __m512bh ai = reinterpret_cast<__m512bh>(broadcast_pair(a_rows[i] + 2 * p));
      c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
      c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
    }
  }
  store_scaled<M>(c0, c1, c, ldc, alpha, accumulate, rows);
}

EMBER_BF16_TARGET void gemm_bf16(const void* a_operand, int64_t lda, const void* b_operand, float* c, int64_t ldc,
                                 int64_t m, int64_t n, int64_t k, float alpha, bool accumulate) {
  const uint16_t* a = static_cast<const uint16_t*>(a_operand);
  const uint16_t* b_panels = static_cast<const uint16_t*>(b_operand);
  const int64_t k_pairs = (k + 1) / 2;
  for (int64_t j = 0; j < n; j += kPanel) {
    const uint16_t* panel = b_panels + j * 2 * k_pairs;
    for (int64_t i = 0; i < m; i += kBf16Rows) {
      const int64_t rows = m - i < kBf16Rows ? m - i : kBf16Rows;
      bf16_micro_kernel(a + i * lda, lda, rows, panel, c + i * ldc + j, ldc, k_pairs, alpha, accumulate);
    }
  }
}

// dst[c][r, r + 1] = (src[r][c], src[r + 1][c]) as bfloat16: two rows rounded at once, their
// values interleaved into pairs, each pair stored as one 32-bit word; a last odd row pairs
// with zero.
EMBER_BF16_TARGET static void transposed_operand_bf16(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                                                      uint16_t* dst, int64_t ld_dst) {
  static const uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                           8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_loadu_si512(kInterleave);
  // 32 rows by 16 columns at a time: 16 words of pairs a row pair, transposed in registers into
  // a column's 16 pairs each (not in ember-rt, which runs no backward: Note [Runtime size]).
  int64_t r0 = 0;
#ifndef EMBER_RT_CPU
  for (; r0 + 32 <= rows; r0 += 32)
    for (int64_t c = 0; c + kNativeWidth <= cols; c += kNativeWidth) {
      __m512i block[16];
      for (int i = 0; i < 16; ++i) {
        const float* even = src + (r0 + 2 * i) * ld_src + c;
        const __m512i rounded = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(vload(even + ld_src), vload(even)));
        block[i] = _mm512_permutexvar_epi16(interleave, rounded);
      }
      transpose_16x16_epi32(block);
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(dst + (c + i) * ld_dst + r0, block[i]);
    }
#endif
  const int64_t whole_columns = r0 > 0 ? cols / kNativeWidth * kNativeWidth : 0;  // done above for rows < r0
  for (int64_t r = 0; r < rows; r += 2) {
    for (int64_t c = r < r0 ? whole_columns : 0; c < cols; c += kNativeWidth) {
      const int64_t n = cols - c < kNativeWidth ? cols - c : kNativeWidth;
      const __mmask16 lanes = static_cast<__mmask16>((1u << n) - 1);
      const vf even = _mm512_maskz_loadu_ps(lanes, src + r * ld_src + c);
      const vf odd = r + 1 < rows ? _mm512_maskz_loadu_ps(lanes, src + (r + 1) * ld_src + c) : vset(0.0f);
      const __m512i rounded = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));  // even's in the low half
      alignas(64) uint32_t pairs[kNativeWidth];
      _mm512_store_si512(pairs, _mm512_permutexvar_epi16(interleave, rounded));
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + (c + i) * ld_dst + r, &pairs[i], 4);
    }
  }
}

// The lane sums (kMax: maxima) of sixteen vectors at once, out[i] for v[i]: lane j joins lane
// j + 8, then j + 4, j + 2 and j + 1, hsum_tree's order, so the same bits as hsum_tree vector by
// vector, in 45 shuffles and adds instead of sixteen chains of seven dependent ones (bf16
// forward 0.97-0.98x the time, alternated in one process).
template <bool kMax>
static inline void reduce_lanes16(const vf* v, float* out) {
  const auto op = [](vf a, vf b) { return kMax ? vmax(a, b) : vadd(a, b); };
  vf halves[8], quarters[4], eighths[2];
  for (int i = 0; i < 8; ++i)  // [v[2i] lanes j + lanes j + 8, v[2i + 1] the same]
    halves[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // 128-bit lane L: vector 4i + L's four partial sums
    quarters[i] = op(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                     _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)  // lane L: two partial sums of vector 8i + L, then of 8i + 4 + L
    eighths[i] = op(_mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0x44),
                    _mm512_shuffle_ps(quarters[2 * i], quarters[2 * i + 1], 0xEE));
  // Element e of lane L: vector 4e + L.
  const vf sums = op(_mm512_shuffle_ps(eighths[0], eighths[1], 0x88), _mm512_shuffle_ps(eighths[0], eighths[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  vstore(out, _mm512_permutexvar_ps(order, sums));
}

// A row's maxima lane by lane (reduce_lanes16 finishes them; the tail's missing lanes -inf),
// and the span of its vectors (16 columns) from the first to the last that holds a score other
// than -inf: [begin, end) in columns, empty where none does, the whole row where not `masked`.
// Four vectors at a time: their lanes' 64 visible bits in one mask register, whose first and
// last set bits give the span.
struct VisibleSpan {
  int64_t begin, end;
};
static inline vf row_lane_max(const float* s, int64_t cols, bool masked, VisibleSpan& span) {
  vf m = vset(kNegInf);
  int64_t first = -1, last = -1;
  auto mark = [&](int64_t first_column, uint64_t lanes) {  // lanes: bit i for column first_column + i
    if (lanes == 0) return;
    if (first < 0) first = first_column + __builtin_ctzll(lanes);
    last = first_column + 63 - __builtin_clzll(lanes);
  };
  auto seen = [](vf x) { return _mm512_cmp_ps_mask(x, vset(kNegInf), _CMP_NEQ_UQ); };
  int64_t c = 0;
  for (; c + 4 * kNativeWidth <= cols; c += 4 * kNativeWidth) {
    const vf x0 = vload(s + c), x1 = vload(s + c + kNativeWidth), x2 = vload(s + c + 2 * kNativeWidth),
             x3 = vload(s + c + 3 * kNativeWidth);
    m = vmax(m, vmax(vmax(x0, x1), vmax(x2, x3)));
    if (masked)
      mark(c, _cvtmask64_u64(_mm512_kunpackd(_mm512_kunpackw(seen(x3), seen(x2)), _mm512_kunpackw(seen(x1), seen(x0)))));
  }
  for (; c < cols; c += kNativeWidth) {
    const int64_t n = cols - c < kNativeWidth ? cols - c : kNativeWidth;
    const vf x = _mm512_mask_loadu_ps(vset(kNegInf), static_cast<__mmask16>((1u << n) - 1), s + c);
    m = vmax(x, m);
    if (masked) mark(c, seen(x));
  }
  if (!masked) span = {0, cols};
  else if (first < 0) span = {0, 0};
  else span = {first / kNativeWidth * kNativeWidth, (last / kNativeWidth + 1) * kNativeWidth};
  return m;
}

// softmax_step_f32 over the scores times score_scale, with the probabilities left as bfloat16
// A operand rows (zero up to the next pair) instead of in the tile: the tile's float32
// probabilities are never stored and read back. The scores times score_scale are the values
// gemm's alpha gives (Note [Scale in the softmax]); exp is vexp2_for_bf16. Only the span of a
// row's vectors that hold visible scores goes through exp, the rest is written as zeros (what
// exp(-inf) gives; a sum of zeros adds nothing): a partial tile of a sliding window is about
// half masked. Rows go sixteen at a time, their maxima found before their exp passes and
// their sums after, by reduce_lanes16.
EMBER_BF16_TARGET void softmax_to_operand_bf16(float* scores, int64_t ld, int64_t rows, int64_t cols, bool masked,
                                               float score_scale, float* row_max, float* row_sum, float* acc,
                                               int64_t ld_acc, int64_t acc_cols, void* operand, int64_t ld_operand) {
  constexpr int64_t kGroup = 16;
  uint16_t* out = static_cast<uint16_t*>(operand);
  const int64_t padded = cols + cols % 2;
  const vf scale = vset(score_scale);
  alignas(64) vf lanes[kGroup];
  alignas(64) float group_max[kGroup], group_sum[kGroup];
  VisibleSpan group_span[kGroup];
  for (int64_t r0 = 0; r0 < rows; r0 += kGroup) {
    const int64_t count = rows - r0 < kGroup ? rows - r0 : kGroup;
    for (int64_t i = 0; i < kGroup; ++i)
      lanes[i] = i < count ? row_lane_max(scores + (r0 + i) * ld, cols, masked, group_span[i]) : vset(kNegInf);
    reduce_lanes16<true>(lanes, group_max);
    for (int64_t i = 0; i < count; ++i) {
      const float tile_max = group_max[i] * score_scale;
      group_max[i] = tile_max > row_max[r0 + i] ? tile_max : row_max[r0 + i];
    }
    for (int64_t i = 0; i < kGroup; ++i) {
      lanes[i] = vset(0.0f);
      if (i >= count) continue;
      const float* s = scores + (r0 + i) * ld;
      uint16_t* o = out + (r0 + i) * ld_operand;
      const float new_max = group_max[i];
      const VisibleSpan span = group_span[i];
      if (new_max == kNegInf || span.begin == span.end) {  // nothing visible in this row so far, or in this tile
        for (int64_t c = 0; c < padded; ++c) o[c] = 0;
        continue;
      }
      const int64_t begin = span.begin, end = span.end < padded ? span.end : padded;
      for (int64_t c = 0; c < begin; ++c) o[c] = 0;
      const vf shift = vset(-new_max * 1.44269504088896341f);
      vf sum = vset(0.0f);
      int64_t c = begin;
      // Whole pairs of vectors unmasked, rounded to bf16 by one instruction: 0.90-0.92x the
      // causal forward with every vector masked and rounded alone (alternated in one process).
      for (; c + 2 * kNativeWidth <= end && c + 2 * kNativeWidth <= cols; c += 2 * kNativeWidth) {
        const vf e0 = vexp2_for_bf16(vfma(vmul(vload(s + c), scale), vset(1.44269504088896341f), shift));
        const vf e1 = vexp2_for_bf16(vfma(vmul(vload(s + c + kNativeWidth), scale), vset(1.44269504088896341f), shift));
        sum = vadd(vadd(sum, e0), e1);
        _mm512_storeu_si512(o + c, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(e1, e0)));
      }
      for (; c < end; c += kNativeWidth) {
        const int64_t n = cols - c < kNativeWidth ? cols - c : kNativeWidth;
        const __mmask16 lanes_in = static_cast<__mmask16>((1u << n) - 1);
        const vf x = _mm512_mask_loadu_ps(vset(kNegInf), lanes_in, s + c);
        const vf e = vexp2_for_bf16(vfma(vmul(x, scale), vset(1.44269504088896341f), shift));
        sum = vadd(sum, e);
        const __mmask16 stored = static_cast<__mmask16>((1u << (n + (n % 2))) - 1);  // the pair's zero too
        _mm256_mask_storeu_epi16(o + c, stored, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(e)));
      }
      for (; c < padded; ++c) o[c] = 0;
      lanes[i] = sum;
    }
    reduce_lanes16<false>(lanes, group_sum);
    for (int64_t i = 0; i < count; ++i)
      if (group_max[i] != kNegInf)
        add_to_row(group_max[i], group_sum[i], row_max[r0 + i], row_sum[r0 + i], acc + (r0 + i) * ld_acc, acc_cols);
  }
}

// Keys and values into pair panels: bfloat16 ones by vector loads (keys, whose pairs lie along
// their rows, transposed 16 x 16 words at a time), others converted one by one.
void pack_panels_bf16(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t k, int64_t n,
                      void* dst) {
  if (dtype != kBFloat16) return pack_panels<uint16_t, kPanel, 2>(dtype, src, row_stride, col_stride, k, n, dst);
  pack_pair_panels(static_cast<const uint16_t*>(src), row_stride, col_stride, k, n, (k + 1) / 2 * 2,
                   static_cast<uint16_t*>(dst));
}

// The probabilities and score gradients become A operands here, once per tile, 16 lanes at a
// time (VCVTNEPS2BF16 rounds to nearest even, as float_to_bf16).
EMBER_BF16_TARGET void operand_rows_bf16(const float* src, int64_t ld_src, int64_t rows, int64_t cols, bool transpose,
                                         void* dst_operand, int64_t ld_dst) {
  uint16_t* dst = static_cast<uint16_t*>(dst_operand);
  if (transpose) return transposed_operand_bf16(src, ld_src, rows, cols, dst, ld_dst);
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * ld_src;
    uint16_t* out = dst + r * ld_dst;
    int64_t c = 0;
    for (; c + kNativeWidth <= cols; c += kNativeWidth)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c),
                          reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(vload(in + c))));
    for (; c < cols; ++c) out[c] = float_to_bf16(in[c]);
    if (cols % 2) out[cols] = 0;
  }
}

const ProductKernels<float> kBf16Products = {
    .panel_width = kPanel, .k_group = 2, .operand_bytes = sizeof(uint16_t), .tiles_are_operands = false,
    .gemm = gemm_bf16, .gemm_transposed_tile = nullptr, .pack_rows = pack_rows<uint16_t, 2>,
    .pack_panels = pack_panels_bf16, .operand_rows = operand_rows_bf16, .softmax_to_operand = softmax_to_operand_bf16};

// ---- bfloat16 products on AMX tiles (Note [AMX tiles]) ---------------------------------------
// The same operands as the VDPBF16PS table, multiplied in blocks of 32 x 32 on tiles over the
// whole 32-value chunks of k; the pairs past the last whole chunk (a head size that is no
// multiple of 32) are added by the VDPBF16PS kernel, as is a k shorter than one chunk. The
// tiles load and store C where it lies (scaled there after, for the scores' alpha); only a
// scaled sum added to C goes through a block of its own.
EMBER_AMX_TARGET void gemm_amx(const void* a_operand, int64_t lda, const void* b_operand, float* c, int64_t ldc,
                               int64_t m, int64_t n, int64_t k, float alpha, bool accumulate) {
  const uint16_t* a = static_cast<const uint16_t*>(a_operand);
  const uint16_t* b_panels = static_cast<const uint16_t*>(b_operand);
  const int64_t k_pairs = (k + 1) / 2, chunks = k_pairs / amx::kChunkPairs;
  const int64_t tail_pairs = k_pairs - chunks * amx::kChunkPairs;
  if (chunks == 0) return gemm_bf16(a_operand, lda, b_operand, c, ldc, m, n, k, alpha, accumulate);
  const bool in_place = !accumulate || alpha == 1.0f;
  alignas(64) float block[amx::kBlock * amx::kBlock];
  const vf scale = vset(alpha);
  int configured = 0;
  for (int64_t j = 0; j < n; j += kPanel) {
    const uint16_t* panel = b_panels + j * 2 * k_pairs;
    for (int64_t i = 0; i < m; i += amx::kBlock) {
      const int rows = static_cast<int>(m - i < amx::kBlock ? m - i : amx::kBlock);
      amx::configure_rows(rows, &configured);
      float* ci = c + i * ldc + j;
      if (in_place) {
        amx::block_product_rows(rows, a + i * lda, lda * 2, panel, chunks, accumulate ? ci : nullptr, ci, ldc);
        if (alpha != 1.0f)
          for (int r = 0; r < rows; ++r)
            for (int v = 0; v < kPanel; v += kNativeWidth) vstore(ci + r * ldc + v, vmul(scale, vload(ci + r * ldc + v)));
      } else {
        amx::block_product_rows(rows, a + i * lda, lda * 2, panel, chunks, nullptr, block, amx::kBlock);
        for (int r = 0; r < rows; ++r)
          for (int v = 0; v < kPanel; v += kNativeWidth) {
            float* out = ci + r * ldc + v;
            vstore(out, vfma(scale, vload(block + r * amx::kBlock + v), vload(out)));
          }
      }
      if (tail_pairs > 0)
        for (int r0 = 0; r0 < rows; r0 += kBf16Rows)
          bf16_micro_kernel(a + (i + r0) * lda + 2 * chunks * amx::kChunkPairs, lda,
                            rows - r0 < kBf16Rows ? rows - r0 : kBf16Rows,
                            panel + chunks * amx::kChunkPairs * 2 * kPanel, ci + r0 * ldc, ldc, tail_pairs, alpha, true);
    }
  }
}

const ProductKernels<float> kAmxProducts = {
    .panel_width = kPanel, .k_group = 2, .operand_bytes = sizeof(uint16_t), .tiles_are_operands = false,
    .gemm = gemm_amx, .gemm_transposed_tile = nullptr, .pack_rows = pack_rows<uint16_t, 2>,
    .pack_panels = pack_panels_bf16, .operand_rows = operand_rows_bf16, .softmax_to_operand = softmax_to_operand_bf16,
    .alpha_is_a_pass = true};
#endif
}  // namespace

const attention::TileKernels<float>* flex_tile_kernels_f32() { return &kFloatKernels; }
const attention::ProductKernels<float>* flex_products_f32() { return &kFloatProducts; }
#if !defined(__AVX2__)
const attention::TileKernels<double>* flex_tile_kernels_f64() { return &kDoubleKernels; }
const attention::ProductKernels<double>* flex_products_f64() { return &kDoubleProducts; }
#endif
#if defined(__AVX512F__)
const attention::ProductKernels<float>* flex_products_bf16() { return &kBf16Products; }
const attention::ProductKernels<float>* flex_products_amx() { return &kAmxProducts; }
#endif

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
