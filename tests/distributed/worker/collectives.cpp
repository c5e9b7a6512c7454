// Every collective and point-to-point operation against hand-computed results.
#include <numeric>

#include "distributed/worker/worker.h"

namespace ember::distributed::worker {
namespace {

using testutil::all_equal;

class Collectives : public DistributedTest {};

// Rank r contributes x_r[i] = ((r + i) % W + 1) * (i + 1): over the ranks, the factor
// (r + i) % W + 1 takes every value 1..W once, so the reductions have closed forms.
double contribution(int rank, int world, int64_t i) { return static_cast<double>((rank + i) % world + 1) * (i + 1); }

double factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

double reduced(ReduceOp op, int world, int64_t i) {
  const double scale = static_cast<double>(i + 1);
  switch (op) {
    case ReduceOp::SUM: return scale * world * (world + 1) / 2;
    case ReduceOp::AVG: return scale * (world + 1) / 2;
    case ReduceOp::PRODUCT: return std::pow(scale, world) * factorial(world);
    case ReduceOp::MIN: return scale;
    case ReduceOp::MAX: return scale * world;
  }
  return 0;
}

TEST_F(Collectives, AllReduceEveryOpAndDtype) {
  const int W = size(), r = rank();
  const int64_t n = 5;
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kInt8, kUInt8}) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
      if (op == ReduceOp::AVG && !is_floating_point(dtype)) continue;
      if (op == ReduceOp::PRODUCT && element_size(dtype) == 1) continue;  // 4! * 5^4 overflows 8 bits
      Tensor t = make_tensor({n}, dtype, [&](int64_t i) { return contribution(r, W, i); });
      all_reduce(t, op);
      EXPECT_TRUE(all_equal(t, rounded(dtype, generate(n, [&](int64_t i) { return reduced(op, W, i); }))))
          << dtype << " " << reduce_op_name(op);
    }
  }
}

TEST_F(Collectives, AllReduceLargeOddSizeAndEmpty) {
  const int W = size(), r = rank();
  // Spans several of Gloo's 1 MiB segments and leaves a ragged last chunk.
  const int64_t n = 300007;
  Tensor t = make_tensor({n}, kFloat32, [&](int64_t i) { return (r + 1) + (i % 7); });
  all_reduce(t);
  EXPECT_TRUE(all_equal(t, generate(n, [&](int64_t i) { return W * (W + 1) / 2.0 + W * (i % 7); })));
  Tensor empty_tensor = empty({0, 3});
  all_reduce(empty_tensor);
  EXPECT_EQ(empty_tensor.numel(), 0);
}

TEST_F(Collectives, AllGatherIntoTensor) {
  const int W = size(), r = rank();
  for (ScalarType dtype : {kFloat32, kBFloat16, kInt64, kUInt8}) {
    Tensor input = make_tensor({2, 3}, dtype, [&](int64_t i) { return 10 * r + i; });
    Tensor output = empty({2 * W, 3}, dtype);
    all_gather_into_tensor(output, input);
    EXPECT_TRUE(all_equal(output, generate(6 * W, [](int64_t j) { return 10 * (j / 6) + j % 6; }))) << dtype;
  }
  // In place: the input is this rank's slice of the output.
  Tensor output = full({3 * W}, -1.0);
  Tensor own = output.narrow(0, 3 * r, 3);
  own.copy_(make_tensor({3}, kFloat32, [&](int64_t i) { return 100 * r + i; }));
  all_gather_into_tensor(output, own);
  EXPECT_TRUE(all_equal(output, generate(3 * W, [](int64_t j) { return 100 * (j / 3) + j % 3; })));
  Tensor nothing = empty({0});
  all_gather_into_tensor(empty({0}), nothing);
}

TEST_F(Collectives, ReduceScatterTensor) {
  const int W = size(), r = rank();
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kInt64}) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX, ReduceOp::MIN}) {
      if (op == ReduceOp::AVG && !is_floating_point(dtype)) continue;
      // Chunk k (5 x 2 elements) of rank r holds contribution(r, W, j) for flat index j.
      Tensor input = make_tensor({5 * W, 2}, dtype, [&](int64_t j) { return contribution(r, W, j); });
      Tensor output = empty({5, 2}, dtype);
      reduce_scatter_tensor(output, input, op);
      EXPECT_TRUE(all_equal(output, rounded(dtype, generate(10, [&](int64_t i) {
                                          return reduced(op, W, 10 * r + i);
                                        }))))
          << dtype << " " << reduce_op_name(op);
    }
  }
  const int64_t chunk = 40001;
  Tensor input = make_tensor({chunk * W}, kFloat32, [&](int64_t j) { return (r + 1) * (j % 11); });
  Tensor output = empty({chunk});
  reduce_scatter_tensor(output, input);
  EXPECT_TRUE(
      all_equal(output, generate(chunk, [&](int64_t i) { return W * (W + 1) / 2.0 * ((chunk * r + i) % 11); })));
  Tensor empty_output = empty({0});
  reduce_scatter_tensor(empty_output, empty({0}));
}

