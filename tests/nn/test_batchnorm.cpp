// BatchNorm1d/2d/3d and F::batch_norm: the formula written here per channel, running stats
// (momentum and cumulative), eval mode, gradcheck, state_dict names and argument errors.
#include "vision_reference.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// Per-channel mean and biased variance of x [N, C, *].
struct ChannelStats {
  std::vector<double> mean, var;
};
ChannelStats channel_stats(const Tensor& x) {
  const auto v = values(x);
  const int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  ChannelStats s{std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
  const double count = static_cast<double>(x.size(0) * inner);
  for (size_t i = 0; i < v.size(); ++i) s.mean[(i / inner) % C] += v[i] / count;
  for (size_t i = 0; i < v.size(); ++i) {
    const double d = v[i] - s.mean[(i / inner) % C];
    s.var[(i / inner) % C] += d * d / count;
  }
  return s;
}

// (x - mean_c) / sqrt(var_c + eps) * w_c + b_c.
std::vector<double> normalized(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                               const std::vector<double>& w, const std::vector<double>& b, double eps) {
  const auto v = values(x);
  const int64_t C = x.size(1), inner = x.numel() / std::max<int64_t>(1, x.size(0) * C);
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t c = (i / inner) % C;
    out.push_back((v[i] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c]);
  }
  return out;
}

TEST(BatchNorm2d, TrainingUsesBatchStatsAndMovesRunningStats) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.2).eps(1e-3));
  bn->to(kFloat64);
  {
    NoGradGuard no_grad;
    bn->weight.copy_(uniform({3}, 1));
    bn->bias.copy_(uniform({3}, 2));
  }
  const Tensor x = uniform({4, 3, 5, 2}, 3, -2, 3).permute({0, 1, 3, 2});
  const auto s = channel_stats(x);
  EXPECT_TRUE(all_close(bn(x), normalized(x, s.mean, s.var, values(bn->weight), values(bn->bias), 1e-3)));
  std::vector<double> mean, var;
  for (int c = 0; c < 3; ++c) {
    mean.push_back(0.2 * s.mean[c]);
    var.push_back(0.8 + 0.2 * s.var[c] * 40.0 / 39.0);  // the running variance is unbiased
  }
  EXPECT_TRUE(all_close(bn->running_mean, mean));
  EXPECT_TRUE(all_close(bn->running_var, var));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // Evaluation normalises with the running stats and leaves them alone.
  bn->eval();
  const Tensor x2 = uniform({2, 3, 3, 3}, 4);
  EXPECT_TRUE(all_close(bn(x2), normalized(x2, mean, var, values(bn->weight), values(bn->bias), 1e-3)));
  EXPECT_TRUE(all_close(bn->running_mean, mean));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // An empty batch is fine in evaluation.
  EXPECT_EQ(bn(zeros({0, 3, 2, 2}, kFloat64)).sizes(), (std::vector<int64_t>{0, 3, 2, 2}));
}

TEST(BatchNorm2d, CumulativeAverageWithoutMomentumAndNoRunningStats) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(2).momentum(std::nullopt).affine(false));
  bn->to(kFloat64);
  EXPECT_FALSE(bn->weight.defined());
  const Tensor a = uniform({2, 2, 3, 3}, 10), b = uniform({3, 2, 2, 2}, 11, 0, 4);
  bn(a);
  bn(b);
  const auto sa = channel_stats(a), sb = channel_stats(b);
  EXPECT_TRUE(all_close(bn->running_mean, {(sa.mean[0] + sb.mean[0]) / 2, (sa.mean[1] + sb.mean[1]) / 2}));
  EXPECT_TRUE(all_close(bn->running_var, {(sa.var[0] * 18 / 17 + sb.var[0] * 12 / 11) / 2,
                                          (sa.var[1] * 18 / 17 + sb.var[1] * 12 / 11) / 2}));
  nn::BatchNorm2d untracked(nn::BatchNormOptions(2).track_running_stats(false));
  untracked->to(kFloat64);
  untracked->eval();
  EXPECT_TRUE(untracked->named_buffers().is_empty());
  EXPECT_TRUE(all_close(untracked(b), normalized(b, sb.mean, sb.var, {1, 1}, {0, 0}, 1e-5)));
}

