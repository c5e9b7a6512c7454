// Reductions against float64 references computed here by plain loops: sum, mean, prod,
// amax/amin, any/all, max/min with indices, argmax/argmin, var/std, norm and logsumexp,
// over dtypes, dim sets, keepdim, non-contiguous and empty inputs, with their errors and
// gradients (gradcheck in float64, plus hand-derived values at ties and zeros).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/reduce_reference.h"

namespace ember {
namespace {

using namespace testutil;

// Dim sets: single, negative, all (empty list), adjacent, non-adjacent, size-1 dims, and
// long dims that take the strided-columns path.
struct DimCase {
  std::vector<int64_t> sizes;
  std::vector<int64_t> dims;
};
const std::vector<DimCase> kDimCases = {
    {{5, 7}, {0}},       {{5, 7}, {1}},          {{5, 7}, {}},     {{5, 7}, {0, 1}},     {{3, 4, 5}, {0, 2}},
    {{3, 4, 5}, {-1}},   {{3, 4, 5}, {1, 2}},    {{3, 1, 5}, {1}}, {{2, 3, 4, 5}, {1, 3}}, {{70, 3}, {0}},
    {{2, 300}, {1}},     {{4}, {0}},
};

std::string describe(const DimCase& c, InputLayout layout, bool keepdim, ScalarType dtype) {
  std::ostringstream out;
  out << dtype_name(dtype) << " shape " << IntArrayRef(c.sizes) << " dims " << IntArrayRef(c.dims) << " "
      << layout_name(layout) << " keepdim=" << keepdim;
  return out.str();
}

using CaseFn = std::function<void(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                  const std::string& what)>;

// Calls check for every dim case, layout and keepdim, with values from `fill`.
void for_each_case(ScalarType dtype, const std::function<std::vector<double>(int64_t n)>& fill, const CaseFn& check) {
  for (const DimCase& c : kDimCases)
    for (InputLayout layout : kLayouts)
      for (bool keepdim : {false, true}) {
        Tensor x = make_layout(fill(count_of(c.sizes)), c.sizes, dtype, layout);
        check(x, c.dims, keepdim, describe(c, layout, keepdim, dtype));
      }
}

std::vector<double> signed_values(int64_t n) { return uniform_values(n, -2, 2, 7); }
std::vector<double> small_integers(int64_t n) { return integer_values(n, -4, 4, 11); }

// Compares with the reference rounded to the output dtype (so overflow to inf is expected).
void expect_reduction(const Tensor& actual, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                      const std::function<double(const Slice&)>& f, ScalarType dtype, Tolerance tol,
                      const std::string& what) {
  EXPECT_EQ(actual.scalar_type(), dtype) << what;
  EXPECT_EQ(actual.sizes(), reduced_shape(x, dims, keepdim)) << what;
  std::vector<double> expected = reduce_reference(x, dims, keepdim, f);
  for (double& e : expected) e = round_to(dtype, e);
  EXPECT_TRUE(all_close(actual, expected, tol)) << what;
}

// ---- sum, mean ----------------------------------------------------------------------------

TEST(Reduce, SumMatchesReferenceForFloats) {
  for (ScalarType dtype : kFloatTypes)
    for_each_case(dtype, signed_values, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                            const std::string& what) {
      expect_reduction(x.sum(dims, keepdim), x, dims, keepdim, ref_sum, dtype, tolerance(dtype), what);
    });
}

TEST(Reduce, SumOfIntegersAndBoolAccumulatesInInt64) {
  for (ScalarType dtype : {kInt32, kInt64, kInt8, kUInt8, kBool}) {
    auto fill = [dtype](int64_t n) { return dtype == kBool || dtype == kUInt8 ? integer_values(n, 0, 1, 3) : small_integers(n); };
    for_each_case(dtype, fill, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                   const std::string& what) {
      expect_reduction(x.sum(dims, keepdim), x, dims, keepdim, ref_sum, kInt64, {0, 0}, what);
    });
  }
}

