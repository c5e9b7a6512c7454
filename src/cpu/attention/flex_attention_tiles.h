// The per-instruction-set tile operations behind the fused attention kernels. Compiled once
// per ISA (src/cpu/simd/flex_attention.cpp, Note [Kernel dispatch]); this header is
// inline-safe so those files may include it.
//
// Layouts. "Row-major" tiles are T[rows][ld]. A "panel" operand B[k][n] is stored in
// panels of `panel_width` columns, each panel k rows of panel_width contiguous values
// (zero past n), so the micro-kernel streams it contiguously; n is padded to a multiple
// of panel_width.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu::attention {

template <typename T>
struct TileKernels {
  int64_t panel_width;
  // C[m][n] = (accumulate ? C : 0) + A[m][k] * B[k][n]; A row-major (lda), B panels, C
  // row-major (ldc >= n rounded up to panel_width).
  void (*gemm)(const T* a, int64_t lda, const T* b_panels, T* c, int64_t ldc, int64_t m, int64_t n, int64_t k,
               bool accumulate);
  // dst[r][c] = scale * src[r * row_stride + c * col_stride] for r < rows, c < cols, as T.
  void (*pack_rows)(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t rows,
                    int64_t cols, T scale, T* dst, int64_t ld);
  // The panel form of B[p][j] = scale * src[p * row_stride + j * col_stride], p < k, j < n.
  void (*pack_panels)(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t k,
                      int64_t n, T scale, T* dst);
  // One online-softmax step over a score tile: row_max/row_sum are the running max and
  // sum, acc the running output (rows x acc_cols, ld_acc). Scores become probabilities
  // exp(s - new max) in place; acc rows are rescaled when their max grows.
  void (*softmax_step)(T* scores, int64_t ld, int64_t rows, int64_t cols, T* row_max, T* row_sum, T* acc,
                       int64_t ld_acc, int64_t acc_cols);
  // Backward: scores become exp(s - lse) in place (0 where lse is -inf: a masked row).
  void (*probabilities)(T* scores, int64_t ld, int64_t rows, int64_t cols, const T* lse);
  // Backward: dp becomes p * (dp - delta) * dmod (dmod may be null: 1).
  void (*score_grad)(const T* p, T* dp, const T* dmod, int64_t ld, int64_t rows, int64_t cols, const T* delta);
  // dst[c][r] = src[r][c].
  void (*transpose)(const T* src, int64_t ld_src, int64_t rows, int64_t cols, T* dst, int64_t ld_dst);
  // dst[r * row_stride + c * col_stride] = scale_r * src[r][c] as dtype, with scale_r =
  // row_scale ? row_scale[r] : 1.
  void (*store_rows)(const T* src, int64_t ld, int64_t rows, int64_t cols, const T* row_scale, ScalarType dtype,
                     void* dst, int64_t row_stride, int64_t col_stride);
};

}  // namespace ember::cpu::attention

EMBER_DECLARE_KERNEL(const ::ember::cpu::attention::TileKernels<float>*, flex_tile_kernels_f32, ())
EMBER_DECLARE_KERNEL(const ::ember::cpu::attention::TileKernels<double>*, flex_tile_kernels_f64, ())
