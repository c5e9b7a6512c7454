// Tensor basics: factories, views (storage sharing, strides, values), copies and dtype
// conversion, element access, printing, memory statistics and random number generation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;
using Sizes = std::vector<int64_t>;

std::vector<double> iota_values(int64_t n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// [0, 1, ..., n) as a float32 tensor of the given shape.
Tensor counting(IntArrayRef sizes, ScalarType dtype = kFloat32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make(iota_values(n), sizes, dtype);
}

bool shares_storage(const Tensor& a, const Tensor& b) { return a.storage().is_alias_of(b.storage()); }

// ---- factories --------------------------------------------------------------------------------

TEST(Storage, ReallocateReplacesTheMemoryOfEveryViewAndKeepsTheVersion) {
  Tensor t = zeros({4});
  Tensor view = t.narrow(0, 1, 2);
  t.add_(1);
  const uint64_t version = t._version();
  const int64_t before = memory_stats().allocated_bytes;
  t.storage().reallocate(0);
  EXPECT_EQ(t.storage().nbytes(), 0u);
  EXPECT_EQ(memory_stats().allocated_bytes, before - 16);
  t.storage().reallocate(16);
  EXPECT_EQ(memory_stats().allocated_bytes, before);
  for (int i = 0; i < 4; ++i) t.data_ptr<float>()[i] = static_cast<float>(10 * i);
  EXPECT_TRUE(all_equal(view, {10, 20}));
  EXPECT_EQ(view._version(), version);
  float buffer[2] = {0, 0};
  EXPECT_TRUE(throws_error([&] { Storage::borrow(buffer, sizeof(buffer)).reallocate(0); },
                           {"[Storage::reallocate]", "borrowed"}));
}

TEST(Factories, ZerosOnesFull) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.scalar_type(), kFloat32);
  EXPECT_EQ(z.sizes(), (Sizes{2, 3}));
  EXPECT_EQ(z.strides(), (Sizes{3, 1}));
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_TRUE(all_equal(z, std::vector<double>(6, 0)));
  EXPECT_TRUE(all_equal(ones({4}, kInt32), {1, 1, 1, 1}));
  EXPECT_EQ(ones({4}, kInt32).scalar_type(), kInt32);
  EXPECT_TRUE(all_equal(full({2}, 2.5), {2.5, 2.5}));
  EXPECT_EQ(full({2}, 2.5).scalar_type(), kFloat32);
  EXPECT_EQ(full({2}, 3).scalar_type(), kInt64);
  EXPECT_EQ(full({2}, true).scalar_type(), kBool);
  EXPECT_TRUE(all_equal(full({3}, 0.1, kFloat16), std::vector<double>(3, round_to(kFloat16, 0.1))));
  EXPECT_TRUE(all_equal(full({2}, 7.9, kInt64), {7, 7}));
  EXPECT_EQ(zeros({0, 3}).numel(), 0);
  EXPECT_EQ(zeros({}).dim(), 0);
  EXPECT_EQ(zeros({}).numel(), 1);
  Tensor g = zeros({2}, TensorOptions().dtype(kFloat64).requires_grad(true));
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
}

