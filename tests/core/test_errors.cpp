// Bad input throws ember::Error whose message starts with "[op]" and shows the offending
// shapes, dtypes or indices.
#include <gtest/gtest.h>

#include "core/tensor_impl.h"
#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no ember::Error)";
}

TEST(Errors, AreRuntimeErrorsStartingWithTheOpName) {
  const std::string message = message_of([] { ones({2, 3}) + ones({4}); });
  EXPECT_EQ(message.rfind("[add] ", 0), 0u) << message;
  EXPECT_THROW(ones({2, 3}) + ones({4}), std::runtime_error);
}

TEST(Errors, StrConcatenatesItsArgumentsAsTorchStrDoes) {
  EXPECT_EQ(str("dcgan-sample-", 3, ".pt"), "dcgan-sample-3.pt");
  EXPECT_EQ(str(), "");
  EXPECT_EQ(str('[', 0.5, "] ", std::vector<int64_t>{2, 3}), "[0.5] [2, 3]");
}

TEST(Errors, AssertNamesTheConditionAndWhere) {
  const int64_t size = 3;
  const int line = __LINE__ + 1;
  const std::string plain = message_of([&] { EMBER_ASSERT(size == 4); });
  EXPECT_EQ(plain.rfind("[assert] `size == 4` failed at ", 0), 0u) << plain;
  EXPECT_TRUE(plain.ends_with("test_errors.cpp:" + std::to_string(line))) << plain;  // nothing after it
  const std::string with_message = message_of([&] { EMBER_ASSERT(size > 5, "size ", size); });
  EXPECT_EQ(with_message.rfind("[assert] `size > 5` failed at ", 0), 0u) << with_message;
  EXPECT_NE(with_message.find(": size 3"), std::string::npos) << with_message;
  EXPECT_EQ(message_of([&] { EMBER_ASSERT(size == 3); }), "(no ember::Error)");
  EXPECT_EQ(message_of([&] { EMBER_ASSERT((std::is_same_v<int, long>)); }).rfind("[assert] `(std::is_same_v<int, long>)`", 0), 0u);
}

