// The differentiable collectives: forward values and the gradients of
// loss_r = sum(y_r * w_r) against hand-computed sums over ranks.
#include <numeric>

#include "distributed/worker/worker.h"

namespace ember::distributed::worker {
namespace {

using testutil::all_equal;
namespace F = ember::distributed::functional;

class Autograd : public DistributedTest {};

Tensor leaf(IntArrayRef sizes, const std::function<double(int64_t)>& f) {
  return make_tensor(sizes, kFloat64, f).requires_grad_(true);
}

// loss = sum(y * w) on every rank, backward, x's gradient.
Tensor gradient_of(const Tensor& x, const Tensor& y, const Tensor& w) {
  (y * w).sum().backward();
  return x.grad();
}

TEST_F(Autograd, AllGatherTensorBackwardIsReduceScatter) {
  const int W = size(), r = rank();
  Tensor x = leaf({2, 3}, [&](int64_t e) { return 10 * r + e; });
  Tensor y = F::all_gather_tensor(x, 1);  // [2, 3W]: column block k is rank k's x
  EXPECT_EQ(y.sizes(), std::vector<int64_t>({2, 3 * W}));
  EXPECT_TRUE(all_equal(y, generate(6 * W, [&](int64_t e) {
                          const int64_t row = e / (3 * W), col = e % (3 * W);
                          return 10.0 * (col / 3) + 3 * row + col % 3;
                        })));
  // w_k[i, c] = (k + 1)(c + 1) + i: rank r's x[i, j] feeds column c = 3r + j of every y_k.
  auto weight = [&](int k, int64_t i, int64_t c) { return (k + 1.0) * (c + 1) + i; };
  Tensor w = make_tensor({2, 3 * W}, kFloat64, [&](int64_t e) { return weight(r, e / (3 * W), e % (3 * W)); });
  Tensor grad = gradient_of(x, y, w);
  EXPECT_TRUE(all_equal(grad, generate(6, [&](int64_t e) {
                          double total = 0;
                          for (int k = 0; k < W; ++k) total += weight(k, e / 3, 3 * r + e % 3);
                          return total;
                        })));
}

TEST_F(Autograd, ReduceScatterTensorBackwardIsAllGather) {
  const int W = size(), r = rank();
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG}) {
    // AVG divides the sum (and the gradient) by the group size.
    auto scale = [&](double value) { return op == ReduceOp::AVG ? value / W : value; };
    // x_r[i, c] = r + 2 i + c for c < 2W; y_r[i, j] = sum_k x_k[i, 2r + j] (/ W).
    Tensor x = leaf({2, 2 * W}, [&](int64_t e) { return r + 2.0 * (e / (2 * W)) + e % (2 * W); });
    Tensor y = F::reduce_scatter_tensor(x, op, 1);
    EXPECT_TRUE(all_equal(y, generate(4, [&](int64_t e) {
                            const int64_t i = e / 2, c = 2 * r + e % 2;
                            return scale(W * (W - 1) / 2.0 + W * (2.0 * i + c));
                          })));
    // w_r[i, j] = 10 (r + 1) + 2 i + j; x_k[i, c] reaches y_{c / 2}[i, c % 2].
    auto weight = [](int owner, int64_t i, int64_t j) { return 10.0 * (owner + 1) + 2 * i + j; };
    Tensor w = make_tensor({2, 2}, kFloat64, [&](int64_t e) { return weight(r, e / 2, e % 2); });
    Tensor grad = gradient_of(x, y, w);
    EXPECT_TRUE(all_equal(grad, generate(4 * W, [&](int64_t e) {
                            const int64_t i = e / (2 * W), c = e % (2 * W);
                            return scale(weight(static_cast<int>(c / 2), i, c % 2));
                          })))
        << reduce_op_name(op);
  }
}

