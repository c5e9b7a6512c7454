// nn::init: gains and fans against PyTorch's table, distributions by their bounds and
// moments over many samples (fixed seeds), trunc_normal_ against the truncated normal's
// exact mean and variance.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace init = ember::nn::init;

struct Moments {
  double mean, std, min, max;
};

Moments moments(const Tensor& t) {
  const auto v = values(t);
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) {
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), lo, hi};
}

TEST(Init, GainAndFans) {
  EXPECT_DOUBLE_EQ(init::calculate_gain(kLinear), 1);
  EXPECT_DOUBLE_EQ(init::calculate_gain(kSigmoid), 1);
  EXPECT_DOUBLE_EQ(init::calculate_gain(kTanh), 5.0 / 3);
  EXPECT_DOUBLE_EQ(init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain(kLeakyReLU), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain(kLeakyReLU, std::sqrt(5.0)), std::sqrt(1.0 / 3));
  EXPECT_DOUBLE_EQ(init::calculate_gain(kSELU), 0.75);
  auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 2}));
  EXPECT_EQ(fan_in, 3 * 10);
  EXPECT_EQ(fan_out, 8 * 10);
  EXPECT_TRUE(throws_error([] { init::calculate_fan_in_and_fan_out(empty({4})); }, {"fewer than 2 dimensions", "[4]"}));
}

TEST(Init, UniformNormalConstant) {
  manual_seed(1);
  Tensor t = empty({100, 100}, kFloat64).requires_grad_();  // works on parameters
  Moments u = moments(init::uniform_(t, -2, 3));
  EXPECT_GE(u.min, -2);
  EXPECT_LT(u.max, 3);
  EXPECT_NEAR(u.mean, 0.5, 0.05);
  EXPECT_NEAR(u.std, 5 / std::sqrt(12.0), 0.03);
  Moments n = moments(init::normal_(t, 1, 0.5));
  EXPECT_NEAR(n.mean, 1, 0.015);
  EXPECT_NEAR(n.std, 0.5, 0.01);
  EXPECT_TRUE(all_close(init::constant_(t, 0.25), std::vector<double>(10000, 0.25), {0, 0}));
  EXPECT_TRUE(all_close(init::zeros_(t), std::vector<double>(10000, 0.0), {0, 0}));
  EXPECT_TRUE(all_close(init::ones_(t), std::vector<double>(10000, 1.0), {0, 0}));
  EXPECT_TRUE(all_close(init::eye_(empty({2, 3})), {1, 0, 0, 0, 1, 0}, {0, 0}));
  EXPECT_TRUE(t.requires_grad());
}

TEST(Init, XavierAndKaimingScales) {
  manual_seed(2);
  Tensor w = empty({200, 300}, kFloat64);
  const double xavier_std = std::sqrt(2.0 / 500);
  Moments xu = moments(init::xavier_uniform_(w, 2.0));
  EXPECT_LE(xu.max, 2 * std::sqrt(3.0) * xavier_std);
  EXPECT_NEAR(xu.std, 2 * xavier_std, 0.02 * 2 * xavier_std);
  EXPECT_NEAR(moments(init::xavier_normal_(w)).std, xavier_std, 0.02 * xavier_std);

  const double relu_std_in = std::sqrt(2.0) / std::sqrt(300.0), relu_std_out = std::sqrt(2.0) / std::sqrt(200.0);
  Moments ku = moments(init::kaiming_uniform_(w, 0, kFanIn, kReLU));
  EXPECT_LE(ku.max, std::sqrt(3.0) * relu_std_in);
  EXPECT_GT(ku.max, 0.99 * std::sqrt(3.0) * relu_std_in);
  EXPECT_NEAR(ku.std, relu_std_in, 0.02 * relu_std_in);
  EXPECT_NEAR(moments(init::kaiming_normal_(w, 0, kFanOut, kReLU)).std, relu_std_out, 0.02 * relu_std_out);
  // Default: leaky_relu with a = 0, fan_in.
  EXPECT_NEAR(moments(init::kaiming_normal_(w)).std, relu_std_in, 0.02 * relu_std_in);
}