TEST(Reduce, SumWithDtypeAndFullReduction) {
  Tensor x = make(signed_values(12), {3, 4}, kFloat32);
  Tensor total = x.sum(kFloat64);
  EXPECT_EQ(total.scalar_type(), kFloat64);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_TRUE(all_close(total, {ref_sum(values(x))}));
  Tensor int8_values = make({100, 100, 100}, {3}, kInt8);
  EXPECT_TRUE(all_equal(int8_values.sum(), {300}));  // int64 accumulation, no int8 overflow
}

TEST(Reduce, SumOfLongRowsCrossesChunkBoundaries) {
  // 200003 elements: several 65536-element chunks, combined in order, and a long column.
  Tensor row = make(uniform_values(200003, -1, 1, 5), {200003}, kFloat32);
  EXPECT_TRUE(all_close(row.sum(), {ref_sum(values(row))}, {1e-6, 1e-6}));
  Tensor columns = make(uniform_values(100003 * 3, -1, 1, 6), {100003, 3}, kFloat32);
  EXPECT_TRUE(all_close(columns.sum(0), reduce_reference(columns, {0}, false, ref_sum), {1e-6, 1e-6}));
}

TEST(Reduce, SumAndMeanOfEmptyTensors) {
  Tensor x = zeros({0, 3});
  EXPECT_EQ(x.sum(0).sizes(), std::vector<int64_t>({3}));
  EXPECT_TRUE(all_equal(x.sum(0), {0, 0, 0}));
  EXPECT_EQ(x.sum(1).sizes(), std::vector<int64_t>({0}));
  EXPECT_TRUE(all_equal(x.sum(), {0}));
  EXPECT_TRUE(all_equal(x.mean(0), {kNaN, kNaN, kNaN}));
  EXPECT_TRUE(all_equal(ones({2, 0}).prod(1), {1, 1}));
}

TEST(Reduce, MeanMatchesReference) {
  for (ScalarType dtype : kFloatTypes)
    for_each_case(dtype, signed_values, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                            const std::string& what) {
      expect_reduction(x.mean(dims, keepdim), x, dims, keepdim, ref_mean, dtype, tolerance(dtype), what);
    });
  Tensor ints = make({1, 2, 4}, {3}, kInt64);
  EXPECT_TRUE(all_close(ints.mean(0, false, kFloat64), {7.0 / 3}));
}

TEST(Reduce, SumAndMeanGradients) {
  Tensor x = make(signed_values(24), {2, 3, 4}, kFloat64);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {0, 2}, {}})
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.sum(dims, keepdim); }, float64_leaf(x))) << "sum";
      EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.mean(dims, keepdim); }, float64_leaf(x))) << "mean";
    }
  EXPECT_TRUE(gradients_match([](const Tensor& t) { return t.sum(); },
                              float64_leaf(make(signed_values(6), {2, 3}, kFloat64).t())))
      << "sum full";
}

// ---- prod -------------------------------------------------------------------------------

double ref_prod(const Slice& s) {
  double p = 1;
  for (double v : s) p *= v;
  return p;
}

TEST(Reduce, ProdMatchesReference) {
  for (ScalarType dtype : kFloatTypes) {
    for (const DimCase& c : kDimCases) {
      if (c.dims.size() != 1) continue;  // prod takes one dim
      for (InputLayout layout : kLayouts)
        for (bool keepdim : {false, true}) {
          Tensor x = make_layout(uniform_values(count_of(c.sizes), 0.5, 1.5, 9), c.sizes, dtype, layout);
          expect_reduction(x.prod(c.dims[0], keepdim), x, c.dims, keepdim, ref_prod, dtype, tolerance(dtype),
                           describe(c, layout, keepdim, dtype));
        }
    }
  }
  Tensor ints = make({2, -3, 4}, {3}, kInt32);
  EXPECT_EQ(ints.prod().scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(ints.prod(), {-24}));
}

