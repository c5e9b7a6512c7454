// float32 matrix transpose in 8x8 register blocks, built per instruction set (cpu/transpose.h).
#include "cpu/transpose.h"

#include "cpu/simd/float_vector.h"

namespace ember::cpu::EMBER_CPU_CAPABILITY {
namespace {

// The 8x8 block at src (row stride ls) written transposed at dst (row stride ld): pairs of
// rows interleave, then pairs of pairs, then the 128-bit halves swap (unpack, shuffle and
// permute on AVX2).
static inline void transpose_block(const float* src, int64_t ls, float* dst, int64_t ld) {
  Floats r[8];
  for (int i = 0; i < 8; ++i) r[i] = load_as<Floats>(src + i * ls);
  Floats t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * i + 1] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const Floats& a = t[4 * i + j];
      const Floats& b = t[4 * i + j + 2];
      u[4 * i + 2 * j] = __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13);
      u[4 * i + 2 * j + 1] = __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
    }
  // u[k] (k < 4) holds column k of rows 0-3 in its low half and column k + 4 in its high
  // half; u[k + 4] the same for rows 4-7.
  for (int k = 0; k < 4; ++k) {
    store_as(dst + k * ld, __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11));
    store_as(dst + (k + 4) * ld, __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15));
  }
}

}  // namespace

void transpose_floats(const float* src, int64_t rows, int64_t cols, float* dst) {
  // Tiles of 32x32 keep the destination's rows in cache while their blocks fill in (64 ran
  // slower where a row is 1 KiB: its lines compete for a few cache sets).
  constexpr int64_t kTile = 32;
  const int64_t whole_rows = rows / 8 * 8, whole_cols = cols / 8 * 8;
  for (int64_t r0 = 0; r0 < whole_rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < whole_cols; c0 += kTile) {
      const int64_t r_end = r0 + kTile < whole_rows ? r0 + kTile : whole_rows;
      const int64_t c_end = c0 + kTile < whole_cols ? c0 + kTile : whole_cols;
      for (int64_t r = r0; r < r_end; r += 8)
        for (int64_t c = c0; c < c_end; c += 8) transpose_block(src + r * cols + c, cols, dst + c * rows + r, rows);
    }
  // The ragged edges: columns past the last whole block, then rows past it.
  for (int64_t r = 0; r < whole_rows; ++r)
    for (int64_t c = whole_cols; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  for (int64_t r = whole_rows; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

}  // namespace ember::cpu::EMBER_CPU_CAPABILITY
