// The layers PyTorch's C++ examples need beyond the vision set: Dropout2d, smooth_l1_loss,
// the free forms ember::nll_loss / ember::smooth_l1_loss against their formulas, and
// nn::Functional.
#include <cmath>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace F = ember::nn::functional;

std::vector<double> smooth_l1_reference(const std::vector<double>& a, const std::vector<double>& b, double beta) {
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - b[i]);
    out.push_back(d < beta ? 0.5 * d * d / beta : d - 0.5 * beta);
  }
  return out;
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

TEST(SmoothL1Loss, MatchesFormulaForEachBetaAndReduction) {
  Tensor input = uniform({3, 5}, 21, -2, 2), target = uniform({3, 5}, 22, -2, 2);
  const auto a = values(input), b = values(target);
  for (double beta : {1.0, 0.3, 2.5}) {
    const auto expected = smooth_l1_reference(a, b, beta);
    EXPECT_TRUE(all_close(F::smooth_l1_loss(input, target, F::SmoothL1LossFuncOptions(kNone).beta(beta)), expected));
    EXPECT_TRUE(all_close(ember::smooth_l1_loss(input, target, kSum, beta), {sum_of(expected)}));
    EXPECT_TRUE(all_close(ember::smooth_l1_loss(input, target, kMean, beta), {sum_of(expected) / 15}));
    EXPECT_TRUE(
        gradients_match([&](const std::vector<Tensor>& in) { return ember::smooth_l1_loss(in[0], in[1], kMean, beta); },
                        {leaf(input), leaf(target)}, tight_gradcheck()));
  }
  // beta 0 is l1_loss; the default beta is 1.
  EXPECT_TRUE(all_close(ember::smooth_l1_loss(input, target, kSum, 0.0), {sum_of(values((input - target).abs()))}));
  EXPECT_TRUE(all_close(ember::smooth_l1_loss(input, target), {sum_of(smooth_l1_reference(a, b, 1.0)) / 15}));
  EXPECT_TRUE(throws_error([&] { ember::smooth_l1_loss(input, target, kMean, -1.0); },
                           {"[smooth_l1_loss]", "beta must not be negative, got -1"}));
}

TEST(NLLLoss, FreeFormTakesATenArguments) {
  Tensor log_probs = F::log_softmax(uniform({4, 3}, 23), 1);
  Tensor target = tensor({2, 0, 1, 1});
  const auto lp = values(log_probs);
  const double picked[] = {lp[0 * 3 + 2], lp[1 * 3 + 0], lp[2 * 3 + 1], lp[3 * 3 + 1]};
  EXPECT_TRUE(all_close(ember::nll_loss(log_probs, target), {-(picked[0] + picked[1] + picked[2] + picked[3]) / 4}));
  EXPECT_TRUE(all_close(ember::nll_loss(log_probs, target, {}, Reduction::Sum),
                        {-(picked[0] + picked[1] + picked[2] + picked[3])}));
  // Weighted mean over the rows not ignored (class 1 ignored): weights 0.5 (class 2), 2 (class 0).
  Tensor weight = tensor({2.0, 1.0, 0.5}, kFloat64);
  EXPECT_TRUE(all_close(ember::nll_loss(log_probs, target, weight, kMean, 1),
                        {-(0.5 * picked[0] + 2 * picked[1]) / 2.5}));
}

TEST(Dropout2d, ZeroesWholeChannelsAndScalesTheRest) {
  manual_seed(5);
  Tensor input = leaf(uniform({6, 8, 3, 4}, 24, 0.5, 1.5));
  const double p = 0.25;
  Tensor out = F::dropout2d(input, F::Dropout2dFuncOptions().p(p));
  const auto x = values(input), y = values(out);
  int64_t dropped = 0;
  for (int64_t channel = 0; channel < 6 * 8; ++channel) {
    const bool zero = y[static_cast<size_t>(channel * 12)] == 0;
    dropped += zero;
    for (int64_t i = channel * 12; i < channel * 12 + 12; ++i) {
      const double expected = zero ? 0.0 : x[static_cast<size_t>(i)] / (1 - p);
      EXPECT_DOUBLE_EQ(y[static_cast<size_t>(i)], expected) << channel;
    }
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 48);
  // The gradient is the same mask: 0 or 1 / (1 - p) per channel.
  out.sum().backward();
  const auto g = values(input.grad());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(g[i], y[i] == 0 ? 0.0 : 1 / (1 - p));

  // Unbatched [C, H, W]; eval mode and p = 0 are the identity; p = 1 zeroes everything.
  Tensor unbatched = uniform({5, 2, 2}, 25, 1, 2);
  const auto u = values(F::dropout2d(unbatched, F::Dropout2dFuncOptions().p(0.5)));
  for (int c = 0; c < 5; ++c)
    for (int i = 1; i < 4; ++i) EXPECT_EQ(u[c * 4 + i] == 0, u[c * 4] == 0);
  EXPECT_TRUE(all_close(F::dropout2d(unbatched, F::Dropout2dFuncOptions().training(false)), values(unbatched)));
  EXPECT_TRUE(all_close(F::dropout2d(unbatched, F::Dropout2dFuncOptions().p(0)), values(unbatched)));
  EXPECT_TRUE(all_close(F::dropout2d(unbatched, F::Dropout2dFuncOptions().p(1)), std::vector<double>(20, 0.0)));

  nn::Dropout2d module;
  EXPECT_EQ(module->options.p(), 0.5);
  module->eval();
  EXPECT_TRUE(all_close(module(unbatched), values(unbatched)));
  EXPECT_TRUE(throws_error([] { nn::Dropout2d(nn::Dropout2dOptions(1.5)); }, {"[Dropout2d]", "1.5"}));
  // A 1-d input has no channel dim (a 2-d one is read as [N, C], as PyTorch's feature dropout).
  EXPECT_TRUE(throws_error([&] { F::dropout2d(zeros({3})); }, {"[dropout2d]", "[3]"}));
}

TEST(Functional, WrapsAFunctionWithItsBoundArguments) {
  Tensor x = uniform({2, 3, 6, 6}, 26);
  nn::Functional relu_module(ember::relu);
  EXPECT_TRUE(all_close(relu_module(x), values(ember::relu(x))));
  // The arguments after the input are bound, as libtorch's std::bind: kernel 3, stride 2.
  ExpandingArray<2> stride({2, 2});
  nn::Functional pool(ember::max_pool2d, 3, stride, 0, 1, false);
  Tensor pooled = pool(x);
  EXPECT_EQ(pooled.sizes(), (std::vector<int64_t>{2, 3, 2, 2}));
  EXPECT_TRUE(all_close(pooled, values(ember::max_pool2d(x, {3, 3}, {2, 2}))));
  ExpandingArray<2> shape({-1, 3 * 36});
  nn::Sequential sequential(nn::Functional(ember::reshape, shape), nn::Functional([](Tensor t) { return t * 2; }));
  Tensor flat = sequential->forward(x);
  EXPECT_EQ(flat.sizes(), (std::vector<int64_t>{2, 108}));
  std::vector<double> doubled = values(x);
  for (double& v : doubled) v *= 2;
  EXPECT_TRUE(all_close(flat, doubled));
  EXPECT_TRUE(throws_error([] { (void)nn::Functional(nn::FunctionalImpl::Function{}); }, {"[Functional]", "empty"}));
}

}  // namespace
}  // namespace ember::nntest
