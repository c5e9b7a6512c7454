// Tensor::index / index_put_ with torch::indexing-style indices, against element loops
// written here: basic indices as views, one and several index tensors (adjacent and
// separated), bool masks, broadcasting of index tensors, gradcheck, and every error.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;
using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;

// [4, 5, 6] float64 holding 100*i + 10*j + k, stored permuted (non-contiguous).
Tensor source() {
  Tensor x = empty({6, 4, 5}, kFloat64).permute({1, 2, 0});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 6; ++k) write_element(x, (i * 5 + j) * 6 + k, static_cast<double>(100 * i + 10 * j + k));
  return x;
}
double at(int64_t i, int64_t j, int64_t k) { return static_cast<double>(100 * i + 10 * j + k); }
int64_t wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

TEST(TensorIndex, BasicIndicesGiveViews) {
  Tensor x = source();
  Tensor y = x.index({1, Slice(1, None, 2), None, Ellipsis});
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 1, 6}));
  std::vector<double> expected;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t k = 0; k < 6; ++k) expected.push_back(at(1, 1 + 2 * a, k));
  EXPECT_TRUE(all_equal(y, expected));
  y.fill_(-1);  // a view: x changes
  EXPECT_EQ(element(x, (1 * 5 + 3) * 6 + 2), -1);
  EXPECT_EQ(source().index({Ellipsis, -1}).sizes(), (std::vector<int64_t>{4, 5}));
  Tensor tail = source().index({"...", 2, Slice(None, 2)});
  EXPECT_EQ(tail.sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(all_equal(tail, {at(0, 2, 0), at(0, 2, 1), at(1, 2, 0), at(1, 2, 1), at(2, 2, 0), at(2, 2, 1),
                               at(3, 2, 0), at(3, 2, 1)}));
  EXPECT_EQ(source().index({Slice(), true}).sizes(), (std::vector<int64_t>{4, 1, 5, 6}));
  EXPECT_EQ(source().index({false}).sizes(), (std::vector<int64_t>{0, 4, 5, 6}));
  EXPECT_EQ(source().index({Slice(-2, None), Slice(10, 20)}).sizes(), (std::vector<int64_t>{2, 0, 6}));
  EXPECT_EQ(scalar_tensor(3.0).index({None}).sizes(), (std::vector<int64_t>{1}));
}

TEST(TensorIndex, OneIndexTensorKeepsItsPlace) {
  Tensor x = source();
  Tensor idx = tensor({0, 4, -1, 2}).reshape({2, 2});
  Tensor y = x.index({Slice(), idx});
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 2, 2, 6}));
  const std::vector<int64_t> iv = {0, 4, -1, 2};
  std::vector<double> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t k = 0; k < 6; ++k) expected.push_back(at(i, wrap(iv[static_cast<size_t>(a)], 5), k));
  EXPECT_TRUE(all_equal(y, expected));
  EXPECT_TRUE(all_equal(x.index({tensor({3, 0}, kInt32), 1, 5}), {at(3, 1, 5), at(0, 1, 5)}));
  EXPECT_EQ(x.index({Slice(), empty({0}, kInt64)}).sizes(), (std::vector<int64_t>{4, 0, 6}));
}

TEST(TensorIndex, AdjacentAndSeparatedIndexTensors) {
  Tensor x = source();
  const std::vector<int64_t> i1 = {2, 0, 4}, i2 = {5};
  // Adjacent: B = [3] replaces dims 1 and 2.
  Tensor adjacent = x.index({Slice(), tensor({2, 0, 4}), tensor({5})});
  EXPECT_EQ(adjacent.sizes(), (std::vector<int64_t>{4, 3}));
  std::vector<double> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t a = 0; a < 3; ++a) expected.push_back(at(i, i1[static_cast<size_t>(a)], 5));
  EXPECT_TRUE(all_equal(adjacent, expected));
  // Separated by a slice: B goes first.
  const std::vector<int64_t> r = {3, 1, 1}, c = {0, 5, -2};
  Tensor separated = x.index({tensor({3, 1, 1}), Slice(), tensor({0, 5, -2})});
  EXPECT_EQ(separated.sizes(), (std::vector<int64_t>{3, 5}));
  expected.clear();
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t j = 0; j < 5; ++j) expected.push_back(at(r[static_cast<size_t>(a)], j, wrap(c[static_cast<size_t>(a)], 6)));
  EXPECT_TRUE(all_equal(separated, expected));
  // Broadcast index tensors: [2, 1] with [3] -> [2, 3].
  Tensor grid = x.index({tensor({1, 3}).reshape({2, 1}), tensor({0, 2, 4}), 0});
  EXPECT_EQ(grid.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(all_equal(grid, {at(1, 0, 0), at(1, 2, 0), at(1, 4, 0), at(3, 0, 0), at(3, 2, 0), at(3, 4, 0)}));
}