TEST(Reduce, ProdGradientWithNoOneAndTwoZerosInASlice) {
  // Rows: no zero, one zero, two zeros. d prod / d x_i is the product of the other elements.
  Tensor x = make({1, 2, 3, 4, 2, 0, 3, 4, 0, 5, 0, 2}, {3, 4}, kFloat64);
  Tensor grad = grad_of_sum([](const Tensor& t) { return t.prod(1); }, x);
  EXPECT_TRUE(all_close(grad, {24, 12, 8, 6, 0, 24, 0, 0, 0, 0, 0, 0}));
  // prod is linear in each element, so central differences are exact even at zeros.
  for (bool keepdim : {false, true}) {
    EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.prod(1, keepdim); }, float64_leaf(x)))
        << "prod with zeros";
    EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.prod(0, keepdim); }, float64_leaf(x.t())))
        << "prod transposed";
  }
  EXPECT_TRUE(
      gradients_match([](const Tensor& t) { return t.prod(); }, float64_leaf(make({2, 0, 3, 4}, {4}, kFloat64))))
      << "prod full, one zero";
  EXPECT_TRUE(
      gradients_match([](const Tensor& t) { return t.prod(); }, float64_leaf(make({2, 0, 3, 0}, {4}, kFloat64))))
      << "prod full, two zeros";
}

// ---- amax, amin ---------------------------------------------------------------------------

double ref_max(const Slice& s) {
  double m = -kInf;
  for (double v : s) {
    if (std::isnan(v)) return v;
    m = std::max(m, v);
  }
  return m;
}

double ref_min(const Slice& s) {
  double m = kInf;
  for (double v : s) {
    if (std::isnan(v)) return v;
    m = std::min(m, v);
  }
  return m;
}

TEST(Reduce, AmaxAminMatchReference) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64}) {
    auto fill = [dtype](int64_t n) { return is_floating_point(dtype) ? signed_values(n) : small_integers(n); };
    for_each_case(dtype, fill, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                   const std::string& what) {
      expect_reduction(x.amax(dims, keepdim), x, dims, keepdim, ref_max, dtype, {0, 0}, what);
      expect_reduction(x.amin(dims, keepdim), x, dims, keepdim, ref_min, dtype, {0, 0}, what);
    });
  }
}

TEST(Reduce, AmaxPropagatesNaNAndSplitsTiedGradients) {
  Tensor x = make({1, kNaN, 3, 2, 5, 5}, {2, 3}, kFloat32);
  EXPECT_TRUE(all_equal(x.amax(1), {kNaN, 5}));
  EXPECT_TRUE(all_equal(x.amin(1), {kNaN, 2}));
  EXPECT_TRUE(all_equal(x.max(), {kNaN}));
  Tensor tied = make({1, 3, 3, 2, 0, 0}, {2, 3}, kFloat64);
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.amax(1); }, tied), {0, 0.5, 0.5, 1, 0, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.amin(1); }, tied), {1, 0, 0, 0, 0.5, 0.5}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.max(); }, tied), {0, 0.5, 0.5, 0, 0, 0}));
  EXPECT_TRUE(gradients_match(
      [](const Tensor& t) {
        return t.amax({0, 2});
      },
      float64_leaf(make(signed_values(24), {2, 3, 4}, kFloat64))))
      << "amax";
  EXPECT_TRUE(gradients_match([](const Tensor& t) { return t.amin(1, true); },
                              float64_leaf(make(signed_values(24), {2, 3, 4}, kFloat64))))
      << "amin";
}

TEST(Reduce, AmaxOfEmptyDimThrows) {
  EXPECT_TRUE(throws_error([] { zeros({2, 0}).amax(1); }, {"[amax]", "identity"}));
  EXPECT_TRUE(throws_error([] { zeros({0}).min(); }, {"[min]"}));
  EXPECT_EQ(zeros({0, 3}).amax(1).sizes(), std::vector<int64_t>({0}));
}

// ---- any, all ---------------------------------------------------------------------------