TEST(Errors, MatmulShapes) {
  EXPECT_EQ(message_of([] { matmul(ones({2, 3}), ones({4, 5})); }),
            "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_TRUE(throws_error([] { ones({2, 3}).matmul(ones({2})); }, {"[matmul]", "[2, 3]", "[2]"}));
  EXPECT_TRUE(throws_error([] { mm(ones({2, 3}), ones({3})); }, {"[mm]", "2-D", "1-D"}));
  EXPECT_TRUE(throws_error([] { bmm(ones({2, 2, 3}), ones({3, 3, 2})); }, {"[bmm]", "[2, 2, 3]", "[3, 3, 2]"}));
  EXPECT_TRUE(throws_error([] { matmul(ones({}), ones({2})); }, {"[matmul]", "0-D"}));
}

TEST(Errors, MatmulDtypes) {
  EXPECT_TRUE(throws_error([] { matmul(ones({2, 2}, kInt64), ones({2, 2}, kInt64)); }, {"[matmul]", "int64"}));
  EXPECT_TRUE(throws_error([] { matmul(ones({2, 2}), ones({2, 2}, kFloat64)); }, {"[matmul]", "float32", "float64"}));
}

TEST(Errors, BroadcastShapes) {
  EXPECT_TRUE(throws_error([] { ones({2, 3}) + ones({4}); }, {"[add]", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([] { ones({2, 3}) < ones({3, 2}); }, {"[lt]", "[2, 3]", "[3, 2]"}));
  EXPECT_TRUE(throws_error([] { where(ones({2}, kBool), ones({3}), ones({2})); }, {"[where]", "[2]", "[3]"}));
}

TEST(Errors, NegativeSizes) {
  EXPECT_TRUE(throws_error([] { zeros({2, -1}); }, {"[zeros]", "negative", "-1", "[2, -1]"}));
  EXPECT_TRUE(throws_error([] { ones({-3}); }, {"[ones]", "-3"}));
  EXPECT_TRUE(throws_error([] { empty({-1}); }, {"[empty]", "-1"}));
  EXPECT_TRUE(throws_error([] { full({-1}, 2); }, {"[full]", "-1"}));
  EXPECT_TRUE(throws_error([] { randn({4, -2}); }, {"[randn]", "-2"}));
  EXPECT_TRUE(throws_error([] { ones({2}).view({-2, -1}); }, {"[view]", "-2"}));
}

TEST(Errors, HugeSizesDoNotOverflow) {
  EXPECT_TRUE(throws_error([] { empty({int64_t{1} << 40, int64_t{1} << 40}); }, {"[empty]", "too many"}));
}

TEST(Errors, BadDims) {
  Tensor x = ones({2, 3});
  EXPECT_TRUE(throws_error([&] { x.transpose(0, 2); }, {"[transpose]", "[-2, 1]", "2"}));
  EXPECT_TRUE(throws_error([&] { x.sum(3); }, {"[sum]", "3"}));
  EXPECT_TRUE(throws_error([&] { x.select(-3, 0); }, {"[select]", "-3"}));
  EXPECT_TRUE(throws_error([&] { x.size(2); }, {"[size]", "2"}));
  EXPECT_TRUE(throws_error([&] { x.unsqueeze(-4); }, {"[unsqueeze]", "-4"}));
  EXPECT_TRUE(throws_error([&] { x.squeeze(5); }, {"[squeeze]", "5"}));
  EXPECT_TRUE(throws_error([&] { x.diagonal(0, 1, 1); }, {"[diagonal]", "1"}));
  EXPECT_TRUE(throws_error([&] { x.slice(0, 0, 2, 0); }, {"[slice]", "step", "0"}));
  EXPECT_TRUE(throws_error([&] { x.slice(0, 0, 2, -1); }, {"[slice]", "step", "-1"}));
}

TEST(Errors, IncompatibleView) {
  EXPECT_EQ(message_of([] { ones({2, 3}).t().view({6}); }),
            "[view] view size [6] is not compatible with input tensor's size [3, 2] and stride [1, 3]; use "
            "reshape() instead");
  EXPECT_TRUE(throws_error([] { ones({2, 3}).view({5}); }, {"[view]", "[5]", "6"}));
}

TEST(Errors, NarrowOutOfRange) {
  Tensor x = ones({4, 5});
  EXPECT_TRUE(throws_error([&] { x.narrow(1, 3, 3); }, {"[narrow]", "3", "5"}));
  EXPECT_TRUE(throws_error([&] { x.narrow(0, 6, 1); }, {"[narrow]", "6", "4"}));
  EXPECT_TRUE(throws_error([&] { x.narrow(0, -5, 1); }, {"[narrow]", "-5"}));
  EXPECT_TRUE(throws_error([&] { x.narrow(0, 0, -1); }, {"[narrow]", "-1"}));
}

TEST(Errors, SelectOutOfRange) {
  Tensor x = ones({4, 5});
  EXPECT_EQ(message_of([&] { x.select(1, 5); }), "[select] index 5 out of range for tensor of size [4, 5] at dimension 1");
  EXPECT_TRUE(throws_error([&] { x.select(0, -5); }, {"[select]", "-5", "[4, 5]"}));
  EXPECT_TRUE(throws_error([&] { x[4]; }, {"[select]", "4"}));
}

TEST(Errors, ItemOnManyElements) {
  EXPECT_EQ(message_of([] { ones({2, 2}).item<float>(); }),
            "[item] a tensor with 4 elements (shape [2, 2]) cannot be converted to a scalar");
}

TEST(Errors, DtypeMismatches) {
  EXPECT_TRUE(throws_error([] { ones({2}).data_ptr<double>(); }, {"[data_ptr]", "float64", "float32"}));
  EXPECT_TRUE(throws_error([] { Tensor i = ones({2}, kInt64); i.div_(2); }, {"[div]", "float32", "int64"}));
  EXPECT_TRUE(throws_error([] { ones({2}).masked_fill(ones({2}), 0); }, {"[masked_fill]", "float32"}));
  EXPECT_TRUE(throws_error([] { ones({2}, kBool).neg(); }, {"[neg]", "bool"}));
  EXPECT_TRUE(throws_error([] { ones({2}, kInt32).requires_grad_(); }, {"[requires_grad_]", "int32"}));
}

TEST(Errors, UndefinedTensors) {
  EXPECT_TRUE(throws_error([] { Tensor().dim(); }, {"[dim]", "undefined"}));
  EXPECT_TRUE(throws_error([] { Tensor().clone(); }, {"[clone]", "undefined"}));
  EXPECT_TRUE(throws_error([] { Tensor().exp(); }, {"[exp]", "undefined"}));
}

TEST(Errors, WritesIntoReadOnlyStorage) {
  auto bytes = std::make_shared<std::vector<float>>(4, 1.0f);
  Tensor mapped = core::make_view(Storage::mapped(bytes->data(), 16, bytes), {4}, {1}, 0, kFloat32);
  EXPECT_TRUE(all_equal(mapped * 2, {2, 2, 2, 2})) << "reading is fine";
  EXPECT_TRUE(throws_error([&] { mapped.add_(1); }, {"[add]", "read-only", "[4]"}));
  EXPECT_TRUE(throws_error([&] { mapped.fill_(0); }, {"[fill_]", "read-only"}));
  EXPECT_TRUE(throws_error([&] { mapped.copy_(zeros({4})); }, {"[copy_]", "read-only"}));
  EXPECT_TRUE(throws_error([&] { mapped.uniform_(); }, {"[uniform_]", "read-only"}));
  Tensor owned = mapped.clone();
  owned.add_(1);
  EXPECT_TRUE(all_equal(owned, {2, 2, 2, 2}));
  EXPECT_EQ((*bytes)[0], 1.0f);
}

}  // namespace
}  // namespace ember
