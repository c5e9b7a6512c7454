// Float64 references for the vision layers, written as plain loops over values read from
// storage: direct convolution (any padding mode), direct pooling windows; and the
// thread-count check their kernels share.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn_testing.h"

namespace ember::nntest {

using testutil::all_equal;

// run() returns the same values at 1, 2 and 3 threads; the thread count is restored after.
template <typename Run>
void expect_same_for_any_thread_count(Run run) {
  const int previous = get_num_threads();
  set_num_threads(1);
  const auto reference = run();
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(run(), reference) << threads << " threads";
  }
  set_num_threads(previous);
}

// One convolution's arguments for 1-3 spatial dims; mode is zeros, reflect, replicate or circular.
struct ConvArgs {
  std::vector<int64_t> stride, before, after, dilation;
  int64_t groups = 1;
  std::string mode = "zeros";
};

// Where padded position i (before padding removed: i in [-before, n + after)) reads from; -1 for a zero.
inline int64_t padded_source(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
  if (mode == "replicate") return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "circular") return ((i % n) + n) % n;
  return -1;
}

// Direct convolution of x [N, C, *s] with w [O, C / groups, *k] and b [O] (or undefined);
// returns the values and sets out_sizes.
inline std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const ConvArgs& a,
                                          std::vector<int64_t>& out_sizes) {
  const int64_t rank = x.dim() - 2, N = x.size(0), C = x.size(1), O = w.size(0), G = a.groups;
  const auto xv = values(x), wv = values(w);
  // Spatial sizes padded to 3 leading dims.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          p[3] = {0, 0, 0};
  out_sizes = {N, O};
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t j = 3 - rank + i;
    in[j] = x.size(2 + i);
    k[j] = w.size(2 + i);
    s[j] = a.stride[i];
    d[j] = a.dilation[i];
    p[j] = a.before[i];
    out[j] = (in[j] + a.before[i] + a.after[i] - d[j] * (k[j] - 1) - 1) / s[j] + 1;
    out_sizes.push_back(out[j]);
  }
  const int64_t cin_g = C / G, cout_g = O / G;
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b.defined() ? values(b)[o] : 0.0;
            for (int64_t ci = 0; ci < cin_g; ++ci)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = padded_source(o0 * s[0] + k0 * d[0] - p[0], in[0], a.mode);
                    const int64_t i1 = padded_source(o1 * s[1] + k1 * d[1] - p[1], in[1], a.mode);
                    const int64_t i2 = padded_source(o2 * s[2] + k2 * d[2] - p[2], in[2], a.mode);
                    if (i0 < 0 || i1 < 0 || i2 < 0) continue;
                    const int64_t c = o / cout_g * cin_g + ci;
                    const double xval = xv[(((n * C + c) * in[0] + i0) * in[1] + i1) * in[2] + i2];
                    const double wval = wv[(((o * cin_g + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                    acc += xval * wval;
                  }
            y.push_back(acc);
          }
  return y;
}

// One pooled dim: output o covers input [start, start + count * step) by step, positions outside
// [0, in) skipped; the average divides by `divisor`.
struct PoolDimRef {
  std::vector<int64_t> start, count;
  std::vector<double> divisor;
  int64_t step = 1;
};

// PyTorch's sliding windows: the output size with ceil_mode and the divisor rules of avg_pool2d.
inline PoolDimRef sliding_ref(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode,
                              bool count_include_pad) {
  const double span = static_cast<double>(in + 2 * pad - dilation * (kernel - 1) - 1) / static_cast<double>(stride);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  PoolDimRef r;
  r.step = dilation;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad, end = std::min(start + kernel, in + pad);
    r.start.push_back(start);
    r.count.push_back(kernel);
    r.divisor.push_back(static_cast<double>(count_include_pad ? end - start
                                                              : std::min(end, in) - std::max<int64_t>(start, 0)));
  }
  return r;
}

inline PoolDimRef adaptive_ref(int64_t in, int64_t out) {
  PoolDimRef r;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = static_cast<int64_t>(std::floor(static_cast<double>(o * in) / out));
    const int64_t end = static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * in) / out));
    r.start.push_back(start);
    r.count.push_back(end - start);
    r.divisor.push_back(static_cast<double>(end - start));
  }
  return r;
}

// Pools x [N, C, *spatial] (1-3 spatial dims, one PoolDimRef each): max (with flat argmax
// indices within the plane) or average.
struct PoolResult {
  std::vector<double> out, indices;
  std::vector<int64_t> sizes;
};
inline PoolResult pool_reference(const Tensor& x, std::vector<PoolDimRef> dims, bool max, double divisor_override = 0) {
  const auto xv = values(x);
  const int64_t rank = x.dim() - 2;
  int64_t in[3] = {1, 1, 1};
  for (int64_t d = 0; d < rank; ++d) in[3 - rank + d] = x.size(2 + d);
  // Missing leading dims: one window of one position.
  PoolDimRef unit;
  unit.start = {0};
  unit.count = {1};
  unit.divisor = {1};
  while (dims.size() < 3) dims.insert(dims.begin(), unit);
  PoolResult r;
  r.sizes = {x.size(0), x.size(1)};
  for (int64_t d = 3 - rank; d < 3; ++d) r.sizes.push_back(static_cast<int64_t>(dims[d].start.size()));
  const int64_t plane = in[0] * in[1] * in[2];
  for (int64_t p = 0; p < x.size(0) * x.size(1); ++p)
    for (size_t a = 0; a < dims[0].start.size(); ++a)
      for (size_t b = 0; b < dims[1].start.size(); ++b)
        for (size_t c = 0; c < dims[2].start.size(); ++c) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t best_at = -1;
          for (int64_t i = 0; i < dims[0].count[a]; ++i)
            for (int64_t j = 0; j < dims[1].count[b]; ++j)
              for (int64_t k = 0; k < dims[2].count[c]; ++k) {
                const int64_t i0 = dims[0].start[a] + i * dims[0].step, i1 = dims[1].start[b] + j * dims[1].step;
                const int64_t i2 = dims[2].start[c] + k * dims[2].step;
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                const int64_t at = (i0 * in[1] + i1) * in[2] + i2;
                const double v = xv[p * plane + at];
                sum += v;
                if (best_at < 0 || v > best) {
                  best = v;
                  best_at = at;
                }
              }
          if (max) {
            r.out.push_back(best);
            r.indices.push_back(static_cast<double>(best_at));
          } else {
            const double divisor = dims[0].divisor[a] * dims[1].divisor[b] * dims[2].divisor[c];
            r.out.push_back(sum / (divisor_override != 0 ? divisor_override : divisor));
          }
        }
  return r;
}

inline PoolResult pool2d_reference(const Tensor& x, const PoolDimRef& h, const PoolDimRef& w, bool max,
                                   double divisor_override = 0) {
  return pool_reference(x, {h, w}, max, divisor_override);
}

}  // namespace ember::nntest
