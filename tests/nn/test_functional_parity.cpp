// libtorch's functional API beyond the layers (torch::nn::functional): losses, distances,
// pooling, rearranging, sampling, embedding bags, dropout variants and the tensor methods
// they need (resize_, random_), each against values derived by hand or loops in double here.
#include <cmath>
#include <numeric>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace F = ember::nn::functional;

TEST(FunctionalParity, ResizeReshapesInPlaceAndGrows) {
  Tensor x = arange(6, kFloat64);
  const Tensor& same = x.resize_({2, 3});
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(all_close(x, {0, 1, 2, 3, 4, 5}));
  // Growing keeps the first values (the rest are uninitialised) and every view of the storage
  // sees the new memory.
  x.resize_({3, 3});
  EXPECT_EQ(x.numel(), 9);
  EXPECT_TRUE(all_close(x.reshape({-1}).narrow(0, 0, 6), {0, 1, 2, 3, 4, 5}));
  // A strided tensor's storage is read as contiguous from its offset.
  Tensor t = arange(6, kFloat64).reshape({2, 3}).t();
  t.resize_({6});
  EXPECT_TRUE(all_close(t, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(throws_error([] { ones({2}, TensorOptions(kFloat64).requires_grad(true)).resize_({3}); },
                           {"resize_", "requires grad"}));
}

TEST(FunctionalParity, RandomDrawsIntegersInRange) {
  manual_seed(5);
  Tensor x = empty({2000}, kFloat32).random_(3);
  const auto v = values(x);
  std::vector<int> counts(3, 0);
  for (double value : v) {
    ASSERT_TRUE(value == 0 || value == 1 || value == 2) << value;
    ++counts[static_cast<size_t>(value)];
  }
  for (int c : counts) EXPECT_NEAR(c, 2000 / 3.0, 5 * std::sqrt(2000 * (1 / 3.0) * (2 / 3.0)));
  for (double value : values(empty({500}, kInt64).random_(-4, 7))) EXPECT_TRUE(value >= -4 && value < 7) << value;
  for (double value : values(empty({500}, kUInt8).random_())) EXPECT_TRUE(value >= 0 && value < 256) << value;
  EXPECT_TRUE(throws_error([] { empty({2}).random_(3, 3); }, {"random_", "from=3"}));
}

TEST(FunctionalParity, FactoriesAndFreeFunctionsOfLibtorch) {
  EXPECT_EQ(arange(0, 5, kFloat64).scalar_type(), kFloat64);
  EXPECT_TRUE(all_close(arange(1, 4, kFloat64), {1, 2, 3}));
  EXPECT_TRUE(all_close(arange(1, 7, 2), {1, 3, 5}));
  Tensor x = arange(6, kFloat64).reshape({2, 3});
  EXPECT_TRUE(all_close(transpose(x, 0, 1), {0, 3, 1, 4, 2, 5}));
  // bool * bool and bool + bool are logical and / or, as in libtorch.
  Tensor a = tensor({true, true, false, false}), b = tensor({true, false, true, false});
  EXPECT_EQ((a * b).scalar_type(), kBool);
  EXPECT_TRUE(all_close(a * b, {1, 0, 0, 0}));
  EXPECT_TRUE(all_close(a + b, {1, 1, 1, 0}));
  // at::layer_norm / at::group_norm.
  Tensor y = uniform({2, 4}, 1);
  const auto v = values(y);
  std::vector<double> expected;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 4; ++c) mean += v[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) var += (v[r * 4 + c] - mean) * (v[r * 4 + c] - mean) / 4;
    for (int c = 0; c < 4; ++c) expected.push_back((v[r * 4 + c] - mean) / std::sqrt(var + 1e-5));
  }
  EXPECT_TRUE(all_close(layer_norm(y, {4}), expected));
  EXPECT_TRUE(all_close(group_norm(y, 1), expected));
}

