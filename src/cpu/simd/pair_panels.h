// The pair panels of bfloat16 B operands, the form VDPBF16PS and AMX tiles read (Note
// [Attention products], Note [AMX tiles]), packed from bfloat16 storage with AVX-512 in the
// AVX-512 build; the other builds see nothing here. Inline-safe.
#pragma once
#include "cpu/simd/simd_common.h"

#if defined(__AVX512F__)
#include <immintrin.h>

namespace ember::cpu::EMBER_CPU_CAPABILITY {

constexpr int64_t kPairPanel = 32;  // columns a panel

// rows[i] = the i-th row of a 16 x 16 block of 32-bit values, transposed in place: 32-bit and
// 64-bit unpacks within 128-bit lanes, then two rounds of 128-bit lane shuffles.
inline void transpose_16x16_epi32(__m512i* rows) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(rows[i], rows[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(rows[i], rows[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // u[g + c]: rows g..g+3 of columns c, c+4, c+8, c+12 (lane j: c + 4j)
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i even_lanes_top = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
    const __m512i odd_lanes_top = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    const __m512i even_lanes_bottom = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i odd_lanes_bottom = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    rows[c] = _mm512_shuffle_i32x4(even_lanes_top, even_lanes_bottom, 0x88);
    rows[c + 8] = _mm512_shuffle_i32x4(even_lanes_top, even_lanes_bottom, 0xdd);
    rows[c + 4] = _mm512_shuffle_i32x4(odd_lanes_top, odd_lanes_bottom, 0x88);
    rows[c + 12] = _mm512_shuffle_i32x4(odd_lanes_top, odd_lanes_bottom, 0xdd);
  }
}

// bfloat16 B[p][j] (j < n, p < k) into panels of 32 columns of k pairs, zero past n and past k
// up to k_padded (even): panel q at dst + q * panel_pairs * 64 (panel_pairs 0: k_padded / 2),
// each pair row 64 values. B[p][j] lies at b[p * row_stride + j * col_stride].
inline void pack_pair_panels(const uint16_t* b, int64_t row_stride, int64_t col_stride, int64_t k, int64_t n,
                             int64_t k_padded, uint16_t* dst, int64_t panel_pairs = 0) {
  const int64_t pairs = k_padded / 2, stride_pairs = panel_pairs > 0 ? panel_pairs : pairs;
  if (col_stride == 1) {
    // Rows of B: two rows' 32 columns interleaved into a panel's pair row, every panel of the
    // two rows in turn, so that both rows are read along their length.
    static const uint16_t kLow[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                      8,  40, 9,  41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    static const uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                       24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    const __m512i low = _mm512_loadu_si512(kLow), high = _mm512_loadu_si512(kHigh);
    for (int64_t q = 0; q < pairs; ++q) {
      const int64_t p = 2 * q;
      for (int64_t j0 = 0; j0 < n; j0 += kPairPanel) {
        const int64_t width = n - j0 < kPairPanel ? n - j0 : kPairPanel;
        const __mmask32 lanes = width == kPairPanel ? ~__mmask32(0) : static_cast<__mmask32>((1u << width) - 1);
        const __m512i even = p < k ? _mm512_maskz_loadu_epi16(lanes, b + p * row_stride + j0) : _mm512_setzero_si512();
        const __m512i odd =
            p + 1 < k ? _mm512_maskz_loadu_epi16(lanes, b + (p + 1) * row_stride + j0) : _mm512_setzero_si512();
        uint16_t* row = dst + (j0 / kPairPanel) * stride_pairs * (2 * kPairPanel) + q * (2 * kPairPanel);
        _mm512_storeu_si512(row, _mm512_permutex2var_epi16(even, low, odd));
        _mm512_storeu_si512(row + 32, _mm512_permutex2var_epi16(even, high, odd));
      }
    }
    return;
  }
  for (int64_t j0 = 0; j0 < n; j0 += kPairPanel) {
    uint16_t* panel = dst + (j0 / kPairPanel) * stride_pairs * (2 * kPairPanel);
    const int64_t width = n - j0 < kPairPanel ? n - j0 : kPairPanel;
    // Columns of B lie along memory (B = Wᵀ, the weight of a linear layer, or attention's
    // keys): a pair is one 32-bit word of a column. 16 columns by 16 pairs are loaded a column
    // each and transposed in registers; the rest are gathered 16 columns at a time.
    const int64_t whole_pairs = k / 2;
    int64_t transposed = 0;  // pairs done by the transposes
#ifndef EMBER_RT_CPU  // ember-rt gathers them all: the same bytes, in less code (Note [Runtime size])
    if (row_stride == 1 && width == kPairPanel)
      for (; transposed + 16 <= whole_pairs; transposed += 16)
        for (int half = 0; half < 2; ++half) {
          __m512i block[16];
          for (int j = 0; j < 16; ++j)
            block[j] = _mm512_loadu_si512(b + (j0 + 16 * half + j) * col_stride + 2 * transposed);
          transpose_16x16_epi32(block);
          for (int q = 0; q < 16; ++q)
            _mm512_storeu_si512(panel + (transposed + q) * (2 * kPairPanel) + 32 * half, block[q]);
        }
#endif
    const bool gather = row_stride == 1 && col_stride * (kPairPanel - 1) < (int64_t(1) << 30);
    for (int half = 0; half < 2; ++half) {
      const int64_t first = j0 + 16 * half, count = width - 16 * half;
      if (count <= 0) {
        for (int64_t q = transposed; q < pairs; ++q)
          _mm512_storeu_si512(panel + q * (2 * kPairPanel) + 32 * half, _mm512_setzero_si512());
        continue;
      }
      const __mmask16 lanes = count >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << count) - 1);
      const __m512i offsets =
          _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                             _mm512_set1_epi32(static_cast<int32_t>(col_stride)));
      for (int64_t q = transposed; q < pairs; ++q) {
        uint16_t* row = panel + q * (2 * kPairPanel) + 32 * half;
        if (gather && q < whole_pairs) {
          const __m512i words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), lanes, offsets,
                                                            b + first * col_stride + 2 * q, 2);
          _mm512_storeu_si512(row, words);
          continue;
        }
        for (int64_t j = 0; j < 16; ++j) {
          const bool inside = j < count;
          row[2 * j] = inside && 2 * q < k ? b[(2 * q) * row_stride + (first + j) * col_stride] : 0;
          row[2 * j + 1] = inside && 2 * q + 1 < k ? b[(2 * q + 1) * row_stride + (first + j) * col_stride] : 0;
        }
      }
    }
  }
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY

#endif