TEST(Reduce, AnyAllMatchReference) {
  auto any = [](const Slice& s) { return static_cast<double>(std::any_of(s.begin(), s.end(), [](double v) { return v != 0; })); };
  auto all = [](const Slice& s) { return static_cast<double>(std::all_of(s.begin(), s.end(), [](double v) { return v != 0; })); };
  for (ScalarType dtype : {kBool, kInt32, kFloat32, kBFloat16}) {
    // Mostly zeros, so both answers occur.
    auto fill = [](int64_t n) {
      std::vector<double> v = integer_values(n, 0, 3, 13);
      for (double& x : v) x = x == 3 ? 1 : 0;
      return v;
    };
    auto fill_ones = [](int64_t n) {
      std::vector<double> v = integer_values(n, 0, 9, 17);
      for (double& x : v) x = x == 0 ? 0 : 2;
      return v;
    };
    for (const auto& values_for : {std::function<std::vector<double>(int64_t)>(fill), std::function<std::vector<double>(int64_t)>(fill_ones)})
      for (const DimCase& c : kDimCases) {
        if (c.dims.size() != 1) continue;
        for (InputLayout layout : kLayouts) {
          Tensor x = make_layout(values_for(count_of(c.sizes)), c.sizes, dtype, layout);
          const std::string what = describe(c, layout, false, dtype);
          expect_reduction(x.any(c.dims[0]), x, c.dims, false, any, kBool, {0, 0}, what);
          expect_reduction(x.all(c.dims[0], true), x, c.dims, true, all, kBool, {0, 0}, what);
          expect_reduction(x.any(), x, {}, false, any, kBool, {0, 0}, what);
          expect_reduction(x.all(), x, {}, false, all, kBool, {0, 0}, what);
        }
      }
  }
  EXPECT_TRUE(all_equal(zeros({0}).any(), {0}));
  EXPECT_TRUE(all_equal(zeros({0}).all(), {1}));
  EXPECT_TRUE(all_equal(make({kNaN}, {1}, kFloat32).all(), {1}));  // NaN is non-zero
}

TEST(Reduce, BadDimsThrowNamingTheOp) {
  Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { x.sum(2); }, {"[sum]", "out of range"}));
  EXPECT_TRUE(throws_error([&] { x.sum({0, -2}); }, {"[sum]", "multiple times"}));
  EXPECT_TRUE(throws_error([&] { x.mean(-3); }, {"[mean]", "out of range"}));
  EXPECT_TRUE(throws_error([&] { x.prod(5); }, {"[prod]"}));
  EXPECT_TRUE(throws_error([&] { x.amax(3); }, {"[amax]"}));
  EXPECT_TRUE(throws_error([&] { x.any(2); }, {"[any]"}));
  EXPECT_TRUE(throws_error([&] { x.max(2); }, {"[max]", "out of range"}));
  EXPECT_TRUE(throws_error([&] { x.argmin(-3); }, {"[argmin]"}));
  EXPECT_TRUE(throws_error([&] { x.var({2}, true); }, {"[var]"}));
  EXPECT_TRUE(throws_error([&] { x.std({1, 1}); }, {"[std]", "multiple times"}));
  EXPECT_TRUE(throws_error([&] { x.norm(2, {4}); }, {"[norm]"}));
  EXPECT_TRUE(throws_error([&] { x.logsumexp({2}); }, {"[logsumexp]"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, kInt64).mean(); }, {"[mean]", "floating"}));
}

// ---- max/min with indices, argmax/argmin ---------------------------------------------------

// PyTorch's CPU rule: the first index of the extreme; a NaN wins at its first position.
double ref_argmax(const Slice& s) {
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(s.size()); ++i) {
    if (std::isnan(s[best])) break;
    if (std::isnan(s[i]) || s[i] > s[best]) best = i;
  }
  return static_cast<double>(best);
}

double ref_argmin(const Slice& s) {
  Slice negated;
  for (double v : s) negated.push_back(-v);
  return ref_argmax(negated);
}