TEST(FunctionalParity, EmbeddingScalesGradientsByFrequency) {
  Tensor weight = leaf(uniform({4, 2}, 2));
  Tensor indices = tensor({1, 3, 1, 1}, kInt64);
  embedding(weight, indices, -1, /*scale_grad_by_freq=*/true).sum().backward();
  // Row 1 appears 3 times (3 ones / 3), row 3 once.
  EXPECT_TRUE(all_close(weight.grad(), {0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_TRUE(throws_error([&] { embedding(weight, indices, -1, false, true); }, {"embedding", "sparse"}));
}

TEST(FunctionalParity, MarginAndLikelihoodLosses) {
  Tensor x = testutil::make({2, 4, 1, 3}, {4}, kFloat64);
  Tensor y = testutil::make({-1, 1, 1, -1}, {4}, kFloat64);
  std::vector<double> soft;
  for (int i = 0; i < 4; ++i) soft.push_back(std::log1p(std::exp(-values(y)[i] * values(x)[i])));
  EXPECT_TRUE(all_close(F::soft_margin_loss(x, y, ember::kNone), soft));
  EXPECT_NEAR(F::soft_margin_loss(x, y).item<double>(), std::accumulate(soft.begin(), soft.end(), 0.0) / 4, 1e-12);

  // multilabel_soft_margin_loss: per sample -mean_c w_c (t log s(x) + (1 - t) log s(-x)).
  Tensor input = testutil::make({0, 2, 2, 0, 2, 1, 0, 1}, {2, 4}, kFloat64);
  Tensor target = testutil::make({0, 0, 1, 0, 1, 0, 1, 1}, {2, 4}, kFloat64);
  Tensor weight = testutil::make({0.1, 0.6, 0.4, 0.8}, {4}, kFloat64);
  std::vector<double> rows(2, 0.0);
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 4; ++c) {
      const double xv = values(input)[n * 4 + c], t = values(target)[n * 4 + c];
      const double log_sig = -std::log1p(std::exp(-xv)), log_sig_neg = -std::log1p(std::exp(xv));
      rows[n] -= values(weight)[c] * (t * log_sig + (1 - t) * log_sig_neg) / 4;
    }
  }
  EXPECT_TRUE(all_close(F::multilabel_soft_margin_loss(
                            input, target, F::MultilabelSoftMarginLossFuncOptions().weight(weight).reduction(ember::kNone)),
                        rows));

  // hinge_embedding_loss: x where t = 1, max(0, margin - x) where t = -1.
  Tensor h = testutil::make({0.5, 3, -1, 1.5}, {4}, kFloat64);
  Tensor ht = testutil::make({1, -1, -1, 1}, {4}, kFloat64);
  EXPECT_TRUE(all_close(F::hinge_embedding_loss(h, ht, F::HingeEmbeddingLossFuncOptions().margin(2).reduction(ember::kNone)),
                        {0.5, 0, 3, 1.5}));

  // multi_margin_loss, p = 2, weighted: sum_{j != y} w_y max(0, m - x_y + x_j)^2 / C.
  Tensor scores = leaf(testutil::make({0.2, 0.9, 0.6, 0.1, 0.8, 0.1}, {2, 3}, kFloat64));
  Tensor labels = tensor({2, 0}, kInt64);
  Tensor class_weight = testutil::make({0.5, 1, 2}, {3}, kFloat64);
  const double row0 = 2 * (std::pow(1 - 0.6 + 0.2, 2) + std::pow(1 - 0.6 + 0.9, 2)) / 3;
  const double row1 = 0.5 * (std::pow(1 - 0.1 + 0.8, 2) + std::pow(1 - 0.1 + 0.1, 2)) / 3;
  EXPECT_TRUE(all_close(F::multi_margin_loss(scores, labels,
                                             F::MultiMarginLossFuncOptions().p(2).weight(class_weight).reduction(ember::kNone)),
                        {row0, row1}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) { return F::multi_margin_loss(in[0], labels); }, {scores}, tight_gradcheck()));

  // multilabel_margin_loss: targets {3, 0} (ended by -1) against the other classes {1, 2}.
  Tensor ml = leaf(testutil::make({0.1, 0.2, 0.4, 0.8}, {1, 4}, kFloat64));
  Tensor ml_target = tensor({{3, 0, -1, 1}}, kInt64);
  const double expected_ml = ((1 - 0.8 + 0.2) + (1 - 0.8 + 0.4) + (1 - 0.1 + 0.2) + (1 - 0.1 + 0.4)) / 4;
  EXPECT_NEAR(F::multilabel_margin_loss(ml, ml_target).item<double>(), expected_ml, 1e-12);
  F::multilabel_margin_loss(ml, ml_target).backward();
  // d/dx_j = -(non-targets with a positive hinge) / C, d/dx_k = +(targets) / C.
  EXPECT_TRUE(all_close(ml.grad(), {-0.5, 0.5, 0.5, -0.5}));

  // poisson_nll_loss with log_input and with full (Stirling's term where t > 1).
  Tensor rate = testutil::make({0.5, 1.5, 2.5}, {3}, kFloat64);
  Tensor count = testutil::make({1, 2, 3}, {3}, kFloat64);
  std::vector<double> poisson, poisson_full;
  for (int i = 0; i < 3; ++i) {
    const double r = values(rate)[i], t = values(count)[i];
    poisson.push_back(std::exp(r) - t * r);
    poisson_full.push_back(poisson.back() + (t > 1 ? t * std::log(t) - t + 0.5 * std::log(2 * M_PI * t) : 0));
  }
  EXPECT_TRUE(all_close(F::poisson_nll_loss(rate, count, F::PoissonNLLLossFuncOptions().reduction(ember::kNone)), poisson));
  EXPECT_TRUE(all_close(
      F::poisson_nll_loss(rate, count, F::PoissonNLLLossFuncOptions().full(true).reduction(ember::kNone)), poisson_full));
  std::vector<double> poisson_linear;
  for (int i = 0; i < 3; ++i) poisson_linear.push_back(values(rate)[i] - values(count)[i] * std::log(values(rate)[i] + 1e-8));
  EXPECT_TRUE(all_close(
      F::poisson_nll_loss(rate, count, F::PoissonNLLLossFuncOptions().log_input(false).reduction(ember::kNone)),
      poisson_linear));
}

