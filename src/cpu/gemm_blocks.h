// Blocks of a GEMM operand converted to the accumulation type, shared by the backends that
// widen bf16/f16 operands (Note [Low-precision GEMM]).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cpu/parallel.h"

namespace ember::cpu {

// How one storage type enters and leaves the Acc (float32 or float64) blocks.
template <typename Acc>
struct BlockFormat {
  size_t element_size;
  void (*widen)(const void* src, int64_t ld_src, int64_t rows, int64_t cols, Acc* dst, int64_t ld_dst);
  // dst = src + beta * dst rounded to the storage type; dst is not read when beta == 0.
  void (*narrow)(const Acc* src, int64_t ld_src, int64_t rows, int64_t cols, Acc beta, void* dst, int64_t ld_dst);
  // narrow, then src's block reads zero (for zeroed_workspace); null for plain copies and in
  // ember-rt (Note [Runtime size]).
  void (*narrow_clearing)(Acc* src, int64_t ld_src, int64_t rows, int64_t cols, Acc beta, void* dst,
                          int64_t ld_dst) = nullptr;
};

extern const BlockFormat<float> kBFloat16Format;
extern const BlockFormat<float> kFloat16Format;
const BlockFormat<float>& float32_format();  // plain copies

// Per-thread block buffers, kept between calls (slots 0-4, the largest size asked each):
// with buffers allocated per call, bf16 2048^3 measured 15-20% slower (page faults).
template <typename Acc>
Acc* workspace(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<Acc[]> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[5];
  Buffer& buffer = buffers[slot];
  if (buffer.size < count) {
    buffer.data.reset();  // the old buffer goes first: its memory may serve the new one
    buffer.size = 0;      // consistent even if the allocation below throws
    buffer.data = std::make_unique_for_overwrite<Acc[]>(count);
    buffer.size = count;
  }
  return buffer.data.get();
}

// A per-thread float32 buffer that reads zero between uses: whoever writes it leaves it zero
// (narrow_clearing). Products accumulate into it with beta 1, where beta 0 had OpenBLAS
// clear it first in a pass of its own.
inline float* zeroed_workspace(int64_t count) {
  thread_local int64_t zeroed = 0;  // slot 4's values known to be zero
  float* data = workspace<float>(4, count);
  if (zeroed < count) {  // first use, or a larger buffer
    std::fill_n(data, count, 0.0f);
    zeroed = count;
  }
  return data;
}

// Conversions are memory-bound: spread rows over the pool, ~32K elements a chunk.
template <typename Fn>
void for_row_chunks(int64_t rows, int64_t cols, const Fn& fn) {
  constexpr int64_t kConvertChunk = 1 << 15;
  parallel_for(0, rows, std::max<int64_t>(1, kConvertChunk / std::max<int64_t>(cols, 1)), fn);
}

// Note [Low-precision GEMM]
// Without a bf16/f16 kernel, products are computed by converting blocks of A and B to
// float32, multiplying them with a float32 product (OpenBLAS's sgemm in its backend, the
// fastest float32 backend in ember's) into a float32 block of C (k blocks accumulate there) and rounding that
// block once into C, fused with + beta * C. This is float32 accumulation with a single final
// rounding, and runs at sgemm speed because conversion is O(n^2) against O(n^3) multiply.
// Blocks are at most kBlock in each dimension, so the workspace is bounded (16 MiB a slot)
// whatever the shape: a full float32 copy of a bf16 LM head alone would be gigabytes. Up to
// kBlock (the common case) every element is converted exactly once; beyond it A is
// reconverted once per column block of C and B once per row block (when k > kBlock),
// about one conversion per kBlock multiply-adds, a few percent of the time at most.
// float32/float64 operands whose strides BLAS rejects (ld 0 broadcasts, > 2^31 sizes) take
// the same blocked path with plain copies (gemm_openblas.cpp).
constexpr int64_t kBlock = 2048;

// Widens the stored block at (row0, col0) of a matrix into dst with ld_dst = cols.
template <typename Acc>
void widen_block(const BlockFormat<Acc>& format, const char* base, int64_t ld, int64_t row0, int64_t col0,
                 int64_t rows, int64_t cols, Acc* dst) {
  const char* src = base + (row0 * ld + col0) * static_cast<int64_t>(format.element_size);
  for_row_chunks(rows, cols, [&](int64_t r0, int64_t r1) {
    format.widen(src + r0 * ld * static_cast<int64_t>(format.element_size), ld, r1 - r0, cols, dst + r0 * cols, cols);
  });
}

// See Note [Low-precision GEMM]. A and B are stored as `format` says, C as `c_format`;
// block_product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) multiplies Acc blocks.
template <typename Acc, typename BlockProduct>
void gemm_blocked(const BlockFormat<Acc>& format, const BlockFormat<Acc>& c_format, const BlockProduct& block_product,
                  bool ta, bool tb, int64_t m, int64_t n, int64_t k, Acc alpha, const char* a, int64_t lda,
                  const char* b, int64_t ldb, Acc beta, char* c, int64_t ldc) {
  const int64_t block_m = std::min(m, kBlock), block_n = std::min(n, kBlock), block_k = std::min(k, kBlock);
  Acc* a_block = workspace<Acc>(0, block_m * block_k);
  Acc* b_block = workspace<Acc>(1, block_k * block_n);
  Acc* c_block = workspace<Acc>(2, block_m * block_n);
  const bool a_single_block = m <= kBlock && k <= kBlock;  // then converted once for all column blocks
  const bool b_single_k_block = k <= kBlock;               // then converted once per column block
  const int64_t c_element_size = static_cast<int64_t>(c_format.element_size);
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t nj = std::min(kBlock, n - j0);
    for (int64_t i0 = 0; i0 < m; i0 += kBlock) {
      const int64_t mi = std::min(kBlock, m - i0);
      for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
        const int64_t kp = std::min(kBlock, k - p0);
        // Blocks are converted in their stored orientation; the product applies the transposes.
        const int64_t a_cols = ta ? mi : kp;
        const int64_t b_cols = tb ? kp : nj;
        if (!a_single_block || j0 == 0)
          widen_block(format, a, lda, ta ? p0 : i0, ta ? i0 : p0, ta ? kp : mi, a_cols, a_block);
        if (!b_single_k_block || i0 == 0)
          widen_block(format, b, ldb, tb ? j0 : p0, tb ? p0 : j0, tb ? nj : kp, b_cols, b_block);
        block_product(ta, tb, mi, nj, kp, alpha, a_block, a_cols, b_block, b_cols, p0 == 0 ? Acc(0) : Acc(1), c_block,
                      nj);
      }
      char* c_origin = c + (i0 * ldc + j0) * c_element_size;
      for_row_chunks(mi, nj, [&](int64_t r0, int64_t r1) {
        c_format.narrow(c_block + r0 * nj, nj, r1 - r0, nj, beta, c_origin + r0 * ldc * c_element_size, ldc);
      });
    }
  }
}


}  // namespace ember::cpu
