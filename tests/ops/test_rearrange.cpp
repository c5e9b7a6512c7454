// flip, roll, movedim, broadcast_to, repeat, repeat_interleave, nonzero, masked_select,
// masked_scatter, one_hot, mv, dot, baddbmm: against index arithmetic and float64 loops
// written here, on transposed and empty inputs, with gradcheck and the errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/testing.h"
#include "ember/nn/functional.h"

namespace ember {
namespace {

using namespace testutil;

Tensor leaf(const std::vector<double>& v, IntArrayRef sizes) { return make(v, sizes, kFloat64).requires_grad_(); }

// A [2, 3, 4] float64 tensor holding 0..23, stored with its dims permuted (non-contiguous).
Tensor permuted_iota() {
  Tensor base = empty({4, 2, 3}, kFloat64).permute({1, 2, 0});
  for (int64_t i = 0; i < 24; ++i) write_element(base, i, static_cast<double>(i));
  return base;
}

// ---- flip / roll ------------------------------------------------------------------------------

TEST(Flip, MatchesIndexArithmetic) {
  Tensor x = permuted_iota();
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) expected.push_back(static_cast<double>((1 - i) * 12 + j * 4 + (3 - k)));
  EXPECT_TRUE(all_equal(x.flip({0, -1}), expected));
  EXPECT_TRUE(all_equal(ember::flip(x, {2, 0}), expected));
  Tensor same = x.flip({});
  EXPECT_TRUE(all_equal(same, values(x)));
  same.fill_(0);  // a copy, never a view
  EXPECT_EQ(x.sum().item<double>(), 276);
  EXPECT_EQ(empty({0, 3}).flip({0, 1}).sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(throws_error([&] { x.flip({0, 0}); }, {"[flip]", "dim 0", "multiple"}));
  EXPECT_TRUE(throws_error([&] { x.flip({3}); }, {"[flip]", "3"}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().flip({1}); },
                              {leaf(uniform_values(6, -1, 1, 2), {2, 3})}));
}

TEST(Roll, MatchesIndexArithmetic) {
  Tensor x = permuted_iota();
  // roll(shift) on dim d: out[i] = x[(i - shift) mod n].
  auto roll_ref = [](int64_t s0, int64_t s2) {
    std::vector<double> out;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          const int64_t si = (((i - s0) % 2) + 2) % 2, sk = (((k - s2) % 4) + 4) % 4;
          out.push_back(static_cast<double>(si * 12 + j * 4 + sk));
        }
    return out;
  };
  EXPECT_TRUE(all_equal(x.roll({1, -1}, {0, 2}), roll_ref(1, -1)));
  EXPECT_TRUE(all_equal(ember::roll(x, {7}, {2}), roll_ref(0, 7)));
  std::vector<double> flat;
  for (int64_t i = 0; i < 24; ++i) flat.push_back(static_cast<double>((i - 5 + 24) % 24));
  EXPECT_TRUE(all_equal(x.roll({5}), flat));
  EXPECT_EQ(x.roll({5}).sizes(), x.sizes());
  EXPECT_EQ(empty({0, 2}).roll({1}, {0}).sizes(), (std::vector<int64_t>{0, 2}));
  EXPECT_TRUE(throws_error([&] { x.roll({1, 2}, {0}); }, {"[roll]", "2 shifts", "1 dims"}));
  EXPECT_TRUE(throws_error([&] { x.roll({1, 2}); }, {"[roll]", "2"}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return in[0].t().roll({1, -2}, {0, 1});
      },
      {leaf(uniform_values(6, -1, 1, 3), {2, 3})}));
}

// ---- movedim / broadcast_to ------------------------------------------------------------------

TEST(Movedim, PermutesAsPyTorch) {
  Tensor x = zeros({2, 3, 4, 5});
  EXPECT_EQ(x.movedim(0, -1).sizes(), (std::vector<int64_t>{3, 4, 5, 2}));
  EXPECT_EQ(x.movedim({0, 1}, {2, 0}).sizes(), (std::vector<int64_t>{3, 4, 2, 5}));
  EXPECT_EQ(ember::movedim(x, {3, 0}, {0, 3}).sizes(), (std::vector<int64_t>{5, 3, 4, 2}));
  Tensor y = permuted_iota();
  Tensor moved = y.movedim(2, 0);  // [4, 2, 3]: moved[k][i][j] = y[i][j][k]
  std::vector<double> expected;
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) expected.push_back(static_cast<double>(i * 12 + j * 4 + k));
  EXPECT_TRUE(all_equal(moved, expected));
  EXPECT_TRUE(throws_error([&] { x.movedim({0, 1}, {2}); }, {"[movedim]", "same number"}));
  EXPECT_TRUE(throws_error([&] { x.movedim({0, 0}, {1, 2}); }, {"[movedim]", "multiple"}));
  EXPECT_TRUE(throws_error([&] { x.movedim(4, 0); }, {"[movedim]", "4"}));
}

