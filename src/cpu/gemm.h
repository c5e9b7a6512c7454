// Dense matrix multiply on raw row-major pointers; strides are in elements.
//
// Each product runs on the backend chosen for its shape: OpenBLAS, oneDNN or ember's own
// kernels (Note [GEMM backends] in gemm_backend.h). float16/bfloat16 are computed with
// float32 accumulation and only the final result is rounded.
#pragma once
#include <cstdint>
#include <span>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, op(X) = X^T when trans_x.
// A is stored [m, k] (or [k, m] when trans_a) with row stride lda; likewise B and C.
// When beta == 0, C is not read (it may hold NaN). k == 0 or alpha == 0 gives beta * C.
// A leading dimension smaller than the row length is allowed (ld 0 broadcasts one row).
// dtype: kFloat32, kFloat64, kFloat16 or kBFloat16.
void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          double alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
          double beta, void* c, int64_t ldc);

// gemm with C in float32 while A and B are float16/bfloat16 (or float32): float32
// accumulation and no rounding of C, for computations that keep float32 accumulators (the
// fused loss's logits and gradients).
void gemm_float32_out(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                      const void* a, int64_t lda, const void* b, int64_t ldb, double beta, float* c, int64_t ldc);

// Note [Products sharing B on AMX]
// For a caller that multiplies one bf16 B by many blocks of A from its own pool tasks (the
// fused loss's tiles), where the CPU has AMX-BF16 (amx_products_available): B packed once
// into the panels the tiles read (amx_pack_b, into packed: amx_packed_b_size(k, n) values,
// 64-byte aligned; column packs on the pool, serially from a pool task), then products on the
// calling thread alone into a float32 C (Note [AMX GEMM]), each packing A as it goes or reading
// it where it lies. With `accumulate` the sums start from C itself: calls that
// split k at multiples of 32 make one chain of float32 additions per element, the same values
// however the caller cuts its k (chunks of tokens, tiles of classes) or its rows.
bool amx_products_available();
int64_t amx_packed_b_size(int64_t k, int64_t n);
void amx_pack_b(bool trans_b, int64_t k, int64_t n, const void* b, int64_t ldb, uint16_t* packed);
// C[m, n] = op(A) B (+ C when accumulate); A bf16, stored [m, k] or [k, m] when trans_a.
void amx_product_packed_b(bool trans_a, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                          const uint16_t* packed_b, bool accumulate, float* c, int64_t ldc);
// Cᵀ[n, m] = A B, stored transposed (element (i, j) at c[j * ldc + i]): the same sums as
// amx_product_packed_b of Bᵀ Aᵀ, with A read by rows (a weight [classes, hidden] as stored)
// where that product would transpose it into panels.
void amx_product_packed_b_transposed_c(int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                                       const uint16_t* packed_b, float* c, int64_t ldc);

// gemm for i in [0, batch) on matrices a + i * stride_a, b + i * stride_b, c + i * stride_c
// (strides in elements; stride 0 broadcasts an input). Many small products run in parallel
// on the ember thread pool, larger ones one after another on all threads.
void gemm_batched(ScalarType dtype, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                  int64_t k, double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                  int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c);

// Note [Grouped products]
// A decoding step multiplies one row by a layer's query, key and value weights (and by its
// gate and up weights): separate products each wake the pool, split a small B between the
// threads and wait for the slower one, and restart the weight stream. gemm_group_nt computes
// c_i[m, n_i] = a[m, k] b_i[n_i, k]^T for every member; where ember's few-rows kernel is the
// backend for the largest member (bf16/f16, few rows, as chosen by gemm's autotuning or a
// forced backend) the members' columns are one range split over the pool, one job: each
// element is then the sum that kernel gives for its member alone, even where the autotuner
// would give a narrower member alone to another backend (a decoding step's key and value
// products: one job was 10% faster at Qwen2.5-0.5B's shapes than the separate products the
// table preferred). Where OpenBLAS is that backend for bf16/f16 products with k in one span
// (a training step's query, key and value projections, or gate and up, at a CPU level without
// bf16 instructions) and every member's own product would cut A's rows alike, each band of A's
// rows is widened once for all members (Note [Grouped low-precision tiles] in
// gemm_openblas.cpp), each member making its own product's sgemm calls. Otherwise each member
// is one gemm.
struct GemmGroupMember {
  const void* b;  // [n, k], rows ldb apart
  int64_t n;
  int64_t ldb;
  void* c;  // [m, n], rows ldc apart
  int64_t ldc;
};
void gemm_group_nt(ScalarType dtype, int64_t m, int64_t k, const void* a, int64_t lda,
                   std::span<const GemmGroupMember> members);

}  // namespace ember::cpu

// Kernels of the bf16/f16 paths and ember's float32 rows product (src/cpu/simd/gemm_kernels.cpp).
// On row-major blocks: widen: dst = float(src). narrow: dst = round(src + beta * dst) to
// nearest even, dst not read when beta == 0. few_rows: c[m, n] = alpha * a[m, k] op(b) in
// float32, a contiguous (lda = k), b read directly in its storage type.
EMBER_DECLARE_KERNEL(void, gemm_widen_bf16,
                     (const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst))
EMBER_DECLARE_KERNEL(void, gemm_widen_f16,
                     (const uint16_t* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst))
EMBER_DECLARE_KERNEL(void, gemm_narrow_bf16,
                     (const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                      int64_t ld_dst))
EMBER_DECLARE_KERNEL(void, gemm_narrow_f16,
                     (const float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst,
                      int64_t ld_dst))
// narrow_clearing: narrow, leaving src's block zero (a buffer kept zeroed between products).
EMBER_DECLARE_KERNEL(void, gemm_narrow_clearing_bf16,
                     (float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst, int64_t ld_dst))
EMBER_DECLARE_KERNEL(void, gemm_narrow_clearing_f16,
                     (float* src, int64_t ld_src, int64_t rows, int64_t cols, float beta, uint16_t* dst, int64_t ld_dst))
EMBER_DECLARE_KERNEL(void, gemm_few_rows_bf16,
                     (int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                      int64_t ldb, float* c, int64_t ldc))
EMBER_DECLARE_KERNEL(void, gemm_few_rows_f16,
                     (int64_t m, int64_t n, int64_t k, float alpha, const float* a, bool trans_b, const uint16_t* b,
                      int64_t ldb, float* c, int64_t ldc))
// few_rows in float32 for any m, a's rows lda apart: reads B once per pass of up to four rows.
EMBER_DECLARE_KERNEL(void, gemm_rows_f32,
                     (int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, bool trans_b,
                      const float* b, int64_t ldb, float* c, int64_t ldc))
