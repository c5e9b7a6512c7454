// lgamma (torch::special::gammaln) against std::lgamma in float64, its poles, dtypes and
// gradient (digamma, by finite differences).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

TEST(Lgamma, MatchesTheCLibraryInFloat64) {
  const std::vector<double> xs = {0.001, 0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.7, 10.0, 57.3, 1e3, 1e7,
                                  -0.5, -1.5, -2.25, -7.9, -100.3, 1e-8, -1e-8};
  std::vector<double> expected;
  for (double x : xs) expected.push_back(std::lgamma(x));
  EXPECT_TRUE(all_close(lgamma(tensor(xs, kFloat64)), expected, {1e-13, 1e-13}));
  EXPECT_TRUE(all_close(special::gammaln(tensor(xs, kFloat64)), expected, {1e-13, 1e-13}));
  // float32 rounds the float64 result once.
  Tensor single = lgamma(tensor(xs, kFloat32));
  EXPECT_EQ(single.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(single, expected, {2e-6, 2e-6}));
}

TEST(Lgamma, PolesInfinitiesAndIntegers) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(all_close(lgamma(tensor({0.0, -1.0, -2.0, -30.0, inf, -inf}, kFloat64)), {inf, inf, inf, inf, inf, inf},
                        {0, 0}));
  EXPECT_TRUE(std::isnan(lgamma(tensor({std::nan("")}, kFloat64)).item<double>()));
  // Integer inputs give the default floating dtype; lgamma(n) = log((n - 1)!).
  Tensor ints = lgamma(tensor({1, 2, 3, 4, 5}));
  EXPECT_EQ(ints.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(ints, {0, 0, std::log(2.0), std::log(6.0), std::log(24.0)}, {2e-6, 2e-6}));
}

TEST(Lgamma, GradientIsDigamma) {
  // digamma(1) = -euler_gamma, digamma(0.5) = -euler_gamma - 2 log 2, digamma(-0.5) = digamma(0.5) + 2
  // (the reflection branch).
  const double euler = 0.57721566490153286;
  Tensor x = tensor({1.0, 0.5, -0.5, 3.0}, TensorOptions(kFloat64).requires_grad(true));
  lgamma(x).sum().backward();
  const double digamma_half = -euler - 2 * std::log(2.0);
  EXPECT_TRUE(all_close(x.grad(), {-euler, digamma_half, digamma_half + 2, 1.5 - euler}, {1e-10, 1e-10}));
  EXPECT_TRUE(autograd::gradcheck([](const std::vector<Tensor>& in) { return lgamma(in[0]); },
                                  {tensor({0.3, 1.7, 4.2, -1.4, -0.2}, TensorOptions(kFloat64).requires_grad(true))}));
}

}  // namespace
}  // namespace ember
