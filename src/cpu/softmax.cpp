#include "cpu/softmax.h"

#include <algorithm>

#include "cpu/column_blocks.h"
#include "cpu/parallel.h"

namespace ember::cpu {

void softmax(ScalarType dtype, const void* x, void* out, int64_t outer, int64_t R, int64_t inner, bool log) {
  if (outer == 0 || R == 0 || inner == 0) return;
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  const char* in = static_cast<const char*>(x);
  char* result = static_cast<char*>(out);
  if (inner == 1) {
    auto rows = EMBER_KERNEL(softmax_rows);
    const int64_t grain = std::max<int64_t>(1, 32768 / R);
    parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
      rows(dtype, in + lo * R * item, result + lo * R * item, hi - lo, R, log);
    });
    return;
  }
  auto columns = EMBER_KERNEL(softmax_columns);
  for_each_column_block(outer, R, inner, kSoftmaxColumnBlock, [&](int64_t o, int64_t first, int64_t count) {
    const int64_t at = (o * R * inner + first) * item;
    columns(dtype, in + at, result + at, R, inner, count, log);
  });
}

}  // namespace ember::cpu
