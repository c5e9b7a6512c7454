// A test file in the form of PyTorch's test/cpp/api files (libtorch's names, its includes, its
// support header), written for check_harness.py: each test's name says what the harness must
// report for it.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <test/cpp/api/support.h>

using namespace torch::test;

// Shared code that does not compile: the tests using it fail, the others still run.
int64_t helper_that_does_not_compile() {
  return torch::a_function_ember_does_not_have().numel();
}

int64_t helper_that_compiles(const torch::Tensor& x) {
  return x.numel();
}

struct SampleFixture : torch::test::SeedingFixture {};

TEST_F(SampleFixture, Passes) {
  torch::Tensor x = torch::ones({2, 3});
  ASSERT_EQ(helper_that_compiles(x), 6);
  assert_tensor_equal(x.sum(), torch::full({}, 6.0));
  ASSERT_THROWS_WITH(x.view({7}), "view");
}

TEST(SampleTest, FailsToCompile) {
  auto y = torch::another_function_ember_does_not_have(torch::ones({1}));
  ASSERT_TRUE(y.defined());
}

TEST(SampleTest, FailsToCompileThroughSharedCode) {
  ASSERT_EQ(helper_that_does_not_compile(), 1);
}

TEST(SampleTest, FailsAtRunTime) {
  ASSERT_EQ(torch::ones({2}).numel(), 3);
}

TEST(SampleTest, FailsOnMessageTextOnly) {
  ASSERT_THROWS_WITH(torch::ones({2}).view({3}), "a message text no library writes");
  ASSERT_EQ(torch::ones({2}).numel(), 2);
}

TEST(SampleTest, ExcludedAsCUDA) {
  auto x = torch::ones({1}, torch::kCUDA);
}

TEST(SampleTest, ExcludedAsSparse) {
  auto x = torch::ones({1}).to_sparse();
}

TEST(SampleTest, AlsoPassesWithBracesInStrings) {
  std::string text = "} { \" }";
  ASSERT_EQ(text.size(), 7u);
}
