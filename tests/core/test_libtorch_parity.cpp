// Calls whose overloads must resolve as libtorch's do (a braced list is a list of dims, never
// `bool unbiased`), IntArrayRef and OptionalIntArrayRef as c10's, irange and the warning
// macros. Expected values are worked out by hand in the comments.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using ember::IntArrayRef;
using ember::Tensor;

std::vector<double> values_of(const Tensor& t) {
  Tensor c = t.to(ember::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// [[1, 2, 3], [4, 6, 8]]: row means 2 and 6, squared deviations 2 and 8; column means 2.5, 4,
// 5.5, squared deviations 4.5, 8, 12.5; overall mean 4, squared deviations 34.
Tensor two_rows() { return ember::tensor({1.0, 2.0, 3.0, 4.0, 6.0, 8.0}, ember::kFloat64).view({2, 3}); }

TEST(LibtorchParity, VarAndStdTakeABracedListAsDims) {
  Tensor x = two_rows();
  EXPECT_EQ(values_of(x.var({1})), (std::vector<double>{2.0 / 2, 8.0 / 2}));
  EXPECT_EQ(values_of(x.std({1})), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(values_of(x.std({-1})), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(values_of(x.var({0})), (std::vector<double>{4.5, 8.0, 12.5}));
  EXPECT_EQ(x.var({1}, /*unbiased=*/false, /*keepdim=*/true).sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_DOUBLE_EQ(x.var({1}, false)[1].item<double>(), 8.0 / 3);
  // Without a list: every element; a bool is `unbiased`, an int a dim (libtorch's int overloads).
  EXPECT_DOUBLE_EQ(x.var().item<double>(), 34.0 / 5);
  EXPECT_DOUBLE_EQ(x.var(false).item<double>(), 34.0 / 6);
  EXPECT_EQ(values_of(x.var(0)), (std::vector<double>{4.5, 8.0, 12.5}));
  EXPECT_EQ(values_of(x.std(1)), (std::vector<double>{1.0, 2.0}));
  EXPECT_DOUBLE_EQ(x.std(true).item<double>(), std::sqrt(34.0 / 5));
}

TEST(LibtorchParity, FreeVarAndStdAndTheirMeans) {
  Tensor x = two_rows();
  EXPECT_EQ(values_of(ember::var(x, 0)), (std::vector<double>{4.5, 8.0, 12.5}));
  EXPECT_EQ(values_of(ember::var(x, {1}, /*unbiased=*/false)), (std::vector<double>{2.0 / 3, 8.0 / 3}));
  EXPECT_DOUBLE_EQ(ember::var(x).item<double>(), 34.0 / 5);
  EXPECT_DOUBLE_EQ(ember::var(x, false).item<double>(), 34.0 / 6);
  EXPECT_EQ(values_of(ember::std(x, 1)), (std::vector<double>{1.0, 2.0}));
  EXPECT_DOUBLE_EQ(ember::std(x, false).item<double>(), std::sqrt(34.0 / 6));
  auto [v, m] = ember::var_mean(x, 0);
  EXPECT_EQ(values_of(v), (std::vector<double>{4.5, 8.0, 12.5}));
  EXPECT_EQ(values_of(m), (std::vector<double>{2.5, 4.0, 5.5}));
  auto [s, row_means] = ember::std_mean(x, {1}, /*unbiased=*/true, /*keepdim=*/true);
  EXPECT_EQ(s.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of(s), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(values_of(row_means), (std::vector<double>{2.0, 6.0}));
  auto [all_var, all_mean] = ember::var_mean(x);
  EXPECT_DOUBLE_EQ(all_var.item<double>(), 34.0 / 5);
  EXPECT_DOUBLE_EQ(all_mean.item<double>(), 4.0);
}

TEST(LibtorchParity, SizesIsAnIntArrayRef) {
  Tensor t = ember::zeros({2, 3, 5});
  static_assert(std::is_same_v<decltype(t.sizes()), IntArrayRef>);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(t.sizes().size(), 3u);
  EXPECT_EQ(t.sizes().front(), 2);
  EXPECT_EQ(t.sizes().back(), 5);
  EXPECT_EQ(t.sizes().slice(1), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t.sizes().slice(1, 1).vec(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(t.sizes().equals({2, 3, 5}));
  EXPECT_FALSE(t.sizes().equals({2, 3}));
  EXPECT_TRUE(t.sizes() == ember::ones({2, 3, 5}).sizes());
  EXPECT_TRUE(t.sizes() != ember::ones({2, 5, 3}).sizes());
  EXPECT_TRUE((std::vector<int64_t>{2, 3, 5}) == t.sizes());
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{15, 5, 1}));
  // It views the tensor's own shape: no copy.
  EXPECT_EQ(t.sizes().data(), t.sizes().data());
  std::ostringstream printed;
  printed << t.sizes();
  EXPECT_EQ(printed.str(), "[2, 3, 5]");
  EXPECT_THROW(IntArrayRef().front(), ember::Error);
  EXPECT_THROW(t.sizes().slice(2, 2), ember::Error);
  EXPECT_THROW(t.sizes().at(3), ember::Error);
}

int64_t first_or_minus_one(ember::OptionalIntArrayRef dims) { return dims.has_value() ? dims.value()[0] : -1; }

TEST(LibtorchParity, OptionalIntArrayRef) {
  EXPECT_EQ(first_or_minus_one(300), 300);
  EXPECT_EQ(first_or_minus_one({400, 1}), 400);
  EXPECT_EQ(first_or_minus_one(std::vector<int64_t>{7}), 7);
  EXPECT_EQ(first_or_minus_one(std::nullopt), -1);
  const std::vector<int64_t> values{1, 2, 3};
  ember::OptionalIntArrayRef present = IntArrayRef(values);
  ember::OptionalIntArrayRef absent = std::nullopt;
  EXPECT_TRUE(present == IntArrayRef({1, 2, 3}));
  EXPECT_FALSE(present == IntArrayRef({1, 2, 4}));
  EXPECT_FALSE(absent == IntArrayRef({1, 2, 3}));
  EXPECT_THROW(absent.value(), ember::Error);
}

TEST(LibtorchParity, TensorMethods) {
  Tensor t = ember::ones({2});
  const Tensor& same = t.set_requires_grad(true);
  EXPECT_TRUE(t.requires_grad());
  EXPECT_TRUE(same.is_same(t));
  t.set_requires_grad(false);
  EXPECT_FALSE(t.requires_grad());

  Tensor a = ember::tensor({1.0, 2.0}, ember::kFloat64);
  // |difference| <= atol + rtol * |other| = 1e-8 + 2e-5 for the second element.
  EXPECT_TRUE(a.allclose(ember::tensor({1.0, 2.0 + 1e-5}, ember::kFloat64)));
  EXPECT_FALSE(a.allclose(ember::tensor({1.0, 2.0 + 1e-4}, ember::kFloat64)));
  EXPECT_TRUE(a.allclose(ember::tensor({1.0, 2.1}, ember::kFloat64), /*rtol=*/0, /*atol=*/0.2));
  EXPECT_TRUE(a.equal(a.clone()));
  EXPECT_FALSE(a.equal(a + 1));
}

TEST(LibtorchParity, FreeAllAndAny) {
  // Rows [1, 0] and [1, 1]: not all non-zero, some non-zero; by row: all [0, 1], any [1, 1].
  Tensor x = ember::tensor({1, 0, 1, 1}).view({2, 2});
  EXPECT_FALSE(ember::all(x).item<bool>());
  EXPECT_TRUE(ember::any(x).item<bool>());
  EXPECT_EQ(values_of(ember::all(x, 1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values_of(ember::any(x, 0)), (std::vector<double>{1, 1}));
  EXPECT_EQ(ember::all(x, 1, /*keepdim=*/true).sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_FALSE(ember::any(ember::zeros({3})).item<bool>());
}

TEST(LibtorchParity, FreeFlatten) {
  Tensor x = ember::arange(24, ember::kFloat64).view({2, 3, 4});
  EXPECT_EQ(ember::flatten(x).sizes(), (std::vector<int64_t>{24}));
  EXPECT_EQ(ember::flatten(x, 1).sizes(), (std::vector<int64_t>{2, 12}));
  Tensor merged = ember::flatten(x, 0, 1);
  EXPECT_EQ(merged.sizes(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(merged[5][3].item<double>(), 23.0);  // row 5 = (1, 2): 12 + 2 * 4 + 3
}

TEST(LibtorchParity, RepeatInterleaveOfCounts) {
  // Index i repeated counts[i] times.
  for (auto dtype : {ember::kInt64, ember::kInt32}) {
    Tensor index = ember::repeat_interleave(ember::tensor({2, 0, 3}, dtype));
    EXPECT_EQ(index.scalar_type(), ember::kInt64);
    EXPECT_EQ(values_of(index), (std::vector<double>{0, 0, 2, 2, 2}));
  }
}

TEST(LibtorchParity, Irange) {
  std::vector<size_t> counted;
  for (const auto i : ember::irange(std::vector<int>(3).size())) {
    static_assert(std::is_same_v<std::decay_t<decltype(i)>, size_t>);
    counted.push_back(i);
  }
  EXPECT_EQ(counted, (std::vector<size_t>{0, 1, 2}));
  std::vector<int64_t> from_two;
  for (const auto i : ember::irange(2, int64_t{5})) from_two.push_back(i);
  EXPECT_EQ(from_two, (std::vector<int64_t>{2, 3, 4}));
  int steps = 0;
  for ([[maybe_unused]] const auto i : ember::irange(5, 2)) ++steps;
  EXPECT_EQ(steps, 0);
}

void warn_once() { EMBER_WARN_ONCE("warned once: ", 1); }
void warn_each_time(int n) { EMBER_WARN("warned ", n); }

int occurrences(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

TEST(LibtorchParity, Warnings) {
  std::ostringstream captured;
  std::streambuf* previous = std::cerr.rdbuf(captured.rdbuf());
  warn_once();
  warn_once();
  for (int i = 0; i < 3; ++i) warn_each_time(7);
  std::cerr.rdbuf(previous);
  EXPECT_EQ(occurrences(captured.str(), "Warning: warned once: 1 ("), 1);
  EXPECT_EQ(occurrences(captured.str(), "Warning: warned 7 ("), 3);
  EXPECT_NE(captured.str().find("test_libtorch_parity.cpp:"), std::string::npos);
}

TEST(LibtorchParity, TensorOptionsDefaultsLayoutAndPrinting) {
  const ember::TensorOptions options;
  EXPECT_EQ(options.dtype(), ember::kFloat);
  EXPECT_FALSE(options.has_dtype());
  EXPECT_TRUE(options.layout() == ember::kStrided);
  EXPECT_TRUE(ember::empty({2}).layout() == ember::kStrided);
  std::ostringstream printed;
  printed << options;
  EXPECT_EQ(printed.str(),
            "TensorOptions(dtype=float (default), device=cpu (default), layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))");
  std::ostringstream named;
  named << ember::dtype(ember::kFloat64).requires_grad(true);
  EXPECT_NE(named.str().find("dtype=double, "), std::string::npos);
  EXPECT_NE(named.str().find("requires_grad=true, "), std::string::npos);
  // ScalarTypes print libtorch's names; TypeMeta the C++ type's.
  std::ostringstream names;
  names << ember::kFloat << ' ' << ember::kDouble << ' ' << ember::kLong << ' ' << ember::kInt << ' ' << ember::kByte
        << ' ' << ember::kChar << ' ' << ember::kBool << ' ' << ember::kHalf << ' ' << ember::TypeMeta::Make<int64_t>();
  EXPECT_EQ(names.str(), "Float Double Long Int Byte Char Bool Half long int");
}

TEST(LibtorchParity, AssigningToATemporaryWritesIntoIt) {
  Tensor x = ember::zeros({2, 2}, ember::kInt64);
  x[0][1] = 5;
  x[1] = ember::tensor({7, 8});
  Tensor y = x;  // a named tensor rebinds
  y = ember::ones({1});
  EXPECT_EQ(values_of(x), (std::vector<double>{0, 5, 7, 8}));
  EXPECT_EQ(y.numel(), 1);
}

TEST(LibtorchParity, TensorAutogradAccessors) {
  Tensor x = ember::tensor({5.0}, ember::TensorOptions().requires_grad(true));
  Tensor y = x * x;
  EXPECT_EQ(x.output_nr(), 0u);
  EXPECT_EQ(y.output_nr(), 0u);
  // unbind's outputs are one node's outputs 0, 1, 2.
  auto rows = ember::ones({3, 2}, ember::TensorOptions().requires_grad(true)).unbind(0);
  EXPECT_EQ(rows[2].output_nr(), 2u);
  Tensor data = y.data();
  EXPECT_FALSE(data.requires_grad());
  EXPECT_EQ(data.data_ptr(), y.data_ptr());
  // to() takes no requires_grad(true) (libtorch's check); requires_grad(false) is accepted.
  EXPECT_THROW(x.to(ember::TensorOptions().requires_grad(true)), ember::Error);
  EXPECT_NO_THROW(x.to(ember::TensorOptions().requires_grad(false)));
}

TEST(LibtorchParity, EmptyTensorsAreContiguous) {
  Tensor z = ember::randn({2, 3, 4, 5}).select(3, 1).slice(1, 1, 1);
  EXPECT_EQ(z.sizes(), (std::vector<int64_t>{2, 0, 4}));
  EXPECT_EQ(z.strides(), (std::vector<int64_t>{60, 20, 5}));
  EXPECT_TRUE(z.is_contiguous());
}

TEST(LibtorchParity, FromBlobDataPtrContext) {
  std::vector<double> v = {1.0, 2.0};
  Tensor borrowed = ember::from_blob(v.data(), {2}, ember::kFloat64);
  EXPECT_EQ(borrowed.storage().data_ptr().get(), v.data());
  EXPECT_EQ(borrowed.storage().data_ptr().get_context(), nullptr);
  Tensor owned = ember::ones({2});
  EXPECT_NE(owned.storage().data_ptr().get_context(), nullptr);
}

}  // namespace
