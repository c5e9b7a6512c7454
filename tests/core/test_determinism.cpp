// Results are bitwise identical for any thread count: each op runs at 1, 2 and 4 threads on
// inputs large enough to be split into many chunks, and the bytes of the results are
// compared. Matrix products too, under use_deterministic_algorithms(true), which makes the
// GEMM backend choice independent of the thread count (Note [GEMM backends] in
// src/cpu/gemm_backend.h).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember {
namespace {

// Restores the thread count and deterministic mode when a test ends, even on failure.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : previous_(get_num_threads()), deterministic_(are_deterministic_algorithms_enabled()) {
    use_deterministic_algorithms(true);
  }
  ~ThreadCountGuard() {
    set_num_threads(previous_);
    use_deterministic_algorithms(deterministic_);
  }

 private:
  int previous_;
  bool deterministic_;
};

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

struct Case {
  std::string name;
  std::function<Tensor()> run;
};

void expect_same_for_any_thread_count(const std::vector<Case>& cases) {
  ThreadCountGuard guard;
  for (const Case& c : cases) {
    set_num_threads(1);
    const Tensor reference = c.run();
    for (int threads : {2, 4}) {
      set_num_threads(threads);
      EXPECT_TRUE(same_bytes(c.run(), reference)) << c.name << " differs at " << threads << " threads";
    }
  }
}

// Inputs shared by the cases: 3M elements as one long row, and as a [3000, 1000] matrix.
struct Inputs {
  Tensor flat, matrix, matrix_bf16;
  Inputs() {
    manual_seed(1234);
    flat = randn({3000000});
    matrix = flat.view({3000, 1000});
    matrix_bf16 = matrix.to(kBFloat16);
  }
};

TEST(Determinism, ReductionsAreBitwiseIdenticalForAnyThreadCount) {
  const Inputs in;
  expect_same_for_any_thread_count({
      {"sum of 3M elements", [&] { return in.flat.sum(); }},
      {"sum of 3M bfloat16 elements", [&] { return in.matrix_bf16.sum(); }},
      {"sum over rows", [&] { return in.matrix.sum(1); }},
      {"sum over columns", [&] { return in.matrix.sum(0); }},
      {"sum over both dims of a transpose", [&] { return in.matrix.t().sum({0, 1}); }},
      {"mean", [&] { return in.flat.mean(); }},
      {"mean over columns", [&] { return in.matrix.mean(0, true); }},
      {"var", [&] { return in.flat.var(); }},
      {"var over columns", [&] { return in.matrix.var({0}, true); }},
      {"std over rows", [&] { return in.matrix.std({1}, false); }},
      {"norm", [&] { return in.flat.norm(); }},
      {"logsumexp over rows", [&] { return in.matrix.logsumexp({1}); }},
      {"logsumexp over columns", [&] { return in.matrix.logsumexp({0}); }},
      {"argmax", [&] { return in.flat.argmax(); }},
  });
}

TEST(Determinism, SoftmaxAndScansAreBitwiseIdenticalForAnyThreadCount) {
  const Inputs in;
  expect_same_for_any_thread_count({
      {"softmax over rows", [&] { return in.matrix.softmax(1); }},
      {"softmax over columns", [&] { return in.matrix.softmax(0); }},
      {"log_softmax of bfloat16", [&] { return in.matrix_bf16.log_softmax(1); }},
      {"cumsum over a 3M row", [&] { return in.flat.cumsum(0); }},
      {"cumsum over columns", [&] { return in.matrix.cumsum(0); }},
      {"cumprod over rows", [&] { return in.matrix.cumprod(1); }},
      {"softmax gradient",
       [&] {
         Tensor x = in.matrix.detach().requires_grad_(true);
         (x.softmax(1) * in.matrix).sum().backward();
         return x.grad();
       }},
  });
}

TEST(Determinism, IndexAccumulationsAreBitwiseIdenticalForAnyThreadCount) {
  // 60K source rows land on 1000 destination rows: many collisions per destination.
  manual_seed(99);
  const Tensor rows = randint(1000, {60000});
  const Tensor source = randn({60000, 32});
  const Tensor scatter_index = randint(1000, {60000, 32});
  const Tensor destination = zeros({1000, 32});
  expect_same_for_any_thread_count({
      {"index_add", [&] { return destination.index_add(0, rows, source); }},
      {"scatter_add", [&] { return destination.scatter_add(0, scatter_index, source); }},
      {"embedding_backward", [&] { return embedding_backward(source, rows, 1000); }},
  });
}

TEST(Determinism, MatmulIsBitwiseIdenticalForAnyThreadCount) {
  // Shapes split into several tiles of C along rows, columns or both, with and without
  // transposed operands, plus a batch and the low-precision blocked path.
  manual_seed(7);
  const Tensor a = randn({1000, 300}), b = randn({300, 700}), tall = randn({3000, 64}), wide = randn({64, 2500});
  const Tensor batch_a = randn({6, 200, 96}), batch_b = randn({6, 96, 150});
  expect_same_for_any_thread_count({
      {"matmul", [&] { return a.matmul(b); }},
      {"matmul of transposes", [&] { return b.t().matmul(a.t()); }},
      {"tall times wide", [&] { return tall.matmul(wide); }},
      {"weight gradient shape", [&] { return tall.t().matmul(tall); }},
      {"batched matmul", [&] { return batch_a.matmul(batch_b); }},
      {"bfloat16 matmul", [&] { return a.to(kBFloat16).matmul(b.to(kBFloat16)); }},
      {"float64 matmul", [&] { return a.to(kFloat64).matmul(b.to(kFloat64)); }},
  });
}

}  // namespace
}  // namespace ember
