#include "cpu/rotary_embedding.h"

#include <algorithm>

#include "cpu/parallel.h"

namespace ember::cpu {

void rotary_embedding(ScalarType dtype, const void* x, const RotaryLayout& layout, const void* cos, const void* sin,
                      void* out, bool inverse) {
  const int64_t T = layout.positions, half = layout.half;
  int64_t leading = 1;
  for (int64_t d = 0; d < layout.lead_dims; ++d) leading *= layout.lead_sizes[d];
  if (leading == 0 || T == 0 || half == 0) return;
  const int64_t item = static_cast<int64_t>(element_size(dtype)), acc = dtype == kFloat64 ? 8 : 4;
  const int64_t grain = std::max<int64_t>(1, 16384 / (2 * half));
  auto kernel = EMBER_KERNEL(rotary_rows);
  // The storage offset of leading index `index` (row-major over lead_sizes).
  auto lead_offset = [&](int64_t index) {
    int64_t offset = 0;
    for (int64_t d = layout.lead_dims; d-- > 0;) {
      offset += index % layout.lead_sizes[d] * layout.lead_strides[d];
      index /= layout.lead_sizes[d];
    }
    return offset;
  };
  parallel_for(0, leading * T, grain, [&](int64_t lo, int64_t hi) {
    // Runs of consecutive positions of one leading index.
    for (int64_t row = lo; row < hi;) {
      const int64_t lead = row / T, t = row % T, count = std::min(hi - row, T - t);
      const int64_t from = lead_offset(lead) + t * layout.position_stride;
      const int64_t to = layout.out_like_x ? from : row * 2 * half;
      kernel(dtype, static_cast<const char*>(x) + from * item, layout.position_stride,
             static_cast<const char*>(cos) + t * half * acc, static_cast<const char*>(sin) + t * half * acc,
             static_cast<char*>(out) + to * item, layout.out_like_x ? layout.position_stride : 2 * half, count, half,
             inverse);
      row += count;
    }
  });
}

}  // namespace ember::cpu