TEST(BroadcastTo, ExpandsAndChecks) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64);
  Tensor y = x.broadcast_to({2, 3});
  EXPECT_TRUE(all_equal(y, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(all_equal(ember::broadcast_to(x.reshape({3, 1}), {3, 2}), {1, 1, 2, 2, 3, 3}));
  EXPECT_TRUE(throws_error([&] { x.broadcast_to({2, 4}); }, {"3", "4"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).broadcast_to({3}); }, {"[broadcast_to]", "[3]", "[2, 3]"}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return in[0].broadcast_to({4, 3});
      },
      {leaf({0.5, -1, 2}, {3})}));
}

// ---- repeat / repeat_interleave ---------------------------------------------------------------

TEST(Repeat, TilesAsPyTorch) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).reshape({3, 2}).t();  // [2, 3], transposed
  // repeat({2, 1, 2}): out[a][i][j] = x[i % 2][j % 3] over [2, 2, 6].
  std::vector<double> expected;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 6; ++j) expected.push_back(element(x, (i % 2) * 3 + j % 3));
  Tensor r = x.repeat({2, 1, 2});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2, 6}));
  EXPECT_TRUE(all_equal(r, expected));
  EXPECT_EQ(x.repeat({0, 2}).sizes(), (std::vector<int64_t>{0, 6}));
  EXPECT_TRUE(throws_error([&] { x.repeat({2}); }, {"[repeat]", "(1)", "(2)"}));
  EXPECT_TRUE(throws_error([&] { x.repeat({1, -1}); }, {"[repeat]", "-1"}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return in[0].t().repeat({2, 1, 3});
      },
      {leaf(uniform_values(6, -1, 1, 4), {3, 2})}));
}

