// Pooling kernels: every output walks the inside of its window as three nested per-dim
// loops; each plane belongs to one task, so gradients add up in a fixed order.
#include "cpu/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/float_dispatch.h"
#include "cpu/parallel.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

int64_t planes_per_chunk(int64_t plane_work) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_work)); }

// The window steps j of output o that land inside the input, [first, last), so the walks
// below test no bounds per element. Computed per output (no table: the runtime allocates
// nothing while it runs); the common step 1 needs no division.
struct Span {
  int64_t first, last;
};

inline Span span_of(const PoolWindowsView& w, int64_t o) {
  const int64_t start = w.start[o], count = w.count[o];
  if (start >= w.in) return {0, 0};
  const int64_t last = w.step == 1 ? std::min(count, w.in - start) : std::min(count, (w.in - start + w.step - 1) / w.step);
  const int64_t first = start >= 0 ? 0 : w.step == 1 ? -start : (-start + w.step - 1) / w.step;
  return {std::min(first, last), last};
}

// Calls begin(flat output index, divisor factor), visit(flat output index, flat input
// index) for every input position of its window inside the input, and end(flat output
// index), outputs in order.
template <typename Begin, typename Visit, typename End>
void for_each_window(const PoolWindowsView d[3], Begin begin, Visit visit, End end) {
  int64_t o = 0;
  for (int64_t a = 0; a < d[0].out; ++a) {
    const Span s0 = span_of(d[0], a);
    for (int64_t b = 0; b < d[1].out; ++b) {
      const Span s1 = span_of(d[1], b);
      for (int64_t c = 0; c < d[2].out; ++c, ++o) {
        begin(o, d[0].factor[a] * d[1].factor[b] * d[2].factor[c]);
        const Span s2 = span_of(d[2], c);
        for (int64_t i = s0.first; i < s0.last; ++i) {
          const int64_t p0 = d[0].start[a] + i * d[0].step;
          for (int64_t j = s1.first; j < s1.last; ++j) {
            const int64_t row = (p0 * d[1].in + d[1].start[b] + j * d[1].step) * d[2].in + d[2].start[c];
            for (int64_t k = s2.first; k < s2.last; ++k) visit(o, row + k * d[2].step);
          }
        }
        end(o);
      }
    }
  }
}

// One plane of max pooling, as PyTorch: the window's first position inside the input starts
// as the maximum at -inf; a larger value or a NaN takes over. A plain loop rather than
// for_each_window: with the callbacks the compiler kept the running maximum in memory
// (measured ~10% slower; selects through masks measured slower than the branch).
template <typename T>
void max_pool_plane(const PoolWindowsView d[3], const T* src, T* dst, int64_t* idx) {
  const int64_t *start0 = d[0].start, *start1 = d[1].start, *start2 = d[2].start;
  const int64_t out0 = d[0].out, out1 = d[1].out, out2 = d[2].out, in1 = d[1].in, in2 = d[2].in;
  const int64_t step0 = d[0].step, step1 = d[1].step, step2 = d[2].step;
  int64_t o = 0;
  for (int64_t a = 0; a < out0; ++a) {
    const Span s0 = span_of(d[0], a);
    for (int64_t b = 0; b < out1; ++b) {
      const Span s1 = span_of(d[1], b);
      for (int64_t c = 0; c < out2; ++c, ++o) {
        const Span s2 = span_of(d[2], c);
        const bool empty = s0.first >= s0.last || s1.first >= s1.last || s2.first >= s2.last;
        auto position = [&](int64_t i, int64_t j, int64_t k) {
          return ((start0[a] + i * step0) * in1 + start1[b] + j * step1) * in2 + start2[c] + k * step2;
        };
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_at = empty ? -1 : position(s0.first, s1.first, s2.first);
        for (int64_t i = s0.first; i < s0.last; ++i)
          for (int64_t j = s1.first; j < s1.last; ++j) {
            const int64_t row = position(i, j, 0);
            for (int64_t k = s2.first; k < s2.last; ++k) {
              const int64_t at = row + k * step2;
              const T v = src[at];
              if (v > best || v != v) {
                best = v;
                best_at = at;
              }
            }
          }
        dst[o] = best;
        idx[o] = best_at;
      }
    }
  }
}

int64_t plane_size(const PoolWindowsView d[3], bool input) {
  return input ? d[0].in * d[1].in * d[2].in : d[0].out * d[1].out * d[2].out;
}

// PoolWindows with its arrays sized for `out` windows, filled by fill(start, count, factor).
template <typename Fill>
PoolWindows owned_windows(int64_t out, Fill fill) {
  PoolWindows w;
  w.start.resize(static_cast<size_t>(out));
  w.count.resize(static_cast<size_t>(out));
  w.factor.resize(static_cast<size_t>(out));
  const PoolWindowsView v = fill(w.start.data(), w.count.data(), w.factor.data());
  w.in = v.in;
  w.out = v.out;
  w.step = v.step;
  return w;
}

struct Views {
  PoolWindowsView d[3];
  explicit Views(const PoolWindows w[3]) : d{view_of(w[0]), view_of(w[1]), view_of(w[2])} {}
};

}  // namespace

PoolWindowsView view_of(const PoolWindows& w) {
  return {w.in, w.out, w.step, w.start.data(), w.count.data(), w.factor.data()};
}

