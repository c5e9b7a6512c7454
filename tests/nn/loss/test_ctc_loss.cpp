// CTC loss against a brute-force float64 sum over every alignment of tiny problems: the
// losses, PyTorch's gradient (exp(lp) + d nll / d lp, see the Note below), every reduction,
// padded and concatenated targets, repeated labels, impossible alignments with and without
// zero_infinity, unbatched inputs, float32, gradcheck through log_softmax and errors.
#include <cmath>
#include <limits>

#include "nn/nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// Collapses an alignment: merge repeats, then drop blanks.
std::vector<int64_t> collapse(const std::vector<int64_t>& path, int64_t blank) {
  std::vector<int64_t> out;
  for (size_t t = 0; t < path.size(); ++t) {
    if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) out.push_back(path[t]);
  }
  return out;
}

struct BruteForce {
  double nll;
  std::vector<double> grad;  // [T][C], PyTorch's gradient for a grad_output of 1
};

// lp [T][C] of one sequence, read for its first `length` steps.
BruteForce brute_force(const std::vector<std::vector<double>>& lp, int64_t length, const std::vector<int64_t>& target,
                       int64_t blank) {
  const int64_t T = static_cast<int64_t>(lp.size()), C = static_cast<int64_t>(lp[0].size());
  double total = 0;
  std::vector<double> occupancy(static_cast<size_t>(T * C), 0.0);  // sum of P(path) over paths through (t, c)
  std::vector<int64_t> path(static_cast<size_t>(length), 0);
  int64_t paths = 1;
  for (int64_t t = 0; t < length; ++t) paths *= C;
  for (int64_t k = 0; k < paths; ++k) {
    for (int64_t t = 0, rest = k; t < length; ++t, rest /= C) path[t] = rest % C;
    if (collapse(path, blank) != target) continue;
    double log_p = 0;
    for (int64_t t = 0; t < length; ++t) log_p += lp[t][path[t]];
    total += std::exp(log_p);
    for (int64_t t = 0; t < length; ++t) occupancy[t * C + path[t]] += std::exp(log_p);
  }
  BruteForce out{-std::log(total), std::vector<double>(static_cast<size_t>(T * C), 0.0)};
  // Note: PyTorch's gradient is exp(lp) + d(nll)/d(lp) for t < length (the exp(lp) term
  // vanishes through the log_softmax that produced lp), zero after.
  for (int64_t t = 0; t < length; ++t)
    for (int64_t c = 0; c < C; ++c) out.grad[t * C + c] = std::exp(lp[t][c]) - occupancy[t * C + c] / total;
  return out;
}

// Per sequence b: lp[b][t][c] from log_probs [T, N, C].
std::vector<std::vector<std::vector<double>>> per_sequence(const Tensor& log_probs) {
  const auto v = values(log_probs);
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  std::vector<std::vector<std::vector<double>>> out(N, std::vector<std::vector<double>>(T, std::vector<double>(C)));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c) out[b][t][c] = v[(t * N + b) * C + c];
  return out;
}

struct Problem {
  Tensor log_probs;  // [T, N, C] float64
  std::vector<std::vector<int64_t>> targets;
  std::vector<int64_t> input_lengths;
  int64_t blank;
};

Problem tiny_problem() {
  // T 5, N 4, C 3, blank 0: a repeated label (needs a blank between), a short input, an empty
  // target, and blank = a label index in the middle of the alphabet for the last.
  Problem p;
  p.log_probs = uniform({5, 4, 3}, 3, -2, 2).log_softmax(2);
  p.targets = {{1, 1}, {2, 1}, {}, {2}};
  p.input_lengths = {5, 3, 4, 5};
  p.blank = 0;
  return p;
}

Tensor padded_targets(const std::vector<std::vector<int64_t>>& targets, int64_t width) {
  std::vector<double> flat;
  for (const auto& t : targets)
    for (int64_t i = 0; i < width; ++i) flat.push_back(i < static_cast<int64_t>(t.size()) ? t[i] : 0);
  return testutil::make(flat, {static_cast<int64_t>(targets.size()), width}, kInt64);
}

Tensor lengths(const std::vector<int64_t>& v) { return tensor(v); }

std::vector<int64_t> target_lengths_of(const std::vector<std::vector<int64_t>>& targets) {
  std::vector<int64_t> out;
  for (const auto& t : targets) out.push_back(static_cast<int64_t>(t.size()));
  return out;
}

