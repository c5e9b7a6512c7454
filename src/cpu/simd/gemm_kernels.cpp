// Conversions between bf16/f16 matrices and the float32 blocks the low-precision GEMM
// multiplies (Note [Low-precision GEMM] in cpu/gemm.cpp). Compiled once per instruction set.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// v + beta * old with one rounding where the build has FMA, like the vector code.
inline float add_scaled(float v, float beta, float old) {
#if defined(__FMA__)
  return __builtin_fmaf(beta, old, v);
#else
  return v + beta * old;
#endif
}

struct Bf16 {
  static float to_float(uint16_t x) { return BFloat16::to_float(x); }
  static uint16_t from_float(float x) { return BFloat16::from_float(x); }
#if defined(__AVX512F__)
  static __m512 load16(const uint16_t* p) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  // Round to nearest even like BFloat16::from_float; NaN keeps its top bits, made quiet.
  static void store16(uint16_t* p, __m512 v) {
    __m512i x = _mm512_castps_si512(v);
    __m512i high = _mm512_srli_epi32(x, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    __m512i quiet_nan = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    __m512i bits = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), rounded, quiet_nan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
  }
#elif defined(__AVX2__)
  static __m256 load8(const uint16_t* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static void store8(uint16_t* p, __m256 v) {
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
#endif
};

struct F16 {
  static float to_float(uint16_t x) { return Half::to_float(x); }
  static uint16_t from_float(float x) { return Half::from_float(x); }
#if defined(__AVX512F__)
  static __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store16(uint16_t* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#elif defined(__AVX2__)
  static __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store8(uint16_t* p, __m256 v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
};

template <typename Format>
void widen_rows(const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* s = src + r * ld_src;
    float* d = dst + r * ld_dst;
    int64_t j = 0;
#if defined(__AVX512F__)
    for (; j + 16 <= cols; j += 16) _mm512_storeu_ps(d + j, Format::load16(s + j));
#elif defined(__AVX2__)
    for (; j + 8 <= cols; j += 8) _mm256_storeu_ps(d + j, Format::load8(s + j));
#endif
    for (; j < cols; ++j) d[j] = Format::to_float(s[j]);
  }
}

// dst = round(src + beta * dst); dst is not read when beta == 0.
template <typename Format>
void narrow_rows(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                 int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld_src;
    uint16_t* d = dst + r * ld_dst;
    int64_t j = 0;
#if defined(__AVX512F__)
    if (beta == 0.0f) {
      for (; j + 16 <= cols; j += 16) Format::store16(d + j, _mm512_loadu_ps(s + j));
    } else {
      const __m512 vbeta = _mm512_set1_ps(beta);
      for (; j + 16 <= cols; j += 16)
        Format::store16(d + j, _mm512_fmadd_ps(vbeta, Format::load16(d + j), _mm512_loadu_ps(s + j)));
    }
#elif defined(__AVX2__)
    if (beta == 0.0f) {
      for (; j + 8 <= cols; j += 8) Format::store8(d + j, _mm256_loadu_ps(s + j));
    } else {
      const __m256 vbeta = _mm256_set1_ps(beta);
      for (; j + 8 <= cols; j += 8)
        Format::store8(d + j, _mm256_fmadd_ps(vbeta, Format::load8(d + j), _mm256_loadu_ps(s + j)));
    }
#endif
    for (; j < cols; ++j) d[j] = Format::from_float(beta == 0.0f ? s[j] : add_scaled(s[j], beta, Format::to_float(d[j])));
  }
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

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