TEST_F(Collectives, Broadcast) {
  const int W = size(), r = rank();
  for (int src : {0, W - 1}) {
    for (ScalarType dtype : {kFloat32, kInt64, kBFloat16}) {
      Tensor t = make_tensor({4}, dtype, [&](int64_t i) { return 7 * r + i; });
      broadcast(t, src);
      EXPECT_TRUE(all_equal(t, generate(4, [&](int64_t i) { return 7 * src + i; }))) << dtype << " from " << src;
    }
  }
}

TEST_F(Collectives, AllToAllSingle) {
  const int W = size(), r = rank();
  // Equal splits: 2 rows of 3 to every rank; element (block j, row t, column c) of rank r
  // is 1000 r + 100 j + 10 t + c.
  auto cell = [](int from, int to, int64_t row, int64_t column) {
    return 1000.0 * from + 100.0 * to + 10.0 * row + column;
  };
  for (ScalarType dtype : {kFloat32, kInt64}) {
    Tensor input = make_tensor({2 * W, 3}, dtype, [&](int64_t e) { return cell(r, e / 6, e / 3 % 2, e % 3); });
    Tensor output = empty({2 * W, 3}, dtype);
    all_to_all_single(output, input);
    EXPECT_TRUE(all_equal(output, generate(6 * W, [&](int64_t e) { return cell(e / 6, r, e / 3 % 2, e % 3); })))
        << dtype;
  }
  // Uneven: rank r sends r + j + 1 rows to rank j.
  const std::vector<int64_t> input_splits = uneven_splits(r, W), output_splits = input_splits;
  std::vector<double> input_values, expected;
  for (int j = 0; j < W; ++j)
    for (int64_t t = 0; t < input_splits[j]; ++t)
      for (int c = 0; c < 3; ++c) input_values.push_back(cell(r, j, t, c));
  for (int k = 0; k < W; ++k)
    for (int64_t t = 0; t < output_splits[k]; ++t)
      for (int c = 0; c < 3; ++c) expected.push_back(cell(k, r, t, c));
  const int64_t input_rows = std::accumulate(input_splits.begin(), input_splits.end(), int64_t{0});
  const int64_t output_rows = std::accumulate(output_splits.begin(), output_splits.end(), int64_t{0});
  Tensor input = testutil::make(input_values, {input_rows, 3}, kFloat32);
  Tensor output = empty({output_rows, 3});
  all_to_all_single(output, input, output_splits, input_splits);
  EXPECT_TRUE(all_equal(output, expected));
}

TEST_F(Collectives, BarrierSendRecv) {
  const int W = size(), r = rank();
  barrier();
  // A ring: both sides posted before either waits.
  Tensor mine = make_tensor({4}, kFloat64, [&](int64_t i) { return 10 * r + i; });
  Tensor from_left = empty({4}, kFloat64);
  Work sent = send(mine, (r + 1) % W, 0, {.async_op = true});
  Work received = recv(from_left, (r + W - 1) % W, 0, {.async_op = true});
  received.wait();
  sent.wait();
  EXPECT_TRUE(all_equal(from_left, generate(4, [&](int64_t i) { return 10 * ((r + W - 1) % W) + i; })));
  // Tags keep messages apart: rank 1 receives tag 8 before tag 7.
  if (r == 0) {
    send(make_tensor({2}, kInt64, [](int64_t i) { return 70 + i; }), 1, 7);
    send(make_tensor({3}, kInt64, [](int64_t i) { return 80 + i; }), 1, 8);
  } else if (r == 1) {
    Tensor eight = empty({3}, kInt64), seven = empty({2}, kInt64);
    Work w8 = recv(eight, 0, 8, {.async_op = true});
    Work w7 = recv(seven, 0, 7, {.async_op = true});
    w8.wait();
    w7.wait();
    EXPECT_TRUE(all_equal(seven, {70, 71}));
    EXPECT_TRUE(all_equal(eight, {80, 81, 82}));
  }
  barrier();
}

}  // namespace
}  // namespace ember::distributed::worker