TEST(FunctionalParity, TripletMarginWithDistanceLoss) {
  Tensor anchor = uniform({5, 3}, 3), positive = uniform({5, 3}, 4), negative = uniform({5, 3}, 5);
  // The default distance is pairwise_distance, so the loss equals triplet_margin_loss's.
  EXPECT_TRUE(all_close(F::triplet_margin_with_distance_loss(anchor, positive, negative,
                                                             F::TripletMarginWithDistanceLossFuncOptions().swap(true)),
                        values(F::triplet_margin_loss(anchor, positive, negative,
                                                      F::TripletMarginLossFuncOptions().swap(true)))));
  // A custom distance: the L1 distance.
  auto l1 = [](const Tensor& a, const Tensor& b) { return (a - b).abs().sum({1}); };
  std::vector<double> expected;
  for (int n = 0; n < 5; ++n) {
    double dp = 0, dn = 0;
    for (int c = 0; c < 3; ++c) {
      dp += std::abs(values(anchor)[n * 3 + c] - values(positive)[n * 3 + c]);
      dn += std::abs(values(anchor)[n * 3 + c] - values(negative)[n * 3 + c]);
    }
    expected.push_back(std::max(0.0, 0.5 + dp - dn));
  }
  EXPECT_TRUE(all_close(F::triplet_margin_with_distance_loss(
                            anchor, positive, negative,
                            F::TripletMarginWithDistanceLossFuncOptions().distance_function(l1).margin(0.5).reduction(
                                ember::kNone)),
                        expected));
}

