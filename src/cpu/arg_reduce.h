// max/min along one dim together with the position of the extreme (argmax/argmin).
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

// For x laid out as a contiguous [outer, R, inner] block of `dtype` with R > 0: for each
// (o, i), the largest (is_max) or smallest x[o, :, i] and the first r holding it, as PyTorch
// does on CPU: ties go to the first occurrence, and a NaN wins at its first position.
// `values` (same dtype, [outer, inner]) may be null when only indices are wanted.
void arg_reduce(bool is_max, ScalarType dtype, const void* x, void* values, int64_t* indices, int64_t outer, int64_t R,
                int64_t inner);

}  // namespace ember::cpu
