// Losses against float64 references written with plain loops from PyTorch's formulas,
// all reductions, class weights, ignore_index, label smoothing, probability targets,
// K-dimensional inputs, empty and all-ignored batches, gradcheck and errors.
#include <cmath>
#include <limits>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// Logits [N, C, d...] with rows (n, d...) and classes along dim 1, read as [rows][C].
std::vector<std::vector<double>> rows_of(const Tensor& input) {
  const int64_t classes = input.dim() == 1 ? input.size(0) : input.size(1);
  std::vector<int64_t> classes_last = {0};
  for (int64_t d = 2; d < input.dim(); ++d) classes_last.push_back(d);
  if (input.dim() > 1) classes_last.push_back(1);
  Tensor moved = input.permute(classes_last).reshape({-1, classes});
  const auto v = values(moved.contiguous());
  std::vector<std::vector<double>> out(v.size() / classes);
  for (size_t r = 0; r < out.size(); ++r) out[r].assign(v.begin() + r * classes, v.begin() + (r + 1) * classes);
  return out;
}

std::vector<double> log_softmax_row(const std::vector<double>& x) {
  double m = -INFINITY, sum = 0;
  for (double v : x) m = std::max(m, v);
  for (double v : x) sum += std::exp(v - m);
  std::vector<double> out;
  for (double v : x) out.push_back(v - m - std::log(sum));
  return out;
}

// (1 - eps) * nll + eps / C * smooth, per PyTorch; returns the unreduced rows or the reduction.
std::vector<double> cross_entropy_reference(const Tensor& input, const std::vector<double>& targets,
                                            const std::vector<double>& weight, int64_t ignore_index, double eps,
                                            Reduction reduction, bool inputs_are_log_probs = false) {
  auto rows = rows_of(input);
  const size_t classes = rows[0].size();
  std::vector<double> nll(rows.size(), 0.0), smooth(rows.size(), 0.0);
  double weight_sum = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t t = static_cast<int64_t>(targets[r]);
    if (t == ignore_index) continue;
    auto lp = inputs_are_log_probs ? rows[r] : log_softmax_row(rows[r]);
    const double wt = weight.empty() ? 1 : weight[t];
    nll[r] = -wt * lp[t];
    for (size_t c = 0; c < classes; ++c) smooth[r] -= (weight.empty() ? 1 : weight[c]) * lp[c];
    weight_sum += wt;
  }
  const double C = static_cast<double>(classes);
  if (reduction == kNone) {
    std::vector<double> out;
    for (size_t r = 0; r < rows.size(); ++r) out.push_back((1 - eps) * nll[r] + eps / C * smooth[r]);
    return out;
  }
  double nll_sum = 0, smooth_sum = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    nll_sum += nll[r];
    smooth_sum += smooth[r];
  }
  if (reduction == kMean) return {(1 - eps) * nll_sum / weight_sum + eps / C * smooth_sum / weight_sum};
  return {(1 - eps) * nll_sum + eps / C * smooth_sum};
}

std::vector<double> probability_reference(const Tensor& input, const Tensor& target, const std::vector<double>& weight,
                                          double eps, Reduction reduction) {
  auto rows = rows_of(input), targets = rows_of(target);
  const double C = static_cast<double>(rows[0].size());
  std::vector<double> per_row;
  for (size_t r = 0; r < rows.size(); ++r) {
    auto lp = log_softmax_row(rows[r]);
    double loss = 0;
    for (size_t c = 0; c < lp.size(); ++c)
      loss -= (weight.empty() ? 1 : weight[c]) * (targets[r][c] * (1 - eps) + eps / C) * lp[c];
    per_row.push_back(loss);
  }
  if (reduction == kNone) return per_row;
  double sum = 0;
  for (double v : per_row) sum += v;
  return {reduction == kMean ? sum / static_cast<double>(per_row.size()) : sum};
}

TEST(CrossEntropy, ClassIndicesAllOptionsMatchPyTorchFormula) {
  Tensor input = uniform({6, 4}, 1, -3, 3);
  const std::vector<double> targets = {0, 3, -100, 1, 3, 2};
  Tensor target = testutil::make(targets, {6}, kInt64);
  const std::vector<double> weights = {0.5, 2.0, 1.0, 3.0};
  for (bool weighted : {false, true}) {
    for (double eps : {0.0, 0.2}) {
      for (Reduction reduction : {kNone, kSum, kMean}) {
        SCOPED_TRACE(std::string("weighted=") + std::to_string(weighted) + " eps=" + std::to_string(eps) +
                     " reduction=" + reduction_name(reduction));
        auto options = F::CrossEntropyFuncOptions().label_smoothing(eps).reduction(reduction);
        if (weighted) options.weight(testutil::make(weights, {4}, kFloat64));
        EXPECT_TRUE(all_close(F::cross_entropy(input, target, options),
                              cross_entropy_reference(input, targets, weighted ? weights : std::vector<double>{}, -100,
                                                      eps, reduction)));
        // A custom ignore_index (2) and a transposed (non-contiguous) input.
        Tensor transposed = uniform({4, 6}, 2, -3, 3).t();
        Tensor custom_target = testutil::make({0, 3, 2, 1, 2, 2}, {6}, kInt64);
        EXPECT_TRUE(all_close(F::cross_entropy(transposed, custom_target, F::CrossEntropyFuncOptions(options).ignore_index(2)),
                              cross_entropy_reference(transposed, values(custom_target),
                                                      weighted ? weights : std::vector<double>{}, 2, eps, reduction)));
      }
    }
  }
}

