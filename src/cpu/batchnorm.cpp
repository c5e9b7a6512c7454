// Fused batch normalisation: per channel, the statistics (or gradient sums) in one or two
// read passes over its [batch, inner] values, then one pass writing y (or grad_x) as
// a * first + b * second + c with per-channel coefficients computed in float64.
#include "cpu/batchnorm.h"

#include <algorithm>
#include <cmath>

#include "cpu/parallel.h"
#include "cpu/float_dispatch.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

// Independent float64 accumulators: the adds pipeline instead of waiting on one sum.
constexpr int kLanes = 8;

// sum over the channel's planes of term(first[i], second[i]) in float64 (second may be null).
template <typename T, typename Term>
double channel_sum(const BatchNormShape& s, const T* first, const T* second, int64_t c, Term term) {
  double lanes[kLanes] = {};
  double tail = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    const int64_t offset = (n * s.channels + c) * s.inner;
    const T* a = first + offset;
    const T* b = second ? second + offset : nullptr;
    int64_t i = 0;
    for (; i + kLanes <= s.inner; i += kLanes)
      for (int j = 0; j < kLanes; ++j) lanes[j] += term(a[i + j], b ? b[i + j] : T(0));
    for (; i < s.inner; ++i) tail += term(a[i], b ? b[i] : T(0));
  }
  double total = tail;
  for (double lane : lanes) total += lane;
  return total;
}

// out = a * first + b * second + c over the channel's planes (second may be null).
template <typename T>
void channel_affine(const BatchNormShape& s, const T* first, const T* second, int64_t c, double a, double b,
                    double shift, T* out) {
  const T fa = static_cast<T>(a), fb = static_cast<T>(b), fc = static_cast<T>(shift);
  for (int64_t n = 0; n < s.batch; ++n) {
    const int64_t offset = (n * s.channels + c) * s.inner;
    const T* x = first + offset;
    T* y = out + offset;
    if (second) {
      const T* z = second + offset;
      for (int64_t i = 0; i < s.inner; ++i) y[i] = fa * x[i] + fb * z[i] + fc;
    } else {
      for (int64_t i = 0; i < s.inner; ++i) y[i] = fa * x[i] + fc;
    }
  }
}

// Channels per task: about 64K values each, fixed by the shape.
int64_t channels_per_chunk(const BatchNormShape& s) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, s.batch * s.inner));
}

}  // namespace

void batch_norm_forward(ScalarType dtype, const BatchNormShape& s, const void* x, const void* weight,
                        const void* bias, double eps, void* y, double* mean, double* var, double* invstd) {
  const double count = static_cast<double>(s.batch * s.inner);
  dispatch_float32_or_64(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xs = static_cast<const T*>(x);
    const T* w = static_cast<const T*>(weight);
    const T* b = static_cast<const T*>(bias);
    parallel_for(0, s.channels, channels_per_chunk(s), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        const double m = channel_sum(s, xs, static_cast<const T*>(nullptr), c, [](T v, T) { return double(v); }) / count;
        const double v = channel_sum(s, xs, static_cast<const T*>(nullptr), c, [m](T value, T) {
                           const double d = double(value) - m;
                           return d * d;
                         }) / count;
        mean[c] = m;
        var[c] = v;
        invstd[c] = 1.0 / std::sqrt(v + eps);
        const double scale = invstd[c] * (w ? double(w[c]) : 1.0);
        channel_affine(s, xs, static_cast<const T*>(nullptr), c, scale, 0.0, (b ? double(b[c]) : 0.0) - m * scale,
                       static_cast<T*>(y));
      }
    });
  });
}

void batch_norm_backward(ScalarType dtype, const BatchNormShape& s, const void* grad_y, const void* x,
                         const void* weight, const double* mean, const double* invstd, void* grad_x,
                         double* grad_weight, double* grad_bias) {
  const double count = static_cast<double>(s.batch * s.inner);
  dispatch_float32_or_64(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gy = static_cast<const T*>(grad_y);
    const T* xs = static_cast<const T*>(x);
    const T* w = static_cast<const T*>(weight);
    parallel_for(0, s.channels, channels_per_chunk(s), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        const double m = mean[c], is = invstd[c];
        const double sum_dy = channel_sum(s, gy, static_cast<const T*>(nullptr), c, [](T g, T) { return double(g); });
        const double sum_dy_xmu = channel_sum(s, gy, xs, c, [m](T g, T v) { return double(g) * (double(v) - m); });
        grad_bias[c] = sum_dy;
        grad_weight[c] = sum_dy_xmu * is;
        if (!grad_x) continue;
        // grad_x = a * (grad_y - sum_dy / count) - a * is^2 * (x - mean) * sum_dy_xmu / count, a = weight * invstd.
        const double a = is * (w ? double(w[c]) : 1.0), k = a * is * is * sum_dy_xmu / count;
        channel_affine(s, gy, xs, c, a, -k, k * m - a * sum_dy / count, static_cast<T*>(grad_x));
      }
    });
  });
}

}  // namespace ember::cpu
