// Sorting and top-k along one dim (internal). The input is a contiguous block viewed as
// [outer, n, inner]: row (o, j) holds the n elements at o*n*inner + i*inner + j.
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

struct RowLayout {
  int64_t outer = 1, n = 0, inner = 1;
};

// Sorts every row, writing values and source positions as contiguous [outer, n, inner].
// The order is stable (equal values keep their order, also when descending) and NaN
// compares larger than every number, as in PyTorch.
void sort_rows(ScalarType dtype, const void* in, const RowLayout& rows, bool descending, void* values,
               int64_t* indices);

// The k largest (or smallest) elements of every row as contiguous [outer, k, inner], in
// sorted order when `sorted`. Ties go to the earlier position. Requires 0 <= k <= n.
void topk_rows(ScalarType dtype, const void* in, const RowLayout& rows, int64_t k, bool largest, bool sorted,
               void* values, int64_t* indices);

}  // namespace ember::cpu
