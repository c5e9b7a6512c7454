// Parallel iteration over a contiguous [outer, R, inner] layout, as used by kernels that
// work along the middle dim (arg-reductions, scans, softmax): each task owns one block of
// up to `block` adjacent columns of one outer index and walks all R rows of it.
#pragma once
#include <cstdint>
#include <functional>

namespace ember::cpu {

// Calls fn(o, first_column, count) for every block, in parallel. Blocks never share an
// output element, so results do not depend on the thread count.
void for_each_column_block(int64_t outer, int64_t R, int64_t inner, int64_t block,
                           const std::function<void(int64_t, int64_t, int64_t)>& fn);

}  // namespace ember::cpu
