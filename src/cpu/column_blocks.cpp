#include "cpu/column_blocks.h"

#include <algorithm>

#include "cpu/parallel.h"

namespace ember::cpu {

void for_each_column_block(int64_t outer, int64_t R, int64_t inner, int64_t block,
                           const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  if (outer == 0 || inner == 0) return;
  const int64_t blocks_per_outer = (inner + block - 1) / block;
  // About 32K elements per parallel chunk: enough work to amortize the hand-off.
  const int64_t elements_per_block = std::max<int64_t>(1, R * std::min(block, inner));
  const int64_t grain = std::max<int64_t>(1, 32768 / elements_per_block);
  parallel_for(0, outer * blocks_per_outer, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t o = b / blocks_per_outer, first = (b % blocks_per_outer) * block;
      fn(o, first, std::min(block, inner - first));
    }
  });
}

}  // namespace ember::cpu
