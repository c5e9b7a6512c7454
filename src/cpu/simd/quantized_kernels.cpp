// Kernels of the block-quantized int8 product (Note [Block-quantized weights] in
// cpu/quantized.h): weights and activations in blocks of 32 int8 values with one scale each,
// dot products of a block exact in int32, scaled and summed in float32. Compiled once per
// instruction set (Note [Kernel dispatch]).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>
#include <cstdint>

#include "cpu/simd/float_vector.h"

#define EMBER_UNROLLED _Pragma("GCC unroll 16")
#if defined(__AVX512F__)
#define EMBER_ANDNOT(mask, v) _mm512_andnot_ps(mask, v)
#elif defined(__AVX2__)
#define EMBER_ANDNOT(mask, v) _mm256_andnot_ps(mask, v)
#endif

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

constexpr int64_t kQuantBlock = 32;

inline float scale_to_float(uint16_t half) {
#if defined(__F16C__)
  return _cvtsh_ss(half);
#else
  return half_to_float(half);
#endif
}

#if defined(__AVX512F__)
// Two blocks (64 values) at a time: lanes 0-7 hold the first block's partial sums, 8-15 the
// second's. AVX-512 has no sign-of-byte instruction: |w| and a negated where w < 0 instead.
inline __m512i pair_dots(const int8_t* a, const int8_t* w) {
  const __m512i va = _mm512_loadu_si512(a), vw = _mm512_loadu_si512(w);
  const __m512i abs_w = _mm512_abs_epi8(vw);
  const __m512i signed_a = _mm512_mask_sub_epi8(va, _mm512_movepi8_mask(vw), _mm512_setzero_si512(), va);
  // |w| (unsigned, <= 128) times a (|a| <= 127) summed in pairs stays inside int16.
  return _mm512_madd_epi16(_mm512_maddubs_epi16(abs_w, signed_a), _mm512_set1_epi16(1));
}
#elif defined(__AVX2__)
inline __m256i block_dots(const int8_t* a, const int8_t* w) {
  const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i vw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  const __m256i abs_w = _mm256_sign_epi8(vw, vw);
  const __m256i signed_a = _mm256_sign_epi8(va, vw);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_a), _mm256_set1_epi16(1));
}
#endif

// Nearest integer, ties to even, for |x| < 2^22 (the sum rounds away the fraction): no libm
// call at any instruction set.
inline float round_to_int(float x) { return (x + 12582912.0f) - 12582912.0f; }

// One activation block: d = max|x| / 127, q = round(x / d) (as x * (1 / d)); q = 0 when d is 0
// or not finite, and d NaN when the block holds a NaN, so that the product gives NaN.
inline void quantize_block(const float* x, int8_t* q, float* scale) {
  float amax = 0.0f, probe = 0.0f;
  int64_t t = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  vf vmax_abs = vset(0.0f), vprobe = vset(0.0f);
  const vf sign_mask = vset(-0.0f);
  for (; t < kQuantBlock; t += kNativeWidth) {
    const vf v = vload(x + t);
    vmax_abs = vmax(vmax_abs, EMBER_ANDNOT(sign_mask, v));
    vprobe = vadd(vprobe, vmul(v, vset(0.0f)));
  }
  amax = hmax(vmax_abs);
  probe = hsum(vprobe);
#endif
  for (; t < kQuantBlock; ++t) {
    const float v = x[t];
    amax = v > amax ? v : (-v > amax ? -v : amax);
    probe += v * 0.0f;
  }
  const float d = probe != probe ? probe : amax / 127.0f;
  *scale = d;
  const float inverse = d > 0.0f && d < __builtin_inff() ? 1.0f / d : 0.0f;
  for (int64_t u = 0; u < kQuantBlock; ++u) {
    float r = round_to_int(x[u] * inverse);
    r = r > 127.0f ? 127.0f : (r < -127.0f ? -127.0f : r);
    q[u] = static_cast<int8_t>(r);
  }
}

