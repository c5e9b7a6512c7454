// Helpers for the nn suite: float64 tensors from seeds, and plain-double views of tensors
// so that references are computed without the code under test.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/testing.h"
#include "ember/ember.h"

namespace ember::nntest {

using testutil::all_close;
using testutil::gradients_match;
using testutil::kFloatTypes;
using testutil::kInf;
using testutil::kNaN;
using testutil::throws_error;
using testutil::values;

// A float64 tensor of `sizes` with values uniform in [lo, hi) from `seed` (std::mt19937).
inline Tensor uniform(IntArrayRef sizes, uint32_t seed, double lo = -1, double hi = 1, ScalarType dtype = kFloat64) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return testutil::make(testutil::uniform_values(n, lo, hi, seed), sizes, dtype);
}

// Same values as `t`, as a new float64 leaf that requires grad.
inline Tensor leaf(const Tensor& t) { return testutil::float64_leaf(t); }

// Row-major matrix helper over a flat vector: m[r * cols + c].
struct Matrix {
  std::vector<double> data;
  int64_t rows = 0, cols = 0;
  double operator()(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

inline Matrix matrix(const Tensor& t) {
  EXPECT_EQ(t.dim(), 2);
  return {values(t), t.size(0), t.size(1)};
}

// The nn suite checks gradients tighter than gradients_match's default: its options.
inline autograd::GradcheckOptions tight_gradcheck(double atol = 1e-6, double rtol = 1e-4) {
  autograd::GradcheckOptions options;
  options.atol = atol;
  options.rtol = rtol;
  return options;
}

// gradients_match of the first-order gradients `gradients` returns (built with
// create_graph=true), flattened into one vector: the second derivatives against finite
// differences.
inline ::testing::AssertionResult gradgradcheck(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& gradients,
    const std::vector<Tensor>& inputs) {
  return gradients_match(
      [&](const std::vector<Tensor>& t) {
        std::vector<Tensor> flat;
        for (const Tensor& g : gradients(t)) flat.push_back(g.reshape({-1}));
        return cat(flat);
      },
      inputs, tight_gradcheck());
}

}  // namespace ember::nntest