TEST(Reduce, MaxMinAlongDimMatchReference) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kUInt8}) {
    // Small integers give many ties, so the first-occurrence rule is exercised.
    auto fill = [dtype](int64_t n) { return dtype == kUInt8 ? integer_values(n, 0, 5, 19) : small_integers(n); };
    for (const DimCase& c : kDimCases) {
      if (c.dims.size() != 1) continue;
      for (InputLayout layout : kLayouts)
        for (bool keepdim : {false, true}) {
          Tensor x = make_layout(fill(count_of(c.sizes)), c.sizes, dtype, layout);
          const std::string what = describe(c, layout, keepdim, dtype);
          auto [max_values, max_indices] = x.max(c.dims[0], keepdim);
          auto [min_values, min_indices] = ember::min(x, c.dims[0], keepdim);
          expect_reduction(max_values, x, c.dims, keepdim, ref_max, dtype, {0, 0}, what);
          expect_reduction(max_indices, x, c.dims, keepdim, ref_argmax, kInt64, {0, 0}, what);
          expect_reduction(min_values, x, c.dims, keepdim, ref_min, dtype, {0, 0}, what);
          expect_reduction(min_indices, x, c.dims, keepdim, ref_argmin, kInt64, {0, 0}, what);
          expect_reduction(x.argmax(c.dims[0], keepdim), x, c.dims, keepdim, ref_argmax, kInt64, {0, 0}, what);
          expect_reduction(ember::argmin(x, c.dims[0], keepdim), x, c.dims, keepdim, ref_argmin, kInt64, {0, 0}, what);
        }
    }
  }
}

TEST(Reduce, MaxMinWithNaNTiesAndInfinities) {
  Tensor x = make({1, kNaN, 3, kNaN, 2, 7, 7, 1, -kInf, -kInf, -kInf, -kInf}, {3, 4}, kFloat32);
  auto [values, indices] = x.max(1);
  EXPECT_TRUE(all_equal(values, {kNaN, 7, -kInf}));
  EXPECT_TRUE(all_equal(indices, {1, 1, 0}));
  auto [min_values, min_indices] = x.min(1);
  EXPECT_TRUE(all_equal(min_values, {kNaN, 1, -kInf}));
  EXPECT_TRUE(all_equal(min_indices, {1, 3, 0}));
  EXPECT_TRUE(all_equal(x.argmax(), {1}));
  EXPECT_TRUE(all_equal(make({4, 9, 9, 0}, {2, 2}, kFloat32).argmax(), {1}));
  EXPECT_TRUE(all_equal(make({4, 0, 9, 0}, {2, 2}, kFloat32).argmin(), {1}));
}

// Long contiguous rows take a vectorized path (a decoding step's argmax over the vocabulary):
// ties keep their first index, a NaN anywhere (in the first lanes, the middle or the tail)
// wins at its first position, and -0 / +0 count as equal, as the reference rule says.
TEST(Reduce, ArgmaxOfLongRowsKeepsTheFirstIndexAndTheFirstNaN) {
  for (int64_t n : {16, 17, 47, 1000}) {
    std::vector<double> base(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) base[static_cast<size_t>(i)] = static_cast<double>((i * 37) % 11) - 5.0;
    std::vector<std::vector<double>> rows = {base};
    std::vector<double> tied = base;
    tied[static_cast<size_t>(n / 3)] = 9;
    tied[static_cast<size_t>(n - 1)] = 9;
    rows.push_back(tied);
    for (int64_t at : {int64_t{0}, int64_t{5}, n / 2, n - 1}) {
      std::vector<double> with_nan = tied;
      with_nan[static_cast<size_t>(at)] = kNaN;
      with_nan[static_cast<size_t>(n - 1 - (at == n - 1))] = kNaN;
      rows.push_back(with_nan);
    }
    std::vector<double> zeros_row(static_cast<size_t>(n), -1.0);
    zeros_row[3] = -0.0;
    zeros_row[static_cast<size_t>(n - 2)] = 0.0;
    rows.push_back(zeros_row);
    std::vector<double> infinities = base;
    infinities[static_cast<size_t>(n - 1)] = kInf;
    infinities[1] = -kInf;
    rows.push_back(infinities);
    for (ScalarType dtype : {kFloat32, kFloat64, kInt64, kInt32}) {
      for (const std::vector<double>& row : rows) {
        const bool has_special = std::any_of(row.begin(), row.end(), [](double v) { return !std::isfinite(v); });
        if (has_special && !is_floating_point(dtype)) continue;
        const Tensor x = make(row, {1, n}, dtype);
        const Slice values_of_row = values(x);
        const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
        EXPECT_TRUE(all_equal(x.argmax(1), {ref_argmax(values_of_row)})) << what;
        EXPECT_TRUE(all_equal(ember::argmin(x, 1), {ref_argmin(values_of_row)})) << what;
        EXPECT_TRUE(all_equal(x.argmax(), {ref_argmax(values_of_row)})) << what;
        auto [max_value, max_index] = x.max(1);
        EXPECT_TRUE(all_equal(max_index, {ref_argmax(values_of_row)})) << what;
        const double expected = values_of_row[static_cast<size_t>(ref_argmax(values_of_row))];
        const double got = values(max_value)[0];
        EXPECT_TRUE(std::isnan(expected) ? std::isnan(got) : (got == expected && std::signbit(got) == std::signbit(expected)))
            << what;
      }
    }
  }
}

