// Parameter initialisers with PyTorch's formulas (torch/nn/init.py).
#include "ember/nn/init.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/autograd.h"
#include "ember/functions.h"

namespace ember::nn::init {
namespace {

int64_t correct_fan(const Tensor& tensor, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == kFanIn ? fan_in : fan_out;
}

// Inverse error function: Giles' single-precision approximation refined by two Newton steps,
// accurate to float64 rounding on (-1, 1).
double erfinv(double x) {
  double w = -std::log((1 - x) * (1 + x));
  double p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
  }
  double y = p * x;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int step = 0; step < 2; ++step) y -= (std::erf(y) - x) / (two_over_sqrt_pi * std::exp(-y * y));
  return y;
}

double normal_cdf(double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; }

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case kLinear:
    case kConv1D:
    case kConv2D:
    case kConv3D:
    case kSigmoid: return 1;
    case kTanh: return 5.0 / 3;
    case kReLU: return std::sqrt(2.0);
    case kLeakyReLU: return std::sqrt(2.0 / (1 + param * param));
    case kSELU: return 3.0 / 4;
  }
  return 1;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  EMBER_CHECK(tensor.dim() >= 2, "calculate_fan_in_and_fan_out",
              "fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got shape ",
              tensor.sizes());
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor uniform_(Tensor tensor, double low, double high) {
  NoGradGuard no_grad;
  return tensor.uniform_(low, high);
}

Tensor normal_(Tensor tensor, double mean, double std) {
  NoGradGuard no_grad;
  return tensor.normal_(mean, std);
}

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b) {
  EMBER_CHECK(a < b, "trunc_normal_", "lower bound a=", a, " must be below upper bound b=", b);
  NoGradGuard no_grad;
  const double low = 2 * normal_cdf((a - mean) / std) - 1;
  const double high = 2 * normal_cdf((b - mean) / std) - 1;
  const double limit = std::nextafter(1.0, 0.0);  // erfinv(+-1) is infinite
  Tensor samples = rand(tensor.sizes(), kFloat64).contiguous();
  double* values = samples.data_ptr<double>();
  for (int64_t i = 0; i < samples.numel(); ++i) {
    const double u = std::clamp(low + (high - low) * values[i], -limit, limit);
    values[i] = std::clamp(mean + std * std::sqrt(2.0) * erfinv(u), a, b);
  }
  return tensor.copy_(samples);
}

Tensor constant_(Tensor tensor, double value) {
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }
Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0); }

Tensor eye_(Tensor tensor) {
  EMBER_CHECK(tensor.dim() == 2, "eye_", "only 2-D tensors are supported, got shape ", tensor.sizes());
  NoGradGuard no_grad;
  return tensor.copy_(eye(tensor.size(0), tensor.size(1), tensor.scalar_type()));
}

Tensor xavier_uniform_(Tensor tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(std::move(tensor), 0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and leaves it
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(correct_fan(tensor, mode)));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  if (tensor.numel() == 0) return tensor;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(correct_fan(tensor, mode)));
  return normal_(std::move(tensor), 0, std);
}

Tensor orthogonal_(Tensor tensor, double gain) {
  EMBER_CHECK(tensor.dim() >= 2, "orthogonal_", "only tensors with 2 or more dimensions are supported, got shape ",
              tensor.sizes());
  NoGradGuard no_grad;
  const int64_t rows = tensor.size(0);
  const int64_t cols = tensor.numel() / rows;
  if (tensor.numel() == 0) return tensor;
  // Q of the QR decomposition of a standard normal matrix, with R's diagonal made positive
  // (so Q is Haar-distributed), taken of the transpose when there are fewer rows than columns.
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows;  // m >= n
  const int64_t n = transposed ? rows : cols;
  Tensor normal = randn({rows, cols}, kFloat64);
  if (transposed) normal = normal.t();
  normal = normal.contiguous();
  std::vector<double> a(normal.data_ptr<double>(), normal.data_ptr<double>() + m * n);  // row-major m x n
  auto at = [&](std::vector<double>& x, int64_t i, int64_t j) -> double& { return x[i * n + j]; };
  // Householder reflections H_k = I - 2 v_k v_k^T zero column k below the diagonal.
  std::vector<std::vector<double>> reflectors(n);
  std::vector<double> diagonal(n);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> v(m - k);
    double norm = 0;
    for (int64_t i = k; i < m; ++i) {
      v[i - k] = at(a, i, k);
      norm += v[i - k] * v[i - k];
    }
    norm = std::sqrt(norm);
    const double alpha = v[0] > 0 ? -norm : norm;
    diagonal[k] = alpha;
    v[0] -= alpha;
    double v_norm = 0;
    for (double x : v) v_norm += x * x;
    v_norm = std::sqrt(v_norm);
    if (v_norm == 0) continue;  // the column is already reduced
    for (double& x : v) x /= v_norm;
    for (int64_t j = k; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(a, i, j);
      for (int64_t i = k; i < m; ++i) at(a, i, j) -= 2 * v[i - k] * dot;
    }
    reflectors[k] = std::move(v);
  }
  // Q = H_0 ... H_{n-1} applied to the first n columns of the identity.
  std::vector<double> q(m * n, 0.0);
  for (int64_t j = 0; j < n; ++j) at(q, j, j) = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[k];
    if (v.empty()) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(q, i, j);
      for (int64_t i = k; i < m; ++i) at(q, i, j) -= 2 * v[i - k] * dot;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const double sign = diagonal[j] < 0 ? -gain : gain;
    for (int64_t i = 0; i < m; ++i) at(q, i, j) *= sign;
  }
  Tensor result = from_blob(q.data(), {m, n}, kFloat64).clone();
  if (transposed) result = result.t();
  return tensor.view({rows, cols}).copy_(result);
}

}  // namespace ember::nn::init