TEST(CrossEntropy, KDimensionalAndUnbatchedInputs) {
  Tensor input = uniform({2, 3, 4, 2}, 3, -2, 2);  // [N, C, d1, d2]
  const std::vector<double> targets = {0, 2, 1, 1, -100, 0, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0};
  Tensor target = testutil::make(targets, {2, 4, 2}, kInt64);
  Tensor none = F::cross_entropy(input, target, F::CrossEntropyFuncOptions().reduction(kNone).label_smoothing(0.1));
  EXPECT_EQ(none.sizes(), (std::vector<int64_t>{2, 4, 2}));
  EXPECT_TRUE(all_close(none, cross_entropy_reference(input, targets, {}, -100, 0.1, kNone)));
  EXPECT_TRUE(all_close(F::cross_entropy(input, target), cross_entropy_reference(input, targets, {}, -100, 0, kMean)));

  Tensor single = uniform({5}, 4);  // [C] with a 0-dim target
  Tensor t = tensor({3}).reshape({});
  EXPECT_TRUE(all_close(F::cross_entropy(single, t), cross_entropy_reference(single, {3}, {}, -100, 0, kMean)));
  EXPECT_EQ(F::cross_entropy(single, t, F::CrossEntropyFuncOptions().reduction(kNone)).dim(), 0);
}

TEST(CrossEntropy, ProbabilityTargets) {
  Tensor input = uniform({4, 3}, 5, -2, 2);
  Tensor target = F::softmax(uniform({4, 3}, 6), 1);
  const std::vector<double> weights = {1.5, 0.5, 2.0};
  for (bool weighted : {false, true}) {
    for (double eps : {0.0, 0.3}) {
      for (Reduction reduction : {kNone, kSum, kMean}) {
        auto options = F::CrossEntropyFuncOptions().label_smoothing(eps).reduction(reduction);
        if (weighted) options.weight(testutil::make(weights, {3}, kFloat64));
        EXPECT_TRUE(all_close(F::cross_entropy(input, target, options),
                              probability_reference(input, target, weighted ? weights : std::vector<double>{}, eps,
                                                    reduction)))
            << weighted << " " << eps << " " << reduction_name(reduction);
      }
    }
  }
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, target, F::CrossEntropyFuncOptions().ignore_index(1)); },
                           {"cross_entropy", "ignore_index", "probability"}));
}

TEST(CrossEntropy, EmptyAndAllIgnoredMeansAreNaN) {
  Tensor input = uniform({3, 4}, 7);
  Tensor all_ignored = tensor({-100, -100, -100});
  EXPECT_TRUE(all_close(F::cross_entropy(input, all_ignored), {kNaN}));
  EXPECT_TRUE(all_close(F::cross_entropy(input, all_ignored, F::CrossEntropyFuncOptions().label_smoothing(0.1)), {kNaN}));
  EXPECT_TRUE(all_close(F::cross_entropy(input, all_ignored, F::CrossEntropyFuncOptions().reduction(kSum)), {0}));
  Tensor empty_input = zeros({0, 4}, kFloat64);
  Tensor empty_target = zeros({0}, kInt64);
  EXPECT_TRUE(all_close(F::cross_entropy(empty_input, empty_target), {kNaN}));
  EXPECT_TRUE(all_close(F::cross_entropy(empty_input, zeros({0, 4}, kFloat64)), {kNaN}));  // probabilities
  EXPECT_EQ(F::cross_entropy(empty_input, empty_target, F::CrossEntropyFuncOptions().reduction(kNone)).numel(), 0);
}