TEST(Reduce, ArgmaxShapes) {
  Tensor x = make(signed_values(24), {2, 3, 4}, kFloat32);
  EXPECT_EQ(x.argmax().dim(), 0);
  EXPECT_EQ(x.argmax(std::nullopt, true).sizes(), std::vector<int64_t>({1, 1, 1}));
  EXPECT_TRUE(all_equal(x.argmax(), {ref_argmax(values(x))}));
  EXPECT_TRUE(all_equal(x.permute({2, 0, 1}).argmin(), {ref_argmin(values(x.permute({2, 0, 1})))}));
  EXPECT_EQ(x.argmax(-2, true).sizes(), std::vector<int64_t>({2, 1, 4}));
  Tensor scalar = scalar_tensor(5.0);
  auto [value, index] = scalar.max(0);
  EXPECT_EQ(value.dim(), 0);
  EXPECT_TRUE(all_equal(value, {5}));
  EXPECT_TRUE(all_equal(index, {0}));
  EXPECT_TRUE(all_equal(scalar.argmax(), {0}));
}

TEST(Reduce, MaxOnEmptyInputs) {
  auto [values, indices] = zeros({0, 3}).max(1);
  EXPECT_EQ(values.sizes(), std::vector<int64_t>({0}));
  EXPECT_EQ(indices.sizes(), std::vector<int64_t>({0}));
  EXPECT_TRUE(throws_error([] { zeros({0, 3}).max(0); }, {"[max]", "non-zero size", "[0, 3]"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 0}).argmin(1); }, {"[argmin]", "non-zero size"}));
  EXPECT_TRUE(throws_error([] { zeros({0}).argmax(); }, {"[argmax]", "no elements"}));
}

TEST(Reduce, MaxGradientGoesToTheSelectedIndexOnly) {
  Tensor x = make({1, 3, 3, 2, 0, 0}, {2, 3}, kFloat64);
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return std::get<0>(t.max(1)); }, x), {0, 1, 0, 1, 0, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return std::get<0>(t.min(1, true)); }, x), {1, 0, 0, 0, 1, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return std::get<0>(t.max(0)); }, x), {0, 1, 1, 1, 0, 0}));
  Tensor distinct = make(uniform_values(60, -2, 2, 23), {3, 4, 5}, kFloat64);
  for (int64_t dim : {0, 1, -1})
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(
          gradients_match([&](const Tensor& t) { return std::get<0>(t.max(dim, keepdim)); }, float64_leaf(distinct)))
          << "max";
      EXPECT_TRUE(gradients_match([&](const Tensor& t) { return std::get<0>(t.min(dim, keepdim)); },
                                  float64_leaf(distinct.transpose(0, 2))))
          << "min";
    }
  EXPECT_TRUE(gradients_match([](const Tensor& t) { return std::get<0>(t.max(0)); },
                              float64_leaf(scalar_tensor(2.0, kFloat64))))
      << "0-dim max";
}

// ---- var, std ------------------------------------------------------------------------------

TEST(Reduce, VarStdMatchReference) {
  for (ScalarType dtype : kFloatTypes)
    for (bool unbiased : {true, false})
      for_each_case(dtype, signed_values, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                              const std::string& what) {
        auto var = [unbiased](const Slice& s) { return ref_var(s, unbiased); };
        auto std_dev = [unbiased](const Slice& s) { return std::sqrt(ref_var(s, unbiased)); };
        expect_reduction(x.var(dims, unbiased, keepdim), x, dims, keepdim, var, dtype, tolerance(dtype), what);
        expect_reduction(x.std(dims, unbiased, keepdim), x, dims, keepdim, std_dev, dtype, tolerance(dtype), what);
      });
}

