// Rotary position embedding: rotates the pairs (x[i], x[i + half]) of each row of length
// 2 * half by the angle of the row's position. "Acc" below is float64 for float64 inputs
// and float32 otherwise.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// x viewed as [lead..., positions, 2 * half]: leading dims of any sizes and strides (in
// elements), the position dim with stride position_stride, the last dim contiguous.
struct RotaryLayout {
  const int64_t* lead_sizes = nullptr;    // [lead_dims]
  const int64_t* lead_strides = nullptr;  // [lead_dims]
  int64_t lead_dims = 0;
  int64_t positions = 0, position_stride = 0, half = 0;
  bool out_like_x = false;  // out has x's strides (else it is contiguous)
};

// out ([lead..., positions, 2 * half], contiguous or laid out as x) = x rotated by +angle, or by -angle when
// `inverse` (the backward): cos, sin are contiguous [positions, half] of Acc.
//   forward:  out1 = x1 * cos - x2 * sin,  out2 = x1 * sin + x2 * cos
//   inverse:  out1 = x1 * cos + x2 * sin,  out2 = x2 * cos - x1 * sin
void rotary_embedding(ScalarType dtype, const void* x, const RotaryLayout& layout, const void* cos, const void* sin,
                      void* out, bool inverse);

}  // namespace ember::cpu

// `rows` consecutive positions: row r of x at x + r * x_row_stride, of out at out + r *
// out_row_stride, with cos/sin rows starting at cos, sin.
EMBER_DECLARE_KERNEL(void, rotary_rows,
                     (::ember::ScalarType dtype, const void* x, int64_t x_row_stride, const void* cos, const void* sin,
                      void* out, int64_t out_row_stride, int64_t rows, int64_t half, bool inverse))
