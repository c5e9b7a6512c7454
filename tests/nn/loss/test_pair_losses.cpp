// BCELoss, SmoothL1Loss, HuberLoss, MarginRankingLoss, TripletMarginLoss and
// CosineEmbeddingLoss against PyTorch's formulas (aten/src/ATen/native/Loss.cpp) written here
// per element in double: every reduction, float64 and float32, input gradients against the
// hand-derived derivatives, gradcheck, the modules, the ember:: forms and argument errors.
#include <cmath>
#include <functional>

#include "nn/nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

std::vector<double> reduced(const std::vector<double>& per_element, Reduction reduction) {
  if (reduction == kNone) return per_element;
  double sum = 0;
  for (double v : per_element) sum += v;
  return {reduction == kSum ? sum : sum / static_cast<double>(per_element.size())};
}

testutil::Tolerance tolerance_for(ScalarType dtype) {
  return dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-6};
}

// A pointwise loss l(x, y) with its derivatives by x and y, per PyTorch's backward formulas.
struct PointwiseLoss {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&, Reduction)> apply;
  std::function<double(double, double)> value, d_input, d_target;
};

std::vector<PointwiseLoss> pointwise_losses() {
  auto smooth_l1 = [](double beta) {
    return PointwiseLoss{"smooth_l1",
                         [beta](const Tensor& x, const Tensor& y, Reduction r) {
                           return F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(r).beta(beta));
                         },
                         [beta](double x, double y) {
                           const double z = std::abs(x - y);
                           return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
                         },
                         [beta](double x, double y) {
                           const double d = x - y;
                           return d <= -beta ? -1.0 : d >= beta ? 1.0 : d / beta;
                         },
                         [beta](double x, double y) {
                           const double d = x - y;
                           return d <= -beta ? 1.0 : d >= beta ? -1.0 : -d / beta;
                         }};
  };
  return {
      smooth_l1(1.0),
      smooth_l1(0.3),
      {"huber",
       [](const Tensor& x, const Tensor& y, Reduction r) {
         return F::huber_loss(x, y, F::HuberLossFuncOptions(r).delta(0.7));
       },
       [](double x, double y) {
         const double z = std::abs(x - y);
         return z < 0.7 ? 0.5 * z * z : 0.7 * (z - 0.35);
       },
       [](double x, double y) {
         const double d = x - y;
         return d < -0.7 ? -0.7 : d > 0.7 ? 0.7 : d;
       },
       [](double x, double y) {
         const double d = x - y;
         return d < -0.7 ? 0.7 : d > 0.7 ? -0.7 : -d;
       }},
      {"bce",
       [](const Tensor& x, const Tensor& y, Reduction r) {
         return F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().reduction(r));
       },
       [](double x, double y) {
         return -(y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log1p(-x), -100.0));
       },
       [](double x, double y) { return (x - y) / std::max((1 - x) * x, 1e-12); },
       [](double x, double) { return std::log1p(-x) - std::log(x); }},
      {"mse", [](const Tensor& x, const Tensor& y, Reduction r) { return F::mse_loss(x, y, r); },
       [](double x, double y) { return (x - y) * (x - y); }, [](double x, double y) { return 2 * (x - y); },
       [](double x, double y) { return -2 * (x - y); }},
  };
}

TEST(PointwiseLosses, MatchPyTorchFormulasForwardAndBackward) {
  for (const auto& loss : pointwise_losses()) {
    SCOPED_TRACE(loss.name);
    const bool probabilities = std::string(loss.name) == "bce";
    for (ScalarType dtype : {kFloat64, kFloat32}) {
      for (Reduction reduction : {kNone, kMean, kSum}) {
        SCOPED_TRACE(reduction_name(reduction));
        // [3, 5] read through a transpose: non-contiguous.
        Tensor x = (probabilities ? uniform({5, 3}, 1, 0.05, 0.95, dtype) : uniform({5, 3}, 1, -2, 2, dtype)).t();
        Tensor y = probabilities ? uniform({3, 5}, 2, 0, 1, dtype) : uniform({3, 5}, 2, -2, 2, dtype);
        x.requires_grad_(true);
        y.requires_grad_(true);
        Tensor out = loss.apply(x, y, reduction);
        Tensor g = reduction == kNone ? uniform({3, 5}, 3, -1, 1, dtype) : full({}, 0.75, dtype);
        out.backward(g);
        const auto xs = values(x), ys = values(y), gs = values(g);
        std::vector<double> per_element, grad_x, grad_y;
        const double scale = reduction == kMean ? 1.0 / 15 : 1.0;
        for (size_t i = 0; i < xs.size(); ++i) {
          per_element.push_back(loss.value(xs[i], ys[i]));
          const double gi = reduction == kNone ? gs[i] : gs[0] * scale;
          grad_x.push_back(gi * loss.d_input(xs[i], ys[i]));
          grad_y.push_back(gi * loss.d_target(xs[i], ys[i]));
        }
        EXPECT_TRUE(all_close(out, reduced(per_element, reduction), tolerance_for(dtype)));
        EXPECT_TRUE(all_close(x.grad(), grad_x, tolerance_for(dtype)));
        EXPECT_TRUE(all_close(y.grad(), grad_y, tolerance_for(dtype)));
      }
    }
    Tensor x = leaf(uniform({2, 3}, 4, 0.1, 0.9)), y = leaf(uniform({2, 3}, 5, 0.1, 0.9));
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return loss.apply(in[0], in[1], kSum); }, {x, y},
                                tight_gradcheck()));
    // Empty batches: kNone keeps the shape, kSum is 0, kMean NaN (as PyTorch).
    EXPECT_EQ(loss.apply(empty({0, 3}), empty({0, 3}), kNone).sizes(), (std::vector<int64_t>{0, 3}));
    EXPECT_TRUE(all_close(loss.apply(empty({0, 3}), empty({0, 3}), kSum), {0}));
    EXPECT_TRUE(std::isnan(loss.apply(empty({0, 3}), empty({0, 3}), kMean).item<double>()));
  }
}