inline int32_t block_dot_scalar(const int8_t* a, const int8_t* w) {
  int32_t sum = 0;
  for (int64_t t = 0; t < kQuantBlock; ++t) sum += int32_t{a[t]} * int32_t{w[t]};
  return sum;
}

// c[i, j] = sum over blocks b of (a_scale[i, b] * w_scale[j, b]) * dot(a[i, b], w[j, b]),
// Rows rows of a against weight rows [0, n), each weight row read once, in address order.
template <int Rows>
void q8_rows(int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const int8_t* w,
             const uint16_t* w_scales, float* c, int64_t ldc) {
  const int64_t k = blocks * kQuantBlock;
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* row = w + j * k;
    const uint16_t* row_scales = w_scales + j * blocks;
    float sums[Rows];
    int64_t b = 0;
#if defined(__AVX512F__)
    vf acc[Rows];
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) acc[i] = vset(0.0f);
    // Up to 16 blocks share one conversion of their weight scales and one product with each
    // row's activation scales; each pair of blocks then picks its two scales by a permute.
    for (; b + 2 <= blocks; b += 16) {
      const int64_t group = (blocks - b < 16 ? blocks - b : 16) & ~int64_t{1};
      const __mmask16 lanes = static_cast<__mmask16>((1u << group) - 1);
      const vf w_scale = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lanes, row_scales + b));
      vf scales[Rows];
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) scales[i] = _mm512_mul_ps(w_scale, _mm512_maskz_loadu_ps(lanes, a_scales + i * blocks + b));
      for (int64_t pair = 0; pair < group; pair += 2) {
        const __m512i pick = _mm512_inserti32x8(_mm512_set1_epi32(static_cast<int>(pair)),
                                                _mm256_set1_epi32(static_cast<int>(pair + 1)), 1);
        EMBER_UNROLLED
        for (int i = 0; i < Rows; ++i) {
          const __m512i dots = pair_dots(a + i * k + (b + pair) * kQuantBlock, row + (b + pair) * kQuantBlock);
          acc[i] = vfma(_mm512_cvtepi32_ps(dots), _mm512_permutexvar_ps(pick, scales[i]), acc[i]);
        }
      }
      if (group < 16) {
        b += group;
        break;
      }
    }
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = hsum(acc[i]);
#elif defined(__AVX2__)
    vf acc[Rows];
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) acc[i] = vset(0.0f);
    for (; b < blocks; ++b) {
      const float wb = scale_to_float(row_scales[b]);
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) {
        const __m256i dots = block_dots(a + i * k + b * kQuantBlock, row + b * kQuantBlock);
        acc[i] = vfma(_mm256_cvtepi32_ps(dots), vset(a_scales[i * blocks + b] * wb), acc[i]);
      }
    }
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = hsum(acc[i]);
#else
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) sums[i] = 0.0f;
#endif
    for (; b < blocks; ++b) {  // what the vector loop left: an odd last block under AVX-512; all at baseline
      const float wb = scale_to_float(row_scales[b]);
      EMBER_UNROLLED
      for (int i = 0; i < Rows; ++i) {
        const int32_t dot = block_dot_scalar(a + i * k + b * kQuantBlock, row + b * kQuantBlock);
        sums[i] += static_cast<float>(dot) * (a_scales[i * blocks + b] * wb);
      }
    }
    EMBER_UNROLLED
    for (int i = 0; i < Rows; ++i) c[i * ldc + j] = sums[i];
  }
}

}  // namespace

void q8_quantize_rows(const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values, float* scales) {
  const int64_t blocks = k / kQuantBlock;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < blocks; ++b)
      quantize_block(a + r * ld + b * kQuantBlock, values + r * k + b * kQuantBlock, scales + r * blocks + b);
}

void q8_product_rows(int64_t m, int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const int8_t* w,
                     const uint16_t* w_scales, float* c, int64_t ldc) {
  const int64_t k = blocks * kQuantBlock;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) q8_rows<4>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
  if (m - i >= 2) {
    q8_rows<2>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
    i += 2;
  }
  if (i < m) q8_rows<1>(n, blocks, a + i * k, a_scales + i * blocks, w, w_scales, c + i * ldc, ldc);
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
