// The per-instruction-set tile operations behind the fused attention kernels. Compiled once
// per ISA (src/cpu/simd/flex_attention.cpp, Note [Kernel dispatch]); this header is
// inline-safe so those files may include it.
//
// Layouts. "Row-major" tiles are T[rows][ld]. A "panel" operand B[k][n] is stored in
// panels of `panel_width` columns, each panel ceil(k / k_group) rows of panel_width groups of
// k_group consecutive k values (zero past n and past k), so the micro-kernel streams it
// contiguously; n is padded to a multiple of panel_width. Row-major A operands of a product
// hold k rounded up to k_group, zero past k.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu::attention {

// Note [Attention products]
// The products of the fused kernels (Q·Kᵀ, P·V; dO·Vᵀ, Pᵀ·dO, dSᵀ·Q and dS·K in the backward)
// go through one table, ProductKernels<T>: results, and everything between the products (mods,
// softmax, gradients of the scores), in T; operands in a packed form the table owns, of
// operand_bytes per element, which the kernels above it never read. float32 and float64
// tables take operands of T (and bfloat16 and float16 inputs widened to float32); the bfloat16
// table, on CPUs with VDPBF16PS, takes bfloat16 operands whose panels interleave pairs of k
// values (k_group 2), the layout the instruction reads. The float32 tiles P and dS become
// bfloat16 operands once per tile (operand_rows), as flash kernels on GPUs round them; tables
// of T operands take the tiles as they are, Pᵀ and dSᵀ too (gemm_transposed_tile). AMX-BF16
// tiles read the same layouts (A by rows of k pairs, B in pairs of k values, 16 columns per
// tile): the AMX table's gemm runs TDPBF16PS over the same 32-wide panels (Note [AMX tiles] in
// src/cpu/simd/amx.h), chosen above the AVX512-BF16 one where the kernels pick a table for a
// dtype (products_for in flex_attention.cpp).
template <typename T>
struct ProductKernels {
  int64_t panel_width;
  int64_t k_group;          // consecutive k values per column of a panel row: 1, or 2 for bf16 pairs
  int64_t operand_bytes;    // bytes of an operand element
  bool tiles_are_operands;  // a T tile is an A operand as it is (operand_rows not needed)
  // C[m][n] = alpha * A[m][k] * B[k][n] (+ C when accumulate); A row-major (lda), B panels,
  // C row-major (ldc >= n rounded up to panel_width; the padded columns are written too).
  void (*gemm)(const void* a, int64_t lda, const void* b_panels, T* c, int64_t ldc, int64_t m, int64_t n, int64_t k,
               T alpha, bool accumulate);
  // gemm with A = tileᵀ: A[i][p] = a[p * lda + i] for a T tile [k][m], read where it lies, so the
  // backward's Pᵀ·dO and dSᵀ·Q need no transposed copy. Null where tiles are not operands: the
  // tile then goes through operand_rows(transpose) and gemm.
  void (*gemm_transposed_tile)(const T* a, int64_t lda, const void* b_panels, T* c, int64_t ldc, int64_t m,
                               int64_t n, int64_t k, T alpha, bool accumulate);
  // A operand: dst[r][c] = src[r * row_stride + c * col_stride] for r < rows, c < cols; ld is
  // a multiple of k_group and the columns up to it are zero.
  void (*pack_rows)(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t rows,
                    int64_t cols, void* dst, int64_t ld);
  // The panel form of B[p][j] = src[p * row_stride + j * col_stride], p < k, j < n.
  void (*pack_panels)(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t k,
                      int64_t n, void* dst);
  // An A operand from a T tile (rows x cols, ld_src): dst[r][c] = src[r][c], or src[c][r] when
  // transpose (dst then has cols rows); zero up to the next multiple of k_group.
  void (*operand_rows)(const T* src, int64_t ld_src, int64_t rows, int64_t cols, bool transpose, void* dst,
                       int64_t ld_dst);
  // TileKernels::softmax_step over the scores times score_scale (each product rounded as
  // gemm's alpha rounds it), with the probabilities written as A operand rows (ld_operand)
  // instead of into the tile, as operand_rows would make them. `masked`: the tile may hold -inf
  // scores (a partial block, a score_mod), so spans of masked scores are worth finding and
  // skipping; the result is the same either way. Null: softmax_step, then operand_rows where
  // tiles are not operands.
  void (*softmax_to_operand)(T* scores, int64_t ld, int64_t rows, int64_t cols, bool masked, T score_scale,
                             T* row_max, T* row_sum, T* acc, int64_t ld_acc, int64_t acc_cols, void* operand,
                             int64_t ld_operand) = nullptr;
  // gemm applies an alpha other than 1 in a pass of its own over C: where no score_mod needs
  // the scaled scores, the forward leaves the scale to softmax_to_operand (Note [Scale in the
  // softmax]).
  bool alpha_is_a_pass = false;
};

template <typename T>
struct TileKernels {
  // dst[r][c] = src[r * row_stride + c * col_stride] as T (rows of out and dO in the backward).
  void (*widen_rows)(ScalarType dtype, const void* src, int64_t row_stride, int64_t col_stride, int64_t rows,
                     int64_t cols, T* dst, int64_t ld);
  // One online-softmax step over a score tile: row_max/row_sum are the running max and
  // sum, acc the running output (rows x acc_cols, ld_acc). Scores become probabilities
  // exp(s - new max) in place; acc rows are rescaled when their max grows.
  void (*softmax_step)(T* scores, int64_t ld, int64_t rows, int64_t cols, T* row_max, T* row_sum, T* acc,
                       int64_t ld_acc, int64_t acc_cols);
  // Backward: scores become exp(s - lse) in place (0 where lse is -inf: a masked row).
  void (*probabilities)(T* scores, int64_t ld, int64_t rows, int64_t cols, const T* lse);
  // Backward: dp becomes p * (dp - delta) * dmod (dmod may be null: 1).
  void (*score_grad)(const T* p, T* dp, const T* dmod, int64_t ld, int64_t rows, int64_t cols, const T* delta);
  // dst[r * row_stride + c * col_stride] = scale_r * src[r][c] as dtype, with scale_r =
  // row_scale ? row_scale[r] : 1.
  void (*store_rows)(const T* src, int64_t ld, int64_t rows, int64_t cols, const T* row_scale, ScalarType dtype,
                     void* dst, int64_t row_stride, int64_t col_stride);
};

}  // namespace ember::cpu::attention

EMBER_DECLARE_KERNEL(const ::ember::cpu::attention::TileKernels<float>*, flex_tile_kernels_f32, ())
EMBER_DECLARE_KERNEL(const ::ember::cpu::attention::ProductKernels<float>*, flex_products_f32, ())
// float64: the baseline build's plain loops on every level (the same bits on each).
namespace ember::cpu::baseline {
const attention::TileKernels<double>* flex_tile_kernels_f64();
const attention::ProductKernels<double>* flex_products_f64();
}  // namespace ember::cpu::baseline
// bfloat16 operands on VDPBF16PS (EMBER_BF16_KERNEL: null below avx512_bf16), and the same
// operands on AMX tiles (EMBER_AMX_KERNEL: null below avx512_amx).
namespace ember::cpu::avx512 {
const ::ember::cpu::attention::ProductKernels<float>* flex_products_bf16();
const ::ember::cpu::attention::ProductKernels<float>* flex_products_amx();
}