TEST(TensorIndex, BoolMasks) {
  Tensor x = source();
  Tensor rows = x.index({Slice(), Slice(), 0});  // [4, 5]
  Tensor mask = (rows.remainder(20) == 0);       // j even and i any: 100i + 10j, j in {0, 2, 4}
  Tensor picked = x.index({mask});
  EXPECT_EQ(picked.sizes(), (std::vector<int64_t>{12, 6}));
  std::vector<double> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; j += 2)
      for (int64_t k = 0; k < 6; ++k) expected.push_back(at(i, j, k));
  EXPECT_TRUE(all_equal(picked, expected));
  Tensor last = x.index({Ellipsis, tensor({true, false, false, false, false, true})});
  EXPECT_EQ(last.sizes(), (std::vector<int64_t>{4, 5, 2}));
  EXPECT_EQ(element(last, 1), at(0, 0, 5));
  EXPECT_EQ(x.index({zeros({4, 5}, kBool)}).sizes(), (std::vector<int64_t>{0, 6}));
}

TEST(TensorIndex, ErrorsNameTheIndexAndSize) {
  Tensor x = source();
  EXPECT_TRUE(throws_error([&] { x.index({4}); }, {"[index]", "index 4", "dimension 0", "size 4"}));
  EXPECT_TRUE(throws_error([&] { x.index({Slice(), -6}); }, {"[index]", "-6", "size 5"}));
  EXPECT_TRUE(throws_error([&] { x.index({Slice(), tensor({1, 7})}); }, {"[index]", "index 7", "dimension 1", "size 5"}));
  EXPECT_TRUE(throws_error([&] { x.index({tensor({-5})}); }, {"[index]", "-5", "size 4"}));
  EXPECT_TRUE(throws_error([&] { x.index({0, 0, 0, 0}); }, {"[index]", "too many indices", "3", "4"}));
  EXPECT_TRUE(throws_error([&] { x.index({ones({2})}); }, {"[index]", "float32"}));
  EXPECT_TRUE(throws_error([&] { x.index({ones({4, 4}, kBool)}); }, {"[index]", "mask", "[4, 4]", "[4, 5, 6]"}));
  EXPECT_TRUE(throws_error([&] { x.index({Ellipsis, Ellipsis}); }, {"[index]", "single ellipsis"}));
  EXPECT_TRUE(throws_error([&] { x.index({Slice(None, None, 0)}); }, {"[Slice]", "step cannot be zero"}));
  EXPECT_TRUE(throws_error([&] { x.index({}); }, {"[index]", "Passing an empty index list to Tensor::index()"}));
  EXPECT_TRUE(throws_error([&] { x.index_put_(std::vector<indexing::TensorIndex>{}, 1); },
                           {"[index_put_]", "empty index list to Tensor::index_put_()"}));
  EXPECT_TRUE(throws_error([&] { x.index({tensor({0, 1}), tensor({0, 1, 2})}); }, {"[index]", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([&] { x.index({".."}); }, {"[index]", ".."}));
}

TEST(TensorIndex, Gradients) {
  Tensor x = make(uniform_values(24, -1, 1, 3), {4, 6}, kFloat64).requires_grad_();
  Tensor dup = tensor({1, 1, -1, 0});
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].index({Slice(), dup}); }, {x}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return in[0].t().index({tensor({2, 0}), Slice(1, None, 2)});
      },
      {x}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].index({in[0] > 0}); }, {x}));
  // Duplicated indices accumulate: column 1 is read twice.
  Tensor y = make(uniform_values(24, -1, 1, 4), {4, 6}, kFloat64).requires_grad_();
  y.index({Slice(), dup}).sum().backward();
  std::vector<double> expected;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) expected.push_back(j == 1 ? 2 : (j == 0 || j == 5) ? 1 : 0);
  EXPECT_TRUE(all_equal(y.grad(), expected));
}

TEST(TensorIndexPut, WritesThroughEveryIndexKind) {
  Tensor x = zeros({3, 4}, kFloat64);
  x.index_put_({Slice(), tensor({3, 0})}, tensor({1.0, 2.0}, kFloat64));
  EXPECT_TRUE(all_equal(x, {2, 0, 0, 1, 2, 0, 0, 1, 2, 0, 0, 1}));
  x.index_put_({1}, 7);
  EXPECT_TRUE(all_equal(x, {2, 0, 0, 1, 7, 7, 7, 7, 2, 0, 0, 1}));
  x.index_put_({x == 0}, -1);
  EXPECT_TRUE(all_equal(x, {2, -1, -1, 1, 7, 7, 7, 7, 2, -1, -1, 1}));
  x.index_put_({tensor({0, 2}), tensor({1, 2})}, tensor({5.0f, 6.0f}));  // float32 values cast to float64
  EXPECT_TRUE(all_equal(x, {2, 5, -1, 1, 7, 7, 7, 7, 2, -1, 6, 1}));
  // Into a transposed view: the base changes at the viewed positions.
  Tensor base = zeros({4, 3}, kInt64);
  base.t().index_put_({Slice(), Slice(1, 3)}, tensor({4, 5}));
  EXPECT_TRUE(all_equal(base, {0, 0, 0, 4, 4, 4, 5, 5, 5, 0, 0, 0}));
  EXPECT_TRUE(throws_error([&] { x.index_put_({0}, tensor({1.0, 2.0})); }, {"[index_put_]", "[2]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { x.index_put_({5}, 1); }, {"[index_put_]", "index 5", "size 3"}));
}

TEST(TensorIndexPut, Gradients) {
  Tensor a = make(uniform_values(12, -1, 1, 6), {3, 4}, kFloat64).requires_grad_();
  Tensor b = make(uniform_values(6, -1, 1, 7), {3, 2}, kFloat64).requires_grad_();
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        Tensor y = in[0] * 1;
        y.index_put_({Slice(), tensor({2, 0})}, in[1]);
        return y;
      },
      {a, b}));
}