TEST(Factories, EmptyAndEmptyStrided) {
  Tensor e = empty({3, 4}, kBFloat16);
  EXPECT_EQ(e.sizes(), (Sizes{3, 4}));
  EXPECT_EQ(e.scalar_type(), kBFloat16);
  EXPECT_EQ(e.nbytes(), 24u);
  Tensor s = empty_strided({2, 3}, {1, 2});
  EXPECT_EQ(s.strides(), (Sizes{1, 2}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_GE(s.storage().nbytes(), 6 * sizeof(float));
}

TEST(Factories, Arange) {
  Tensor a = arange(5);
  EXPECT_EQ(a.scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(a, {0, 1, 2, 3, 4}));
  Tensor f = arange(1, 2, 0.25);
  EXPECT_EQ(f.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(f, {1, 1.25, 1.5, 1.75}));
  EXPECT_TRUE(all_equal(arange(0, -3, -1), {0, -1, -2}));
  EXPECT_TRUE(all_equal(arange(3, kFloat64), {0, 1, 2}));
  EXPECT_EQ(arange(3, kFloat64).scalar_type(), kFloat64);
  EXPECT_EQ(arange(2, 2).numel(), 0);
  EXPECT_TRUE(throws_error([] { arange(0, 3, 0); }, {"[arange]", "step"}));
  EXPECT_TRUE(throws_error([] { arange(3, 0, 1); }, {"[arange]"}));
}

TEST(Factories, Linspace) {
  EXPECT_TRUE(all_equal(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1}));
  EXPECT_TRUE(all_equal(linspace(-1, 1, 2, kFloat64), {-1, 1}));
  EXPECT_TRUE(all_equal(linspace(3, 10, 1), {3}));  // one step gives start, as in PyTorch
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  Tensor l = linspace(0, 1, 7, kFloat64);
  EXPECT_EQ(l.scalar_type(), kFloat64);
  EXPECT_TRUE(all_close(l, {0, 1 / 6.0, 2 / 6.0, 3 / 6.0, 4 / 6.0, 5 / 6.0, 1}));
  EXPECT_EQ(element(l, 6), 1.0);
  EXPECT_TRUE(throws_error([] { linspace(0, 1, -1); }, {"[linspace]", "-1"}));
}

TEST(Factories, Eye) {
  EXPECT_TRUE(all_equal(eye(3), {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(all_equal(eye(2, 3, kInt64), {1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(2, 3, kInt64).scalar_type(), kInt64);
  EXPECT_EQ(eye(0).sizes(), (Sizes{0, 0}));
  EXPECT_TRUE(throws_error([] { eye(-1); }, {"[eye]", "-1"}));
}

TEST(Factories, LikeVariantsKeepShapeAndDtype) {
  Tensor x = counting({2, 3}, kInt32).t();
  for (const Tensor& t : {empty_like(x), zeros_like(x), ones_like(x), full_like(x, 4), randint_like(x, 5),
                          randint_like(x, 2, 5)}) {
    EXPECT_EQ(t.sizes(), (Sizes{3, 2}));
    EXPECT_EQ(t.scalar_type(), kInt32);
  }
  EXPECT_TRUE(all_equal(zeros_like(x), std::vector<double>(6, 0)));
  EXPECT_TRUE(all_equal(ones_like(x), std::vector<double>(6, 1)));
  EXPECT_TRUE(all_equal(full_like(x, 4), std::vector<double>(6, 4)));
  EXPECT_EQ(ones_like(x, kFloat64).scalar_type(), kFloat64);
  Tensor f = ones({4}, kFloat16);
  EXPECT_EQ(rand_like(f).scalar_type(), kFloat16);
  EXPECT_EQ(randn_like(f).sizes(), (Sizes{4}));
  for (double v : values(randint_like(x, 2, 5))) EXPECT_TRUE(v >= 2 && v < 5);
  Tensor leaf = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_FALSE(zeros_like(leaf).requires_grad());
}

TEST(Factories, TensorFromValues) {
  Tensor f = tensor({1.5, 2.5});
  EXPECT_EQ(f.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(f, {1.5, 2.5}));
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(i.scalar_type(), kInt64);
  EXPECT_EQ(tensor({true, false}).scalar_type(), kBool);
  EXPECT_EQ(tensor({0.1}, kFloat64).item<double>(), 0.1);
  EXPECT_TRUE(all_equal(tensor(std::vector<double>{1, 2}, kBFloat16), {1, 2}));
  EXPECT_TRUE(all_equal(tensor(std::vector<int64_t>{5, 6}), {5, 6}));
  Tensor g = tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(g.requires_grad() && g.is_leaf());
  Tensor s = scalar_tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 3.5f);
}

TEST(Factories, FromBlobBorrowsMemory) {
  std::vector<double> data = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data.data(), {2, 3}, kFloat64);
  EXPECT_EQ(t.data_ptr(), data.data());
  EXPECT_EQ(t.storage().kind(), Storage::Kind::Borrowed);
  data[4] = 50;
  EXPECT_EQ(element(t, 4), 50);
  t.mul_(2);
  EXPECT_EQ(data[0], 2);
  Tensor owned = t.clone();
  EXPECT_NE(owned.data_ptr(), t.data_ptr());
  EXPECT_EQ(owned.storage().kind(), Storage::Kind::Owned);
  EXPECT_TRUE(all_equal(owned, {2, 4, 6, 8, 100, 12}));

  Tensor strided = from_blob(data.data(), {3, 2}, {1, 3}, kFloat64);  // the transpose of t
  EXPECT_TRUE(all_equal(strided, values(t.t())));
}

TEST(Factories, FromBlobRunsTheDeleterWhenTheLastViewDies) {
  int deleted = 0;
  float data[4] = {1, 2, 3, 4};
  Tensor view;
  {
    Tensor t = from_blob(data, {4}, [&](void* p) { deleted += p == data ? 1 : 100; }, kFloat32);
    view = t.slice(0, 1, 3);
  }
  EXPECT_EQ(deleted, 0);
  EXPECT_TRUE(all_equal(view, {2, 3}));
  view = Tensor();
  EXPECT_EQ(deleted, 1);
}

// ---- views ------------------------------------------------------------------------------------

TEST(Views, ViewAndReshape) {
  Tensor x = counting({2, 3});
  Tensor v = x.view({3, 2});
  EXPECT_TRUE(shares_storage(v, x));
  EXPECT_EQ(v.strides(), (Sizes{2, 1}));
  EXPECT_TRUE(all_equal(v, iota_values(6)));
  EXPECT_EQ(x.view({-1}).sizes(), (Sizes{6}));
  EXPECT_EQ(x.view({-1, 2}).sizes(), (Sizes{3, 2}));
  EXPECT_EQ(x.view({1, 6, 1}).sizes(), (Sizes{1, 6, 1}));
  EXPECT_EQ(x.reshape({-1}).sizes(), (Sizes{6}));
  EXPECT_TRUE(shares_storage(x.reshape({6}), x));

  // A transposed tensor cannot be flattened without a copy: view throws, reshape copies.
  Tensor t = x.t();
  EXPECT_TRUE(throws_error([&] { t.view({6}); }, {"[view]", "[6]", "[3, 2]", "reshape"}));
  Tensor r = t.reshape({6});
  EXPECT_FALSE(shares_storage(r, x));
  EXPECT_TRUE(all_equal(r, {0, 3, 1, 4, 2, 5}));
  // Splitting one dim of a non-contiguous tensor is still a view.
  Tensor split_dim = counting({4, 3}).t().view({3, 2, 2});
  EXPECT_TRUE(all_equal(split_dim, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));

  EXPECT_TRUE(throws_error([&] { x.view({4}); }, {"[view]", "[4]", "6"}));
  EXPECT_TRUE(throws_error([&] { x.view({-1, -1}); }, {"[view]", "only one dimension"}));
  EXPECT_TRUE(throws_error([&] { x.reshape({-1, 4}); }, {"[reshape]", "[-1, 4]", "6"}));
  EXPECT_EQ(zeros({0, 3}).view({0, 5, 2}).sizes(), (Sizes{0, 5, 2}));
}

TEST(Views, WritesThroughAViewReachTheBase) {
  Tensor x = zeros({3, 4});
  x.select(0, 1).fill_(1);
  x.slice(1, 0, 4, 3).fill_(2);
  EXPECT_TRUE(all_equal(x, {2, 0, 0, 2, 2, 1, 1, 2, 2, 0, 0, 2}));
}

TEST(Views, PermuteTransposeT) {
  Tensor x = counting({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_TRUE(shares_storage(p, x));
  EXPECT_EQ(p.sizes(), (Sizes{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Sizes{1, 12, 4}));
  EXPECT_EQ(element(p, 1 * 6 + 1 * 3 + 2), 12 + 2 * 4 + 1);  // p[1][1][2] = x[1][2][1]
  EXPECT_EQ(x.permute({-1, 0, 1}).sizes(), (Sizes{4, 2, 3}));
  Tensor tr = x.transpose(0, -1);
  EXPECT_EQ(tr.sizes(), (Sizes{4, 3, 2}));
  EXPECT_EQ(tr.strides(), (Sizes{1, 4, 12}));
  EXPECT_FALSE(tr.is_contiguous());
  Tensor m = counting({2, 3});
  EXPECT_TRUE(all_equal(m.t(), {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(all_equal(m.mT(), {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(throws_error([&] { x.permute({0, 1}); }, {"[permute]"}));
  EXPECT_TRUE(throws_error([&] { x.permute({0, 1, 1}); }, {"[permute]", "repeated"}));
  EXPECT_TRUE(throws_error([&] { x.t(); }, {"[t]", "3"}));
}

TEST(Views, NarrowSliceSelect) {
  Tensor x = counting({4, 5});
  Tensor n = x.narrow(1, 1, 3);
  EXPECT_TRUE(shares_storage(n, x));
  EXPECT_EQ(n.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(n.storage_offset(), 1);
  EXPECT_TRUE(all_equal(n.select(0, 0), {1, 2, 3}));
  EXPECT_TRUE(all_equal(x.narrow(0, -1, 1), {15, 16, 17, 18, 19}));

  Tensor s = x.slice(1, 0, 5, 2);
  EXPECT_EQ(s.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(s.strides(), (Sizes{5, 2}));
  EXPECT_TRUE(all_equal(s.select(0, 1), {5, 7, 9}));
  EXPECT_TRUE(all_equal(x.slice(1, -2).select(0, 0), {3, 4}));
  EXPECT_TRUE(all_equal(x.slice(0, 1, std::nullopt, 3).select(1, 0), {5}));
  EXPECT_EQ(x.slice(1, 4, 2).numel(), 0);
  EXPECT_EQ(x.slice(1, 3, 100).sizes(), (Sizes{4, 2}));

  Tensor last = x.select(1, -1);
  EXPECT_EQ(last.sizes(), (Sizes{4}));
  EXPECT_EQ(last.strides(), (Sizes{5}));
  EXPECT_TRUE(all_equal(last, {4, 9, 14, 19}));
  EXPECT_TRUE(all_equal(x[2], {10, 11, 12, 13, 14}));
  EXPECT_EQ(x[2][3].dim(), 0);
  EXPECT_EQ(x[-1][-1].item<float>(), 19);
}

TEST(Views, SqueezeUnsqueeze) {
  Tensor x = counting({2, 1, 3, 1});
  EXPECT_EQ(x.squeeze().sizes(), (Sizes{2, 3}));
  EXPECT_EQ(x.squeeze(1).sizes(), (Sizes{2, 3, 1}));
  EXPECT_EQ(x.squeeze(-1).sizes(), (Sizes{2, 1, 3}));
  EXPECT_EQ(x.squeeze(0).sizes(), (Sizes{2, 1, 3, 1}));  // size 2: unchanged
  EXPECT_TRUE(shares_storage(x.squeeze(), x));
  Tensor y = counting({2, 3});
  EXPECT_EQ(y.unsqueeze(0).sizes(), (Sizes{1, 2, 3}));
  EXPECT_EQ(y.unsqueeze(-1).sizes(), (Sizes{2, 3, 1}));
  EXPECT_EQ(y.unsqueeze(1).strides(), (Sizes{3, 3, 1}));
  EXPECT_EQ(y.unsqueeze(2).strides(), (Sizes{3, 1, 1}));
  EXPECT_TRUE(all_equal(y.t().unsqueeze(1), {0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(scalar_tensor(1.0).unsqueeze(0).sizes(), (Sizes{1}));
  EXPECT_TRUE(throws_error([&] { y.unsqueeze(4); }, {"[unsqueeze]", "4"}));
}

TEST(Views, Expand) {
  Tensor x = tensor({1.0, 2.0, 3.0}).view({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_TRUE(shares_storage(e, x));
  EXPECT_EQ(e.strides(), (Sizes{0, 1, 0}));
  EXPECT_TRUE(all_equal(e.select(0, 1).select(0, 2), {3, 3, 3, 3}));
  EXPECT_EQ(x.expand({-1, 5}).sizes(), (Sizes{3, 5}));
  EXPECT_EQ(x.expand_as(zeros({3, 2})).sizes(), (Sizes{3, 2}));
  EXPECT_TRUE(throws_error([&] { x.expand({2, 4}); }, {"[expand]", "3", "[2, 4]"}));
  EXPECT_TRUE(throws_error([&] { x.expand({4}); }, {"[expand]"}));
}

TEST(Views, AsStridedAndDiagonal) {
  Tensor x = counting({3, 4});
  Tensor a = x.as_strided({2, 2}, {4, 2}, 1);
  EXPECT_TRUE(shares_storage(a, x));
  EXPECT_TRUE(all_equal(a, {1, 3, 5, 7}));
  Tensor windows = counting({6}).as_strided({4, 3}, {1, 1});  // overlapping windows
  EXPECT_TRUE(all_equal(windows, {0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5}));
  EXPECT_TRUE(throws_error([&] { x.as_strided({4, 4}, {4, 1}); }, {"[as_strided]", "[4, 4]", "12"}));

  EXPECT_TRUE(all_equal(x.diagonal(), {0, 5, 10}));
  EXPECT_TRUE(all_equal(x.diagonal(1), {1, 6, 11}));
  EXPECT_TRUE(all_equal(x.diagonal(-1), {4, 9}));
  EXPECT_TRUE(all_equal(x.diagonal(0, 1, 0), {0, 5, 10}));
  EXPECT_EQ(x.diagonal(5).numel(), 0);
  Tensor d = x.diagonal();
  d.fill_(-1);
  EXPECT_EQ(element(x, 5), -1);
  Tensor batch = counting({2, 2, 2});
  EXPECT_TRUE(all_equal(batch.diagonal(0, 1, 2), {0, 3, 4, 7}));
  EXPECT_EQ(batch.diagonal(0, 1, 2).sizes(), (Sizes{2, 2}));
}

TEST(Views, FlattenUnflatten) {
  Tensor x = counting({2, 3, 4});
  EXPECT_EQ(x.flatten().sizes(), (Sizes{24}));
  EXPECT_EQ(x.flatten(1).sizes(), (Sizes{2, 12}));
  EXPECT_EQ(x.flatten(0, 1).sizes(), (Sizes{6, 4}));
  EXPECT_TRUE(shares_storage(x.flatten(), x));
  EXPECT_EQ(scalar_tensor(2.0).flatten().sizes(), (Sizes{1}));
  EXPECT_EQ(x.unflatten(2, {2, 2}).sizes(), (Sizes{2, 3, 2, 2}));
  EXPECT_EQ(x.unflatten(-1, {-1, 2}).sizes(), (Sizes{2, 3, 2, 2}));
  EXPECT_TRUE(throws_error([&] { x.unflatten(1, {2, 2}); }, {"[unflatten]", "[2, 2]", "3"}));
  EXPECT_TRUE(throws_error([&] { x.flatten(2, 1); }, {"[flatten]"}));
}

TEST(Views, SplitChunkUnbind) {
  Tensor x = counting({5, 2});
  auto parts = x.split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].sizes(), (Sizes{1, 2}));
  EXPECT_TRUE(all_equal(parts[1], {4, 5, 6, 7}));
  EXPECT_TRUE(shares_storage(parts[1], x));
  auto chunks = x.chunk(2, 0);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].size(0), 3);
  EXPECT_EQ(chunks[1].size(0), 2);
  EXPECT_EQ(chunk(x, 3, 1).size(), 2u);  // chunks of ceil(2 / 3) = 1 column
  auto sized = x.split_with_sizes({1, 4});
  EXPECT_EQ(sized[1].sizes(), (Sizes{4, 2}));
  EXPECT_TRUE(throws_error([&] { x.split_with_sizes({1, 3}); }, {"[split_with_sizes]", "[1, 3]", "5"}));
  auto rows = x.unbind(1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(all_equal(rows[1], {1, 3, 5, 7, 9}));
  EXPECT_TRUE(throws_error([&] { x.chunk(0); }, {"[chunk]"}));
}

TEST(Views, ZeroDimTensorsHaveNoSizesToIndex) {
  Tensor s = scalar_tensor(1.0);
  EXPECT_TRUE(throws_error([&] { s.size(0); }, {"[size]"}));
  EXPECT_TRUE(throws_error([&] { s.unbind(0); }, {"0"}));
  EXPECT_TRUE(throws_error([&] { s.select(0, 0); }, {"[select]"}));
  EXPECT_EQ(counting({2, 3}).size(-1), 3);
  EXPECT_EQ(counting({2, 3}).stride(-2), 3);
}

// ---- copies and conversion ---------------------------------------------------------------------

TEST(Copies, ContiguousAndClone) {
  Tensor x = counting({2, 3});
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor t = x.t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(shares_storage(c, x));
  EXPECT_EQ(c.strides(), (Sizes{2, 1}));
  EXPECT_TRUE(all_equal(c, {0, 3, 1, 4, 2, 5}));
  Tensor k = x.slice(1, 0, 3, 2).clone();
  EXPECT_FALSE(shares_storage(k, x));
  EXPECT_TRUE(k.is_contiguous());
  EXPECT_TRUE(all_equal(k, {0, 2, 3, 5}));
  k.fill_(9);
  EXPECT_EQ(element(x, 0), 0);
}

TEST(Copies, ToRoundTripsThroughEveryDtype) {
  const std::vector<double> numbers = {0, 1, 2, 3, 7, 100, 127}, bools = {0, 1, 1, 0, 0, 1, 0};
  const std::vector<ScalarType> all = {kBool, kUInt8, kInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  for (ScalarType from : all) {
    for (ScalarType to : all) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      Tensor x = make(from == kBool || to == kBool ? bools : numbers, {7}, from);
      Tensor y = x.to(to);
      EXPECT_EQ(y.scalar_type(), to);
      EXPECT_TRUE(all_equal(y, values(x))) << "values representable in both dtypes are exact";
      EXPECT_TRUE(all_equal(y.to(from), values(x)));
    }
  }
  Tensor x = counting({3});
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  EXPECT_FALSE(x.to(kFloat32, false, /*copy=*/true).is_same(x));
  EXPECT_EQ(x.to(TensorOptions(kFloat64)).scalar_type(), kFloat64);
}

TEST(Copies, FloatToIntegerTruncatesAndToBoolTestsNonZero) {
  Tensor x = tensor({2.7, -2.7, 0.0, 0.1, -0.5}, kFloat64);
  EXPECT_TRUE(all_equal(x.to(kInt64), {2, -2, 0, 0, 0}));
  EXPECT_TRUE(all_equal(x.to(kInt32), {2, -2, 0, 0, 0}));
  EXPECT_TRUE(all_equal(x.to(kBool), {1, 1, 0, 1, 1}));
  EXPECT_TRUE(all_equal(tensor({kNaN}).to(kBool), {1}));
  EXPECT_TRUE(all_equal(tensor({int64_t{16777217}}).to(kFloat32), {16777216}));
}

// float32 bit patterns chosen on and around rounding ties of float16 and bfloat16.
TEST(Copies, HalfPrecisionRoundsToNearestEven) {
  struct Case {
    double in, as_f16, as_bf16;
  };
  const double u10 = std::ldexp(1.0, -10), u7 = std::ldexp(1.0, -7);
  const std::vector<Case> cases = {
      {1 + u10 / 2, 1, 1},                            // f16 tie, even is 1
      {1 + 3 * u10 / 2, 1 + 2 * u10, 1},              // f16 tie, even is 1 + 2^-9
      {1 + u10 / 2 + std::ldexp(1.0, -20), 1 + u10, 1},  // just above the f16 tie
      {1 + u7 / 2, 1 + u7 / 2, 1},                    // bf16 tie, even is 1
      {1 + 3 * u7 / 2, 1 + 3 * u7 / 2, 1 + 2 * u7},   // bf16 tie, even is 1 + 2^-6
      {1 + u7 / 2 + std::ldexp(1.0, -16), 1 + u7 / 2, 1 + u7},  // just above the bf16 tie
      {65504, 65504, 65536},                          // largest f16
      {65519, 65504, 65536},                          // below the f16 overflow tie
      {65520, kInf, 65536},                           // the tie overflows to inf
      {std::ldexp(1.0, -24), std::ldexp(1.0, -24), std::ldexp(1.0, -24)},  // smallest f16 subnormal
      {std::ldexp(1.0, -25), 0, std::ldexp(1.0, -25)},                    // tie with 0: even is 0
      {std::ldexp(3.0, -26), std::ldexp(1.0, -24), std::ldexp(3.0, -26)},  // above the tie
      {std::ldexp(3.0, -25), std::ldexp(1.0, -23), std::ldexp(3.0, -25)},  // tie between 1 and 2 ulp: 2
      {-2.5, -2.5, -2.5},
      {kInf, kInf, kInf},
      {-kInf, -kInf, -kInf},
      {3.0e38, kInf, std::ldexp(226.0, 120)},  // 3e38 / 2^120 = 225.7
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "input " << c.in);
    for (ScalarType source : {kFloat32, kFloat64}) {
      Tensor x = make({c.in}, {1}, source);
      EXPECT_EQ(element(x.to(kFloat16), 0), c.as_f16);
      EXPECT_EQ(element(x.to(kBFloat16), 0), c.as_bf16);
    }
  }
  for (ScalarType narrow : {kFloat16, kBFloat16}) {
    Tensor nan = make({kNaN, -0.0}, {2}, kFloat32).to(narrow);
    EXPECT_TRUE(std::isnan(element(nan, 0)));
    EXPECT_TRUE(std::signbit(element(nan, 1)));
  }
}

TEST(Copies, CopyBroadcastsAndCasts) {
  Tensor dst = zeros({2, 3});
  dst.copy_(tensor({1, 2, 3}));
  EXPECT_TRUE(all_equal(dst, {1, 2, 3, 1, 2, 3}));
  Tensor base = zeros({3, 2}, kFloat16);
  base.t().copy_(make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64));
  EXPECT_TRUE(all_equal(base, {1, 4, 2, 5, 3, 6}));
  Tensor ints = zeros({2}, kInt32);
  ints.copy_(tensor({3.9, -3.9}));
  EXPECT_TRUE(all_equal(ints, {3, -3}));
  // Copying a tensor onto its own transpose reads the old values.
  Tensor sq = counting({3, 3});
  sq.copy_(sq.t());
  EXPECT_TRUE(all_equal(sq, {0, 3, 6, 1, 4, 7, 2, 5, 8}));
  const uint64_t version = dst._version();
  dst.copy_(ones({3}));
  EXPECT_EQ(dst._version(), version + 1);
  EXPECT_TRUE(throws_error([&] { dst.copy_(ones({2})); }, {"[copy_]", "[2]", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { dst.copy_(ones({4, 2, 3})); }, {"[copy_]", "[4, 2, 3]"}));
}

TEST(Copies, FillAndZero) {
  Tensor x = counting({2, 4});
  x.slice(1, 1, 4, 2).fill_(-1);
  EXPECT_TRUE(all_equal(x, {0, -1, 2, -1, 4, -1, 6, -1}));
  x.zero_();
  EXPECT_TRUE(all_equal(x, std::vector<double>(8, 0)));
  Tensor i = zeros({2}, kInt32);
  i.fill_(2.9);
  EXPECT_TRUE(all_equal(i, {2, 2}));
  Tensor b = zeros({2}, kBool);
  b.fill_(true);
  EXPECT_TRUE(all_equal(b, {1, 1}));
}

// ---- element access and printing ---------------------------------------------------------------

TEST(Access, ItemAndDataPtr) {
  EXPECT_EQ(tensor({2.5}).item<double>(), 2.5);
  EXPECT_EQ(tensor({7}).item<int64_t>(), 7);
  EXPECT_EQ(tensor({7}).item<float>(), 7.0f);
  EXPECT_EQ(static_cast<float>(scalar_tensor(0.5, kFloat16).item<Half>()), 0.5f);
  EXPECT_EQ(scalar_tensor(1.5, kBFloat16).item<double>(), 1.5);
  EXPECT_TRUE(tensor({true}).item<bool>());
  EXPECT_TRUE(tensor({2.5}).item().isFloatingPoint());
  EXPECT_EQ(tensor({3}).item().toLong(), 3);
  EXPECT_TRUE(tensor({false}).item().isBoolean());
  EXPECT_EQ(counting({2, 3})[1][2].item<float>(), 5);
  EXPECT_TRUE(throws_error([] { ones({2, 3}).item<float>(); }, {"[item]", "6", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { ones({0}).item<float>(); }, {"[item]", "0"}));

  Tensor d = tensor({1.0, 2.0}, kFloat64);
  EXPECT_EQ(d.data_ptr<double>()[1], 2.0);
  EXPECT_EQ(static_cast<void*>(d.data_ptr<double>()), d.data_ptr());
  EXPECT_TRUE(throws_error([&] { d.data_ptr<float>(); }, {"[data_ptr]", "float32", "float64"}));
  EXPECT_TRUE(throws_error([&] { d.data_ptr<int64_t>(); }, {"[data_ptr]", "int64", "float64"}));
  EXPECT_EQ(d.slice(0, 1).data_ptr<double>(), d.data_ptr<double>() + 1);
}

TEST(Access, PrintingShowsValuesAndDtype) {
  std::ostringstream out;
  out << tensor({1.5, -2.25});
  EXPECT_NE(out.str().find("1.5"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("-2.25"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("float32"), std::string::npos) << out.str();
  const std::string ints = counting({2, 3}, kInt64).t().toString();
  EXPECT_NE(ints.find("[[0, 3],"), std::string::npos) << ints;
  EXPECT_NE(ints.find("int64"), std::string::npos) << ints;
  EXPECT_NE(tensor({true, false}).toString().find("true"), std::string::npos);
  EXPECT_NE(scalar_tensor(4.0).toString().find("4"), std::string::npos);
  EXPECT_NE(ones({2}, TensorOptions().requires_grad(true)).toString().find("requires_grad"), std::string::npos);
  EXPECT_NE(zeros({2000}).toString().find("..."), std::string::npos) << "large tensors are summarized";
  EXPECT_NE(Tensor().toString().find("undefined"), std::string::npos);
}

// ---- memory statistics -------------------------------------------------------------------------

TEST(Memory, StatsCountLiveAndPeakBytes) {
  const MemoryStats before = memory_stats();
  {
    Tensor t = empty({1000}, kFloat64);
    const MemoryStats during = memory_stats();
    EXPECT_EQ(during.allocated_bytes - before.allocated_bytes, 8000);
    EXPECT_EQ(during.num_allocations - before.num_allocations, 1);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
    Tensor view = t.t().slice(0, 0, 10);
    EXPECT_EQ(memory_stats().allocated_bytes, during.allocated_bytes) << "views allocate nothing";
  }
  EXPECT_EQ(memory_stats().allocated_bytes, before.allocated_bytes);

  reset_peak_memory_stats();
  EXPECT_EQ(memory_stats().peak_allocated_bytes, memory_stats().allocated_bytes);
  const int64_t base = memory_stats().allocated_bytes;
  { Tensor big = empty({3 << 20}, kFloat32); }  // 12 MiB, gone again
  EXPECT_EQ(memory_stats().allocated_bytes, base);
  EXPECT_EQ(memory_stats().peak_allocated_bytes, base + (int64_t{12} << 20));

  std::vector<float> outside(16);
  Tensor borrowed = from_blob(outside.data(), {16});
  EXPECT_EQ(memory_stats().allocated_bytes, base) << "borrowed memory is not ember's";
}

TEST(Memory, LargeBlocksStartOnHugePageBoundaries) {
  // Blocks of 1 MiB and more are mapped on 2 MiB boundaries (Note [Huge pages for large blocks]);
  // every byte is usable, and blocks returned to the OS by empty_cache() come back as new maps.
  for (int round = 0; round < 2; ++round) {
    for (int64_t bytes : {int64_t{1} << 20, (int64_t{3} << 20) + 5, int64_t{40} << 20}) {
      Tensor t = empty({bytes}, kUInt8);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % (uintptr_t{2} << 20), 0u) << bytes << " bytes";
      uint8_t* data = t.data_ptr<uint8_t>();
      data[0] = 1;
      data[bytes - 1] = 2;
      t.fill_(7);
      EXPECT_EQ(data[0], 7);
      EXPECT_EQ(data[bytes - 1], 7);
    }
    empty_cache();
  }
  Tensor small = empty({1000}, kUInt8);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data_ptr()) % 64, 0u) << "small blocks keep 64-byte alignment";
}

// ---- random numbers ----------------------------------------------------------------------------

// Restores the thread count a test changes.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(get_num_threads()) {}
  ~ThreadCountGuard() { set_num_threads(saved_); }

 private:
  int saved_;
};

std::vector<uint64_t> bit_patterns(const Tensor& t) {
  std::vector<uint64_t> out;
  for (double v : values(t)) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    out.push_back(bits);
  }
  return out;
}

TEST(Random, ManualSeedReproduces) {
  manual_seed(42);
  Tensor a = randn({1000}, kFloat64), b = rand({7}), c = randint(0, 100, {9});
  manual_seed(42);
  EXPECT_EQ(bit_patterns(randn({1000}, kFloat64)), bit_patterns(a));
  EXPECT_EQ(bit_patterns(rand({7})), bit_patterns(b));
  EXPECT_EQ(values(randint(0, 100, {9})), values(c));
  manual_seed(43);
  EXPECT_NE(bit_patterns(randn({1000}, kFloat64)), bit_patterns(a));
  EXPECT_EQ(default_generator().current_seed(), 43u);
}

TEST(Random, SameStreamForAnyThreadCount) {
  ThreadCountGuard guard;
  auto draw = [](int threads) {
    set_num_threads(threads);
    manual_seed(7);
    std::vector<uint64_t> all = bit_patterns(randn({100003}, kFloat64));
    for (uint64_t b : bit_patterns(rand({50000}))) all.push_back(b);
    Tensor d = ones({40000});
    for (uint64_t b : bit_patterns(dropout(d, 0.3, true))) all.push_back(b);
    return all;
  };
  EXPECT_EQ(draw(1), draw(2));
  EXPECT_EQ(draw(1), draw(3));
}

TEST(Random, GeneratorStateRestoresTheStream) {
  Generator& gen = default_generator();
  manual_seed(5);
  rand({10});
  const GeneratorState state = gen.get_state();
  Tensor first = rand({100});
  Tensor second = rand({100});
  EXPECT_NE(bit_patterns(first), bit_patterns(second));
  gen.set_state(state);
  EXPECT_EQ(bit_patterns(rand({100})), bit_patterns(first));
  EXPECT_EQ(bit_patterns(rand({100})), bit_patterns(second));
  EXPECT_EQ(gen.get_state().seed, 5u);
}

TEST(Random, UniformIsInHalfOpenUnitInterval) {
  manual_seed(11);
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto v = values(rand({100000}, dtype));
    const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    EXPECT_GE(lo, 0.0);
    EXPECT_LT(hi, 1.0);
    EXPECT_GT(hi, 0.99);
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    EXPECT_NEAR(mean, 0.5, 0.01);  // standard error 0.0009
  }
  Tensor u = empty({20000}, kFloat64);
  u.uniform_(-3, -1);
  auto v = values(u);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -3.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), -1.0);
  EXPECT_NEAR(std::accumulate(v.begin(), v.end(), 0.0) / v.size(), -2.0, 0.02);
}

void expect_moments(const std::vector<double>& v, double mean, double stddev, double tol) {
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  EXPECT_NEAR(m, mean, tol);
  EXPECT_NEAR(std::sqrt(ss / (v.size() - 1)), stddev, tol);
}

TEST(Random, NormalHasRequestedMoments) {
  manual_seed(12);
  // 1e5 samples: standard errors 0.003 (mean) and 0.002 (std); the bounds are ~5x that.
  expect_moments(values(randn({100000}, kFloat64)), 0, 1, 0.015);
  expect_moments(values(randn({100000}, kFloat32)), 0, 1, 0.015);
  auto v = values(randn({100000}, kFloat64));
  const double within_one = std::count_if(v.begin(), v.end(), [](double x) { return std::abs(x) < 1; });
  EXPECT_NEAR(within_one / v.size(), 0.6827, 0.01);
  Tensor shifted = empty({100000}, kFloat64);
  shifted.normal_(3, 0.5);
  expect_moments(values(shifted), 3, 0.5, 0.01);
  Tensor strided = zeros({400, 500}).t();  // non-contiguous target
  strided.normal_();
  expect_moments(values(strided), 0, 1, 0.02);
}

TEST(Random, RandintAndRandperm) {
  manual_seed(13);
  Tensor r = randint(-2, 3, {10000});
  EXPECT_EQ(r.scalar_type(), kInt64);
  std::set<double> seen;
  for (double v : values(r)) seen.insert(v);
  EXPECT_EQ(seen, (std::set<double>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(randint(5, {3}, kInt32).scalar_type(), kInt32);
  auto p = values(randperm(50));
  std::sort(p.begin(), p.end());
  EXPECT_EQ(p, iota_values(50));
  EXPECT_TRUE(throws_error([] { randint(3, 3, {2}); }, {"[randint]", "3"}));
  EXPECT_TRUE(throws_error([] { rand({2}, kInt64); }, {"[rand]", "int64"}));
}

TEST(Random, BernoulliAndDropout) {
  manual_seed(14);
  auto b = values(bernoulli(zeros({100000}, kFloat64), 0.3));
  EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](double x) { return x == 0 || x == 1; }));
  EXPECT_NEAR(std::accumulate(b.begin(), b.end(), 0.0) / b.size(), 0.3, 0.01);
  EXPECT_TRUE(all_equal(bernoulli(tensor({0.0, 1.0, 0.0, 1.0})), {0, 1, 0, 1}));
  Tensor t = empty({1000});
  t.bernoulli_(1.0);
  EXPECT_TRUE(all_equal(t, std::vector<double>(1000, 1)));
  EXPECT_TRUE(throws_error([] { bernoulli(tensor({0.5, 1.5})); }, {"[bernoulli]", "1.5"}));

  Tensor x = make(uniform_values(100000, 1, 2, 3), {100000}, kFloat32);
  EXPECT_TRUE(dropout(x, 0.4, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  Tensor y = dropout(x, 0.4, true);
  auto xv = values(x), yv = values(y);
  int64_t dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) ++dropped;
    else EXPECT_NEAR(yv[i], xv[i] / 0.6, 1e-5 * xv[i]) << i;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / xv.size(), 0.4, 0.01);
  EXPECT_TRUE(all_equal(dropout(x, 1.0, true), std::vector<double>(100000, 0)));
  EXPECT_TRUE(throws_error([&] { dropout(x, 1.5, true); }, {"[dropout]", "1.5"}));

  // The gradient is the same mask, scaled.
  Tensor leaf = ones({1000}, TensorOptions(kFloat64).requires_grad(true));
  Tensor out = dropout(leaf, 0.5, true);
  out.sum().backward();
  EXPECT_EQ(values(leaf.grad()), values(out));
}

}  // namespace
}  // namespace ember