TEST(PointwiseLosses, BCEWeightAndSaturation) {
  Tensor x = testutil::make({0.0, 1.0, 0.3, 0.8}, {2, 2}, kFloat64);
  Tensor y = testutil::make({1.0, 1.0, 0.0, 0.5}, {2, 2}, kFloat64);
  Tensor w = testutil::make({2.0, 0.5}, {2}, kFloat64);  // broadcast over the rows
  nn::BCELoss loss(nn::BCELossOptions().weight(w).reduction(kNone));
  // log(0) clamps to -100.
  EXPECT_TRUE(
      all_close(loss(x, y), {2 * 100.0, 0.0, -2 * std::log(0.7), -0.5 * (0.5 * std::log(0.8) + 0.5 * std::log(0.2))}));
  EXPECT_EQ(loss->named_buffers().size(), 1u);
  EXPECT_TRUE(all_close(ember::binary_cross_entropy(x, y, w, 2), values(loss(x, y).sum())));
  EXPECT_TRUE(
      all_close(ember::binary_cross_entropy(x, y, {}, ember::Reduction::Mean), values(F::binary_cross_entropy(x, y))));
  EXPECT_TRUE(
      throws_error([&] { F::binary_cross_entropy(x + 0.5, y); }, {"binary_cross_entropy", "between 0 and 1", "1.5"}));
  EXPECT_TRUE(
      throws_error([&] { F::binary_cross_entropy(x, y.reshape({4})); }, {"binary_cross_entropy", "[4]", "[2, 2]"}));
  // The at:: form, as ATen's kernel, pairs elements of input and target up to dims of size 1:
  // an [N, 1] input with an [N] target is the loss of the [N] pairs.
  Tensor column = x.reshape({4, 1});
  Tensor flat_target = y.reshape({4});
  // The four pointwise losses, by hand: 100 (log 0 clamped), 0, -log(0.7) and
  // -(0.5 log 0.8 + 0.5 log 0.2); their mean:
  const double expected_mean = (100.0 - std::log(0.7) - 0.5 * (std::log(0.8) + std::log(0.2))) / 4;
  EXPECT_TRUE(all_close(ember::binary_cross_entropy(column, flat_target), {expected_mean}));
  EXPECT_EQ(ember::binary_cross_entropy(column, flat_target, {}, 0).sizes(), (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(throws_error([&] { ember::binary_cross_entropy(column, y.reshape({2, 2})); },
                           {"binary_cross_entropy", "[2, 2]", "[4, 1]", "up to dims of size 1"}));
  EXPECT_TRUE(
      throws_error([&] { F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().weight(zeros({3}))); },
                   {"binary_cross_entropy", "weight", "[3]"}));
}

TEST(PointwiseLosses, ModulesAndEmberForms) {
  Tensor x = uniform({4, 3}, 6, -2, 2), y = uniform({4, 3}, 7, -2, 2);
  EXPECT_TRUE(all_close(nn::SmoothL1Loss(nn::SmoothL1LossOptions(kSum).beta(0.5))(x, y),
                        values(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions(kSum), 0.5))));
  EXPECT_TRUE(all_close(ember::smooth_l1_loss(x, y, 1, 0.5),
                        values(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.5)))));
  EXPECT_TRUE(all_close(ember::huber_loss(x, y, ember::Reduction::None, 2.0),
                        values(nn::HuberLoss(nn::HuberLossOptions(kNone).delta(2))(x, y))));
  EXPECT_TRUE(all_close(ember::mse_loss(x, y), values(nn::MSELoss()(x, y))));
  EXPECT_TRUE(all_close(ember::l1_loss(x, y, 2), values(nn::L1Loss(kSum)(x, y))));
  // beta = 0 is the L1 loss.
  EXPECT_TRUE(all_close(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0)), values(F::l1_loss(x, y))));
  EXPECT_TRUE(throws_error([&] { F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(-1)); },
                           {"smooth_l1_loss", "beta", "-1"}));
  EXPECT_TRUE(throws_error([&] { F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(1), 2.0); },
                           {"smooth_l1_loss", "beta"}));
  EXPECT_TRUE(
      throws_error([&] { F::huber_loss(x, y, F::HuberLossFuncOptions().delta(0)); }, {"huber_loss", "delta", "0"}));
  EXPECT_TRUE(throws_error([&] { ember::mse_loss(x, y, 3); }, {"mse_loss", "reduction", "3"}));
}

