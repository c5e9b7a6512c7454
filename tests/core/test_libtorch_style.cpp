// Code written the way a libtorch user writes it, with torch:: replaced by ember:: and
// nothing else changed: porting the covered subset must be a namespace change. Only the
// public header is used; expected values are worked out by hand in the comments.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

namespace {

std::vector<double> to_vector(const ember::Tensor& t) {
  ember::Tensor c = t.to(ember::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_near(const ember::Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  auto actual = to_vector(t);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

TEST(LibtorchStyle, FromBlobSortMaxSoftmaxTopk) {
  double data[] = {3, 1, 2, 0, 5, 4};
  auto x = ember::from_blob(data, {2, 3}, ember::kFloat64).clone();
  data[0] = 100;  // the clone owns its memory
  EXPECT_EQ(x[0][0].item<double>(), 3);
  EXPECT_EQ(x.sizes(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(x.dtype(), ember::kFloat64);

  auto [sorted, order] = x.sort(/*stable=*/true, /*dim=*/1, /*descending=*/false);
  expect_near(sorted, {1, 2, 3, 0, 4, 5});
  expect_near(order, {1, 2, 0, 0, 2, 1});
  EXPECT_EQ(order.scalar_type(), ember::kLong);

  auto row_max = std::get<0>(x.max(1));
  auto row_argmax = std::get<1>(x.max(/*dim=*/1, /*keepdim=*/true));
  expect_near(row_max, {3, 5});
  expect_near(row_argmax, {0, 1});
  EXPECT_EQ(row_argmax.sizes(), std::vector<int64_t>({2, 1}));
  expect_near(x.argmax(1), {0, 1});

  auto probs = ember::softmax(x, 1);
  const double z0 = std::exp(3) + std::exp(1) + std::exp(2), z1 = std::exp(0) + std::exp(5) + std::exp(4);
  expect_near(probs, {std::exp(3) / z0, std::exp(1) / z0, std::exp(2) / z0, 1 / z1, std::exp(5) / z1,
                      std::exp(4) / z1});
  expect_near(x.log_softmax(1).exp(), to_vector(probs));

  auto [top_values, top_indices] = x.topk(2, 1, true, true);
  expect_near(top_values, {3, 2, 5, 4});
  expect_near(top_indices, {0, 2, 1, 2});
}

TEST(LibtorchStyle, IndexingJoiningReducing) {
  auto x = ember::arange(6, ember::kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  auto swapped = x.index_select(0, ember::tensor({1, 0}));
  expect_near(swapped, {3, 4, 5, 0, 1, 2});
  auto both = ember::cat({x, swapped}, 0);
  EXPECT_EQ(both.sizes(), std::vector<int64_t>({4, 3}));
  expect_near(both.select(0, 2), {3, 4, 5});
  expect_near(ember::stack({x, x}, 0).sum(0), {0, 2, 4, 6, 8, 10});
  auto row_sums = x.sum(1, /*keepdim=*/true);
  EXPECT_EQ(row_sums.sizes(), std::vector<int64_t>({2, 1}));
  expect_near(row_sums, {3, 12});
  EXPECT_DOUBLE_EQ(x.mean().item<double>(), 2.5);
  expect_near(x.gather(1, ember::tensor({2, 0, 1, 1}).view({2, 2})), {2, 0, 4, 4});
  expect_near(x.cumsum(1), {0, 1, 3, 3, 7, 12});
  auto mask = x > 2;
  expect_near(x.masked_fill(mask, -1), {0, 1, 2, -1, -1, -1});
  expect_near(ember::where(mask, x, ember::zeros_like(x)), {0, 0, 0, 3, 4, 5});
}

TEST(LibtorchStyle, MatmulTransposeAndDtypes) {
  auto a = ember::tensor({3.0, 1.0, 2.0, 0.0, 5.0, 4.0}).view({2, 3});
  auto at = a.transpose(0, 1).contiguous();
  EXPECT_TRUE(at.is_contiguous());
  auto gram = ember::matmul(a, at);  // [[9+1+4, 0+5+8], [13, 0+25+16]]
  expect_near(gram, {14, 13, 13, 41});
  expect_near(a.matmul(ember::ones({3}, ember::kFloat32)), {6, 9});
  auto d = a.to(ember::kFloat64);
  EXPECT_EQ(d.scalar_type(), ember::kFloat64);
  EXPECT_EQ(d.to(ember::kFloat32).dtype(), ember::kFloat32);
  EXPECT_EQ(ember::zeros({2, 3}, ember::kFloat64).dtype(), ember::kDouble);
  EXPECT_EQ(ember::ones({2}, ember::TensorOptions().dtype(ember::kInt64)).dtype(), ember::kLong);
  EXPECT_EQ(ember::eye(3).sum().item<float>(), 3.0f);
  EXPECT_EQ(a.size(1), 3);
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.dim(), 2);
}

TEST(LibtorchStyle, TrainingStepWithAutograd) {
  ember::manual_seed(0);
  auto w = ember::randn({2, 3}, ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true));
  auto input = ember::ones({4, 2}, ember::kFloat64);
  auto loss = ember::matmul(input, w).pow(2).mean();
  loss.backward();
  // Every row of input @ w is s_j = w[0][j] + w[1][j]; loss = mean over 4x3 of s_j^2, so
  // dloss/dw[k][j] = 4 * 2 * s_j / 12.
  std::vector<double> expected;
  auto wv = to_vector(w);
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j) expected.push_back(8.0 * (wv[j] + wv[3 + j]) / 12.0);
  expect_near(w.grad(), expected, 1e-12);

  {
    ember::NoGradGuard no_grad;
    w.sub_(w.grad() * 0.1);
  }
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  w.mutable_grad().zero_();
  expect_near(w.grad(), std::vector<double>(6, 0));
  auto new_loss = ember::matmul(input, w).pow(2).mean();
  EXPECT_LT(new_loss.item<double>(), loss.item<double>());

  auto frozen = w.detach();
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_FALSE((frozen * 2).requires_grad());
}

TEST(LibtorchStyle, ElementwiseAndGuards) {
  auto x = ember::linspace(-2, 2, 5);
  expect_near(ember::relu(x), {0, 0, 0, 1, 2});
  expect_near(x.clamp(-1, 1), {-1, -1, 0, 1, 1});
  expect_near(ember::sigmoid(ember::zeros({1})), {0.5});
  expect_near(x.abs().sqrt().pow(2), {2, 1, 0, 1, 2}, 1e-5);
  expect_near(x * 2 + 1, {-3, -1, 1, 3, 5});
  expect_near(ember::tanh(x).sign(), {-1, -1, 0, 1, 1});
  auto y = x.clone().requires_grad_(true);
  {
    ember::NoGradGuard guard;
    EXPECT_FALSE((y * y).requires_grad());
  }
  EXPECT_TRUE((y * y).requires_grad());
  (y * y).sum().backward();
  expect_near(y.grad(), {-4, -2, 0, 2, 4});
}

}  // namespace