TEST(FunctionalParity, Distances) {
  Tensor a = testutil::make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  Tensor b = testutil::make({1, 8, 3, 2, 1, 6}, {2, 3}, kFloat64);
  const double cos0 = (1 + 16 + 9) / (std::sqrt(14.0) * std::sqrt(74.0));
  const double cos1 = (8 + 5 + 36) / (std::sqrt(77.0) * std::sqrt(41.0));
  EXPECT_TRUE(all_close(F::cosine_similarity(a, b), {cos0, cos1}));
  EXPECT_TRUE(all_close(F::cosine_similarity(a, zeros({2, 3}, kFloat64)), {0, 0}));  // eps keeps it finite
  const double eps = 1e-6;
  EXPECT_TRUE(all_close(F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(1)),
                        {eps + (6 - eps) + eps, (2 + eps) + (4 + eps) + eps}));
  EXPECT_EQ(F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().keepdim(true)).sizes(),
            (std::vector<int64_t>{2, 1}));
  Tensor points = testutil::make({1, -1, 1, 3, 3, 3}, {3, 2}, kFloat64);
  EXPECT_TRUE(all_close(F::pdist(points), {4, std::sqrt(4.0 + 16.0), 2}));
  EXPECT_TRUE(all_close(F::pdist(points, 1), {4, 6, 2}));
  EXPECT_EQ(F::pdist(ones({1, 3}, kFloat64)).numel(), 0);
  // normalize: x / max(||x||_p, eps) along dim; `out` receives it.
  Tensor out = empty({2, 3}, kFloat64);
  Tensor result = F::normalize(a, F::NormalizeFuncOptions().p(1).dim(1).out(out));
  EXPECT_TRUE(result.is_same(out));
  EXPECT_TRUE(all_close(out, {1 / 6.0, 2 / 6.0, 3 / 6.0, 4 / 15.0, 5 / 15.0, 6 / 15.0}));
  EXPECT_TRUE(all_close(F::normalize(zeros({1, 2}, kFloat64)), {0, 0}));
}

TEST(FunctionalParity, PixelShuffleAndFold) {
  Tensor x = arange(16, kFloat64).reshape({1, 4, 2, 2});
  Tensor shuffled = F::pixel_shuffle(x, 2);
  EXPECT_EQ(shuffled.sizes(), (std::vector<int64_t>{1, 1, 4, 4}));
  // out[h * 2 + i, w * 2 + j] = in[i * 2 + j, h, w].
  std::vector<double> expected;
  for (int oh = 0; oh < 4; ++oh)
    for (int ow = 0; ow < 4; ++ow) expected.push_back(((oh % 2) * 2 + ow % 2) * 4 + (oh / 2) * 2 + ow / 2);
  EXPECT_TRUE(all_close(shuffled, expected));
  EXPECT_TRUE(all_close(F::pixel_unshuffle(shuffled, 2), values(x)));

  // unfold then fold sums each pixel once per block covering it.
  Tensor image = arange(12, kFloat64).reshape({1, 1, 3, 4});
  Tensor blocks = F::unfold(image, F::UnfoldFuncOptions({2, 2}).padding(1).stride(2));
  EXPECT_EQ(blocks.sizes(), (std::vector<int64_t>{1, 4, 6}));
  // Block (r, c) reads padded rows 2r..2r+1 and columns 2c..2c+1 (padded = image shifted by 1).
  std::vector<double> expected_blocks;
  for (int ki = 0; ki < 2; ++ki)
    for (int kj = 0; kj < 2; ++kj)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
          const int row = 2 * r + ki - 1, col = 2 * c + kj - 1;
          expected_blocks.push_back(row >= 0 && row < 3 && col >= 0 && col < 4 ? row * 4 + col : 0);
        }
  EXPECT_TRUE(all_close(blocks, expected_blocks));
  Tensor folded = F::fold(F::unfold(image, F::UnfoldFuncOptions({2, 2})), F::FoldFuncOptions({3, 4}, {2, 2}));
  std::vector<double> expected_fold;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      const int covers = (r == 0 || r == 2 ? 1 : 2) * (c == 0 || c == 3 ? 1 : 2);
      expected_fold.push_back(covers * (r * 4 + c));
    }
  EXPECT_TRUE(all_close(folded, expected_fold));
  Tensor leaf_image = leaf(uniform({1, 2, 3, 3}, 6));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) { return F::unfold(in[0], F::UnfoldFuncOptions({2, 2}).padding(1)); },
      {leaf_image}, tight_gradcheck()));
}

