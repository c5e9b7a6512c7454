// Inclusive scans (cumsum, cumprod) along the middle dim of a [outer, R, inner] layout.
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

enum class ScanOp { Sum, Prod };

// out[o, r, i] = op over x[o, 0..r, i], or over x[o, r..R-1, i] when `reverse`; x and out
// are contiguous `dtype` blocks (not bool). Floating types accumulate in double and
// integers in int64 (wrapping), each slice in order, so results are the same for any
// thread count.
void scan(ScanOp op, ScalarType dtype, const void* x, void* out, int64_t outer, int64_t R, int64_t inner, bool reverse);

}  // namespace ember::cpu