TEST_F(Autograd, AllReduceBackwardIsAllReduce) {
  const int W = size(), r = rank();
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG}) {
    auto scale = [&](double value) { return op == ReduceOp::AVG ? value / W : value; };
    Tensor x = leaf({3}, [&](int64_t i) { return (r + 1.0) * (i + 1); });
    Tensor y = F::all_reduce(x, op);
    EXPECT_TRUE(all_equal(y, generate(3, [&](int64_t i) { return scale(W * (W + 1) / 2.0 * (i + 1)); })));
    Tensor w = make_tensor({3}, kFloat64, [&](int64_t i) { return r + 10.0 * i; });
    EXPECT_TRUE(all_equal(gradient_of(x, y, w),
                          generate(3, [&](int64_t i) { return scale(W * (W - 1) / 2.0 + 10.0 * i * W); })))
        << reduce_op_name(op);
  }
  Tensor x = leaf({2}, [](int64_t) { return 1.0; });
  EXPECT_TRUE(testutil::throws_error([&] { F::all_reduce(x, ReduceOp::MAX); },
                                     {"[all_reduce]", "only ReduceOp::SUM and ReduceOp::AVG are differentiable"}));
}

TEST_F(Autograd, AllToAllSingleBackwardSwapsSplits) {
  const int W = size(), r = rank();
  // Rank r sends r + j + 1 rows of 2 to rank j; row t of that block is (r, j, t).
  const std::vector<int64_t> input_splits = uneven_splits(r, W), output_splits = input_splits;
  auto cell = [](int from, int to, int64_t t, int64_t c) { return 100.0 * from + 10.0 * to + t + 0.5 * c; };
  // w_r on row t of the block from rank k: 1000 r + 100 k + t + c.
  auto weight = [](int receiver, int sender, int64_t t, int64_t c) {
    return 1000.0 * receiver + 100.0 * sender + t + c;
  };
  std::vector<double> input_values, expected, weights, expected_grad;
  for (int j = 0; j < W; ++j)
    for (int64_t t = 0; t < input_splits[j]; ++t)
      for (int c = 0; c < 2; ++c) {
        input_values.push_back(cell(r, j, t, c));
        expected_grad.push_back(weight(j, r, t, c));
      }
  for (int k = 0; k < W; ++k)
    for (int64_t t = 0; t < output_splits[k]; ++t)
      for (int c = 0; c < 2; ++c) {
        expected.push_back(cell(k, r, t, c));
        weights.push_back(weight(r, k, t, c));
      }
  const int64_t rows_in = std::accumulate(input_splits.begin(), input_splits.end(), int64_t{0});
  const int64_t rows_out = std::accumulate(output_splits.begin(), output_splits.end(), int64_t{0});
  Tensor x = testutil::make(input_values, {rows_in, 2}, kFloat64).requires_grad_(true);
  Tensor y = F::all_to_all_single(x, output_splits, input_splits);
  EXPECT_TRUE(all_equal(y, expected));
  Tensor w = testutil::make(weights, {rows_out, 2}, kFloat64);
  EXPECT_TRUE(all_equal(gradient_of(x, y, w), expected_grad));
}

TEST_F(Autograd, BroadcastBackwardSumsOnTheSource) {
  const int W = size(), r = rank();
  const int src = W - 1;
  Tensor x = leaf({2}, [&](int64_t i) { return 3.0 * r + i; });
  Tensor y = F::broadcast(x, src);
  EXPECT_TRUE(all_equal(y, {3.0 * src, 3.0 * src + 1}));
  Tensor w = make_tensor({2}, kFloat64, [&](int64_t i) { return r + 1.0 + 5 * i; });
  Tensor grad = gradient_of(x, y, w);
  const double ranks_sum = W * (W + 1) / 2.0;
  EXPECT_TRUE(all_equal(grad, r == src ? std::vector<double>{ranks_sum, ranks_sum + 5.0 * W}
                                       : std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace ember::distributed::worker