TEST(CrossEntropy, Gradcheck) {
  Tensor input = leaf(uniform({4, 3}, 8, -2, 2));
  Tensor target = tensor({2, -100, 0, 1});
  Tensor weight = testutil::make({0.3, 1.0, 2.0}, {3}, kFloat64);
  for (Reduction reduction : {kNone, kSum, kMean}) {
    EXPECT_TRUE(gradients_match(
        [&](const std::vector<Tensor>& in) {
          return F::cross_entropy(
              in[0], target, F::CrossEntropyFuncOptions().weight(weight).label_smoothing(0.15).reduction(reduction));
        },
        {input}, tight_gradcheck()))
        << reduction_name(reduction);
  }
  Tensor probabilities = leaf(F::softmax(uniform({4, 3}, 9), 1));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return F::cross_entropy(in[0], in[1], F::CrossEntropyFuncOptions().label_smoothing(0.1));
      },
      {input, probabilities}, tight_gradcheck()));
}

TEST(CrossEntropy, ErrorsNameTheOffendingValues) {
  Tensor input = uniform({3, 4}, 10);
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, 4, 1})); }, {"cross_entropy", "target 4", "4 classes"}));
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, -3, 1})); }, {"target -3"}));
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, 1})); }, {"target shape [2]", "[3, 4]"}));
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, 1, 2}), F::CrossEntropyFuncOptions().weight(ones({3}))); },
                           {"weight of shape [3]", "4"}));
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, 1, 2}), F::CrossEntropyFuncOptions().label_smoothing(1.5)); },
                           {"label_smoothing", "1.5"}));
  EXPECT_TRUE(throws_error([&] { F::cross_entropy(input, tensor({0, 1, 2}), F::CrossEntropyFuncOptions().reduction(kBatchMean)); },
                           {"batchmean"}));
}

TEST(NLLLoss, MatchesReferenceWithWeightsAndIgnoreIndex) {
  Tensor log_probs = F::log_softmax(uniform({5, 3}, 11), 1);
  const std::vector<double> targets = {2, 0, 1, 1, 0};
  Tensor target = testutil::make(targets, {5}, kInt64);
  const std::vector<double> weights = {2, 1, 0.5};
  for (Reduction reduction : {kNone, kSum, kMean}) {
    auto options = F::NLLLossFuncOptions().weight(testutil::make(weights, {3}, kFloat64)).ignore_index(1).reduction(reduction);
    EXPECT_TRUE(all_close(F::nll_loss(log_probs, target, options),
                          cross_entropy_reference(log_probs, targets, weights, 1, 0, reduction, true)));
  }
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::nll_loss(in[0], target); },
                              {leaf(log_probs)}, tight_gradcheck()));
  nn::NLLLoss module(nn::NLLLossOptions().reduction(kSum));
  EXPECT_TRUE(all_close(module(log_probs, target), cross_entropy_reference(log_probs, targets, {}, -100, 0, kSum, true)));
}

TEST(RegressionLosses, MseAndL1) {
  Tensor input = uniform({3, 4}, 12), target = uniform({3, 4}, 13);
  const auto a = values(input), b = values(target);
  std::vector<double> sq, ab;
  double sq_sum = 0, ab_sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sq.push_back((a[i] - b[i]) * (a[i] - b[i]));
    ab.push_back(std::abs(a[i] - b[i]));
    sq_sum += sq.back();
    ab_sum += ab.back();
  }
  EXPECT_TRUE(all_close(F::mse_loss(input, target, kNone), sq));
  EXPECT_TRUE(all_close(F::mse_loss(input, target), {sq_sum / 12}));
  EXPECT_TRUE(all_close(nn::MSELoss(kSum)(input, target), {sq_sum}));
  EXPECT_TRUE(all_close(F::l1_loss(input, target, kNone), ab));
  EXPECT_TRUE(all_close(nn::L1Loss()(input, target), {ab_sum / 12}));
  EXPECT_TRUE(all_close(F::l1_loss(input.t(), target.t(), kSum), {ab_sum}));
  EXPECT_TRUE(all_close(F::mse_loss(zeros({0}, kFloat64), zeros({0}, kFloat64)), {kNaN}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::mse_loss(in[0], in[1]); },
                              {leaf(input), leaf(target)}, tight_gradcheck()));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::l1_loss(in[0], in[1], kSum); },
                              {leaf(input), leaf(target)}, tight_gradcheck()));
}

