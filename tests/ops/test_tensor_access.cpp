// Tensor::accessor / packed accessors against element reads straight from storage, nested
// initializer lists in ember::tensor against hand-written values, and the list form of
// index_put_ (accumulate) against plain loops.
#include <gtest/gtest.h>

#include <utility>

#include "ops/reduce_reference.h"

namespace ember {
namespace {

using namespace testutil;
using Sizes = std::vector<int64_t>;

template <typename T>
constexpr bool accessor_callable = requires { std::declval<T>().template accessor<float, 1>(); };
static_assert(accessor_callable<Tensor&>);
static_assert(!accessor_callable<Tensor>, "accessor on a temporary is deleted, as in libtorch");

// ---- accessor ---------------------------------------------------------------------------

TEST(Accessor, ReadsAndWritesThroughTheStrides) {
  // A transposed, sliced view: strides (1, 5) and an offset.
  const Tensor base = make(uniform_values(20, -1, 1, 3), {4, 5}, kFloat32);
  const Tensor view = base.t().slice(0, 1, 4);  // [3, 4]
  auto a = view.accessor<float, 2>();
  EXPECT_EQ(a.size(0), 3);
  EXPECT_EQ(a.size(1), 4);
  EXPECT_EQ(a.stride(0), 1);
  EXPECT_EQ(a.stride(1), 5);
  EXPECT_EQ(a.sizes().vec(), (Sizes{3, 4}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(a[i][j], element(view, i * 4 + j)) << i << "," << j;
  a[2][3] = 42.0f;
  EXPECT_EQ(element(base, 3 * 5 + 3), 42.0);  // view[2][3] is base[3][3]

  const Tensor cube = arange(24, kInt64).view({2, 3, 4});
  auto c = cube.accessor<int64_t, 3>();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(c[i / 12][(i / 4) % 3][i % 4], i);
  auto row = c[1][2];  // TensorAccessor<int64_t, 1>
  EXPECT_EQ(row.size(0), 4);
  EXPECT_EQ(row[3], 23);
}

TEST(Accessor, ConstCorrect) {
  const Tensor x = arange(6, kFloat64).view({2, 3});
  auto read_only = x.accessor<const double, 2>();
  static_assert(std::is_same_v<decltype(read_only[0][0]), const double&>);
  EXPECT_EQ(read_only[1][2], 5.0);
  const auto writable = x.accessor<double, 2>();
  static_assert(std::is_same_v<decltype(writable[0][0]), const double&>, "a const accessor gives const elements");
  static_assert(std::is_same_v<decltype(x.accessor<double, 2>()[0][0]), double&>);
}

TEST(Accessor, PackedAccessorsCopyTheGeometry) {
  const Tensor x = make(uniform_values(24, -1, 1, 9), {2, 3, 4}, kFloat32).permute({2, 0, 1});  // [4, 2, 3]
  auto packed = x.packed_accessor64<float, 3>();
  auto packed32 = x.packed_accessor32<float, 3>();
  for (int64_t d = 0; d < 3; ++d) {
    EXPECT_EQ(packed.size(d), x.size(d));
    EXPECT_EQ(packed.stride(d), x.stride(d));
    EXPECT_EQ(packed32.size(static_cast<int32_t>(d)), x.size(d));
  }
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t a = i / 6, b = (i / 3) % 2, c = i % 3;
    EXPECT_EQ(packed[a][b][c], element(x, i));
    EXPECT_EQ(packed32[static_cast<int32_t>(a)][static_cast<int32_t>(b)][static_cast<int32_t>(c)], element(x, i));
  }
  const Tensor vector = arange(5, kFloat32);
  EXPECT_EQ((vector.packed_accessor64<float, 1>()[4]), 4.0f);
}

TEST(Accessor, Errors) {
  const Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { x.accessor<double, 2>(); }, {"[accessor]", "expected dtype float64", "float32"}));
  EXPECT_TRUE(throws_error([&] { x.accessor<float, 3>(); }, {"[accessor]", "expected 3 dims but tensor has 2",
                                                            "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { x.packed_accessor64<int64_t, 2>(); }, {"[packed_accessor]", "int64"}));
  // 2^32 elements (a broadcast view of one value) do not fit 32-bit indices.
  const Tensor huge = zeros({1, 1}).expand({int64_t{1} << 16, int64_t{1} << 16});
  EXPECT_TRUE(throws_error([&] { huge.packed_accessor32<float, 2>(); }, {"[packed_accessor32]", "4294967296"}));
  EXPECT_EQ((huge.packed_accessor64<float, 2>().size(0)), int64_t{1} << 16);
}

// ---- nested initializer lists -------------------------------------------------------------

TEST(NestedTensor, ShapesDtypesAndValues) {
  const Tensor a = tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(a.sizes(), (Sizes{2, 2}));
  EXPECT_EQ(a.scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(a, {1, 2, 3, 4}));

  const Tensor b = tensor({{1.5, 2.5, 3.5}, {4.5, 5.5, 6.5}});
  EXPECT_EQ(b.sizes(), (Sizes{2, 3}));
  EXPECT_EQ(b.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(b, {1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));

  const Tensor c = tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}, {{9, 10}, {11, 12}}}, kFloat64);
  EXPECT_EQ(c.sizes(), (Sizes{3, 2, 2}));
  EXPECT_EQ(c.scalar_type(), kFloat64);
  EXPECT_TRUE(all_equal(c, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));

  const Tensor d = tensor({{true, false}, {false, true}});
  EXPECT_EQ(d.scalar_type(), kBool);
  EXPECT_TRUE(all_equal(d, {1, 0, 0, 1}));

  const Tensor e = tensor({{1.0f}, {2.0f}});
  EXPECT_EQ(e.sizes(), (Sizes{2, 1}));
  EXPECT_EQ(e.scalar_type(), kFloat32);

  const Tensor f = tensor({{int64_t{1} << 40, int64_t{2}}}, kInt64);  // int64 values beyond float64's 2^53 stay exact
  EXPECT_EQ(f.index({0, 0}).item<int64_t>(), int64_t{1} << 40);
  const Tensor big = tensor({(int64_t{1} << 62) + 1});
  EXPECT_EQ(big.index({0}).item<int64_t>(), (int64_t{1} << 62) + 1);

  const Tensor empty_rows = tensor({{}, {}});
  EXPECT_EQ(empty_rows.sizes(), (Sizes{2, 0}));
  EXPECT_EQ(empty_rows.scalar_type(), kFloat32);

  const Tensor grad_leaf = tensor({{1.0, 2.0}}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(grad_leaf.requires_grad());
  EXPECT_TRUE(grad_leaf.is_leaf());
}

TEST(NestedTensor, OneLevelAndScalarsKeepTheirMeaning) {
  EXPECT_EQ(tensor({1, 2, 3}).sizes(), (Sizes{3}));
  EXPECT_EQ(tensor({1, 2, 3}).scalar_type(), kInt64);
  EXPECT_EQ(tensor({5}).sizes(), (Sizes{1}));
  EXPECT_EQ(tensor({1.0}).scalar_type(), kFloat32);
  EXPECT_EQ(tensor({1.0, 2.0}, kFloat64).scalar_type(), kFloat64);
  EXPECT_EQ(tensor(2.5).dim(), 0);
  EXPECT_EQ(tensor(2.5).scalar_type(), kFloat32);
  EXPECT_EQ(tensor(7).scalar_type(), kInt64);
  EXPECT_EQ(tensor(7).item<int64_t>(), 7);
  EXPECT_EQ(tensor(true).scalar_type(), kBool);
  EXPECT_EQ(tensor(int64_t{7}, kFloat64).scalar_type(), kFloat64);
  EXPECT_EQ(tensor(std::vector<double>{1, 2}).scalar_type(), kFloat32);
}

TEST(NestedTensor, RaggedListsAndMixedTypesAreErrors) {
  // libtorch's checks and messages: every list's elements have one shape and one C++ type.
  EXPECT_TRUE(throws_error([] { tensor({{1, 2}, {3}}); },
                           {"[tensor]", "Expected all sub-lists to have sizes: 2 (e.g. {1, 2}), but got sub-list {3} "
                                        "with sizes: 1"}));
  EXPECT_TRUE(throws_error([] { tensor({{1, 2}, 3}); }, {"[tensor]", "sizes: 2 (e.g. {1, 2})", "sub-list 3"}));
  EXPECT_TRUE(throws_error([] { tensor({1, {2, 3}}); }, {"[tensor]", "(e.g. 1)", "sub-list {2, 3} with sizes: 2"}));
  EXPECT_TRUE(throws_error([] { tensor({{{1}, {2}}, {{3}, {4, 5}}}); },
                           {"[tensor]", "sizes: 1 (e.g. {3}), but got sub-list {4, 5} with sizes: 2"}));
  EXPECT_TRUE(throws_error([] { tensor({{1, 2.5}, {3, 4}}); },
                           {"[tensor]", "Expected all elements of the tensor to have the same scalar type: Int, but got "
                                        "element of scalar type: Double"}));
  EXPECT_TRUE(throws_error([] { tensor({{true}, {2}}); }, {"same scalar type: Bool", "scalar type: Int"}));
}

TEST(NestedTensor, DefaultDtypeAndSources) {
  // Floating values take the default dtype; int and int64 values int64; others their own.
  const TypeMeta before = get_default_dtype();
  EXPECT_EQ(before, kFloat32);
  set_default_dtype(TypeMeta::Make<double>());
  EXPECT_EQ(get_default_dtype_as_scalartype(), kFloat64);
  EXPECT_EQ(tensor({1.5f, 2.5f}).scalar_type(), kFloat64);
  EXPECT_EQ(tensor(2.5).scalar_type(), kFloat64);
  EXPECT_EQ(tensor(std::vector<float>{1, 2}).scalar_type(), kFloat64);
  EXPECT_EQ(tensor({{}, {}}).scalar_type(), kFloat64);
  EXPECT_EQ(tensor({1, 2}).scalar_type(), kInt64);
  EXPECT_EQ(TensorOptions().dtype(), kFloat64);
  EXPECT_EQ(ones({2}).scalar_type(), kFloat64);
  EXPECT_EQ(arange(0., 3).scalar_type(), kFloat64);
  EXPECT_EQ(arange(0, 3).scalar_type(), kInt64);
  EXPECT_EQ((arange(0, 3) * 0.5).scalar_type(), kFloat64);
  set_default_dtype(before);
  EXPECT_EQ(ones({2}).scalar_type(), kFloat32);

  // ArrayRef and std::vector sources of every C++ element type, as one list level.
  const std::vector<int> ints = {1, 2, 3};
  EXPECT_EQ(tensor(ArrayRef<int>(ints)).scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(tensor(ArrayRef<int>(ints)), {1, 2, 3}));
  EXPECT_EQ(tensor(std::vector<bool>{true, false, true}).scalar_type(), kBool);
  EXPECT_TRUE(all_equal(tensor(std::vector<bool>{true, false, true}), {1, 0, 1}));
  EXPECT_EQ(tensor(std::vector<uint8_t>{7, 255}).scalar_type(), kUInt8);
  EXPECT_TRUE(all_equal(tensor(std::vector<uint8_t>{7, 255}), {7, 255}));
  const std::vector<double> halves = {0.5, 1.5};
  EXPECT_TRUE(all_equal(tensor(ArrayRef<double>(halves), kFloat64), {0.5, 1.5}));
  EXPECT_EQ(tensor(std::vector<int>()).sizes(), (Sizes{0}));
  // Values convert to a named dtype as C++ casts do.
  EXPECT_TRUE(all_equal(tensor({1.9, -2.9}, kInt32), {1, -2}));
  EXPECT_TRUE(all_equal(tensor({0.5, 0.0}, kBool), {1, 0}));
}

TEST(NestedTensor, ContainerAccessorsAndPrinting) {
  const detail::TensorDataContainer nested({{1, 2}, {3, 4}});
  EXPECT_TRUE(nested.is_init_list());
  EXPECT_EQ(nested.sizes(), (Sizes{2, 2}));
  EXPECT_EQ(nested.scalar_type(), kInt32);
  EXPECT_EQ(str(nested), "{{1, 2}, {3, 4}}");
  EXPECT_EQ(str(detail::TensorDataContainer(1.1)), "1.1");
  EXPECT_EQ(str(detail::TensorDataContainer({{{}}})), "{{{}}}");
  EXPECT_EQ(str(detail::TensorDataContainer(std::vector<double>{1.1, 2.2})), "{1.1, 2.2}");
  EXPECT_TRUE(throws_error([] { detail::TensorDataContainer(1.1).init_list(); },
                           {"Can only call `init_list()` on a TensorDataContainer that has `is_init_list() == true`"}));
  EXPECT_TRUE(throws_error([&] { nested.scalar(); }, {"Can only call `scalar()`"}));
  EXPECT_TRUE(throws_error([&] { nested.tensor(); }, {"Can only call `tensor()`"}));
}

// ---- index_put_ (list form) --------------------------------------------------------------------

TEST(IndexPutList, AccumulateAddsRepeatedPositions) {
  Tensor x = zeros({5}, kFloat64);
  x.index_put_({tensor({0, 2, 0, 4, 0})}, tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64), true);
  EXPECT_TRUE(all_equal(x, {9, 0, 2, 0, 4}));

  Tensor y = zeros({5}, kFloat64);
  y.index_put_({tensor({3, 1})}, tensor({7.0, 8.0}, kFloat64), false);
  EXPECT_TRUE(all_equal(y, {0, 8, 0, 7, 0}));

  // Two index tensors: positions (0, 1), (2, 3), (0, 1); a broadcast value.
  Tensor m = ones({3, 4}, kFloat64);
  m.index_put_({tensor({0, 2, 0}), tensor({1, 3, 1})}, tensor(1.5, kFloat64), true);
  std::vector<double> expected(12, 1.0);
  expected[1] += 3.0;
  expected[11] += 1.5;
  EXPECT_TRUE(all_equal(m, expected));
}

TEST(IndexPutList, NulloptKeepsAWholeDim) {
  // m[:, [0, 0, 3]] += v, v [3, 3]: column 0 gets v[:, 0] + v[:, 1], column 3 gets v[:, 2].
  const Tensor v = make(uniform_values(9, -1, 1, 4), {3, 3}, kFloat64);
  const Tensor m = zeros({3, 4}, kFloat64);
  const Tensor out = index_put(m, {std::nullopt, tensor({0, 0, 3})}, v, true);
  std::vector<double> expected(12, 0.0);
  const auto vv = values(v);
  for (int r = 0; r < 3; ++r) {
    expected[r * 4 + 0] = vv[r * 3 + 0] + vv[r * 3 + 1];
    expected[r * 4 + 3] = vv[r * 3 + 2];
  }
  EXPECT_TRUE(all_close(out, expected));
  EXPECT_TRUE(all_equal(m, std::vector<double>(12, 0.0)));  // the out-of-place form leaves self alone

  // The same list reads with index(): nullopt keeps dim 0, the tensor picks columns 3 and 0.
  const Tensor picked = out.index(std::vector<std::optional<Tensor>>{std::nullopt, tensor({3, 0})});
  EXPECT_EQ(picked.sizes(), (Sizes{3, 2}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(element(picked, r * 2), expected[r * 4 + 3]);
    EXPECT_EQ(element(picked, r * 2 + 1), expected[r * 4 + 0]);
  }

  // A bool mask selects rows.
  const Tensor rows = m.index_put({tensor({true, false, true})}, tensor(2.0, kFloat64));
  EXPECT_TRUE(all_equal(rows, {2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2}));
}

TEST(IndexPutList, AccumulateIsSerialOrderBitwise) {
  // Many float32 values onto few positions: the sums must equal a serial loop's, in index order.
  const int64_t n = 20000, positions = 7;
  const auto raw_values = uniform_values(n, -1, 1, 17);
  const auto raw_index = integer_values(n, 0, static_cast<int>(positions - 1), 18);
  const Tensor values_t = make(raw_values, {n}, kFloat32);
  const Tensor index = make(raw_index, {n}, kInt64);
  std::vector<float> serial(positions, 0.0f);
  for (int64_t i = 0; i < n; ++i) serial[static_cast<size_t>(raw_index[i])] += static_cast<float>(raw_values[i]);
  Tensor x = zeros({positions});
  x.index_put_({index}, values_t, true);
  EXPECT_TRUE(all_equal(x, std::vector<double>(serial.begin(), serial.end())));
}

TEST(IndexPutList, Gradcheck) {
  const Tensor index = tensor({0, 2, 0, 1});
  auto fn = [&](const std::vector<Tensor>& in) { return in[0].index_put({index}, in[1], true) * in[0]; };
  std::vector<Tensor> inputs = {make(uniform_values(12, -1, 1, 5), {3, 4}, kFloat64).requires_grad_(true),
                                make(uniform_values(16, -1, 1, 6), {4, 4}, kFloat64).requires_grad_(true)};
  EXPECT_TRUE(gradients_match(fn, inputs));
}

TEST(IndexPutList, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { x.index_put_({tensor({0, 1})}, zeros({3, 4}), true); },
                           {"[index_put_]", "[2, 4]", "[3, 4]", "cannot be broadcast"}));
  EXPECT_TRUE(throws_error([&] { x.index_put_({tensor({0, 7})}, zeros({4}), true); },
                           {"[index_put_]", "index 7 is out of bounds for dimension with size 3"}));
  EXPECT_TRUE(throws_error([&] { x.index_put_({tensor({0.5})}, zeros({4}), true); },
                           {"[index_put_]", "long, int, byte or bool", "float32"}));
  EXPECT_TRUE(throws_error([&] { x.index_put_({std::nullopt, std::nullopt, tensor({0})}, zeros({1}), true); },
                           {"[index_put_]", "too many indices"}));
}

}  // namespace
}  // namespace ember
