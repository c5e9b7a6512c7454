#include "cpu/nonzero.h"

#include <cstddef>
#include <vector>

namespace ember::cpu {

int64_t count_true(const bool* mask, int64_t numel) {
  int64_t count = 0;
  for (int64_t i = 0; i < numel; ++i) count += mask[i] ? 1 : 0;
  return count;
}

// Serial: the output position of each element depends on every element before it.
void nonzero_indices(const bool* mask, const int64_t* sizes, int64_t ndim, int64_t* out) {
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) numel *= sizes[d];
  std::vector<int64_t> index(static_cast<size_t>(ndim), 0);
  for (int64_t i = 0; i < numel; ++i) {
    if (mask[i]) {
      for (int64_t d = 0; d < ndim; ++d) *out++ = index[static_cast<size_t>(d)];
    }
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < sizes[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace ember::cpu