TEST(FunctionalParity, PoolingForms) {
  // lp_pool: (sum x^p)^(1/p) over each window.
  Tensor x = testutil::make({1, 2, 3, 4, 5, 6}, {1, 1, 6}, kFloat64);
  EXPECT_TRUE(all_close(F::lp_pool1d(x, F::LPPool1dFuncOptions(2, 3)),
                        {std::sqrt(1.0 + 4 + 9), std::sqrt(16.0 + 25 + 36)}));
  Tensor image = arange(1, 17, kFloat64).reshape({1, 1, 4, 4});
  EXPECT_TRUE(all_close(F::lp_pool2d(image, F::LPPool2dFuncOptions(1, 2)), {1 + 2 + 5 + 6, 3 + 4 + 7 + 8,
                                                                            9 + 10 + 13 + 14, 11 + 12 + 15 + 16}));
  // max_unpool inverts max_pool with indices.
  Tensor pooled, indices;
  std::tie(pooled, indices) = F::max_pool2d_with_indices(image, F::MaxPool2dFuncOptions(2));
  Tensor unpooled = F::max_unpool2d(pooled, indices, F::MaxUnpool2dFuncOptions(2));
  EXPECT_TRUE(all_close(unpooled, {0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0, 14, 0, 16}));
  EXPECT_EQ(F::max_unpool1d(testutil::make({2}, {1, 1, 1}, kFloat64), tensor({{{4}}}, kInt64),
                            F::MaxUnpool1dFuncOptions(2).output_size(std::vector<int64_t>{5}))
                .sizes(),
            (std::vector<int64_t>{1, 1, 5}));
  EXPECT_TRUE(throws_error(
      [&] { F::max_unpool2d(pooled, indices + 100, F::MaxUnpool2dFuncOptions(2)); }, {"max_unpool2d", "index"}));
  // fractional_max_pool with fixed samples: starts int((i + u) * alpha) - int(u * alpha).
  Tensor grid = arange(49, kFloat64).reshape({1, 1, 7, 7});
  Tensor samples = testutil::make({0.5, 0.25}, {1, 1, 2}, kFloat64);
  auto [values_out, positions] = F::fractional_max_pool2d_with_indices(
      grid, F::FractionalMaxPool2dFuncOptions(2).output_size(3)._random_samples(samples));
  // alpha = (7 - 2) / 2 = 2.5. Rows (u = 0.5): starts 0, int(3.75) - 1 = 2, 5. Columns
  // (u = 0.25): 0, int(3.125) - 0 = 3, 5. The max of each window is its bottom-right value.
  std::vector<double> expected_max, expected_positions;
  for (int rs : {0, 2, 5})
    for (int cs : {0, 3, 5}) {
      expected_max.push_back((rs + 1) * 7 + cs + 1);
      expected_positions.push_back((rs + 1) * 7 + cs + 1);
    }
  EXPECT_TRUE(all_close(values_out, expected_max));
  EXPECT_TRUE(all_close(positions, expected_positions));
  EXPECT_EQ(F::fractional_max_pool3d(ones({2, 5, 5, 5}), F::FractionalMaxPool3dFuncOptions(2).output_ratio(0.5)).sizes(),
            (std::vector<int64_t>{2, 2, 2, 2}));
}