TEST(Reduce, VarIsAccurateForLargeOffsets) {
  // A large common offset: a one-pass E[x^2] - E[x]^2 in float32 would lose every digit.
  std::vector<double> v = uniform_values(1000, -1, 1, 29);
  for (double& x : v) x += 1e4;
  Tensor x = make(v, {1000}, kFloat32);
  EXPECT_TRUE(all_close(x.var(), {ref_var(values(x), true)}, {1e-6, 0}));
  EXPECT_TRUE(all_close(x.std(false), {std::sqrt(ref_var(values(x), false))}, {1e-6, 0}));
}

TEST(Reduce, VarWithTooFewElements) {
  Tensor one = make({3}, {1}, kFloat32);
  EXPECT_TRUE(all_equal(one.var(), {kNaN}));  // N - 1 = 0
  EXPECT_TRUE(all_equal(one.var(false), {0}));
  EXPECT_TRUE(all_equal(one.std(), {kNaN}));
  EXPECT_TRUE(all_equal(zeros({0}).var(), {kNaN}));
  EXPECT_TRUE(all_equal(zeros({0, 2}).var({0}, false), {kNaN, kNaN}));
  EXPECT_EQ(zeros({0, 2}).var({1}, true).sizes(), std::vector<int64_t>({0}));
  EXPECT_TRUE(all_equal(scalar_tensor(2.0).var(false), {0}));
  EXPECT_TRUE(throws_error([] { zeros({3}, kInt32).var(); }, {"[var]", "floating"}));
  EXPECT_TRUE(throws_error([] { zeros({3}, kInt64).std(); }, {"[std]", "floating"}));
}

TEST(Reduce, VarStdGradients) {
  Tensor x = make(signed_values(24), {2, 3, 4}, kFloat64);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {0, 2}, {}})
    for (bool unbiased : {true, false})
      for (bool keepdim : {false, true}) {
        EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.var(dims, unbiased, keepdim); }, float64_leaf(x)))
            << "var";
        EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.std(dims, unbiased, keepdim); },
                                    float64_leaf(x.transpose(0, 2))))
            << "std";
      }
  // A constant slice has std 0; its gradient is 0 there (not nan), as in PyTorch.
  Tensor constant_row = make({1, 1, 1, 1, 2, 4}, {2, 3}, kFloat64);
  Tensor grad = grad_of_sum([](const Tensor& t) { return t.std({1}, true); }, constant_row);
  const double s = std::sqrt(ref_var({1, 2, 4}, true));
  EXPECT_TRUE(all_close(grad, {0, 0, 0, (1 - 7.0 / 3) / (2 * s), (2 - 7.0 / 3) / (2 * s), (4 - 7.0 / 3) / (2 * s)}));
}

// ---- norm ------------------------------------------------------------------------------

double ref_norm(const Slice& s, double p) {
  if (std::isinf(p)) {
    double m = p > 0 ? 0 : kInf;
    for (double v : s) m = p > 0 ? std::max(m, std::abs(v)) : std::min(m, std::abs(v));
    return m;
  }
  double total = 0;
  for (double v : s) total += p == 0 ? (v != 0) : std::pow(std::abs(v), p);
  return p == 0 ? total : std::pow(total, 1 / p);
}

const std::vector<double> kNormOrders = {2, 1, kInf, -kInf, 0, 3, 1.5, 0.5, -1};

TEST(Reduce, NormMatchesReference) {
  for (ScalarType dtype : kFloatTypes)
    for (double p : kNormOrders)
      for_each_case(dtype, signed_values, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                              const std::string& what) {
        auto norm = [p](const Slice& s) { return ref_norm(s, p); };
        expect_reduction(x.norm(p, dims, keepdim), x, dims, keepdim, norm, dtype, tolerance(dtype),
                         what + " p=" + std::to_string(p));
      });
  Tensor x = make({3, -4, 0}, {3}, kFloat32);
  EXPECT_TRUE(all_close(x.norm(), {5}));
  EXPECT_TRUE(all_close(x.norm(0), {2}));
  EXPECT_TRUE(all_close(x.norm(-kInf), {0}));
  EXPECT_TRUE(all_close(x.norm(-1), {0}));  // (1/3 + 1/4 + 1/0)^-1
}