TEST(MarginRankingLoss, MatchesFormula) {
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    Tensor x1 = uniform({7}, 8, -1, 1, dtype).requires_grad_(true),
           x2 = uniform({7}, 9, -1, 1, dtype).requires_grad_(true);
    Tensor t = testutil::make({1, -1, 1, 1, -1, -1, 1}, {7}, dtype);
    Tensor out = F::margin_ranking_loss(x1, x2, t, F::MarginRankingLossFuncOptions().margin(0.3).reduction(kNone));
    out.sum().backward();
    const auto a = values(x1), b = values(x2), tv = values(t);
    std::vector<double> expected, grad1, grad2;
    for (size_t i = 0; i < a.size(); ++i) {
      const double v = -tv[i] * (a[i] - b[i]) + 0.3;
      expected.push_back(std::max(v, 0.0));
      grad1.push_back(v >= 0 ? -tv[i] : 0.0);
      grad2.push_back(v >= 0 ? tv[i] : 0.0);
    }
    EXPECT_TRUE(all_close(out, expected, tolerance_for(dtype)));
    EXPECT_TRUE(all_close(x1.grad(), grad1, tolerance_for(dtype)));
    EXPECT_TRUE(all_close(x2.grad(), grad2, tolerance_for(dtype)));
    EXPECT_TRUE(all_close(nn::MarginRankingLoss(nn::MarginRankingLossOptions().margin(0.3))(x1, x2, t),
                          reduced(expected, kMean), tolerance_for(dtype)));
    EXPECT_TRUE(
        all_close(ember::margin_ranking_loss(x1, x2, t, 0.3, 2), reduced(expected, kSum), tolerance_for(dtype)));
  }
  Tensor x1 = leaf(uniform({5}, 10)), x2 = leaf(uniform({5}, 11));
  Tensor t = testutil::make({1, -1, 1, -1, 1}, {5}, kFloat64);
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return F::margin_ranking_loss(in[0], in[1], t, F::MarginRankingLossFuncOptions().margin(0.1));
      },
      {x1, x2}, tight_gradcheck()));
  EXPECT_TRUE(throws_error(
      [] {
        F::margin_ranking_loss(zeros({3}), zeros({3}), zeros({1, 3}));
      },
      {"margin_ranking_loss", "same number of dims", "[1, 3]"}));
}

// ||a - b + eps||_p per row.
std::vector<double> row_distances(const Tensor& a, const Tensor& b, double p, double eps) {
  const auto av = values(a), bv = values(b);
  const int64_t D = a.size(-1);
  std::vector<double> out;
  for (size_t r = 0; r < av.size() / D; ++r) {
    double sum = 0;
    for (int64_t d = 0; d < D; ++d) sum += std::pow(std::abs(av[r * D + d] - bv[r * D + d] + eps), p);
    out.push_back(std::pow(sum, 1 / p));
  }
  return out;
}

