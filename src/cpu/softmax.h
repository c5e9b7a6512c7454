// Softmax and log-softmax along the middle dim of a [outer, R, inner] layout, for float32,
// float64, and bfloat16/float16 (computed in float32).
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// Columns softmax_columns handles at once: their running max and sum live on the stack.
constexpr int64_t kSoftmaxColumnBlock = 64;

// out = softmax (or log_softmax when `log`) of x over r in [0, R) for every (o, i); x and
// out are contiguous `dtype` blocks of the same layout. Each slice is computed in a fixed
// order by one thread: results do not depend on the thread count.
void softmax(ScalarType dtype, const void* x, void* out, int64_t outer, int64_t R, int64_t inner, bool log);

}  // namespace ember::cpu

// `rows` contiguous rows of length n (inner == 1): max pass, exp-and-sum pass, scale pass.
EMBER_DECLARE_KERNEL(void, softmax_rows,
                     (::ember::ScalarType dtype, const void* x, void* out, int64_t rows, int64_t n, bool log))
// `count` <= kSoftmaxColumnBlock adjacent columns of a [R, inner] slab (row stride inner).
EMBER_DECLARE_KERNEL(void, softmax_columns,
                     (::ember::ScalarType dtype, const void* x, void* out, int64_t R, int64_t inner, int64_t count,
                      bool log))
// out[i] = exp(x[i]) by the vectorizable polynomial the float kernels use (Note [Vectorizable
// expf]); exposed so its accuracy can be measured and so fused kernels can share it.
EMBER_DECLARE_KERNEL(void, exp_f32, (const float* x, float* out, int64_t n))