TEST(Reduce, NormEmptyAndErrors) {
  EXPECT_TRUE(all_equal(zeros({0}).norm(), {0}));
  EXPECT_TRUE(all_equal(zeros({2, 0}).norm(1, {1}), {0, 0}));
  EXPECT_TRUE(throws_error([] { zeros({2, 0}).norm(kInf, {1}); }, {"[norm]", "empty", "[2, 0]"}));
  EXPECT_TRUE(throws_error([] { zeros({3}, kInt64).norm(); }, {"[norm]", "floating"}));
}

TEST(Reduce, NormGradients) {
  // Distinct magnitudes away from zero: every order is differentiable there.
  Tensor x = make(uniform_values(24, 0.5, 2, 31), {2, 3, 4}, kFloat64) * make({1, -1, 1, -1}, {4}, kFloat64);
  for (double p : {2.0, 1.0, kInf, -kInf, 3.0, 1.5, 0.5, -1.0})
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2}, {0, 2}, {}})
      for (bool keepdim : {false, true})
        EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.norm(p, dims, keepdim); }, float64_leaf(x)))
            << "norm p=" + std::to_string(p);
  // Zero subgradients and tie splitting, as in PyTorch.
  Tensor zero = zeros({3}, kFloat64);
  for (double p : {2.0, 3.0, 1.5, 0.0})
    EXPECT_TRUE(all_equal(grad_of_sum([p](const Tensor& t) { return t.norm(p); }, zero), {0, 0, 0})) << p;
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.norm(kInf); }, make({3, -3, 1}, {3}, kFloat64)),
                        {0.5, -0.5, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.norm(1); }, make({3, -3, 0}, {3}, kFloat64)),
                        {1, -1, 0}));
}

// ---- logsumexp -----------------------------------------------------------------------------

double ref_logsumexp(const Slice& s) {
  double m = -kInf;
  for (double v : s) m = std::max(m, v);
  if (std::isinf(m)) m = 0;
  double total = 0;
  for (double v : s) total += std::exp(v - m);
  return std::log(total) + m;
}

TEST(Reduce, LogsumexpMatchesReference) {
  for (ScalarType dtype : kFloatTypes)
    for_each_case(dtype, signed_values, [&](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                                            const std::string& what) {
      expect_reduction(x.logsumexp(dims, keepdim), x, dims, keepdim, ref_logsumexp, dtype, tolerance(dtype), what);
    });
}

TEST(Reduce, LogsumexpIsStableAndHandlesInfinities) {
  Tensor x = make({-kInf, -kInf, 1000, 1000, kInf, 0, -1000, -1001, kNaN, 1}, {5, 2}, kFloat32);
  EXPECT_TRUE(all_close(ember::logsumexp(x, {1}),
                        {-kInf, 1000 + std::log(2.0), kInf, -1000 + std::log1p(std::exp(-1.0)), kNaN}));
  EXPECT_TRUE(all_equal(zeros({0}).logsumexp({0}), {-kInf}));
  EXPECT_TRUE(all_equal(zeros({2, 0}).logsumexp({1}), {-kInf, -kInf}));
  Tensor ints = make({1, 2}, {2}, kInt64);
  Tensor result = ints.logsumexp({0});
  EXPECT_EQ(result.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(result, {ref_logsumexp({1, 2})}));
}

TEST(Reduce, LogsumexpGradients) {
  Tensor x = make(signed_values(24), {2, 3, 4}, kFloat64);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {0, 2}, {-1}})
    for (bool keepdim : {false, true})
      EXPECT_TRUE(gradients_match([&](const Tensor& t) { return t.logsumexp(dims, keepdim); },
                                  float64_leaf(x.permute({1, 0, 2}))))
          << "logsumexp";
  // The gradient is the softmax of the slice.
  Tensor row = make({1, 2, 3}, {3}, kFloat64);
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.logsumexp({0}); }, row),
                        ref_softmax({1, 2, 3}, false)));
}

}  // namespace
}  // namespace ember
