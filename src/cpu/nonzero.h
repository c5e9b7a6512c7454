// Positions of the true elements of a contiguous bool array (internal): nonzero and the
// ops built on it (masked_select, masked_scatter).
#pragma once
#include <cstdint>

namespace ember::cpu {

int64_t count_true(const bool* mask, int64_t numel);

// out [count, ndim] (row-major int64): the multi-index of each true element of mask, whose
// shape is sizes[0..ndim), in row-major order.
void nonzero_indices(const bool* mask, const int64_t* sizes, int64_t ndim, int64_t* out);

}  // namespace ember::cpu
