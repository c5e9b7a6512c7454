// sort, argsort and topk against a float64 reference sort written here (std::stable_sort
// on doubles, NaN largest), for many dtypes, dims, ties, NaN, non-contiguous and empty
// inputs, with gradcheck for the selected values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

// [outer, n, inner] around `dim` of `sizes`.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
};

Rows rows_of(const std::vector<int64_t>& sizes, int64_t dim) {
  Rows r;
  if (sizes.empty()) return r;
  r.n = sizes[dim];
  for (int64_t d = 0; d < dim; ++d) r.outer *= sizes[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(sizes.size()); ++d) r.inner *= sizes[d];
  return r;
}

// NaN is larger than every number; NaNs are equal.
bool reference_less(double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; }

// The first k of each row stably sorted, as [outer, k, inner] values and positions.
std::pair<std::vector<double>, std::vector<double>> reference_sort(const std::vector<double>& in, const Rows& r,
                                                                   bool descending, int64_t k) {
  std::vector<double> values(r.outer * k * r.inner), indices(values.size());
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t j = 0; j < r.inner; ++j) {
      auto at = [&](int64_t i) { return in[(o * r.n + i) * r.inner + j]; };
      std::vector<int64_t> order(r.n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return descending ? reference_less(at(b), at(a)) : reference_less(at(a), at(b));
      });
      for (int64_t i = 0; i < k; ++i) {
        values[(o * k + i) * r.inner + j] = at(order[i]);
        indices[(o * k + i) * r.inner + j] = static_cast<double>(order[i]);
      }
    }
  }
  return {values, indices};
}

struct SortCase {
  std::vector<int64_t> sizes;
  int64_t dim;
};

const std::vector<SortCase> kCases = {
    {{7}, 0}, {{3, 5, 4}, 0}, {{3, 5, 4}, 1}, {{3, 5, 4}, 2}, {{3, 5, 4}, -1}, {{2, 257}, 1}, {{1, 1}, 0},
};

TEST(Sort, MatchesStableReferenceForEveryDtypeAndDim) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kInt8, kUInt8}) {
    for (const auto& c : kCases) {
      for (bool descending : {false, true}) {
        int64_t numel = 1;
        for (int64_t s : c.sizes) numel *= s;
        // Few distinct values: many ties, so stability is visible in the indices.
        Tensor x = make(integer_values(numel, 0, 6, 11), c.sizes, dtype);
        const int64_t dim = c.dim < 0 ? c.dim + static_cast<int64_t>(c.sizes.size()) : c.dim;
        const Rows r = rows_of(c.sizes, dim);
        auto [expected_values, expected_indices] = reference_sort(values(x), r, descending, r.n);
        auto [v, i] = x.sort(c.dim, descending);
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " shape " << IntArrayRef(c.sizes) << " dim "
                                          << c.dim << (descending ? " descending" : " ascending"));
        EXPECT_EQ(v.sizes(), x.sizes());
        EXPECT_EQ(v.scalar_type(), dtype);
        EXPECT_EQ(i.scalar_type(), kInt64);
        EXPECT_TRUE(all_equal(v, expected_values));
        EXPECT_TRUE(all_equal(i, expected_indices));
        EXPECT_TRUE(all_equal(x.argsort(c.dim, descending), expected_indices));
        EXPECT_TRUE(all_equal(x.argsort(true, c.dim, descending), expected_indices));
        EXPECT_TRUE(all_equal(std::get<1>(x.sort(true, c.dim, descending)), expected_indices));
      }
    }
  }
}

TEST(Sort, RandomFloatsAndBool) {
  Tensor x = make(uniform_values(6 * 300, -5, 5, 3), {6, 300}, kFloat32);
  auto [expected_values, expected_indices] = reference_sort(values(x), rows_of({6, 300}, 1), false, 300);
  auto [v, i] = sort(x);
  EXPECT_TRUE(all_equal(v, expected_values));
  EXPECT_TRUE(all_equal(i, expected_indices));

  Tensor b = make({1, 0, 1, 0, 0}, {5}, kBool);
  auto [bv, bi] = b.sort(0, true);
  EXPECT_TRUE(all_equal(bv, {1, 1, 0, 0, 0}));
  EXPECT_TRUE(all_equal(bi, {0, 2, 1, 3, 4}));
}

TEST(Sort, NanSortsAsLargest) {
  Tensor x = make({3, kNaN, 1, kNaN, -kInf, 2, kInf}, {7}, kFloat32);
  auto [v, i] = x.sort();
  EXPECT_TRUE(all_equal(v, {-kInf, 1, 2, 3, kInf, kNaN, kNaN}));
  EXPECT_TRUE(all_equal(i, {4, 2, 5, 0, 6, 1, 3}));
  auto [dv, di] = x.sort(0, true);
  EXPECT_TRUE(all_equal(dv, {kNaN, kNaN, kInf, 3, 2, 1, -kInf}));
  EXPECT_TRUE(all_equal(di, {1, 3, 6, 0, 5, 2, 4}));
  auto [tv, ti] = x.topk(3);
  EXPECT_TRUE(all_equal(tv, {kNaN, kNaN, kInf}));
  EXPECT_TRUE(all_equal(ti, {1, 3, 6}));
  auto [sv, si] = x.topk(2, 0, false);
  EXPECT_TRUE(all_equal(sv, {-kInf, 1}));
  EXPECT_TRUE(all_equal(si, {4, 2}));
}