// Mean and variance of N(mean, std) truncated to [a, b].
std::pair<double, double> truncated_moments(double mean, double std, double a, double b) {
  auto pdf = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  const double alpha = (a - mean) / std, beta = (b - mean) / std, z = cdf(beta) - cdf(alpha);
  const double m = mean + std * (pdf(alpha) - pdf(beta)) / z;
  const double v = std * std *
                   (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - std::pow((pdf(alpha) - pdf(beta)) / z, 2));
  return {m, v};
}

TEST(Init, TruncNormal) {
  manual_seed(3);
  Tensor t = empty({200, 200}, kFloat64);
  for (auto [mean, std, a, b] : {std::tuple{0.0, 1.0, -2.0, 2.0}, std::tuple{0.5, 2.0, -1.0, 4.0},
                                 std::tuple{0.0, 0.02, -0.04, 0.04}, std::tuple{0.0, 1.0, 1.0, 3.0}}) {
    Moments s = moments(init::trunc_normal_(t, mean, std, a, b));
    auto [expected_mean, expected_var] = truncated_moments(mean, std, a, b);
    EXPECT_GE(s.min, a);
    EXPECT_LE(s.max, b);
    EXPECT_NEAR(s.mean, expected_mean, 0.02 * std) << mean << " " << std << " " << a << " " << b;
    EXPECT_NEAR(s.std, std::sqrt(expected_var), 0.02 * std) << mean << " " << std << " " << a << " " << b;
  }
  // Wide bounds give the plain normal: checks the inverse-erf accuracy in the tails.
  Moments wide = moments(init::trunc_normal_(t, 0, 1, -10, 10));
  EXPECT_NEAR(wide.std, 1, 0.01);
  EXPECT_LT(wide.min, -3);
  EXPECT_TRUE(throws_error([&] { init::trunc_normal_(t, 0, 1, 2, -2); }, {"trunc_normal_", "a=2"}));
}

// W W^T (or W^T W) is gain^2 I, checked in float64 loops.
void expect_orthonormal(const Tensor& weight, double gain, bool rows_orthonormal) {
  Tensor w = weight.reshape({weight.size(0), -1}).to(kFloat64).contiguous();
  const int64_t rows = w.size(0), cols = w.size(1);
  const int64_t count = rows_orthonormal ? rows : cols;
  const double* p = w.data_ptr<double>();
  for (int64_t a = 0; a < count; ++a) {
    for (int64_t b = 0; b < count; ++b) {
      double dot = 0;
      for (int64_t k = 0; k < (rows_orthonormal ? cols : rows); ++k) {
        dot += rows_orthonormal ? p[a * cols + k] * p[b * cols + k] : p[k * cols + a] * p[k * cols + b];
      }
      EXPECT_NEAR(dot, a == b ? gain * gain : 0.0, 1e-5) << a << ", " << b;
    }
  }
}

TEST(Init, OrthogonalTallWideAndConvWeights) {
  manual_seed(3);
  Tensor tall = empty({7, 4});
  init::orthogonal_(tall);
  expect_orthonormal(tall, 1.0, /*rows_orthonormal=*/false);
  Tensor wide = empty({3, 8}, kFloat64);
  init::orthogonal_(wide, 2.5);
  expect_orthonormal(wide, 2.5, /*rows_orthonormal=*/true);
  // A conv weight [2, 3, 3, 3] is a 2 x 27 matrix with orthonormal rows; a leaf that
  // requires grad is filled without recording.
  Tensor conv = empty({2, 3, 3, 3}).requires_grad_();
  init::orthogonal_(conv);
  EXPECT_TRUE(conv.is_leaf());
  expect_orthonormal(conv, 1.0, /*rows_orthonormal=*/true);
  EXPECT_TRUE(throws_error([] { init::orthogonal_(empty({4})); }, {"[orthogonal_]", "2 or more dimensions"}));
}

}  // namespace
}  // namespace ember::nntest
