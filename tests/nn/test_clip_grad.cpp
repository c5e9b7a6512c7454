// nn::utils::clip_grad_norm_ / clip_grad_value_ against PyTorch's formulas.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace utils = ember::nn::utils;

std::vector<Tensor> params_with_grads(const std::vector<std::vector<double>>& grads) {
  std::vector<Tensor> params;
  for (const auto& g : grads) {
    Tensor p = zeros({static_cast<int64_t>(g.size())}, kFloat64).requires_grad_();
    p.set_grad(testutil::make(g, {static_cast<int64_t>(g.size())}, kFloat64));
    params.push_back(p);
  }
  return params;
}

TEST(ClipGradNorm, ScalesByMaxNormOverTotalNorm) {
  auto params = params_with_grads({{3, 4}, {12}});  // total 2-norm 13
  Tensor no_grad = zeros({2}, kFloat64).requires_grad_();
  params.push_back(no_grad);
  const double total = utils::clip_grad_norm_(params, 6.5);
  EXPECT_DOUBLE_EQ(total, 13);
  const double coef = 6.5 / (13 + 1e-6);
  EXPECT_TRUE(all_close(params[0].grad(), {3 * coef, 4 * coef}));
  EXPECT_TRUE(all_close(params[1].grad(), {12 * coef}));
  EXPECT_FALSE(no_grad.grad().defined());
}

TEST(ClipGradNorm, BelowTheLimitLeavesGradients) {
  auto params = params_with_grads({{0.3, -0.4}});
  EXPECT_DOUBLE_EQ(utils::clip_grad_norm_(params, 1.0), 0.5);
  EXPECT_TRUE(all_close(params[0].grad(), {0.3, -0.4}));
}

TEST(ClipGradNorm, OtherNorms) {
  auto params = params_with_grads({{1, -5}, {2}});
  EXPECT_DOUBLE_EQ(utils::clip_grad_norm_(params, 100, INFINITY), 5);
  EXPECT_NEAR(utils::clip_grad_norm_(params, 100, 1), 8, 1e-12);
  EXPECT_NEAR(utils::clip_grad_norm_(params, 100, 3), std::cbrt(1 + 125 + 8), 1e-12);
  EXPECT_DOUBLE_EQ(utils::clip_grad_norm_(params[0], 2.5, INFINITY), 5);
  EXPECT_TRUE(all_close(params[0].grad(), {2.5 / (5 + 1e-6), -5 * 2.5 / (5 + 1e-6)}));
  EXPECT_DOUBLE_EQ(utils::clip_grad_norm_(std::vector<Tensor>{}, 1), 0);
}

// Gradients over several chunks of the one-pass sums (16384 values), float32 and float64,
// contiguous and not, and bfloat16 (summed by tensor ops): the norm against a float64 loop, the
// same bits at 1, 2 and 3 threads, every gradient scaled by the one coefficient.
TEST(ClipGradNorm, ManyGradientsInOnePass) {
  const int threads = get_num_threads();
  manual_seed(11);
  const std::vector<Tensor> originals = {randn({2 * 16384 + 5}), randn({70, 300}).t(), randn({3}, kFloat64),
                                         randn({1000}).to(kBFloat16), randn({40000}, kFloat64) * 1e-3};
  double square = 0;
  for (const Tensor& g : originals)
    for (double v : testutil::values(g)) square += v * v;
  const double expected = std::sqrt(square);
  std::vector<double> norms;
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    std::vector<Tensor> params;
    for (const Tensor& g : originals) {
      Tensor p = zeros(g.sizes(), g.scalar_type()).requires_grad_();
      p.set_grad(g.clone());
      params.push_back(p);
    }
    norms.push_back(utils::clip_grad_norm_(params, 2.0));
    const double coef = 2.0 / (norms.back() + 1e-6);
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(equal(params[i].grad(), originals[i].mul(coef))) << i;
  }
  set_num_threads(threads);
  EXPECT_NEAR(norms[0], expected, 1e-11 * expected);
  EXPECT_EQ(norms[0], norms[1]);
  EXPECT_EQ(norms[0], norms[2]);
}

TEST(ClipGradNorm, NonFiniteNorm) {
  auto params = params_with_grads({{1, NAN}});
  EXPECT_TRUE(throws_error([&] { utils::clip_grad_norm_(params, 1, 2, /*error_if_nonfinite=*/true); },
                           {"clip_grad_norm_", "non-finite"}));
  EXPECT_TRUE(all_close(params[0].grad(), {1, NAN}));  // untouched
  auto inf_params = params_with_grads({{INFINITY, 1}});
  EXPECT_TRUE(std::isinf(utils::clip_grad_norm_(inf_params, 1)));
}

TEST(ClipGradNorm, Float32GradientsAndValueClipping) {
  Tensor p = zeros({3}).requires_grad_();
  p.set_grad(testutil::make({3, -4, 0}, {3}, kFloat32));
  EXPECT_NEAR(utils::clip_grad_norm_(p, 1), 5, 1e-6);
  EXPECT_TRUE(all_close(p.grad(), {0.6, -0.8, 0}, {1e-6, 1e-6}));
  p.set_grad(testutil::make({3, -4, 0.5}, {3}, kFloat32));
  utils::clip_grad_value_({p}, 1);
  EXPECT_TRUE(all_close(p.grad(), {1, -1, 0.5}, {0, 0}));
}

}  // namespace
}  // namespace ember::nntest
