// What the test suites share: special values and the floating dtypes, the gradient check,
// checks of the ember::Error a call throws, and the tiny GPT that the model, export, runtime
// and distributed tests build.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/models/gpt.h"
#include "ember/tensor.h"

namespace ember::testutil {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
// Every floating dtype, the full-precision ones first.
inline const std::vector<ScalarType> kFloatTypes = {kFloat32, kFloat64, kBFloat16, kFloat16};

// The gradient check of every suite, as EXPECT_TRUE(gradients_match(fn, inputs)): passes when
// the analytical gradients of fn match central finite differences (autograd::gradcheck_report;
// float64 inputs), else fails with the report of the first mismatch.
inline ::testing::AssertionResult gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                                  const std::vector<Tensor>& inputs,
                                                  const autograd::GradcheckOptions& options = {}) {
  bool any_differentiable = false;
  for (const Tensor& input : inputs) any_differentiable = any_differentiable || (input.defined() && input.requires_grad());
  if (!any_differentiable) return ::testing::AssertionFailure() << "no input requires grad: nothing was checked";
  const std::string report = autograd::gradcheck_report(fn, inputs, options);
  if (report.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << report;
}

// Same values as t, as a new float64 leaf that requires grad: an input for gradients_match.
inline Tensor float64_leaf(const Tensor& t) { return t.detach().to(kFloat64).clone().requires_grad_(true); }

// The same for a function of one tensor.
inline ::testing::AssertionResult gradients_match(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                                                  const autograd::GradcheckOptions& options = {}) {
  return gradients_match([&fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {input}, options);
}

// Runs fn and checks it throws ember::Error whose message contains every fragment.
template <typename F>
::testing::AssertionResult throws_error(F fn, const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const auto& f : fragments) {
      if (message.find(f) == std::string::npos) {
        return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << f << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ember exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// The message of the ember::Error that `body` throws, "" when it throws none.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// `body` throws an ember::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& body, const std::vector<std::string>& parts) {
  EXPECT_TRUE(throws_error(body, parts));
}

// A GPT small enough for a test to build, run and export in milliseconds: grouped-query
// attention (4 query heads over 2 key/value heads), two layers. A test that needs another
// size or vocabulary sets that field on it.
inline models::GPTConfig tiny_gpt_config(int64_t window = 0) {
  models::GPTConfig c;
  c.vocab_size = 40;
  c.dim = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.hidden_dim = 64;
  c.max_seq_len = 48;
  c.window = window;
  return c;
}

}  // namespace ember::testutil
