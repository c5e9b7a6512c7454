// Max and average pooling (fixed and adaptive windows) over 1-3 spatial dims, forward and
// backward, for float32 and float64.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/dtype.h"

namespace ember::cpu {

// The windows of one spatial dim: output o reads input positions start[o] + j * step for
// j < count[o], skipping those outside [0, in). factor[o] is this dim's share of the
// average's divisor (the divisor is the product over dims).
struct PoolWindows {
  int64_t in = 1, out = 1, step = 1;
  std::vector<int64_t> start, count;
  std::vector<double> factor;
};

// The same windows over arrays the caller owns (the program runtime, which allocates nothing
// while it runs); PoolWindows is this view's owning form.
struct PoolWindowsView {
  int64_t in = 1, out = 1, step = 1;
  const int64_t* start = nullptr;
  const int64_t* count = nullptr;
  const double* factor = nullptr;
};
PoolWindowsView view_of(const PoolWindows& w);

// Sliding windows as PyTorch's pooling: start = o * stride - pad, count = kernel, step =
// dilation. The factor counts the padding (count_include_pad; the window stops at in + pad)
// or only the positions inside the input.
PoolWindows sliding_windows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                            bool count_include_pad);
// Adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)).
PoolWindows adaptive_windows(int64_t in, int64_t out);
// A size-1 dim standing in for a missing leading spatial dim.
PoolWindows unit_windows();
// The forms writing start, count and factor (`out` elements each) into the caller's arrays.
PoolWindowsView sliding_windows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                                bool count_include_pad, int64_t* start, int64_t* count, double* factor);
PoolWindowsView adaptive_windows(int64_t in, int64_t out, int64_t* start, int64_t* count, double* factor);
PoolWindowsView unit_windows_view();

// x [planes, in...] -> out [planes, out...] contiguous, dims[3] the spatial dims (leading
// ones unit_windows()). indices: the flat position within the input plane of each maximum
// (a NaN wins, as in PyTorch). divisor_override: 0 for the windows' own divisors.
void max_pool_forward(ScalarType dtype, int64_t planes, const PoolWindows dims[3], const void* x, void* out,
                      int64_t* indices);
void max_pool_forward(ScalarType dtype, int64_t planes, const PoolWindowsView dims[3], const void* x, void* out,
                      int64_t* indices);
void max_pool_backward(ScalarType dtype, int64_t planes, int64_t in_plane, int64_t out_plane, const void* grad_out,
                       const int64_t* indices, void* grad_x);
void avg_pool_forward(ScalarType dtype, int64_t planes, const PoolWindows dims[3], int64_t divisor_override,
                      const void* x, void* out);
void avg_pool_forward(ScalarType dtype, int64_t planes, const PoolWindowsView dims[3], int64_t divisor_override,
                      const void* x, void* out);
void avg_pool_backward(ScalarType dtype, int64_t planes, const PoolWindows dims[3], int64_t divisor_override,
                       const void* grad_out, void* grad_x);

}  // namespace ember::cpu