TEST(BatchNorm, GradcheckAndOtherRanks) {
  const Tensor x = uniform({3, 2, 3, 2}, 20), w = uniform({2}, 21), b = uniform({2}, 22);
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& t) {
        return F::batch_norm(t[0], Tensor(), Tensor(),
                             F::BatchNormFuncOptions().weight(t[1]).bias(t[2]).training(true));
      },
      {leaf(x.transpose(2, 3)), leaf(w), leaf(b)}, tight_gradcheck()));
  const Tensor mean = uniform({2}, 23), var = uniform({2}, 24, 0.5, 2);
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& t) {
        return F::batch_norm(t[0], mean, var, F::BatchNormFuncOptions().weight(t[1]).bias(t[2]));
      },
      {leaf(x), leaf(w), leaf(b)}, tight_gradcheck()));
  nn::BatchNorm1d bn1(nn::BatchNormOptions(4));
  const Tensor x1 = uniform({5, 4}, 25, -1, 1, kFloat32);
  const auto s1 = channel_stats(x1);
  EXPECT_TRUE(all_close(bn1(x1), normalized(x1, s1.mean, s1.var, {1, 1, 1, 1}, {0, 0, 0, 0}, 1e-5), {1e-5, 1e-5}));
  nn::BatchNorm3d bn3(nn::BatchNormOptions(2));
  EXPECT_EQ(bn3(uniform({2, 2, 2, 3, 2}, 26, -1, 1, kFloat32)).sizes(), (std::vector<int64_t>{2, 2, 2, 3, 2}));
  EXPECT_EQ(bn3->named_buffers().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn3->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
}

// Gradients of sum(bn(x) * r) with batch statistics, written per channel in float64:
// grad_bias = sum r, grad_weight = sum r * xhat, grad_x = w / std * (r - mean r - xhat * mean(r * xhat)).
struct BatchNormGrads {
  std::vector<double> x, weight, bias;
};
BatchNormGrads batch_norm_grads(const Tensor& x, const Tensor& r, const std::vector<double>& w, double eps) {
  const auto xv = values(x), rv = values(r);
  const int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  const double count = static_cast<double>(x.size(0) * inner);
  const auto s = channel_stats(x);
  BatchNormGrads g{std::vector<double>(xv.size()), std::vector<double>(C, 0.0), std::vector<double>(C, 0.0)};
  auto xhat = [&](size_t i) {
    const size_t c = (i / inner) % C;
    return (xv[i] - s.mean[c]) / std::sqrt(s.var[c] + eps);
  };
  for (size_t i = 0; i < xv.size(); ++i) {
    g.bias[(i / inner) % C] += rv[i];
    g.weight[(i / inner) % C] += rv[i] * xhat(i);
  }
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = (i / inner) % C;
    g.x[i] = w[c] / std::sqrt(s.var[c] + eps) * (rv[i] - g.bias[c] / count - xhat(i) * g.weight[c] / count);
  }
  return g;
}

// float32 runs the fused kernels (Note [Fused BatchNorm]): forward, running stats and every
// gradient against the float64 formulas, for widths that are and are not multiples of the
// kernel's 8 accumulators, [N, C] inputs, a non-contiguous input and no affine parameters.
TEST(BatchNorm, Float32FusedKernelsMatchFloat64Formulas) {
  struct Case {
    std::vector<int64_t> sizes;
    bool affine, transposed;
  };
  uint32_t seed = 40;
  for (const Case& c : {Case{{4, 3, 8, 8}, true, false}, Case{{3, 5, 7, 3}, true, true}, Case{{6, 4}, true, false},
                        Case{{2, 3, 5, 2, 3}, false, false}}) {
    SCOPED_TRACE(::testing::PrintToString(c.sizes));
    const int64_t C = c.sizes[1];
    Tensor x64 = uniform(c.sizes, seed++, -2, 3);
    if (c.transposed) x64 = uniform({c.sizes[0], c.sizes[1], c.sizes[3], c.sizes[2]}, seed++, -2, 3).transpose(2, 3);
    const Tensor r64 = uniform(c.sizes, seed++);
    const Tensor w64 = uniform({C}, seed++, 0.5, 1.5), b64 = uniform({C}, seed++);
    const Tensor x = x64.to(kFloat32).requires_grad_(true);
    const Tensor w = w64.to(kFloat32).requires_grad_(true), b = b64.to(kFloat32).requires_grad_(true);
    const Tensor running_mean = zeros({C}), running_var = ones({C});
    auto options = F::BatchNormFuncOptions().training(true).momentum(0.25).eps(1e-3);
    if (c.affine) options.weight(w).bias(b);
    const Tensor y = F::batch_norm(x, running_mean, running_var, options);
    (y * r64.to(kFloat32)).sum().backward();
    const auto s = channel_stats(x64);
    const std::vector<double> weight = c.affine ? values(w64) : std::vector<double>(C, 1.0);
    const std::vector<double> bias = c.affine ? values(b64) : std::vector<double>(C, 0.0);
    EXPECT_EQ(y.scalar_type(), kFloat32);
    EXPECT_TRUE(all_close(y, normalized(x64, s.mean, s.var, weight, bias, 1e-3), {1e-5, 1e-5}));
    const double count = static_cast<double>(x64.numel() / C);
    std::vector<double> mean, var;
    for (int64_t ch = 0; ch < C; ++ch) {
      mean.push_back(0.25 * s.mean[ch]);
      var.push_back(0.75 + 0.25 * s.var[ch] * count / (count - 1));
    }
    EXPECT_TRUE(all_close(running_mean, mean, {1e-6, 1e-6}));
    EXPECT_TRUE(all_close(running_var, var, {1e-6, 1e-6}));
    const auto grads = batch_norm_grads(x64, r64, weight, 1e-3);
    EXPECT_TRUE(all_close(x.grad(), grads.x, {1e-5, 1e-5})) << "grad input";
    if (c.affine) {
      EXPECT_TRUE(all_close(w.grad(), grads.weight, {1e-5, 1e-5})) << "grad weight";
      EXPECT_TRUE(all_close(b.grad(), grads.bias, {1e-5, 1e-5})) << "grad bias";
    }
  }
}