TEST(Sort, NonContiguousInputs) {
  std::vector<double> v = integer_values(5 * 6, -3, 3, 5);
  Tensor transposed = make(v, {5, 6}, kFloat64).t();  // [6, 5], strides [1, 6]
  Tensor sliced = make(integer_values(6 * 11, -3, 3, 6), {6, 11}, kFloat64).slice(1, 1, std::nullopt, 2);
  for (const Tensor& x : {transposed, sliced}) {
    for (int64_t dim : {0, 1}) {
      const Rows r = rows_of(x.sizes(), dim);
      auto [expected_values, expected_indices] = reference_sort(values(x), r, true, r.n);
      auto [sv, si] = x.sort(dim, true);
      EXPECT_TRUE(all_equal(sv, expected_values));
      EXPECT_TRUE(all_equal(si, expected_indices));
      auto [tv, ti] = x.topk(2, dim);
      auto [top_values, top_indices] = reference_sort(values(x), r, true, 2);
      EXPECT_TRUE(all_equal(tv, top_values));
      EXPECT_TRUE(all_equal(ti, top_indices));
    }
  }
}

TEST(Sort, EmptyAndZeroDim) {
  for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{0}, {3, 0}, {0, 4}}) {
    Tensor x = zeros(sizes);
    for (int64_t dim = 0; dim < x.dim(); ++dim) {
      auto [v, i] = x.sort(dim);
      EXPECT_EQ(v.sizes(), sizes);
      EXPECT_EQ(i.sizes(), sizes);
      auto [tv, ti] = x.topk(0, dim);
      EXPECT_EQ(tv.numel(), 0);
    }
  }
  Tensor s = scalar_tensor(2.5, kFloat64);
  auto [v, i] = s.sort();
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 2.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  auto [tv, ti] = s.topk(1);
  EXPECT_EQ(tv.item<double>(), 2.5);
  EXPECT_EQ(ti.item<int64_t>(), 0);
}

TEST(Topk, MatchesSortedPrefixForEveryK) {
  for (ScalarType dtype : {kFloat32, kBFloat16, kInt64}) {
    Tensor x = make(integer_values(4 * 9 * 3, -4, 4, 21), {4, 9, 3}, dtype);
    for (int64_t dim : {0, 1, 2}) {
      const Rows r = rows_of(x.sizes(), dim);
      for (int64_t k = 0; k <= r.n; ++k) {
        for (bool largest : {true, false}) {
          SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " dim " << dim << " k " << k
                                            << (largest ? " largest" : " smallest"));
          auto [expected_values, expected_indices] = reference_sort(values(x), r, largest, k);
          auto [v, i] = x.topk(k, dim, largest, true);
          EXPECT_EQ(v.size(dim), k);
          EXPECT_TRUE(all_equal(v, expected_values));
          EXPECT_TRUE(all_equal(i, expected_indices));
          // Unsorted: the same set; each index must point at its value.
          auto [uv, ui] = x.topk(k, dim, largest, false);
          auto [sorted_values, sorted_order] = uv.sort(dim, largest);
          EXPECT_TRUE(all_equal(sorted_values, expected_values));
          EXPECT_TRUE(all_equal(x.gather(dim, ui), values(uv)));
        }
      }
    }
  }
}

TEST(Topk, RejectsKOutOfRange) {
  Tensor x = zeros({3, 5});
  EXPECT_TRUE(throws_error([&] { x.topk(6); }, {"[topk]", "k 6", "5"}));
  EXPECT_TRUE(throws_error([&] { x.topk(-1); }, {"[topk]", "k -1"}));
  EXPECT_TRUE(throws_error([&] { x.topk(4, 0); }, {"[topk]", "k 4", "3"}));
  EXPECT_TRUE(throws_error([&] { x.topk(1, 2); }, {"[topk]", "dimension out of range"}));
  EXPECT_TRUE(throws_error([&] { x.sort(-3); }, {"[sort]", "dimension out of range"}));
}

TEST(Sort, Gradients) {
  // Distinct values: the sort is locally constant, so finite differences are exact.
  Tensor x = make(uniform_values(4 * 6, -1, 1, 8), {4, 6}, kFloat64).requires_grad_();
  for (int64_t dim : {0, 1}) {
    for (bool descending : {false, true}) {
      EXPECT_TRUE(gradients_match(
          [&](const std::vector<Tensor>& in) { return std::get<0>(in[0].sort(dim, descending)); }, {x}));
    }
    for (bool largest : {true, false}) {
      EXPECT_TRUE(gradients_match(
          [&](const std::vector<Tensor>& in) { return std::get<0>(in[0].topk(3, dim, largest, false)); }, {x}));
    }
  }
  Tensor t = make(uniform_values(5 * 4, -1, 1, 9), {4, 5}, kFloat64).t().requires_grad_();
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return std::get<0>(in[0].topk(2, 0)); }, {t}));
}

TEST(Sort, BackwardPutsGradientAtSourcePositions) {
  Tensor x = make({3, 1, 2}, {3}, kFloat64).requires_grad_();
  auto [v, i] = x.sort();
  (v * make({10, 20, 30}, {3}, kFloat64)).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {30, 10, 20}));
  EXPECT_FALSE(i.requires_grad());
}

}  // namespace
}  // namespace ember
