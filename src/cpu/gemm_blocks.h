// Blocks of a GEMM operand converted to the accumulation type, shared by the backends that
// widen bf16/f16 operands (Note [Low-precision GEMM] in gemm_openblas.cpp).
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
};

extern const BlockFormat<float> kBFloat16Format;
extern const BlockFormat<float> kFloat16Format;
const BlockFormat<float>& float32_format();  // plain copies

// Per-thread block buffers, kept between calls (slots 0-2, the largest size asked each):
// with buffers allocated per call, bf16 2048^3 measured 15-20% slower (page faults).
template <typename Acc>
Acc* workspace(int slot, int64_t count) {
  struct Buffer {
    std::unique_ptr<Acc[]> data;
    int64_t size = 0;
  };
  thread_local Buffer buffers[3];
  Buffer& buffer = buffers[slot];
  if (buffer.size < count) {
    buffer.data.reset();
    buffer.data = std::make_unique_for_overwrite<Acc[]>(count);
    buffer.size = count;
  }
  return buffer.data.get();
}

// Conversions are memory-bound: spread rows over the pool, ~32K elements a chunk.
template <typename Fn>
void for_row_chunks(int64_t rows, int64_t cols, const Fn& fn) {
  constexpr int64_t kConvertChunk = 1 << 15;
  parallel_for(0, rows, std::max<int64_t>(1, kConvertChunk / std::max<int64_t>(cols, 1)), fn);
}

}  // namespace ember::cpu