TEST(TensorIndex, BoolsAreIndexTensorsOnANewDim) {
  // x[True] and x[False] (and 0-dim bool or uint8 tensors) add a dim indexed by [0] or []:
  // copies, and adjacent ones broadcast together, as libtorch's.
  Tensor x = source();
  Tensor kept = x.index({true});
  EXPECT_EQ(kept.sizes(), (std::vector<int64_t>{1, 4, 5, 6}));
  EXPECT_NE(kept.data_ptr(), x.data_ptr());
  EXPECT_TRUE(all_equal(kept, values(x.contiguous())));
  EXPECT_EQ(x.index({true, true}).sizes(), (std::vector<int64_t>{1, 4, 5, 6}));
  EXPECT_EQ(x.index({false, true, "..."}).sizes(), (std::vector<int64_t>{0, 4, 5, 6}));
  EXPECT_EQ(x.index({tensor(1, kUInt8)}).sizes(), (std::vector<int64_t>{1, 4, 5, 6}));
  EXPECT_EQ(x.index({tensor(false)}).sizes(), (std::vector<int64_t>{0, 4, 5, 6}));
  // A 0-dim integer tensor is an integer: a view.
  Tensor row = x.index({tensor(2)});
  EXPECT_EQ(row.sizes(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(row.data_ptr(), x.index({2}).data_ptr());
  // x[...] is a new view of x.
  Tensor all = x.index({"..."});
  EXPECT_FALSE(all.is_same(x));
  EXPECT_EQ(all.data_ptr(), x.data_ptr());
  EXPECT_EQ(all.strides(), x.strides());
}

TEST(TensorIndex, Uint8MasksWarnEachUse) {
  Tensor v = tensor({10, 20, 30});
  std::ostringstream captured;
  std::streambuf* previous = std::cerr.rdbuf(captured.rdbuf());
  Tensor picked = v.index({tensor({1, 0, 1}, kUInt8)});
  v.index_put_({tensor({0, 1, 0}, kUInt8)}, 5);
  std::cerr.rdbuf(previous);
  EXPECT_TRUE(all_equal(picked, {10, 30}));
  EXPECT_TRUE(all_equal(v, {10, 5, 30}));
  const std::string text = captured.str();
  const std::string warning = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.";
  const size_t first = text.find(warning);
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(text.find(warning, first + 1), std::string::npos);
}

TEST(TensorIndex, SlicesAndIndicesPrint) {
  EXPECT_EQ(Slice().start(), 0);
  EXPECT_EQ(Slice().stop(), indexing::INDEX_MAX);
  EXPECT_EQ(Slice(None, None, -1).start(), indexing::INDEX_MAX);
  EXPECT_EQ(Slice(None, None, -1).stop(), indexing::INDEX_MIN);
  EXPECT_EQ(str(Slice(1, 2, 3)), "1:2:3");
  EXPECT_EQ(str(std::vector<indexing::TensorIndex>{None, "...", 0, true, Slice(None, 3)}), "(None, ..., 0, true, 0:3:1)");
  // A stop past the end clamps, as Python's.
  EXPECT_EQ(source().index({Slice(1, None)}).sizes(), (std::vector<int64_t>{3, 5, 6}));
}

TEST(TensorIndexPut, ValueLeadingOnesAreDropped) {
  // NumPy's rule: a value of shape [1, 1, 2] fits an indexed result of shape [2].
  Tensor x = zeros({3, 2}, kFloat64);
  x.index_put_({1}, tensor({{{4.0, 5.0}}}, kFloat64));
  x.index_put_({tensor({0, 2})}, tensor({{{1.0, 2.0}}}, kFloat64));
  EXPECT_TRUE(all_equal(x, {1, 2, 4, 5, 1, 2}));
  Tensor s = scalar_tensor(3.0, kFloat64);
  s.index_put_({true}, full({1, 1}, -1.0, kFloat64));
  EXPECT_EQ(s.item<double>(), -1);
  s.index_put_({false}, 5);
  EXPECT_EQ(s.item<double>(), -1);
  // The free at:: forms of the list-of-optional-tensors indices.
  Tensor m = zeros({4, 2}, kFloat64);
  index_put_(m, {tensor({1, 3})}, ones({1, 2}, kFloat64));
  EXPECT_TRUE(all_equal(index(m, {tensor({3, 0})}), {1, 1, 0, 0}));
}

}  // namespace
}  // namespace ember
