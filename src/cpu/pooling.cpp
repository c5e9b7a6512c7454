// Pooling kernels: every output walks its window as three nested per-dim loops; each plane
// belongs to one task, so gradients add up in a fixed order.
#include "cpu/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/parallel.h"
#include "cpu/type_dispatch.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

template <typename Body>
void dispatch_float(ScalarType dtype, Body&& body) {
  if (dtype == kFloat32) return body(TypeTag<float>{});
  EMBER_CHECK(dtype == kFloat64, "pool", "not implemented for dtype ", dtype_name(dtype));
  body(TypeTag<double>{});
}

int64_t planes_per_chunk(int64_t plane_work) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane_work)); }

// Calls fn(flat output index, flat input index) for every output position and every input
// position of its window inside the input, outputs in order.
template <typename Begin, typename Visit, typename End>
void for_each_window(const PoolWindowsView d[3], Begin begin, Visit visit, End end) {
  int64_t o = 0;
  for (int64_t a = 0; a < d[0].out; ++a)
    for (int64_t b = 0; b < d[1].out; ++b)
      for (int64_t c = 0; c < d[2].out; ++c, ++o) {
        begin(o, d[0].factor[a] * d[1].factor[b] * d[2].factor[c]);
        for (int64_t i = 0; i < d[0].count[a]; ++i) {
          const int64_t p0 = d[0].start[a] + i * d[0].step;
          if (p0 < 0 || p0 >= d[0].in) continue;
          for (int64_t j = 0; j < d[1].count[b]; ++j) {
            const int64_t p1 = d[1].start[b] + j * d[1].step;
            if (p1 < 0 || p1 >= d[1].in) continue;
            for (int64_t k = 0; k < d[2].count[c]; ++k) {
              const int64_t p2 = d[2].start[c] + k * d[2].step;
              if (p2 < 0 || p2 >= d[2].in) continue;
              visit(o, (p0 * d[1].in + p1) * d[2].in + p2);
            }
          }
        }
        end(o);
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

int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
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
  dispatch_float(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(0, planes, planes_per_chunk(in_plane), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* src = static_cast<const T*>(x) + p * in_plane;
        T* dst = static_cast<T*>(out) + p * out_plane;
        int64_t* idx = indices + p * out_plane;
        // As PyTorch: start at -inf on the window's first position; a larger value or a NaN
        // takes over.
        T best = 0;
        int64_t best_at = -1;
        for_each_window(
            d,
            [&](int64_t, double) {
              best = -std::numeric_limits<T>::infinity();
              best_at = -1;
            },
            [&](int64_t, int64_t i) {
              const T v = src[i];
              if (best_at < 0) best_at = i;
              if (v > best || std::isnan(v)) {
                best = v;
                best_at = i;
              }
            },
            [&](int64_t o) {
              dst[o] = best;
              idx[o] = best_at;
            });
      }
    });
  });
}

void max_pool_backward(ScalarType dtype, int64_t planes, int64_t in_plane, int64_t out_plane, const void* grad_out,
                       const int64_t* indices, void* grad_x) {
  dispatch_float(dtype, [&](auto tag) {
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
  dispatch_float(dtype, [&](auto tag) {
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
  dispatch_float(dtype, [&](auto tag) {
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