TEST(FunctionalParity, AffineGridAndGridSample) {
  // The identity transform maps each output pixel centre onto itself.
  Tensor identity = testutil::make({1, 0, 0, 0, 1, 0}, {1, 2, 3}, kFloat64);
  Tensor grid = F::affine_grid(identity, {1, 1, 2, 3}, /*align_corners=*/false);
  EXPECT_EQ(grid.sizes(), (std::vector<int64_t>{1, 2, 3, 2}));
  EXPECT_TRUE(all_close(grid, {-2 / 3.0, -0.5, 0, -0.5, 2 / 3.0, -0.5, -2 / 3.0, 0.5, 0, 0.5, 2 / 3.0, 0.5}));
  Tensor image = arange(6, kFloat64).reshape({1, 1, 2, 3});
  EXPECT_TRUE(all_close(F::grid_sample(image, grid), {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(throws_error([] { F::affine_grid(zeros({1, 2, 3}), {1, 1, 2}); }, {"affine_grid", "4D and 5D"}));
  // Bilinear at (x, y) = (0.5, 0) in pixels, align_corners: between 0 and 1 -> 0.5; outside the
  // image with zeros padding the out-of-range corners count 0; border clamps; reflection
  // mirrors about the edge pixels.
  Tensor points = testutil::make({-0.5, -1, -1.5, -1, 1.5, 1}, {1, 1, 3, 2}, kFloat64);
  auto sample = [&](F::GridSampleFuncOptions options) {
    return F::grid_sample(image, points, options.align_corners(true));
  };
  // x = -0.5 -> pixel 0.5 of row 0; x = -1.5 -> pixel -0.5; x = 1.5 -> pixel 2.5 of row 1.
  EXPECT_TRUE(all_close(sample(F::GridSampleFuncOptions()), {0.5, 0, 5 * 0.5}));
  EXPECT_TRUE(all_close(sample(F::GridSampleFuncOptions().padding_mode(ember::kBorder)), {0.5, 0, 5}));
  EXPECT_TRUE(all_close(sample(F::GridSampleFuncOptions().padding_mode(ember::kReflection)), {0.5, 0.5, 4.5}));
  // Nearest rounds half to even: 0.5 -> 0, -0.5 -> 0 (outside? no: -0 is pixel 0), 2.5 -> 2.
  EXPECT_TRUE(all_close(sample(F::GridSampleFuncOptions().mode(ember::kNearest)), {0, 0, 5}));
  Tensor leaf_image = leaf(uniform({1, 2, 3, 3}, 7));
  Tensor leaf_grid = leaf(uniform({1, 2, 2, 2}, 8, -0.9, 0.9));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return F::grid_sample(in[0], in[1]); },
                              {leaf_image, leaf_grid}, tight_gradcheck()));
}

TEST(FunctionalParity, LocalResponseNorm) {
  Tensor x = uniform({2, 4, 3}, 9, 0.5, 2);
  const auto v = values(x);
  std::vector<double> expected;
  // size 3: channels c - 1 .. c + 1 (zero outside), averaged over 3.
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 3; ++l) {
        double sum = 0;
        for (int k = c - 1; k <= c + 1; ++k)
          if (k >= 0 && k < 4) sum += v[(n * 4 + k) * 3 + l] * v[(n * 4 + k) * 3 + l];
        expected.push_back(v[(n * 4 + c) * 3 + l] / std::pow(2 + 0.1 * sum / 3, 0.75));
      }
  EXPECT_TRUE(all_close(F::local_response_norm(x, F::LocalResponseNormFuncOptions(3).alpha(0.1).k(2)), expected));
  EXPECT_TRUE(all_close(F::local_response_norm(x.reshape({2, 4, 3, 1}), F::LocalResponseNormFuncOptions(3).alpha(0.1).k(2)),
                        expected));
}

