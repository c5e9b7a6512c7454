// Kernels of the low-precision GEMM (Note [Low-precision GEMM] in cpu/gemm.cpp): conversions
// between bf16/f16 and float32 blocks, and the few-rows product that reads B directly.
// Compiled once per instruction set; one definition serves Vec = __m512, __m256 or float.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "cpu/simd/simd_common.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// a * b + c, with one rounding where the build has FMA (as the vector code).
inline float scalar_fma(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int64_t kWidth = 16;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vset1(float x) { return _mm512_set1_ps(x); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline float vsum(Vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__)
using Vec = __m256;
constexpr int64_t kWidth = 8;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vset1(float x) { return _mm256_set1_ps(x); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline float vsum(Vec v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#else
using Vec = float;  // baseline: a vector of one lane
constexpr int64_t kWidth = 1;
inline Vec vzero() { return 0.0f; }
inline Vec vset1(float x) { return x; }
inline Vec vload(const float* p) { return *p; }
inline void vstore(float* p, Vec v) { *p = v; }
inline Vec vfma(Vec a, Vec b, Vec c) { return scalar_fma(a, b, c); }
inline Vec vmul(Vec a, Vec b) { return a * b; }
inline float vsum(Vec v) { return v; }
#endif

// load/store move kWidth values between storage and a Vec, rounding to nearest even.
struct Bf16 {
  static float to_float(uint16_t x) { return bf16_to_float(x); }
  static uint16_t from_float(float x) { return float_to_bf16(x); }
#if defined(__AVX512F__)
  static Vec load(const uint16_t* p) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  // NaN keeps its top bits, made quiet, like float_to_bf16.
  static void store(uint16_t* p, Vec v) {
    __m512i x = _mm512_castps_si512(v);
    __m512i high = _mm512_srli_epi32(x, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    __m512i quiet_nan = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    __m512i bits = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), rounded, quiet_nan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
  }
#elif defined(__AVX2__)
  static Vec load(const uint16_t* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static void store(uint16_t* p, Vec v) {
    __m256i x = _mm256_castps_si256(v);
    __m256i high = _mm256_srli_epi32(x, 16);
    __m256i bias = _mm256_add_epi32(_mm256_and_si256(high, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    __m256i nan_mask = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, nan_mask);
    // packus works per 128-bit lane: [0..3, 0..3 | 4..7, 4..7]; gather quadwords 0 and 2.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
#else
  static Vec load(const uint16_t* p) { return to_float(*p); }
  static void store(uint16_t* p, Vec v) { *p = from_float(v); }
#endif
};

struct F16 {
  static float to_float(uint16_t x) { return half_to_float(x); }
  static uint16_t from_float(float x) { return float_to_half(x); }
#if defined(__AVX512F__)
  static Vec load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store(uint16_t* p, Vec v) {
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  }
#elif defined(__AVX2__)
  static Vec load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(uint16_t* p, Vec v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#else
  static Vec load(const uint16_t* p) { return to_float(*p); }
  static void store(uint16_t* p, Vec v) { *p = from_float(v); }
#endif
};

template <typename Format>
void widen_rows(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* s = src + r * ld_src;
    float* d = dst + r * ld_dst;
    int64_t j = 0;
    for (; j + kWidth <= cols; j += kWidth) vstore(d + j, Format::load(s + j));
    for (; j < cols; ++j) d[j] = Format::to_float(s[j]);
  }
}

template <typename Format>
void narrow_rows(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                 int64_t ld_dst) {
  const Vec vbeta = vset1(beta);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld_src;
    uint16_t* d = dst + r * ld_dst;
    int64_t j = 0;
    if (beta == 0.0f) {
      for (; j + kWidth <= cols; j += kWidth) Format::store(d + j, vload(s + j));
      for (; j < cols; ++j) d[j] = Format::from_float(s[j]);
    } else {
      for (; j + kWidth <= cols; j += kWidth) Format::store(d + j, vfma(vbeta, Format::load(d + j), vload(s + j)));
      for (; j < cols; ++j) d[j] = Format::from_float(scalar_fma(beta, Format::to_float(d[j]), s[j]));
    }
  }
}

// Rows of A handled per pass over B: what fits the registers with the accumulators below.
constexpr int kMaxRows = kWidth == 16 ? 4 : 2;

// c[Rows, n] += a[Rows, Steps] * b[Steps, n] for Steps consecutive rows of b, each element
// summed in p order (vector lanes and scalar leftovers alike).
template <typename Format, int Rows, int Steps>
void accumulate_rows(int64_t n, const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float* c, int64_t ldc) {
  float coef[Rows][Steps];
  Vec coef_v[Rows][Steps];
  for (int i = 0; i < Rows; ++i)
    for (int s = 0; s < Steps; ++s) coef_v[i][s] = vset1(coef[i][s] = a[i * lda + s]);
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    Vec bv[Steps];
    for (int s = 0; s < Steps; ++s) bv[s] = Format::load(b + s * ldb + j);
    for (int i = 0; i < Rows; ++i) {
      Vec acc = vload(c + i * ldc + j);
      for (int s = 0; s < Steps; ++s) acc = vfma(coef_v[i][s], bv[s], acc);
      vstore(c + i * ldc + j, acc);
    }
  }
  for (; j < n; ++j) {
    for (int i = 0; i < Rows; ++i) {
      float acc = c[i * ldc + j];
      for (int s = 0; s < Steps; ++s) acc = scalar_fma(coef[i][s], Format::to_float(b[s * ldb + j]), acc);
      c[i * ldc + j] = acc;
    }
  }
}

// c[Rows, n] = alpha * a[Rows, k] * b[k, n], b rows along n: walks b row by row, four at a
// time, so its reads stream; the caller keeps n small enough for c to stay in cache.
template <typename Format, int Rows>
void few_rows_nn(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const uint16_t* b, int64_t ldb,
                 float* c, int64_t ldc) {
  for (int i = 0; i < Rows; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) accumulate_rows<Format, Rows, 4>(n, a + p, lda, b + p * ldb, ldb, c, ldc);
  for (; p < k; ++p) accumulate_rows<Format, Rows, 1>(n, a + p, lda, b + p * ldb, ldb, c, ldc);
  for (int i = 0; i < Rows; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= alpha;
}

// c[Rows, Cols] = alpha * a[Rows, k] * b[Cols, k]^T: dot products along k.
template <typename Format, int Rows, int Cols>
void few_rows_dots(int64_t k, float alpha, const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float* c,
                   int64_t ldc) {
  Vec acc[Rows][Cols];
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < Cols; ++j) acc[i][j] = vzero();
  int64_t p = 0;
  for (; p + kWidth <= k; p += kWidth) {
    Vec bv[Cols];
    for (int j = 0; j < Cols; ++j) bv[j] = Format::load(b + j * ldb + p);
    for (int i = 0; i < Rows; ++i) {
      const Vec av = vload(a + i * lda + p);
      for (int j = 0; j < Cols; ++j) acc[i][j] = vfma(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < Rows; ++i) {
    for (int j = 0; j < Cols; ++j) {
      float sum = vsum(acc[i][j]);
      for (int64_t q = p; q < k; ++q) sum = scalar_fma(a[i * lda + q], Format::to_float(b[j * ldb + q]), sum);
      c[i * ldc + j] = alpha * sum;
    }
  }
}

template <typename Format, int Rows>
void few_rows_nt(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const uint16_t* b, int64_t ldb,
                 float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) few_rows_dots<Format, Rows, 4>(k, alpha, a, lda, b + j * ldb, ldb, c + j, ldc);
  for (; j < n; ++j) few_rows_dots<Format, Rows, 1>(k, alpha, a, lda, b + j * ldb, ldb, c + j, ldc);
}

template <typename Format>
void few_rows(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
              int64_t ldb, float* c, int64_t ldc) {
  auto pass = [&]<int Rows>(int64_t i) {
    if (trans_b) {
      few_rows_nt<Format, Rows>(n, k, alpha, a + i * k, k, b, ldb, c + i * ldc, ldc);
    } else {
      few_rows_nn<Format, Rows>(n, k, alpha, a + i * k, k, b, ldb, c + i * ldc, ldc);
    }
  };
  int64_t i = 0;
  for (; i + kMaxRows <= m; i += kMaxRows) pass.template operator()<kMaxRows>(i);
  if constexpr (kMaxRows == 4) {
    if (m - i >= 2) {
      pass.template operator()<2>(i);
      i += 2;
    }
  }
  if (i < m) pass.template operator()<1>(i);
}

}  // namespace

void gemm_widen_bf16(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  widen_rows<Bf16>(src, ld_src, rows, cols, dst, ld_dst);
}

void gemm_widen_f16(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  widen_rows<F16>(src, ld_src, rows, cols, dst, ld_dst);
}

void gemm_narrow_bf16(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                      int64_t ld_dst) {
  narrow_rows<Bf16>(src, ld_src, rows, cols, beta, dst, ld_dst);
}

void gemm_narrow_f16(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                     int64_t ld_dst) {
  narrow_rows<F16>(src, ld_src, rows, cols, beta, dst, ld_dst);
}

void gemm_few_rows_bf16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                        int64_t ldb, float* c, int64_t ldc) {
  few_rows<Bf16>(m, n, k, alpha, a, trans_b, b, ldb, c, ldc);
}

void gemm_few_rows_f16(int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                       int64_t ldb, float* c, int64_t ldc) {
  few_rows<F16>(m, n, k, alpha, a, trans_b, b, ldb, c, ldc);
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