TEST(BCEWithLogits, MatchesStableReference) {
  // Extreme logits check stability.
  Tensor input = testutil::make({-100, -3, -0.5, 0.25, 2, 100, 1, -1}, {2, 4}, kFloat64);
  Tensor target = testutil::make({0, 1, 0.3, 1, 0, 1, 0.5, 0}, {2, 4}, kFloat64);
  Tensor weight = testutil::make({1, 2, 0.5, 3}, {4}, kFloat64);
  Tensor pos_weight = testutil::make({2, 0.5, 1, 4}, {4}, kFloat64);
  const auto x = values(input), t = values(target), w = values(weight), pw = values(pos_weight);
  std::vector<double> expected;
  for (size_t i = 0; i < x.size(); ++i) {
    const double softplus_neg = std::max(-x[i], 0.0) + std::log1p(std::exp(-std::abs(x[i])));  // -log sigmoid(x)
    const double log_weight = 1 + (pw[i % 4] - 1) * t[i];
    expected.push_back(w[i % 4] * ((1 - t[i]) * x[i] + log_weight * softplus_neg));
  }
  auto options = F::BinaryCrossEntropyWithLogitsFuncOptions().weight(weight).pos_weight(pos_weight);
  EXPECT_TRUE(all_close(F::binary_cross_entropy_with_logits(input, target, options.reduction(kNone)), expected));
  double sum = 0;
  for (double v : expected) sum += v;
  nn::BCEWithLogitsLoss module(nn::BCEWithLogitsLossOptions().weight(weight).pos_weight(pos_weight));
  EXPECT_TRUE(all_close(module(input, target), {sum / 8}));
  EXPECT_EQ(module->state_dict().keys(), (std::vector<std::string>{"weight", "pos_weight"}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) { return F::binary_cross_entropy_with_logits(in[0], in[1], options); },
      {leaf(uniform({2, 4}, 14, -3, 3)), leaf(uniform({2, 4}, 15, 0, 1))}, tight_gradcheck()));
  EXPECT_TRUE(throws_error([&] { F::binary_cross_entropy_with_logits(input, target.view({8})); }, {"[8]", "[2, 4]"}));
}

TEST(BCEWithLogits, ExactGradientAtZero) {
  // d/dx = (1 - t) - (1 + (pw - 1) t) * sigmoid(-x); at x = 0 sigmoid(-x) = 1/2.
  Tensor x = zeros({2}, kFloat64).requires_grad_();
  Tensor t = testutil::make({0.25, 1}, {2}, kFloat64);
  F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions()
                                                .pos_weight(testutil::make({3, 3}, {2}, kFloat64))
                                                .reduction(kSum))
      .backward();
  EXPECT_TRUE(all_close(x.grad(), {0.75 - 1.5 * 0.5, 0 - 3 * 0.5}));
}

TEST(KLDiv, BothTargetFormsAndReductions) {
  Tensor input = F::log_softmax(uniform({3, 4}, 16), 1);
  Tensor target = F::softmax(uniform({3, 4}, 17), 1);
  {
    NoGradGuard no_grad;
    target[0][1].fill_(0);  // xlogy(0, 0) = 0
  }
  const auto x = values(input), p = values(target);
  std::vector<double> pointwise, pointwise_log;
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    pointwise.push_back(p[i] == 0 ? 0 : p[i] * (std::log(p[i]) - x[i]));
    sum += pointwise.back();
  }
  EXPECT_TRUE(all_close(F::kl_div(input, target, kNone), pointwise));
  EXPECT_TRUE(all_close(F::kl_div(input, target), {sum / 12}));
  EXPECT_TRUE(all_close(nn::KLDivLoss(kBatchMean)(input, target), {sum / 3}));
  EXPECT_TRUE(all_close(F::kl_div(input, target, kSum), {sum}));

  Tensor log_target = uniform({3, 4}, 18, -3, 0);
  const auto lt = values(log_target);
  double log_sum = 0;
  for (size_t i = 0; i < x.size(); ++i) log_sum += std::exp(lt[i]) * (lt[i] - x[i]);
  EXPECT_TRUE(all_close(F::kl_div(input, log_target, F::KLDivFuncOptions(kBatchMean).log_target(true)), {log_sum / 3}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return F::kl_div(in[0], in[1], kBatchMean); },
                              {leaf(input), leaf(F::softmax(uniform({3, 4}, 19), 1))}, tight_gradcheck()));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return F::kl_div(in[0], in[1], F::KLDivFuncOptions(kSum).log_target(true));
      },
      {leaf(input), leaf(log_target)}, tight_gradcheck()));
}

TEST(LossModules, CrossEntropyLossKeepsWeightAsBuffer) {
  Tensor weight = testutil::make({1, 2, 3}, {3}, kFloat32);
  nn::CrossEntropyLoss loss(nn::CrossEntropyLossOptions().weight(weight).label_smoothing(0.05).ignore_index(0));
  EXPECT_EQ(loss->state_dict().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_TRUE(nn::CrossEntropyLoss()->state_dict().is_empty());
  loss->to(kFloat64);
  Tensor input = uniform({4, 3}, 20);
  Tensor target = tensor({0, 2, 1, 2});
  EXPECT_TRUE(all_close(loss(input, target), cross_entropy_reference(input, values(target), {1, 2, 3}, 0, 0.05, kMean)));
}

}  // namespace
}  // namespace ember::nntest
