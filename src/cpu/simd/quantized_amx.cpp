// Prompt products over block-quantized weights on AMX-INT8 tiles (Note [Quantized prompts on
// AMX] in cpu/quantized.h), in the AVX-512 build only and not in ember-rt; the other builds
// compile nothing here.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "cpu/quantized_format.h"
#include "cpu/simd/amx.h"

#if defined(__AVX512F__) && !defined(EMBER_RT_CPU)

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

#define EMBER_AMX_INT8_TARGET __attribute__((target("amx-tile,amx-int8")))

constexpr int64_t kRows = kQuantizedAmxRows;         // activation rows a step: two A tiles of 16
constexpr int64_t kGroupCols = kQuantizedAmxGroup;   // weight rows (output columns) a group: two B tiles of 16
constexpr int64_t kTileBytes = kQuantizedAmxTileBytes;  // a B tile: 8 rows of 16 columns x 4 k values

// The tile shapes: tiles 0-3 the int32 sums of the four 16 x 16 quarters of a 32 x 32 step,
// tiles 4-5 the two halves of the activation rows (one block of 32 int8 values each row),
// tiles 6-7 the group's two halves of weight columns (8 rows of 4 k values x 16 columns).
EMBER_AMX_INT8_TARGET void configure(int64_t rows) {
  amx::TileConfig config;
  const auto top = static_cast<uint8_t>(rows < 16 ? rows : 16);
  const auto bottom = static_cast<uint8_t>(rows > 16 ? rows - 16 : 1);
  for (int t = 0; t < 4; ++t) config.colsb[t] = 64;
  config.rows[0] = config.rows[1] = top;
  config.rows[2] = config.rows[3] = bottom;
  config.colsb[4] = config.colsb[5] = kQuantBlock;
  config.rows[4] = top;
  config.rows[5] = bottom;
  config.colsb[6] = config.colsb[7] = 64;
  config.rows[6] = config.rows[7] = kQuantBlock / 4;
  amx::load_config(config);
}

// Group g's weights as tile operands: for block b, two tiles (columns 0-15, 16-31 of the group)
// whose row r holds each column's values 4r..4r+3 of the block as int8 (int4: q - 8), zero past
// n; and its scales as float32 [blocks][32], zero past n.
EMBER_AMX_INT8_TARGET void pack_group(QuantFormat format, int64_t n, int64_t blocks, const uint8_t* w,
                                      const uint16_t* w_scales, int8_t* tiles, float* scales) {
  const bool int4 = format == QuantFormat::Int4;
  const int64_t block_bytes = int4 ? kQuantBlock / 2 : kQuantBlock, row_bytes = blocks * block_bytes;
  const __m512i column = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i nibbles = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  for (int half = 0; half < 2; ++half) {
    const int64_t first = half * 16, count = n - first < 16 ? (n > first ? n - first : 0) : 16;
    const __mmask16 inside = count >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << count) - 1);
    const __m512i offsets = _mm512_mullo_epi32(column, _mm512_set1_epi32(static_cast<int32_t>(row_bytes)));
    const uint8_t* base = count > 0 ? w + first * row_bytes : w;  // no lanes read when count is 0
    for (int64_t b = 0; b < blocks; ++b) {
      int8_t* tile = tiles + (b * 2 + half) * kTileBytes;
      const uint8_t* block = base + b * block_bytes;
      if (int4) {
        // Row r < 4 holds values 4r..4r+3: the low halves of bytes 4r..4r+3; row r + 4 their high halves.
        for (int r = 0; r < 4; ++r) {
          const __m512i bytes = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), inside, offsets, block + 4 * r, 1);
          const __m512i low = _mm512_sub_epi8(_mm512_and_si512(bytes, nibbles), eight);
          const __m512i high = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibbles), eight);
          _mm512_storeu_si512(tile + r * 64, _mm512_maskz_mov_epi32(inside, low));
          _mm512_storeu_si512(tile + (r + 4) * 64, _mm512_maskz_mov_epi32(inside, high));
        }
      } else {
        for (int r = 0; r < 8; ++r)
          _mm512_storeu_si512(tile + r * 64,
                              _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), inside, offsets, block + 4 * r, 1));
      }
    }
    for (int64_t j = 0; j < 16; ++j)
      for (int64_t b = 0; b < blocks; ++b)
        scales[b * kGroupCols + first + j] = j < count ? half_to_float(w_scales[(first + j) * blocks + b]) : 0.0f;
  }
}

}  // namespace

