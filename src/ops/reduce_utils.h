// Shared layout logic for reductions (internal): any set of dims is reduced as the middle
// dim of a contiguous [outer, R, inner] block, copying only when the dims are not adjacent.
#pragma once
#include <vector>

#include "ops/op_utils.h"

namespace ember::ops {

struct ReduceLayout {
  Tensor input;                     // contiguous, viewed as [outer, R, inner]
  int64_t outer = 1, R = 1, inner = 1;
  std::vector<int64_t> keep_sizes;  // result shape with keepdim=true
  std::vector<int64_t> out_sizes;   // result shape as requested
  std::vector<bool> reduced;        // per input dim
};

// dims empty = all dims. Throws naming `op` for out-of-range or repeated dims.
ReduceLayout reduce_layout(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op);
// The shapes of reduce_layout without preparing `input` (no copy): for backward formulas.
ReduceLayout reduce_shapes(const Tensor& x, IntArrayRef dims, bool keepdim, const char* op);

// Brings a gradient of the reduced shape back to x's shape (broadcast over reduced dims).
Tensor expand_reduced_grad(const Tensor& grad, const ReduceLayout& layout, IntArrayRef input_sizes);

}  // namespace ember::ops