TEST(CTCLoss, MatchesBruteForceSumOverAlignments) {
  const Problem p = tiny_problem();
  const auto lp = per_sequence(p.log_probs);
  std::vector<double> expected_nll, expected_grad(static_cast<size_t>(p.log_probs.numel()), 0.0);
  const int64_t T = 5, N = 4, C = 3;
  for (int64_t b = 0; b < N; ++b) {
    const BruteForce bf = brute_force(lp[b], p.input_lengths[b], p.targets[b], p.blank);
    expected_nll.push_back(bf.nll);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) expected_grad[(t * N + b) * C + c] = bf.grad[t * C + c];
  }
  const auto tg_lengths = target_lengths_of(p.targets);
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const testutil::Tolerance tol =
        dtype == kFloat64 ? testutil::Tolerance{1e-12, 1e-12} : testutil::Tolerance{1e-5, 1e-6};
    Tensor x = p.log_probs.to(dtype).clone().requires_grad_(true);
    Tensor losses = F::ctc_loss(x, padded_targets(p.targets, 3), lengths(p.input_lengths), lengths(tg_lengths),
                                F::CTCLossFuncOptions().reduction(kNone));
    EXPECT_EQ(losses.scalar_type(), dtype);
    EXPECT_TRUE(all_close(losses, expected_nll, tol));
    losses.backward(ones({N}, dtype));
    EXPECT_TRUE(all_close(x.grad(), expected_grad, tol));
  }

  // Concatenated targets, kMean (each over its target length, at least 1) and kSum, and the
  // gradient of the mean.
  Tensor concatenated = tensor(std::vector<int64_t>{1, 1, 2, 1, 2});
  Tensor x = p.log_probs.clone().requires_grad_(true);
  Tensor mean = nn::CTCLoss()(x, concatenated, lengths(p.input_lengths), lengths(tg_lengths));
  double expected_mean = 0;
  for (int64_t b = 0; b < N; ++b) expected_mean += expected_nll[b] / std::max<int64_t>(tg_lengths[b], 1) / N;
  EXPECT_TRUE(all_close(mean, {expected_mean}));
  mean.backward();
  std::vector<double> mean_grad(expected_grad.size());
  for (size_t i = 0; i < mean_grad.size(); ++i) {
    const int64_t b = static_cast<int64_t>(i / C) % N;
    mean_grad[i] = expected_grad[i] / std::max<int64_t>(tg_lengths[b], 1) / N;
  }
  EXPECT_TRUE(all_close(x.grad(), mean_grad));
  double sum = 0;
  for (double v : expected_nll) sum += v;
  EXPECT_TRUE(all_close(ember::ctc_loss(p.log_probs, concatenated, lengths(p.input_lengths), lengths(tg_lengths), 0, 2),
                        {sum}));
  // libtorch's overload with the lengths as integer lists.
  EXPECT_TRUE(all_close(ember::ctc_loss(p.log_probs, concatenated, p.input_lengths, tg_lengths, 0, 2), {sum}));
}

TEST(CTCLoss, OtherBlankAndUnbatched) {
  Tensor log_probs = uniform({4, 1, 3}, 5, -1, 1).log_softmax(2);
  const std::vector<int64_t> target = {0, 2};
  const BruteForce bf = brute_force(per_sequence(log_probs)[0], 4, target, /*blank=*/1);
  Tensor x = log_probs.squeeze(1).clone().requires_grad_(true);  // [T, C], unbatched
  Tensor loss =
      F::ctc_loss(x, tensor(target), tensor(std::vector<int64_t>{4}).reshape({}),
                  tensor(std::vector<int64_t>{2}).reshape({}), F::CTCLossFuncOptions().blank(1).reduction(kNone));
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_TRUE(all_close(loss, {bf.nll}));
  loss.backward();
  EXPECT_TRUE(all_close(x.grad(), bf.grad));
}