TEST(FunctionalParity, EmbeddingBagAndBilinear) {
  Tensor weight = leaf(uniform({5, 2}, 10));
  const auto w = values(weight);
  Tensor input = tensor({1, 2, 4, 4, 3}, kInt64);
  Tensor offsets = tensor({0, 2, 2}, kInt64);  // bags {1, 2}, {}, {4, 4, 3}
  auto row = [&](int r, int d) { return w[static_cast<size_t>(r * 2 + d)]; };
  std::vector<double> sums, means, maxima;
  for (int d = 0; d < 2; ++d) sums.push_back(row(1, d) + row(2, d));
  sums.insert(sums.end(), {0, 0});
  for (int d = 0; d < 2; ++d) sums.push_back(2 * row(4, d) + row(3, d));
  EXPECT_TRUE(all_close(F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions().offsets(offsets).mode(ember::kSum)),
                        sums));
  for (size_t i = 0; i < 6; ++i) means.push_back(sums[i] / (i < 2 ? 2 : i < 4 ? 1 : 3));
  means[2] = means[3] = 0;
  EXPECT_TRUE(all_close(F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions().offsets(offsets)), means));
  for (int d = 0; d < 2; ++d) maxima.push_back(std::max(row(1, d), row(2, d)));
  maxima.insert(maxima.end(), {0, 0});
  for (int d = 0; d < 2; ++d) maxima.push_back(std::max(row(4, d), row(3, d)));
  EXPECT_TRUE(all_close(F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions().offsets(offsets).mode(ember::kMax)),
                        maxima));
  // padding_idx 4 is left out; a 2-D input is one bag per row.
  std::vector<double> padded = {row(1, 0) + row(2, 0), row(1, 1) + row(2, 1), row(3, 0), row(3, 1)};
  EXPECT_TRUE(all_close(F::embedding_bag(tensor({{1, 2}, {4, 3}}, kInt64), weight,
                                         F::EmbeddingBagFuncOptions().mode(ember::kSum).padding_idx(4)),
                        padded));
  F::embedding_bag(input, weight, F::EmbeddingBagFuncOptions().offsets(offsets).mode(ember::kSum)).sum().backward();
  EXPECT_TRUE(all_close(weight.grad(), {0, 0, 1, 1, 1, 1, 1, 1, 2, 2}));

  // bilinear: y[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j] + bias[o], integers exact.
  Tensor x1 = tensor({{1, 2, 3}, {7, 6, 5}});
  Tensor x2 = tensor({{7, 4}, {8, 9}});
  Tensor bw = tensor({{{2, 3}, {9, 7}, {8, 6}}});
  EXPECT_TRUE(all_close(F::bilinear(x1, x2, bw, tensor({1})), {449, 1702}));
  Tensor f1 = uniform({3, 2}, 11), f2 = uniform({3, 4}, 12), fw = uniform({5, 2, 4}, 13);
  std::vector<double> expected(15, 0.0);
  for (int b = 0; b < 3; ++b)
    for (int o = 0; o < 5; ++o)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j)
          expected[b * 5 + o] += values(f1)[b * 2 + i] * values(fw)[(o * 2 + i) * 4 + j] * values(f2)[b * 4 + j];
  EXPECT_TRUE(all_close(F::bilinear(f1, f2, fw), expected));
}

TEST(FunctionalParity, AlphaDropoutKeepsMeanAndVariance) {
  manual_seed(13);
  Tensor x = randn({200000}, kFloat64);
  for (double p : {0.2, 0.5}) {
    Tensor y = F::alpha_dropout(x, F::AlphaDropoutFuncOptions().p(p).training(true));
    EXPECT_NEAR(y.mean().item<double>(), 0, 0.02) << p;
    EXPECT_NEAR(y.std().item<double>(), 1, 0.02) << p;
    // Dropped values all land on a * (-1.7581) + b, kept ones on a * x + b.
    const double alpha = 1.7580993408473766, a = 1 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
    const double b = alpha * a * p, dropped = -alpha * a + b;
    const auto xs = values(x.narrow(0, 0, 200)), ys = values(y.narrow(0, 0, 200));
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_TRUE(std::abs(ys[i] - dropped) < 1e-12 || std::abs(ys[i] - (a * xs[i] + b)) < 1e-12) << i;
    }
  }
  EXPECT_TRUE(F::alpha_dropout(x).is_same(x));  // training defaults to false
  Tensor channels = F::feature_alpha_dropout(ones({50, 20, 3}, kFloat64), F::FeatureAlphaDropoutFuncOptions().training(true));
  for (double v : values(channels.amax({2}) - channels.amin({2}))) EXPECT_EQ(v, 0);  // one value per channel
}

TEST(FunctionalParity, GumbelSoftmaxAndSoftmin) {
  manual_seed(17);
  Tensor logits = leaf(uniform({4, 5}, 14));
  Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  EXPECT_TRUE(all_close(soft.sum({1}), {1, 1, 1, 1}));
  Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true).dim(1));
  for (double v : values(hard)) EXPECT_TRUE(v == 0 || v == 1);
  EXPECT_TRUE(all_close(hard.sum({1}), {1, 1, 1, 1}));
  hard.sum().backward();  // the straight-through estimator passes the soft sample's gradient
  ASSERT_TRUE(logits.grad().defined());
  Tensor x = uniform({2, 3}, 15);
  std::vector<double> expected;
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(-values(x)[r * 3 + c]);
    for (int c = 0; c < 3; ++c) expected.push_back(std::exp(-values(x)[r * 3 + c]) / sum);
  }
  EXPECT_TRUE(all_close(F::softmin(x, 1), expected));
}

}  // namespace
}  // namespace ember::nntest
