// Reduction kernels. Floating inputs accumulate in double, integers in int64, so partial
// results combine exactly the same way whatever the thread count.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

enum class ReduceOp { Sum, Prod, Max, Min, Any, All };

union ReduceValue {
  double f;
  int64_t i;
};

// Fixed chunk length for long runs: partials of chunks are combined in order.
constexpr int64_t kReduceChunk = 65536;

}  // namespace ember::cpu

// *out = op over the n contiguous elements at data (floats in .f, integers and bool in .i).
EMBER_DECLARE_KERNEL(void, reduce_run,
                     (::ember::cpu::ReduceOp op, ::ember::ScalarType dtype, const void* data, int64_t n,
                      ::ember::cpu::ReduceValue* out))
// reduce_run's Sum of n contiguous float32 (or, for kFloat64, float64) elements alone: what a
// binary that needs only that (ember-rt's layer_norm) links instead of every op and dtype.
EMBER_DECLARE_KERNEL(double, float_sum_run, (::ember::ScalarType dtype, const void* data, int64_t n))
// acc[j] = op(acc[j], x[r * row_stride + j]) for r in [0, rows), j in [0, count), in order
// of r: reduces the rows of a strided [rows, count] block into acc.
EMBER_DECLARE_KERNEL(void, reduce_columns,
                     (::ember::cpu::ReduceOp op, ::ember::ScalarType dtype, const void* data, int64_t rows,
                      int64_t row_stride, int64_t count, ::ember::cpu::ReduceValue* acc))