TEST(RepeatInterleave, IntAndTensorRepeats) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).reshape({2, 3});
  EXPECT_TRUE(all_equal(x.repeat_interleave(2), {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
  Tensor d1 = x.repeat_interleave(2, 1);
  EXPECT_EQ(d1.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_TRUE(all_equal(d1, {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
  EXPECT_TRUE(all_equal(ember::repeat_interleave(x, 2, 0), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  Tensor counts = tensor({1, 0, 2});
  Tensor t = x.repeat_interleave(counts, 1);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(all_equal(t, {1, 3, 3, 4, 6, 6}));
  EXPECT_TRUE(all_equal(ember::repeat_interleave(tensor({2, 0, 3})), {0, 0, 2, 2, 2}));
  EXPECT_TRUE(all_equal(x.t().repeat_interleave(tensor({2}), 0), {1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6}));
  EXPECT_TRUE(throws_error([&] { x.repeat_interleave(tensor({1, 2}), 1); }, {"[repeat_interleave]", "2", "3"}));
  EXPECT_TRUE(throws_error([&] { x.repeat_interleave(tensor({1, -1, 2}), 1); }, {"[repeat_interleave]", "-1"}));
  EXPECT_TRUE(throws_error([&] { x.repeat_interleave(-2); }, {"[repeat_interleave]", "-2"}));
  EXPECT_TRUE(throws_error([&] { x.repeat_interleave(2, 0, 5); }, {"[repeat_interleave]", "output_size 5", "4"}));
  EXPECT_TRUE(throws_error([] { ember::repeat_interleave(tensor({1.0, 2.0})); }, {"[repeat_interleave]", "float32"}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return in[0].repeat_interleave(tensor({3, 1}), 0);
      },
      {leaf(uniform_values(6, -1, 1, 5), {2, 3})}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().repeat_interleave(2, 1); },
                              {leaf(uniform_values(6, -1, 1, 6), {2, 3})}));
}

// ---- nonzero / masked_select / masked_scatter / one_hot ---------------------------------------

TEST(Nonzero, ListsPositionsInRowMajorOrder) {
  Tensor x = tensor({0.0, 1.5, 0.0, -2.0, 0.0, 3.0}, kFloat64).reshape({3, 2}).t();  // [[0,0,0],[1.5,-2,3]]
  Tensor nz = x.nonzero();
  EXPECT_EQ(nz.scalar_type(), kInt64);
  EXPECT_EQ(nz.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(all_equal(nz, {1, 0, 1, 1, 1, 2}));
  EXPECT_TRUE(all_equal(ember::nonzero(tensor({true, false, true})), {0, 2}));
  EXPECT_EQ(zeros({2, 3}).nonzero().sizes(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(empty({0}).nonzero().sizes(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(scalar_tensor(2.0).nonzero().sizes(), (std::vector<int64_t>{1, 0}));
}

TEST(MaskedSelect, BroadcastsAndDifferentiates) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64).reshape({2, 3});
  Tensor mask = tensor({true, false, true});
  EXPECT_TRUE(all_equal(x.masked_select(mask), {1, 3, 4, 6}));
  EXPECT_TRUE(all_equal(ember::masked_select(x.t(), tensor({false, true}).reshape({1, 2})), {4, 5, 6}));
  EXPECT_EQ(x.masked_select(zeros({2, 3}, kBool)).sizes(), (std::vector<int64_t>{0}));
  EXPECT_TRUE(throws_error([&] { x.masked_select(ones({2, 3})); }, {"[masked_select]", "bool", "float32"}));
  EXPECT_TRUE(throws_error([&] { x.masked_select(ones({2}, kBool)); }, {"[masked_select]", "[2]"}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return in[0].t().masked_select(mask.reshape({3, 1}));
      },
      {leaf(uniform_values(6, -1, 1, 7), {2, 3})}));
}

TEST(MaskedScatter, FillsMaskedPositionsFromSourceInOrder) {
  Tensor x = zeros({2, 3}, kFloat64);
  Tensor mask = tensor({true, false, true, false, false, true}).reshape({2, 3});
  Tensor source = tensor({10.0, 20.0, 30.0, 40.0}, kFloat64);
  EXPECT_TRUE(all_equal(x.masked_scatter(mask, source), {10, 0, 20, 0, 0, 30}));
  EXPECT_TRUE(all_equal(ember::masked_scatter(x, tensor({false, true, true}), source), {0, 10, 20, 0, 30, 40}));
  Tensor base = ones({3, 2}, kFloat64);
  base.t().masked_scatter_(mask, source.reshape({2, 2}));
  EXPECT_TRUE(all_equal(base, {10, 1, 1, 1, 20, 30}));
  EXPECT_TRUE(throws_error([&] { x.masked_scatter(ones({2, 3}, kBool), source); }, {"[masked_scatter]", "6", "4"}));
  EXPECT_TRUE(throws_error([&] { x.masked_scatter(mask, source.to(kFloat32)); }, {"[masked_scatter]", "float32"}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].masked_scatter(mask, in[1]); },
                              {leaf(uniform_values(6, -1, 1, 8), {2, 3}), leaf(uniform_values(4, -1, 1, 9), {4})}));
}

TEST(OneHot, MatchesDefinition) {
  Tensor labels = tensor({2, 0, 1, 2}).reshape({2, 2});
  Tensor oh = one_hot(labels);
  EXPECT_EQ(oh.sizes(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(oh.scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(oh, {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(all_equal(nn::functional::one_hot(tensor({1}), 4), {0, 1, 0, 0}));
  EXPECT_EQ(one_hot(empty({0}, kInt64), 5).sizes(), (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(throws_error([] { one_hot(tensor({3}), 3); }, {"[one_hot]", "3"}));
  EXPECT_TRUE(throws_error([] { one_hot(tensor({-1})); }, {"[one_hot]", "-1"}));
  EXPECT_TRUE(throws_error([] { one_hot(empty({0}, kInt64)); }, {"[one_hot]", "empty"}));
  EXPECT_TRUE(throws_error([] { one_hot(tensor({1.0})); }, {"[one_hot]", "float32"}));
}

// ---- mv / dot / baddbmm ---------------------------------------------------------------------

TEST(Products, MvAndDotMatchLoops) {
  const std::vector<double> mv_ = uniform_values(12, -1, 1, 10), vv = uniform_values(4, -1, 1, 11);
  Tensor m = make(mv_, {4, 3}, kFloat64).t();  // [3, 4], transposed
  Tensor v = make(vv, {4}, kFloat64);
  std::vector<double> expected(3, 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 4; ++k) expected[static_cast<size_t>(i)] += mv_[static_cast<size_t>(k * 3 + i)] * vv[static_cast<size_t>(k)];
  EXPECT_TRUE(all_close(m.mv(v), expected));
  EXPECT_TRUE(all_close(ember::mv(m, v), expected));
  double d = 0;
  for (size_t k = 0; k < 4; ++k) d += vv[k] * mv_[k];
  EXPECT_TRUE(all_close(v.dot(make(mv_, {12}, kFloat64).slice(0, 0, 4)), {d}));
  Tensor id = tensor({1, 2, 3}, kInt32).dot(tensor({4, -5, 6}, kInt32));
  EXPECT_EQ(id.scalar_type(), kInt32);
  EXPECT_TRUE(all_equal(id, {12}));
  EXPECT_TRUE(all_equal(ember::dot(empty({0}), empty({0})), {0}));
  EXPECT_TRUE(throws_error([&] { m.mv(ones({3}, kFloat64)); }, {"[mv]", "3x4", "3"}));
  EXPECT_TRUE(throws_error([&] { m.mv(m); }, {"[mv]"}));
  EXPECT_TRUE(throws_error([] { ones({2}).dot(ones({3})); }, {"[dot]", "2", "3"}));
  EXPECT_TRUE(throws_error([] { ones({2}).dot(ones({2}, kFloat64)); }, {"[dot]", "float32", "float64"}));
  EXPECT_TRUE(throws_error([] { ones({2, 1}).dot(ones({2})); }, {"[dot]", "1D"}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().mv(in[1]); },
                              {leaf(mv_, {4, 3}), leaf(vv, {4})}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].dot(in[1]); },
                              {leaf(vv, {4}), leaf(uniform_values(4, -1, 1, 12), {4})}));
}

TEST(Products, BaddbmmMatchesLoops) {
  const int64_t b = 2, n = 3, k = 4, p = 2;
  const std::vector<double> av = uniform_values(b * n * k, -1, 1, 13), bv = uniform_values(b * k * p, -1, 1, 14);
  const std::vector<double> sv = uniform_values(p, -1, 1, 15);
  Tensor b1 = make(av, {b, n, k}, kFloat64), b2 = make(bv, {b, p, k}, kFloat64).transpose(1, 2);
  Tensor self = make(sv, {p}, kFloat64);  // broadcast over [b, n]
  std::vector<double> expected;
  for (int64_t x = 0; x < b; ++x)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += av[static_cast<size_t>((x * n + i) * k + t)] * bv[static_cast<size_t>((x * p + j) * k + t)];
        expected.push_back(0.5 * sv[static_cast<size_t>(j)] + 2 * acc);
      }
  EXPECT_TRUE(all_close(self.baddbmm(b1, b2, 0.5, 2), expected));
  EXPECT_TRUE(all_close(ember::baddbmm(self, b1, b2, 0.5, 2), expected));
  // beta = 0: NaN in self does not reach the result.
  Tensor nan_self = full({b, n, p}, std::nan(""), kFloat64);
  Tensor product = ember::baddbmm(nan_self, b1, b2, 0, 1);
  EXPECT_FALSE(product.isnan().any().item<bool>());
  EXPECT_TRUE(throws_error([&] { ember::baddbmm(self, b1, b1); }, {"[baddbmm]", "[2, 3, 4]"}));
  EXPECT_TRUE(throws_error([&] { ember::baddbmm(zeros({3}, kFloat64), b1, b2); }, {"[baddbmm]", "[3]"}));
  EXPECT_TRUE(throws_error([&] { ember::baddbmm(self, b1[0], b2[0]); }, {"[baddbmm]", "3D"}));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) { return ember::baddbmm(in[0], in[1], in[2].transpose(1, 2), 0.5, -1.5); },
      {leaf(sv, {p}), leaf(av, {b, n, k}), leaf(bv, {b, p, k})}));
}

}  // namespace
}  // namespace ember