TEST(CTCLoss, ImpossibleAlignmentsAndZeroInfinity) {
  // [1, 1] needs 3 steps (1, blank, 1); 2 are given. An empty input aligns only with an empty target.
  Tensor log_probs = uniform({3, 3, 3}, 6).log_softmax(2);
  Tensor targets = padded_targets({{1, 1}, {2}, {}}, 2);
  Tensor in_lengths = lengths({2, 3, 0}), tg_lengths = lengths({2, 1, 0});
  Tensor losses = F::ctc_loss(log_probs, targets, in_lengths, tg_lengths, F::CTCLossFuncOptions().reduction(kNone));
  const BruteForce possible = brute_force(per_sequence(log_probs)[1], 3, {2}, 0);
  EXPECT_TRUE(all_close(losses, {kInf, possible.nll, 0.0}));

  Tensor x = log_probs.clone().requires_grad_(true);
  Tensor zeroed =
      F::ctc_loss(x, targets, in_lengths, tg_lengths, F::CTCLossFuncOptions().zero_infinity(true).reduction(kSum));
  EXPECT_TRUE(all_close(zeroed, {possible.nll}));
  zeroed.backward();
  std::vector<double> expected_grad(27, 0.0);
  for (int t = 0; t < 3; ++t)
    for (int c = 0; c < 3; ++c) expected_grad[(t * 3 + 1) * 3 + c] = possible.grad[t * 3 + c];
  EXPECT_TRUE(all_close(x.grad(), expected_grad));
}

TEST(CTCLoss, EmptyBatch) {
  Tensor x = empty({4, 0, 3}, kFloat64).requires_grad_(true);
  Tensor none = F::ctc_loss(x, empty({0, 2}, kInt64), empty({0}, kInt64), empty({0}, kInt64),
                            F::CTCLossFuncOptions().reduction(kNone));
  EXPECT_EQ(none.sizes(), (std::vector<int64_t>{0}));
  Tensor sum = F::ctc_loss(x, empty({0, 2}, kInt64), empty({0}, kInt64), empty({0}, kInt64),
                           F::CTCLossFuncOptions().reduction(kSum));
  EXPECT_TRUE(all_close(sum, {0.0}));
  sum.backward();
  EXPECT_EQ(x.grad().sizes(), (std::vector<int64_t>{4, 0, 3}));
}

TEST(CTCLoss, GradcheckThroughLogSoftmax) {
  Tensor logits = leaf(uniform({4, 2, 3}, 7, -1, 1));
  Tensor targets = padded_targets({{1, 2}, {2}}, 2);
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return F::ctc_loss(in[0].log_softmax(2), targets, lengths({4, 3}), lengths({2, 1}));
      },
      {logits}, tight_gradcheck()));
}

TEST(CTCLoss, ArgumentErrors) {
  Tensor lp = zeros({4, 2, 3});
  Tensor targets = padded_targets({{1, 2}, {2}}, 2);
  auto ctc = [&](const Tensor& log_probs, const Tensor& t, const Tensor& il, const Tensor& tl, int64_t blank = 0) {
    return F::ctc_loss(log_probs, t, il, tl, F::CTCLossFuncOptions().blank(blank));
  };
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(zeros({4, 3}).unsqueeze(0).unsqueeze(0), targets, lengths({4, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "log_probs", "[1, 1, 4, 3]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({5, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "input_lengths[0] = 5", "[0, 4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({4}), lengths({2, 1}));
      },
      {"ctc_loss", "input_lengths", "[1]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({4, 3}), lengths({3, 1}));
      },
      {"ctc_loss", "size at least 3 at dimension 1", "got size 2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({4, 3}), lengths({2, -1}));
      },
      {"ctc_loss", "target_lengths[1] = -1"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({4, 3}), lengths({2, 1}), 3);
      },
      {"ctc_loss", "blank 3", "[0, 3)"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, padded_targets({{1, 5}, {2}}, 2), lengths({4, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "target 5", "sequence 0"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, padded_targets({{1, 2}, {0}}, 2), lengths({4, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "target 0 of sequence 1", "blank"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, tensor(std::vector<int64_t>{1, 2}), lengths({4, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "sum(target_lengths) = 3", "got 2"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets.to(kFloat32), lengths({4, 3}), lengths({2, 1}));
      },
      {"ctc_loss", "targets", "integer", "float32"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ctc(lp, targets, lengths({4, 3}).to(kFloat64), lengths({2, 1}));
      },
      {"ctc_loss", "input_lengths", "integer"}));
  EXPECT_TRUE(throws_error(
      [&] {
        ember::ctc_loss(lp, targets, lengths({4, 3}), lengths({2, 1}), 0, 5);
      },
      {"ctc_loss", "reduction", "5"}));
}

}  // namespace
}  // namespace ember::nntest
