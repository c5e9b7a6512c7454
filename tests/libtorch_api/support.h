// The helpers that PyTorch's C++ API tests (test/cpp/api/*.cpp) take from their own support
// header, written for ember from their documented behaviour. scripts/libtorch_api_tests
// rewrites those tests' `#include <test/cpp/api/support.h>` to this file and their
// `torch::test::` to `ember::test::`.
#pragma once

#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// The marker scripts/libtorch_api_tests looks for to tell a test that fails only on the
// text of an error message from one that fails on behaviour.
#define EMBER_MESSAGE_TEXT_MARKER "[message-text-only]"

// ASSERT_THROWS_WITH(statement, substring): the statement must throw, and the exception's
// message must contain substring. A statement that does not throw is a fatal failure, as in
// libtorch. A message without the substring is a non-fatal failure carrying
// EMBER_MESSAGE_TEXT_MARKER, so the test runs on and its later assertions still count: a test
// whose only failures carry the marker differs from libtorch in message text alone.
#define ASSERT_THROWS_WITH(statement, substring)                                                     \
  {                                                                                                  \
    std::string ember_test_thrown_message;                                                           \
    bool ember_test_threw = false;                                                                   \
    try {                                                                                            \
      (void)statement;                                                                               \
    } catch (const std::exception& ember_test_error) {                                               \
      ember_test_threw = true;                                                                       \
      ember_test_thrown_message = ember_test_error.what();                                           \
    }                                                                                                \
    if (!ember_test_threw) FAIL() << "Expected `" #statement "` to throw, but it did not";          \
    if (ember_test_thrown_message.find(substring) == std::string::npos)                              \
      ADD_FAILURE() << EMBER_MESSAGE_TEXT_MARKER " the message \"" << ember_test_thrown_message       \
                    << "\" does not contain \"" << (substring) << "\"";                              \
  }

#define EXPECT_THROWS_WITH(statement, substring) ASSERT_THROWS_WITH(statement, substring)

namespace ember::test {

// A module to hold submodules in a test without declaring a new class.
class SimpleContainer : public nn::Module {
 public:
  template <typename ModuleHolder>
  ModuleHolder add(ModuleHolder module_holder, std::string name = std::string()) {
    return register_module(std::move(name), module_holder);
  }
};

// Every test of a fixture derived from this one starts from the same random state.
struct SeedingFixture : public ::testing::Test {
  SeedingFixture() { ember::manual_seed(0); }
};

// Sends std::cerr to another buffer while alive.
class CerrRedirect {
 public:
  explicit CerrRedirect(std::streambuf* new_buffer) : previous_(std::cerr.rdbuf(new_buffer)) {}
  ~CerrRedirect() { std::cerr.rdbuf(previous_); }
  CerrRedirect(const CerrRedirect&) = delete;
  CerrRedirect& operator=(const CerrRedirect&) = delete;

 private:
  std::streambuf* previous_;
};

// Collects the warnings written while alive. ember writes its warnings to std::cerr, so this
// captures std::cerr; messages() gives one entry a line, str() the whole text.
class WarningCapture {
 public:
  WarningCapture() : redirect_(captured_.rdbuf()) {}
  std::vector<std::string> messages() const {
    std::vector<std::string> lines;
    std::istringstream text(captured_.str());
    for (std::string line; std::getline(text, line);) lines.push_back(line);
    return lines;
  }
  std::string str() const { return captured_.str(); }

 private:
  std::ostringstream captured_;
  CerrRedirect redirect_;
};

// Whether two float tensors share their first element's storage.
inline bool pointer_equal(const Tensor& first, const Tensor& second) {
  return first.data_ptr() == second.data_ptr();
}

// A one-element tensor equals a number to within 1e-4.
template <typename Number, typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
void assert_tensor_equal(const Tensor& a, Number b) {
  ASSERT_LT(std::abs(static_cast<double>(a.item<Number>()) - static_cast<double>(b)), 1e-4);
}

// Same shape, NaNs at the same places, (infinities with the same signs at the same places
// where allow_inf) and every other element within 1e-5. Compared in float64, so the
// comparison itself loses nothing for the dtypes ember has.
inline void assert_tensor_equal(const Tensor& a, const Tensor& b, bool allow_inf = false) {
  ASSERT_EQ(a.sizes(), b.sizes());
  if (a.numel() == 0) return;
  ASSERT_EQ(a.dtype() == kBool, b.dtype() == kBool) << "both tensors must be bool, or neither";
  Tensor x = a.to(kDouble);
  Tensor y = b.to(kDouble);
  Tensor skip = zeros(x.sizes(), kBool);
  if (a.is_floating_point()) {
    ASSERT_TRUE(ember::equal(isnan(x), isnan(y))) << "NaNs at different places";
    skip = isnan(x);
    if (allow_inf) {
      ASSERT_TRUE(ember::equal(isinf(x) * x.sign(), isinf(y) * y.sign())) << "infinities differ";
      skip = logical_or(skip, isinf(x));
    }
  }
  Tensor difference = where(skip, zeros_like(x), (x - y).abs());
  ASSERT_LE(difference.max().item<double>(), 1e-5);
}

// Different shapes, or some element more than 1e-5 apart.
inline void assert_tensor_not_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return;
  ASSERT_GT(a.numel(), 0);
  Tensor x = a.to(kDouble);
  Tensor y = b.to(kDouble);
  Tensor nan_x = isnan(x);
  if (!ember::equal(nan_x, isnan(y))) return;
  Tensor difference = where(nan_x, zeros_like(x), (x - y).abs());
  ASSERT_GE(difference.max().item<double>(), 1e-5);
}

// How many times substr occurs in str, not overlapping.
inline int count_substr_occurrences(const std::string& str, const std::string& substr) {
  int count = 0;
  for (size_t at = str.find(substr); at != std::string::npos; at = str.find(substr, at + substr.size())) ++count;
  return count;
}

// ---- autograd helpers (test/cpp/api/support.h) ----

// `x` is a view made as `creation_meta` says (in grad mode, no-grad mode, inference mode, ...).
inline void assert_tensor_creation_meta(const Tensor& x, autograd::CreationMeta creation_meta) {
  ASSERT_TRUE(x.is_view());
  ASSERT_EQ(autograd::impl::creation_meta(x), creation_meta);
}

}  // namespace ember::test

// ---- helpers for tensor.cpp, tensor_options.cpp (test/cpp/api/support.h) ----------------------
namespace ember::test {

// Sets the default dtype while alive and restores the previous one after; one guard at a time
// across threads (a mutex held for the guard's life).
struct AutoDefaultDtypeMode {
  static inline std::mutex default_dtype_mutex;

  explicit AutoDefaultDtypeMode(ScalarType default_dtype) : prev_default_dtype(get_default_dtype_as_scalartype()) {
    default_dtype_mutex.lock();
    set_default_dtype(scalarTypeToTypeMeta(default_dtype));
  }
  ~AutoDefaultDtypeMode() {
    default_dtype_mutex.unlock();
    set_default_dtype(scalarTypeToTypeMeta(prev_default_dtype));
  }
  ScalarType prev_default_dtype;
};

}  // namespace ember::test