// Weight rows [0, n) (n <= kQuantizedAmxColumns) against m activation rows: per 32 rows, block
// by block, each group's 32 x 32 int32 sums from the tiles, then times both scales into float32
// sums in block order (one fused multiply-add per block and element).
EMBER_AMX_INT8_TARGET void quantized_product_amx(QuantFormat format, int64_t m, int64_t n, int64_t blocks,
                                                 const int8_t* a, const float* a_scales, const void* w,
                                                 const uint16_t* w_scales, float* c, int64_t ldc, void* scratch) {
  const int64_t groups = (n + kGroupCols - 1) / kGroupCols, k = blocks * kQuantBlock;
  const int64_t row_bytes = format == QuantFormat::Int4 ? k / 2 : k;
  // scratch: the groups' tiles, their scales, the float32 sums of each group, two steps' int32 sums.
  int8_t* tiles = static_cast<int8_t*>(scratch);
  float* scales = reinterpret_cast<float*>(tiles + groups * blocks * 2 * kTileBytes);
  float* sums = scales + groups * blocks * kGroupCols;
  int32_t* dots[2] = {reinterpret_cast<int32_t*>(sums + groups * kRows * kGroupCols),
                      reinterpret_cast<int32_t*>(sums + (groups + 1) * kRows * kGroupCols)};
  for (int64_t g = 0; g < groups; ++g)
    pack_group(format, n - g * kGroupCols < kGroupCols ? n - g * kGroupCols : kGroupCols, blocks,
               static_cast<const uint8_t*>(w) + g * kGroupCols * row_bytes, w_scales + g * kGroupCols * blocks,
               tiles + g * blocks * 2 * kTileBytes, scales + g * blocks * kGroupCols);
  int64_t configured = 0;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int64_t rows = m - i0 < kRows ? m - i0 : kRows;
    if (rows != configured) {
      configure(rows);
      configured = rows;
    }
    for (int64_t t = 0; t < groups * kRows * kGroupCols; t += 16) _mm512_storeu_ps(sums + t, _mm512_setzero_ps());
    const int8_t* a_rows = a + i0 * k;
    const bool two = rows > 16;
    // Step s = (block s / groups, group s % groups): its tile products, then its sums stored in
    // dots[s % 2]. The next step's products are issued before this one's float32 work, so that
    // the tiles and the vector units run side by side.
    const auto multiply = [&](int64_t s) {
      const int64_t b = s / groups, g = s % groups;
      if (g == 0) {
        _tile_loadd(4, a_rows + b * kQuantBlock, k);
        if (two) _tile_loadd(5, a_rows + 16 * k + b * kQuantBlock, k);
      }
      const int8_t* group_tiles = tiles + (g * blocks + b) * 2 * kTileBytes;
      _tile_loadd(6, group_tiles, 64);
      _tile_loadd(7, group_tiles + kTileBytes, 64);
      _tile_zero(0);
      _tile_zero(1);
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      if (two) {
        _tile_zero(2);
        _tile_zero(3);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
      }
    };
    const auto store = [&](int32_t* out) {
      _tile_stored(0, out, kGroupCols * 4);
      _tile_stored(1, out + 16, kGroupCols * 4);
      if (two) {
        _tile_stored(2, out + 16 * kGroupCols, kGroupCols * 4);
        _tile_stored(3, out + 16 * kGroupCols + 16, kGroupCols * 4);
      }
    };
    const int64_t steps = blocks * groups;
    multiply(0);
    store(dots[0]);
    for (int64_t s = 0; s < steps; ++s) {
      if (s + 1 < steps) multiply(s + 1);
      const int64_t b = s / groups, g = s % groups;
      const int32_t* step_dots = dots[s % 2];
      const float* block_scales = scales + (g * blocks + b) * kGroupCols;
      const __m512 w_low = _mm512_loadu_ps(block_scales), w_high = _mm512_loadu_ps(block_scales + 16);
      float* group_sums = sums + g * kRows * kGroupCols;
      for (int64_t i = 0; i < rows; ++i) {
        const __m512 a_scale = _mm512_set1_ps(a_scales[(i0 + i) * blocks + b]);
        float* row = group_sums + i * kGroupCols;
        const __m512 low = _mm512_cvtepi32_ps(_mm512_loadu_si512(step_dots + i * kGroupCols));
        const __m512 high = _mm512_cvtepi32_ps(_mm512_loadu_si512(step_dots + i * kGroupCols + 16));
        _mm512_storeu_ps(row, _mm512_fmadd_ps(low, _mm512_mul_ps(a_scale, w_low), _mm512_loadu_ps(row)));
        _mm512_storeu_ps(row + 16, _mm512_fmadd_ps(high, _mm512_mul_ps(a_scale, w_high), _mm512_loadu_ps(row + 16)));
      }
      if (s + 1 < steps) store(dots[(s + 1) % 2]);
    }
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = g * kGroupCols, cols = n - first < kGroupCols ? n - first : kGroupCols;
      const __mmask16 low = cols >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << cols) - 1);
      const __mmask16 high = cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1) : __mmask16(0);
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = sums + g * kRows * kGroupCols + i * kGroupCols;
        _mm512_mask_storeu_ps(c + (i0 + i) * ldc + first, low, _mm512_loadu_ps(row));
        _mm512_mask_storeu_ps(c + (i0 + i) * ldc + first + 16, high, _mm512_loadu_ps(row + 16));
      }
    }
  }
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY

#endif