PoolWindowsView sliding_windows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                                bool count_include_pad, int64_t* start, int64_t* count, double* factor) {
  for (int64_t o = 0; o < out; ++o) {
    start[o] = o * stride - pad;
    count[o] = kernel;
    // The average's divisor (dilation is 1 for average pooling).
    const int64_t padded_end = std::min(start[o] + kernel, in + pad);
    const int64_t inside = std::min(padded_end, in) - std::max<int64_t>(start[o], 0);
    factor[o] = static_cast<double>(count_include_pad ? padded_end - start[o] : inside);
  }
  return {in, out, dilation, start, count, factor};
}

PoolWindowsView adaptive_windows(int64_t in, int64_t out, int64_t* start, int64_t* count, double* factor) {
  for (int64_t o = 0; o < out; ++o) {
    start[o] = o * in / out;
    count[o] = ((o + 1) * in + out - 1) / out - start[o];
    factor[o] = static_cast<double>(count[o]);
  }
  return {in, out, 1, start, count, factor};
}

PoolWindowsView unit_windows_view() {
  static constexpr int64_t kStart[1] = {0}, kCount[1] = {1};
  static constexpr double kFactor[1] = {1.0};
  return {1, 1, 1, kStart, kCount, kFactor};
}

PoolWindows sliding_windows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                            bool count_include_pad) {
  return owned_windows(out, [&](int64_t* start, int64_t* count, double* factor) {
    return sliding_windows(in, out, kernel, stride, pad, dilation, count_include_pad, start, count, factor);
  });
}

PoolWindows adaptive_windows(int64_t in, int64_t out) {
  return owned_windows(out, [&](int64_t* start, int64_t* count, double* factor) {
    return adaptive_windows(in, out, start, count, factor);
  });
}

PoolWindows unit_windows() { return {1, 1, 1, {0}, {1}, {1.0}}; }

void max_pool_forward(ScalarType dtype, int64_t planes, const PoolWindows d[3], const void* x, void* out,
                      int64_t* indices) {
  max_pool_forward(dtype, planes, Views(d).d, x, out, indices);
}

void avg_pool_forward(ScalarType dtype, int64_t planes, const PoolWindows d[3], int64_t divisor_override,
                      const void* x, void* out) {
  avg_pool_forward(dtype, planes, Views(d).d, divisor_override, x, out);
}

void max_pool_forward(ScalarType dtype, int64_t planes, const PoolWindowsView d[3], const void* x, void* out,
                      int64_t* indices) {
  const int64_t in_plane = plane_size(d, true), out_plane = plane_size(d, false);
  dispatch_float32_or_64(dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, planes, planes_per_chunk(in_plane), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p)
        max_pool_plane(d, static_cast<const T*>(x) + p * in_plane, static_cast<T*>(out) + p * out_plane,
                       indices + p * out_plane);
    });
  });
}

void max_pool_backward(ScalarType dtype, int64_t planes, int64_t in_plane, int64_t out_plane, const void* grad_out,
                       const int64_t* indices, void* grad_x) {
  dispatch_float32_or_64(dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, planes, planes_per_chunk(in_plane + out_plane), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        T* dst = static_cast<T*>(grad_x) + p * in_plane;
        const T* src = static_cast<const T*>(grad_out) + p * out_plane;
        const int64_t* idx = indices + p * out_plane;
        std::fill(dst, dst + in_plane, T(0));
        for (int64_t o = 0; o < out_plane; ++o)
          if (idx[o] >= 0) dst[idx[o]] += src[o];
      }
    });
  });
}

void avg_pool_forward(ScalarType dtype, int64_t planes, const PoolWindowsView d[3], int64_t divisor_override,
                      const void* x, void* out) {
  const int64_t in_plane = plane_size(d, true), out_plane = plane_size(d, false);
  dispatch_float32_or_64(dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, planes, planes_per_chunk(in_plane), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* src = static_cast<const T*>(x) + p * in_plane;
        T* dst = static_cast<T*>(out) + p * out_plane;
        T sum = 0, divisor = 1;
        for_each_window(
            d,
            [&](int64_t, double factor) {
              sum = 0;
              divisor = static_cast<T>(divisor_override ? static_cast<double>(divisor_override) : factor);
            },
            [&](int64_t, int64_t i) { sum += src[i]; }, [&](int64_t o) { dst[o] = sum / divisor; });
      }
    });
  });
}

void avg_pool_backward(ScalarType dtype, int64_t planes, const PoolWindows windows[3], int64_t divisor_override,
                       const void* grad_out, void* grad_x) {
  const Views views(windows);
  const PoolWindowsView* d = views.d;
  const int64_t in_plane = plane_size(d, true), out_plane = plane_size(d, false);
  dispatch_float32_or_64(dtype, "pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, planes, planes_per_chunk(in_plane + out_plane), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* src = static_cast<const T*>(grad_out) + p * out_plane;
        T* dst = static_cast<T*>(grad_x) + p * in_plane;
        std::fill(dst, dst + in_plane, T(0));
        T share = 0;
        for_each_window(
            d,
            [&](int64_t o, double factor) {
              share = src[o] / static_cast<T>(divisor_override ? static_cast<double>(divisor_override) : factor);
            },
            [&](int64_t, int64_t i) { dst[i] += share; }, [](int64_t) {});
      }
    });
  });
}

}  // namespace ember::cpu