TEST(TripletMarginLoss, MatchesFormulaWithSwapAndNorms) {
  Tensor a = uniform({4, 5}, 12), pos = uniform({4, 5}, 13), neg = uniform({5, 4}, 14).t();
  for (double p : {2.0, 1.0, 3.0}) {
    for (bool swap : {false, true}) {
      SCOPED_TRACE(std::to_string(p) + (swap ? " swap" : ""));
      auto options = F::TripletMarginLossFuncOptions().margin(0.7).p(p).eps(1e-3).swap(swap).reduction(kNone);
      const auto dp = row_distances(a, pos, p, 1e-3), dn = row_distances(a, neg, p, 1e-3),
                 ds = row_distances(pos, neg, p, 1e-3);
      std::vector<double> expected;
      for (size_t i = 0; i < dp.size(); ++i)
        expected.push_back(std::max(0.7 + dp[i] - (swap ? std::min(dn[i], ds[i]) : dn[i]), 0.0));
      EXPECT_TRUE(all_close(F::triplet_margin_loss(a, pos, neg, options), expected));
      EXPECT_TRUE(all_close(F::triplet_margin_loss(a.to(kFloat32), pos.to(kFloat32), neg.to(kFloat32), options),
                            expected, {1e-5, 1e-6}));
      EXPECT_TRUE(gradients_match(
          [&](const std::vector<Tensor>& in) {
            return F::triplet_margin_loss(in[0], in[1], in[2],
                                          F::TripletMarginLossFuncOptions(options).reduction(kSum));
          },
          {leaf(a), leaf(pos), leaf(neg)}, tight_gradcheck()));
    }
  }
  nn::TripletMarginLoss module;  // margin 1, p 2, eps 1e-6, no swap, mean
  const auto dp = row_distances(a, pos, 2, 1e-6), dn = row_distances(a, neg, 2, 1e-6);
  std::vector<double> per_row;
  for (size_t i = 0; i < dp.size(); ++i) per_row.push_back(std::max(1 + dp[i] - dn[i], 0.0));
  EXPECT_TRUE(all_close(module(a, pos, neg), reduced(per_row, kMean)));
  EXPECT_TRUE(all_close(ember::triplet_margin_loss(a, pos, neg), reduced(per_row, kMean)));
  // Unbatched [D] inputs give one distance.
  EXPECT_EQ(F::triplet_margin_loss(a[0], pos[0], neg[0], F::TripletMarginLossFuncOptions().reduction(kNone)).dim(), 0);
  EXPECT_TRUE(throws_error([&] { F::triplet_margin_loss(a, pos, neg[0]); },
                           {"triplet_margin_loss", "same number of dims", "and [5]"}));
  EXPECT_TRUE(throws_error([&] { F::triplet_margin_loss(a, pos, neg, F::TripletMarginLossFuncOptions().p(0)); },
                           {"triplet_margin_loss", "p must be positive", "0"}));
}

TEST(CosineEmbeddingLoss, MatchesFormula) {
  Tensor x1 = uniform({5, 3}, 15), x2 = uniform({3, 5}, 16).t();
  Tensor t = testutil::make({1, -1, -1, 1, -1}, {5}, kInt64);
  const auto a = values(x1), b = values(x2), tv = values(t);
  std::vector<double> expected;
  for (int r = 0; r < 5; ++r) {
    double dot = 0, n1 = 1e-12, n2 = 1e-12;
    for (int d = 0; d < 3; ++d) {
      dot += a[r * 3 + d] * b[r * 3 + d];
      n1 += a[r * 3 + d] * a[r * 3 + d];
      n2 += b[r * 3 + d] * b[r * 3 + d];
    }
    const double cosine = dot / std::sqrt(n1 * n2);
    expected.push_back(tv[r] == 1 ? 1 - cosine : std::max(cosine - 0.2, 0.0));
  }
  auto options = F::CosineEmbeddingLossFuncOptions().margin(0.2);
  EXPECT_TRUE(all_close(
      F::cosine_embedding_loss(x1, x2, t, F::CosineEmbeddingLossFuncOptions(options).reduction(kNone)), expected));
  EXPECT_TRUE(all_close(nn::CosineEmbeddingLoss(options)(x1, x2, t), reduced(expected, kMean)));
  EXPECT_TRUE(all_close(ember::cosine_embedding_loss(x1.to(kFloat32), x2.to(kFloat32), t, 0.2, 2),
                        reduced(expected, kSum), {1e-5, 1e-6}));
  EXPECT_TRUE(all_close(
      F::cosine_embedding_loss(x1[0], x2[0], t[0], F::CosineEmbeddingLossFuncOptions(options).reduction(kNone)),
      {expected[0]}));
  EXPECT_TRUE(
      gradients_match([&](const std::vector<Tensor>& in) { return F::cosine_embedding_loss(in[0], in[1], t, options); },
                      {leaf(x1), leaf(x2)}, tight_gradcheck()));
  EXPECT_TRUE(throws_error(
      [&] {
        F::cosine_embedding_loss(x1, x2, t.reshape({5, 1}));
      },
      {"cosine_embedding_loss", "target", "[5, 1]"}));
  EXPECT_TRUE(throws_error([&] { F::cosine_embedding_loss(x1[0], x2[0], t); },
                           {"cosine_embedding_loss", "1-dim target needs 2-dim inputs", "[3]"}));
}

}  // namespace
}  // namespace ember::nntest
