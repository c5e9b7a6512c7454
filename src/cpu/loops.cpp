#include "cpu/loops.h"

#include <algorithm>

#include "cpu/parallel.h"
#include "ember/error.h"

namespace ember::cpu {

Geometry make_geometry(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides,
                       const std::vector<int64_t>& element_sizes) {
  const int64_t* stride_arrays[kMaxOperands];
  const int nops = static_cast<int>(strides.size());
  for (int k = 0; k < nops && k < kMaxOperands; ++k) stride_arrays[k] = strides[k].data();
  return make_geometry(static_cast<int>(sizes.size()), sizes.data(), nops, stride_arrays, element_sizes.data());
}

Geometry make_geometry(int ndim, const int64_t* sizes, int nops, const int64_t* const* strides,
                       const int64_t* element_sizes) {
  EMBER_CHECK(ndim <= kMaxDims, "elementwise", "tensors with ", ndim, " dims are not supported (at most ", kMaxDims,
              ")");
  Geometry g;
  g.nops = nops;
  g.numel = 1;
  for (int d = 0; d < ndim; ++d) g.numel *= sizes[d];

  // Innermost first: order dims by the output's stride, ties by position (later = inner).
  // Size-1 dims do not move the pointer and are dropped. An insertion sort: stable, and
  // free of std::stable_sort's temporary buffer.
  int order[kMaxDims];
  int count = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    int at = count++;
    for (; at > 0 && strides[0][d] < strides[0][order[at - 1]]; --at) order[at] = order[at - 1];
    order[at] = d;
  }

  int out = 0;
  for (int i = 0; i < count; ++i) {
    const int d = order[i];
    if (out > 0) {
      bool mergeable = true;
      for (int k = 0; k < nops; ++k) {
        if (strides[k][d] * element_sizes[k] != g.strides[k][out - 1] * g.sizes[out - 1]) mergeable = false;
      }
      if (mergeable) {
        g.sizes[out - 1] *= sizes[d];
        continue;
      }
    }
    g.sizes[out] = sizes[d];
    for (int k = 0; k < nops; ++k) g.strides[k][out] = strides[k][d] * element_sizes[k];
    ++out;
  }
  if (out == 0) {  // a scalar (or all-ones shape): one run of length 1
    g.sizes[0] = 1;
    for (int k = 0; k < nops; ++k) g.strides[k][0] = element_sizes[k];
    out = 1;
  }
  g.ndim = out;
  if (g.numel == 0) g.sizes[0] = 0;
  return g;
}

void run_elementwise_range(const Geometry& g, char* const* base, InnerLoop loop, const void* params, int64_t begin,
                           int64_t end) {
  int64_t index[kMaxDims];
  int64_t rest = begin;
  for (int d = 0; d < g.ndim; ++d) {
    index[d] = rest % g.sizes[d];
    rest /= g.sizes[d];
  }
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  for (int k = 0; k < g.nops; ++k) inner_strides[k] = g.strides[k][0];
  int64_t pos = begin;
  while (pos < end) {
    for (int k = 0; k < g.nops; ++k) {
      char* p = base[k];
      for (int d = 0; d < g.ndim; ++d) p += index[d] * g.strides[k][d];
      ptrs[k] = p;
    }
    const int64_t n = std::min(g.sizes[0] - index[0], end - pos);
    loop(ptrs, inner_strides, n, params);
    pos += n;
    index[0] += n;
    for (int d = 0; d + 1 < g.ndim && index[d] == g.sizes[d]; ++d) {
      index[d] = 0;
      ++index[d + 1];
    }
  }
}

void run_elementwise(const Geometry& g, char* const* base, InnerLoop loop, const void* params, int64_t grain) {
  if (g.numel == 0) return;
  if (g.numel <= grain) {
    run_elementwise_range(g, base, loop, params, 0, g.numel);
    return;
  }
  parallel_for(0, g.numel, grain, [&](int64_t lo, int64_t hi) { run_elementwise_range(g, base, loop, params, lo, hi); });
}

}  // namespace ember::cpu