// create_graph=true (a gradient penalty, as in WGAN-GP) takes the differentiable composite
// backward: its first-order gradients match the float64 formulas, and the gradients of those
// gradients match finite differences (gradgradcheck), with and without affine parameters.
TEST(BatchNorm, DoubleBackwardInTrainingMode) {
  const Tensor x64 = uniform({3, 2, 2, 3}, 70, -2, 2).transpose(2, 3), r = uniform({3, 2, 3, 2}, 71);
  const Tensor w64 = uniform({2}, 72, 0.5, 1.5), b64 = uniform({2}, 73);
  for (bool affine : {true, false}) {
    SCOPED_TRACE(affine ? "affine" : "no affine");
    // The first-order gradients of sum(bn(x) * r), built with create_graph=true (grad mode on
    // also where gradcheck evaluates under no_grad).
    auto gradients = [&](const std::vector<Tensor>& t) {
      AutoGradMode grad_mode(true);
      auto options = F::BatchNormFuncOptions().training(true).eps(1e-3);
      if (affine) options.weight(t[1]).bias(t[2]);
      const Tensor y = F::batch_norm(t[0], Tensor(), Tensor(), options);
      const std::vector<Tensor> inputs = affine ? t : std::vector<Tensor>{t[0]};
      return autograd::grad({(y * r).sum()}, inputs, {}, true, /*create_graph=*/true);
    };
    const Tensor x = leaf(x64), w = leaf(w64), b = leaf(b64);  // x non-contiguous
    const std::vector<Tensor> first = gradients({x, w, b});
    const auto expected = batch_norm_grads(x.detach(), r, affine ? values(w64) : std::vector<double>{1, 1}, 1e-3);
    EXPECT_TRUE(first[0].requires_grad());
    EXPECT_TRUE(all_close(first[0], expected.x, {1e-10, 1e-10})) << "grad input";
    if (affine) {
      EXPECT_TRUE(all_close(first[1], expected.weight, {1e-10, 1e-10})) << "grad weight";
      EXPECT_TRUE(all_close(first[2], expected.bias, {1e-10, 1e-10})) << "grad bias";
    }
    EXPECT_TRUE(gradgradcheck(gradients, {x, w, b}));
  }
  // A gradient penalty reaches the weight through grad_x.
  const Tensor x = leaf(x64), w = leaf(w64);
  const Tensor y = F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().weight(w).training(true));
  const Tensor grad_x = autograd::grad({(y * r).sum()}, {x}, {}, true, /*create_graph=*/true)[0];
  grad_x.square().sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_GT(w.grad().abs().sum().item<double>(), 0.0);
}

TEST(BatchNorm, FusedBitwiseIdenticalForAnyThreadCount) {
  const Tensor x = uniform({8, 64, 9, 7}, 60, -1, 1, kFloat32), r = uniform({8, 64, 9, 7}, 61, -1, 1, kFloat32);
  auto run = [&] {
    nn::BatchNorm2d bn(nn::BatchNormOptions(64));
    const Tensor xl = x.clone().requires_grad_(true);
    const Tensor y = bn(xl);
    (y * r).sum().backward();
    return std::vector<std::vector<double>>{values(y), values(xl.grad()), values(bn->weight.grad()),
                                            values(bn->running_var)};
  };
  expect_same_for_any_thread_count(run);
}

TEST(BatchNorm, InvalidArgumentsNameTheArgument) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(3));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 3, 4})); }, {"[BatchNorm2d]", "4-d", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({2, 4, 2, 2})); }, {"[BatchNorm2d]", "3 channels", "[2, 4, 2, 2]"}));
  EXPECT_TRUE(throws_error([&] { bn(zeros({1, 3, 1, 1})); }, {"[batch_norm]", "more than 1 value per channel"}));
  EXPECT_TRUE(throws_error([&] { nn::BatchNorm2d(nn::BatchNormOptions(0)); }, {"[BatchNorm2d]", "num_features"}));
  EXPECT_TRUE(throws_error([&] { F::batch_norm(zeros({2, 3}), zeros({2}), ones({3})); },
                           {"[batch_norm]", "running_mean", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error([&] { F::batch_norm(zeros({2, 3}), Tensor(), Tensor()); },
                           {"[batch_norm]", "evaluation mode"}));
}

}  // namespace
}  // namespace ember::nntest
