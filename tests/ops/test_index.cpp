// index_select, gather, scatter, scatter_add, index_add and embedding against float64
// references written here with plain loops: every dim, int32 and int64 indices,
// transposed and sliced operands, empty and 0-dim tensors, each error, gradcheck, and
// bitwise-identical accumulation for any thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

using Sizes = std::vector<int64_t>;

int64_t numel_of(const Sizes& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Sizes unravel(int64_t flat, const Sizes& sizes) {
  Sizes coords(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    coords[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return coords;
}

int64_t ravel(const Sizes& coords, const Sizes& sizes) {
  int64_t flat = 0;
  for (size_t d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + coords[d];
  return flat;
}

// ---- references -----------------------------------------------------------------------------

std::vector<double> ref_index_select(const std::vector<double>& self, const Sizes& sizes, int64_t dim,
                                     const std::vector<double>& index) {
  Sizes out_sizes = sizes;
  out_sizes[dim] = static_cast<int64_t>(index.size());
  std::vector<double> out(numel_of(out_sizes));
  for (int64_t p = 0; p < static_cast<int64_t>(out.size()); ++p) {
    Sizes c = unravel(p, out_sizes);
    c[dim] = static_cast<int64_t>(index[c[dim]]);
    out[p] = self[ravel(c, sizes)];
  }
  return out;
}

std::vector<double> ref_gather(const std::vector<double>& self, const Sizes& sizes, int64_t dim,
                               const std::vector<double>& index, const Sizes& index_sizes) {
  std::vector<double> out(index.size());
  for (int64_t p = 0; p < static_cast<int64_t>(out.size()); ++p) {
    Sizes c = unravel(p, index_sizes);
    c[dim] = static_cast<int64_t>(index[p]);
    out[p] = self[ravel(c, sizes)];
  }
  return out;
}

// Row-major over the index: for scatter, the last write wins.
std::vector<double> ref_scatter(std::vector<double> self, const Sizes& sizes, int64_t dim,
                                const std::vector<double>& index, const Sizes& index_sizes,
                                const std::vector<double>& src, const Sizes& src_sizes, bool add) {
  for (int64_t p = 0; p < static_cast<int64_t>(index.size()); ++p) {
    Sizes c = unravel(p, index_sizes);
    const double value = src[ravel(c, src_sizes)];
    c[dim] = static_cast<int64_t>(index[p]);
    double& target = self[ravel(c, sizes)];
    target = add ? target + value : value;
  }
  return self;
}

std::vector<double> ref_index_add(std::vector<double> self, const Sizes& sizes, int64_t dim,
                                  const std::vector<double>& index, const std::vector<double>& source,
                                  const Sizes& source_sizes, double alpha) {
  for (int64_t p = 0; p < static_cast<int64_t>(source.size()); ++p) {
    Sizes c = unravel(p, source_sizes);
    c[dim] = static_cast<int64_t>(index[c[dim]]);
    self[ravel(c, sizes)] += alpha * source[p];
  }
  return self;
}

Tensor index_tensor(const std::vector<double>& v, const Sizes& sizes, ScalarType dtype = kInt64) {
  return make(v, sizes, dtype);
}

// Index values laid out with a stride: every other element of a larger tensor.
Tensor sliced_index(const std::vector<double>& v) {
  std::vector<double> padded;
  for (double x : v) {
    padded.push_back(x);
    padded.push_back(-99);  // never read
  }
  return make(padded, {static_cast<int64_t>(padded.size())}, kInt64).slice(0, 0, std::nullopt, 2);
}

// A [rows, cols] tensor of v laid out transposed in memory.
Tensor transposed(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype) {
  Tensor t = empty({cols, rows}, dtype).t();
  for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[i]);
  return t;
}

// ---- index_select -------------------------------------------------------------------------

TEST(IndexSelect, MatchesReferenceForEveryDimAndDtype) {
  const Sizes sizes = {4, 5, 3};
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kBool, kUInt8}) {
    std::vector<double> v = integer_values(numel_of(sizes), 0, 1 + (dtype == kBool ? 0 : 50), 1);
    Tensor x = make(v, sizes, dtype);
    for (int64_t dim : {0, 1, 2}) {
      for (ScalarType index_dtype : {kInt64, kInt32}) {
        std::vector<double> index = {2, 0, 2, static_cast<double>(sizes[dim] - 1), 1, 0, 0};
        Tensor out = x.index_select(dim, index_tensor(index, {7}, index_dtype));
        Sizes expected_sizes = sizes;
        expected_sizes[dim] = 7;
        EXPECT_EQ(out.sizes(), expected_sizes);
        EXPECT_EQ(out.scalar_type(), dtype);
        EXPECT_TRUE(all_equal(out, ref_index_select(values(x), sizes, dim, index))) << dtype_name(dtype) << " " << dim;
      }
    }
  }
}

TEST(IndexSelect, NonContiguousEmptyAndScalar) {
  std::vector<double> v = uniform_values(6 * 5, -1, 1, 2);
  Tensor x = transposed(v, 6, 5, kFloat32);
  std::vector<double> index = {4, 1, 1, 0};
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(all_equal(x.index_select(dim, sliced_index(index)), ref_index_select(values(x), {6, 5}, dim, index)));
  }
  Tensor none = x.index_select(1, index_tensor({}, {0}));
  EXPECT_EQ(none.sizes(), (Sizes{6, 0}));
  EXPECT_EQ(zeros({0, 3}).index_select(1, index_tensor({2, 0}, {2})).sizes(), (Sizes{0, 2}));
  Tensor s = scalar_tensor(4.5);
  Tensor picked = s.index_select(0, index_tensor({0}, {}));
  EXPECT_EQ(picked.dim(), 0);
  EXPECT_EQ(picked.item<float>(), 4.5f);
  EXPECT_TRUE(all_equal(index_select(make({1, 2, 3}, {3}, kFloat32), 0, index_tensor({2}, {})), {3}));
}

TEST(IndexSelect, Errors) {
  Tensor x = zeros({3, 5});
  EXPECT_TRUE(throws_error([&] { x.index_select(1, index_tensor({0, 7}, {2})); },
                           {"[index_select]", "index 7", "dimension 1", "size 5"}));
  EXPECT_TRUE(throws_error([&] { x.index_select(0, index_tensor({-1}, {1})); }, {"[index_select]", "index -1", "size 3"}));
  EXPECT_TRUE(throws_error([&] { x.index_select(0, index_tensor({0, 1}, {1, 2})); }, {"[index_select]", "vector", "[1, 2]"}));
  EXPECT_TRUE(throws_error([&] { x.index_select(0, make({0}, {1}, kFloat32)); }, {"[index_select]", "float32"}));
  EXPECT_TRUE(throws_error([&] { x.index_select(2, index_tensor({0}, {1})); }, {"[index_select]", "dimension out of range"}));
  EXPECT_TRUE(throws_error([&] { scalar_tensor(1.0).index_select(0, index_tensor({0, 0}, {2})); },
                           {"[index_select]", "0-dim", "2"}));
}

TEST(IndexSelect, Gradients) {
  Tensor x = make(uniform_values(4 * 3, -1, 1, 3), {4, 3}, kFloat64).requires_grad_();
  Tensor index = index_tensor({3, 0, 3, 3, 1}, {5});
  for (int64_t dim : {0, 1}) {
    Tensor idx = dim == 0 ? index : index_tensor({2, 2, 0}, {3});
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].index_select(dim, idx); }, {x}));
  }
  Tensor t = make(uniform_values(12, -1, 1, 4), {3, 4}, kFloat64).t().requires_grad_();
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        return in[0].index_select(1, sliced_index({2, 0, 2}));
      },
      {t}));
}

// ---- gather ---------------------------------------------------------------------------------

TEST(Gather, MatchesReferenceForEveryDim) {
  const Sizes sizes = {4, 5, 3};
  const Sizes index_sizes = {3, 4, 2};  // smaller than self in every dim
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kInt64, kInt8}) {
    Tensor x = make(integer_values(numel_of(sizes), -20, 20, 5), sizes, dtype);
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<double> index = integer_values(numel_of(index_sizes), 0, static_cast<int>(sizes[d]) - 1, 6 + d);
      for (ScalarType index_dtype : {kInt64, kInt32}) {
        Tensor out = x.gather(dim, index_tensor(index, index_sizes, index_dtype));
        EXPECT_EQ(out.sizes(), index_sizes);
        EXPECT_TRUE(all_equal(out, ref_gather(values(x), sizes, d, index, index_sizes))) << dtype_name(dtype) << dim;
      }
    }
  }
}

TEST(Gather, NonContiguousEmptyAndScalar) {
  std::vector<double> v = uniform_values(6 * 5, -1, 1, 7);
  Tensor x = transposed(v, 6, 5, kFloat64);
  std::vector<double> index = integer_values(6 * 3, 0, 4, 8);
  // A sliced index: columns 0, 2, 4 of a [6, 6] tensor.
  std::vector<double> wide(6 * 6, -5);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 3; ++c) wide[r * 6 + 2 * c] = index[r * 3 + c];
  Tensor sliced = index_tensor(wide, {6, 6}).slice(1, 0, std::nullopt, 2);
  EXPECT_TRUE(all_equal(x.gather(1, sliced), ref_gather(values(x), {6, 5}, 1, index, {6, 3})));
  EXPECT_EQ(x.gather(0, index_tensor({}, {0, 5})).sizes(), (Sizes{0, 5}));
  EXPECT_EQ(x.gather(1, index_tensor({}, {6, 0})).sizes(), (Sizes{6, 0}));
  Tensor s = scalar_tensor(3.0, kFloat64);
  EXPECT_EQ(s.gather(0, index_tensor({0}, {})).item<double>(), 3.0);
  EXPECT_TRUE(all_equal(gather(make({5, 6, 7}, {3}, kFloat32), 0, index_tensor({2, 2, 0}, {3})), {7, 7, 5}));
}

TEST(Gather, Errors) {
  Tensor x = zeros({3, 5});
  EXPECT_TRUE(throws_error([&] { x.gather(1, index_tensor({0, 7, 1}, {1, 3})); },
                           {"[gather]", "index 7", "dimension 1", "size 5"}));
  EXPECT_TRUE(throws_error([&] { x.gather(0, index_tensor({-2}, {1, 1})); }, {"[gather]", "index -2", "size 3"}));
  EXPECT_TRUE(throws_error([&] { x.gather(1, index_tensor({0}, {1})); }, {"[gather]", "dimensions"}));
  EXPECT_TRUE(throws_error([&] { x.gather(1, index_tensor(std::vector<double>(8, 0), {4, 2})); },
                           {"[gather]", "larger than self", "dimension 0"}));
  EXPECT_TRUE(throws_error([&] { x.gather(1, make({0}, {1, 1}, kFloat64)); }, {"[gather]", "float64"}));
}

TEST(Gather, Gradients) {
  Tensor x = make(uniform_values(4 * 5, -1, 1, 9), {4, 5}, kFloat64).requires_grad_();
  Tensor index = index_tensor({0, 0, 4, 2, 1, 1, 3, 3, 0}, {3, 3});  // repeats: gradients add up
  for (int64_t dim : {0, 1}) {
    Tensor idx = dim == 0 ? index_tensor({3, 0, 3, 1, 1, 2}, {2, 3}) : index;
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].gather(dim, idx); }, {x}));
  }
}

// ---- scatter / scatter_add --------------------------------------------------------------------

struct ScatterCase {
  Sizes self_sizes, index_sizes, src_sizes;
  int64_t dim;
};

const std::vector<ScatterCase> kScatterCases = {
    {{4, 5, 3}, {3, 4, 2}, {3, 5, 3}, 0},
    {{4, 5, 3}, {3, 4, 2}, {4, 4, 2}, 1},
    {{4, 5, 3}, {4, 2, 3}, {4, 2, 3}, 2},
    {{9}, {7}, {8}, 0},
};

// For scatter: every line along dim gets distinct positions (a permutation prefix), so the
// result does not depend on which duplicate write wins.
std::vector<double> distinct_line_index(const Sizes& index_sizes, int64_t dim, int64_t bound, uint32_t seed) {
  std::vector<double> index(numel_of(index_sizes));
  std::mt19937 rng(seed);
  for (int64_t p = 0; p < static_cast<int64_t>(index.size()); ++p) {
    Sizes c = unravel(p, index_sizes);
    if (c[dim] != 0) continue;
    std::vector<int64_t> perm(bound);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < index_sizes[dim]; ++j) {
      c[dim] = j;
      index[ravel(c, index_sizes)] = static_cast<double>(perm[j]);
    }
  }
  return index;
}

TEST(Scatter, MatchesReference) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kInt32, kInt64}) {
    for (const auto& c : kScatterCases) {
      const int64_t bound = c.self_sizes[c.dim];
      Tensor self = make(integer_values(numel_of(c.self_sizes), -9, 9, 1), c.self_sizes, dtype);
      Tensor src = make(integer_values(numel_of(c.src_sizes), -9, 9, 2), c.src_sizes, dtype);
      std::vector<double> unique = distinct_line_index(c.index_sizes, c.dim, bound, 3);
      std::vector<double> repeated = integer_values(numel_of(c.index_sizes), 0, static_cast<int>(bound) - 1, 4);
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " self " << IntArrayRef(c.self_sizes) << " dim " << c.dim);
      Tensor out = self.scatter(c.dim, index_tensor(unique, c.index_sizes), src);
      EXPECT_TRUE(all_equal(out, ref_scatter(values(self), c.self_sizes, c.dim, unique, c.index_sizes, values(src),
                                             c.src_sizes, false)));
      Tensor filled = self.scatter(c.dim, index_tensor(unique, c.index_sizes, kInt32), Scalar(7));
      std::vector<double> sevens(numel_of(c.src_sizes), 7);
      EXPECT_TRUE(all_equal(filled, ref_scatter(values(self), c.self_sizes, c.dim, unique, c.index_sizes, sevens,
                                                c.src_sizes, false)));
      Tensor added = scatter_add(self, c.dim, index_tensor(repeated, c.index_sizes), src);
      EXPECT_TRUE(all_equal(added, ref_scatter(values(self), c.self_sizes, c.dim, repeated, c.index_sizes, values(src),
                                               c.src_sizes, true)));
      EXPECT_TRUE(all_equal(self, values(make(integer_values(numel_of(c.self_sizes), -9, 9, 1), c.self_sizes, dtype))))
          << "out-of-place scatter changed self";
    }
  }
}

TEST(Scatter, InPlaceOnTransposedSelfWithSlicedIndex) {
  std::vector<double> v = uniform_values(6 * 5, -1, 1, 11);
  std::vector<double> src_values = uniform_values(6 * 5, -1, 1, 12);
  Tensor src = make(src_values, {6, 5}, kFloat64);
  std::vector<double> index = {4, 0, 4, 1, 2, 2};  // one index per row, along dim 1
  Sizes index_sizes = {6, 1};
  std::vector<double> expected_add = ref_scatter(v, {6, 5}, 1, index, index_sizes, src_values, {6, 5}, true);
  std::vector<double> expected_set = ref_scatter(v, {6, 5}, 1, index, index_sizes, src_values, {6, 5}, false);
  Tensor idx = sliced_index(index).view({6, 1});

  Tensor a = transposed(v, 6, 5, kFloat64);
  Tensor& same = a.scatter_add_(1, idx, src);
  EXPECT_TRUE(same.is_same(a));
  EXPECT_TRUE(all_close(a, expected_add));
  Tensor b = transposed(v, 6, 5, kFloat64);
  b.scatter_(1, idx, src);
  EXPECT_TRUE(all_equal(b, expected_set));
  Tensor c = transposed(v, 6, 5, kFloat64);
  c.scatter_(1, idx, Scalar(-3.5));
  EXPECT_TRUE(all_equal(c, ref_scatter(v, {6, 5}, 1, index, index_sizes, std::vector<double>(30, -3.5), {6, 5}, false)));
}

TEST(Scatter, EmptyAndScalar) {
  Tensor x = make({1, 2, 3}, {3}, kFloat32);
  EXPECT_TRUE(all_equal(x.scatter(0, index_tensor({}, {0}), make({}, {0}, kFloat32)), {1, 2, 3}));
  EXPECT_TRUE(all_equal(x.scatter_add(0, index_tensor({}, {0}), make({9}, {1}, kFloat32)), {1, 2, 3}));
  Tensor s = scalar_tensor(2.0, kFloat64);
  EXPECT_EQ(s.scatter_add(0, index_tensor({0}, {}), scalar_tensor(3.0, kFloat64)).item<double>(), 5.0);
  EXPECT_EQ(s.scatter(0, index_tensor({0}, {}), Scalar(8)).item<double>(), 8.0);
}

TEST(Scatter, Errors) {
  Tensor x = zeros({3, 5});
  Tensor src = ones({3, 5});
  EXPECT_TRUE(throws_error([&] { x.scatter(1, index_tensor({0, 5}, {1, 2}), src); },
                           {"[scatter]", "index 5", "dimension 1", "size 5"}));
  EXPECT_TRUE(throws_error([&] { x.scatter_add(0, index_tensor({-1}, {1, 1}), src); },
                           {"[scatter_add]", "index -1", "dimension 0", "size 3"}));
  EXPECT_TRUE(throws_error([&] { x.scatter(1, index_tensor({0, 1}, {1, 2}), ones({3, 5}, kFloat64)); },
                           {"[scatter]", "float32", "float64", "same dtype"}));
  EXPECT_TRUE(throws_error([&] { x.scatter(0, index_tensor(std::vector<double>(6, 0), {1, 6}), ones({1, 6})); },
                           {"[scatter]", "larger than self", "dimension 1"}));
  EXPECT_TRUE(throws_error([&] { x.scatter(0, index_tensor(std::vector<double>(4, 0), {2, 2}), ones({1, 2})); },
                           {"[scatter]", "larger than src", "dimension 0"}));
  EXPECT_TRUE(throws_error([&] { x.scatter(0, index_tensor({0}, {1}), ones({1})); }, {"[scatter]", "dimensions"}));
  // A bad index is found before anything is written.
  Tensor y = zeros({4});
  EXPECT_TRUE(throws_error([&] { y.scatter_(0, index_tensor({1, 2, 9}, {3}), Scalar(1)); }, {"[scatter]", "index 9"}));
  EXPECT_TRUE(all_equal(y, {0, 0, 0, 0}));
}

TEST(Scatter, Gradients) {
  Tensor self = make(uniform_values(4 * 5, -1, 1, 13), {4, 5}, kFloat64).requires_grad_();
  Tensor src = make(uniform_values(3 * 5, -1, 1, 14), {3, 5}, kFloat64).requires_grad_();
  Tensor repeated = index_tensor({3, 0, 1, 2, 0, 1, 0, 2, 3}, {3, 3});
  // scatter's gradient assumes each place is written once: distinct positions per row.
  Tensor lines = index_tensor({0, 2, 1, 3, 1, 2, 0, 4, 2, 0, 1, 4}, {3, 4});
  EXPECT_TRUE(
      gradients_match([&](const std::vector<Tensor>& in) { return in[0].scatter(1, lines, in[1]); }, {self, src}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].scatter_add(0, repeated, in[1]); },
                              {self, src}));
  EXPECT_TRUE(
      gradients_match([&](const std::vector<Tensor>& in) { return in[0].scatter(1, lines, Scalar(2)); }, {self}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        Tensor out = in[0].clone();
        out.scatter_add_(0, repeated, in[1]);
        return out;
      },
      {self, src}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        Tensor out = in[0] * 2;
        out.scatter_(1, lines, in[1]);
        return out;
      },
      {self, src}));
}

// ---- index_add --------------------------------------------------------------------------------

TEST(IndexAdd, MatchesReference) {
  const Sizes sizes = {4, 5, 3};
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64}) {
    const bool floating = is_floating_point(dtype);
    for (int64_t dim : {0, 1, 2}) {
      Sizes source_sizes = sizes;
      source_sizes[dim] = 6;
      Tensor self = make(integer_values(numel_of(sizes), -5, 5, 21), sizes, dtype);
      Tensor source = make(integer_values(numel_of(source_sizes), -5, 5, 22), source_sizes, dtype);
      std::vector<double> index = integer_values(6, 0, static_cast<int>(sizes[dim]) - 1, 23 + dim);
      const Scalar alpha = floating ? Scalar(0.5) : Scalar(3);
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " dim " << dim);
      Tensor out = self.index_add(dim, index_tensor(index, {6}), source, alpha);
      EXPECT_TRUE(all_equal(out, ref_index_add(values(self), sizes, dim, index, values(source), source_sizes,
                                               alpha.toDouble())));
      EXPECT_TRUE(all_equal(index_add(self, dim, index_tensor(index, {6}, kInt32), source),
                            ref_index_add(values(self), sizes, dim, index, values(source), source_sizes, 1)));
    }
  }
}

TEST(IndexAdd, InPlaceNonContiguousEmptyAndScalar) {
  std::vector<double> v = uniform_values(6 * 5, -1, 1, 31);
  std::vector<double> source_values = uniform_values(4 * 5, -1, 1, 32);
  Tensor source = transposed(source_values, 4, 5, kFloat64);
  std::vector<double> index = {5, 0, 5, 2};
  Tensor a = transposed(v, 6, 5, kFloat64);
  Tensor& same = a.index_add_(0, sliced_index(index), source, -2);
  EXPECT_TRUE(same.is_same(a));
  EXPECT_TRUE(all_close(a, ref_index_add(v, {6, 5}, 0, index, source_values, {4, 5}, -2)));
  Tensor b = make(v, {6, 5}, kFloat64);
  b.index_add_(0, index_tensor(index, {4}), source);
  EXPECT_TRUE(all_close(b, ref_index_add(v, {6, 5}, 0, index, source_values, {4, 5}, 1)));

  Tensor x = make({1, 2}, {2}, kFloat32);
  EXPECT_TRUE(all_equal(x.index_add(0, index_tensor({}, {0}), zeros({0})), {1, 2}));
  Tensor s = scalar_tensor(1.0, kFloat64);
  EXPECT_EQ(s.index_add(0, index_tensor({0}, {}), scalar_tensor(4.0, kFloat64)).item<double>(), 5.0);
}

TEST(IndexAdd, Errors) {
  Tensor x = zeros({3, 5});
  EXPECT_TRUE(throws_error([&] { x.index_add(0, index_tensor({0, 3}, {2}), ones({2, 5})); },
                           {"[index_add]", "index 3", "dimension 0", "size 3"}));
  EXPECT_TRUE(throws_error([&] { x.index_add(1, index_tensor({-1}, {1}), ones({3, 1})); }, {"[index_add]", "index -1"}));
  EXPECT_TRUE(throws_error([&] { x.index_add(0, index_tensor({0, 1}, {2}), ones({3, 5})); },
                           {"[index_add]", "number of indices (2)", "(3)"}));
  EXPECT_TRUE(throws_error([&] { x.index_add(0, index_tensor({0}, {1}), ones({1, 4})); },
                           {"[index_add]", "[1, 4]", "[3, 5]", "dimension 0"}));
  EXPECT_TRUE(throws_error([&] { x.index_add(0, index_tensor({0}, {1}), ones({1, 5}, kFloat64)); },
                           {"[index_add]", "same dtype"}));
  EXPECT_TRUE(throws_error([&] { x.index_add(0, index_tensor({0}, {1, 1}), ones({1, 5})); }, {"[index_add]", "vector"}));
  EXPECT_TRUE(throws_error([&] { zeros({3}, kInt64).index_add(0, index_tensor({0}, {1}), ones({1}, kInt64), 0.5); },
                           {"[index_add]", "alpha", "int64"}));
  Tensor y = zeros({3});
  EXPECT_TRUE(throws_error([&] { y.index_add_(0, index_tensor({0, 4}, {2}), ones({2})); }, {"[index_add]", "index 4"}));
  EXPECT_TRUE(all_equal(y, {0, 0, 0}));
}

TEST(IndexAdd, Gradients) {
  Tensor self = make(uniform_values(4 * 3, -1, 1, 41), {4, 3}, kFloat64).requires_grad_();
  Tensor source = make(uniform_values(5 * 3, -1, 1, 42), {5, 3}, kFloat64).requires_grad_();
  Tensor index = index_tensor({3, 0, 3, 1, 3}, {5});
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].index_add(0, index, in[1], 1.5); },
                              {self, source}));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) {
        Tensor out = in[0].clone();
        out.index_add_(0, index, in[1]);
        return out;
      },
      {self, source}));
}

// ---- embedding --------------------------------------------------------------------------------

TEST(Embedding, ForwardMatchesRowLookup) {
  Tensor weight = make(uniform_values(10 * 4, -1, 1, 51), {10, 4}, kFloat32);
  std::vector<double> ids = {3, 9, 0, 3, 3, 7};
  for (ScalarType index_dtype : {kInt64, kInt32}) {
    Tensor out = embedding(weight, index_tensor(ids, {2, 3}, index_dtype));
    EXPECT_EQ(out.sizes(), (Sizes{2, 3, 4}));
    EXPECT_TRUE(all_equal(out, ref_index_select(values(weight), {10, 4}, 0, ids)));
  }
  Tensor wt = transposed(values(weight), 10, 4, kFloat32);
  EXPECT_TRUE(all_equal(embedding(wt, sliced_index(ids)), ref_index_select(values(weight), {10, 4}, 0, ids)));
  EXPECT_EQ(embedding(weight, index_tensor({}, {0, 2})).sizes(), (Sizes{0, 2, 4}));
  EXPECT_EQ(embedding(weight, index_tensor({2}, {})).sizes(), (Sizes{4}));
}

TEST(Embedding, BackwardSumsRowsAndSkipsPadding) {
  std::vector<double> ids = {3, 1, 3, 0, 3, 1};
  Sizes grad_sizes = {2, 3, 2};
  std::vector<double> g = uniform_values(12, -1, 1, 52);
  Tensor grad = make(g, grad_sizes, kFloat64);
  for (int64_t padding_idx : {-1, 3, 0}) {
    std::vector<double> expected(5 * 2, 0);
    for (int64_t n = 0; n < 6; ++n) {
      if (ids[n] == padding_idx) continue;
      for (int64_t c = 0; c < 2; ++c) expected[static_cast<int64_t>(ids[n]) * 2 + c] += g[n * 2 + c];
    }
    Tensor out = embedding_backward(grad, index_tensor(ids, {2, 3}), 5, padding_idx);
    EXPECT_EQ(out.sizes(), (Sizes{5, 2}));
    EXPECT_TRUE(all_close(out, expected)) << "padding_idx " << padding_idx;

    Tensor weight = make(uniform_values(10, -1, 1, 53), {5, 2}, kFloat64).requires_grad_();
    embedding(weight, index_tensor(ids, {2, 3}), padding_idx).backward(grad);
    EXPECT_TRUE(all_close(weight.grad(), expected)) << "padding_idx " << padding_idx;
  }
  EXPECT_TRUE(all_equal(embedding_backward(zeros({0, 3}), index_tensor({}, {0}), 4), std::vector<double>(12, 0)));
}

TEST(Embedding, Errors) {
  Tensor weight = zeros({10, 4});
  EXPECT_TRUE(throws_error([&] { embedding(weight, index_tensor({1, 10}, {2})); },
                           {"[embedding]", "index 10", "size 10"}));
  EXPECT_TRUE(throws_error([&] { embedding(weight, index_tensor({-3}, {1})); }, {"[embedding]", "index -3"}));
  EXPECT_TRUE(throws_error([&] { embedding(zeros({10}), index_tensor({1}, {1})); }, {"[embedding]", "2-D", "[10]"}));
  EXPECT_TRUE(throws_error([&] { embedding(weight, make({1}, {1}, kFloat32)); }, {"[embedding]", "float32"}));
  EXPECT_TRUE(throws_error([&] { embedding(weight, index_tensor({1}, {1}), 10); }, {"[embedding]", "padding_idx 10"}));
  EXPECT_TRUE(throws_error([&] { embedding_backward(zeros({3, 4}), index_tensor({1, 2}, {2}), 5); },
                           {"[embedding_backward]", "[3, 4]", "[2]"}));
  EXPECT_TRUE(throws_error([&] { embedding_backward(zeros({2, 4}), index_tensor({1, 5}, {2}), 5); },
                           {"[embedding_backward]", "index 5", "size 5"}));
}

TEST(Embedding, Gradients) {
  Tensor weight = make(uniform_values(6 * 3, -1, 1, 54), {6, 3}, kFloat64).requires_grad_();
  Tensor ids = index_tensor({5, 0, 5, 2, 2, 2, 1, 4}, {2, 4});
  // No padding_idx here: its row's gradient is zeroed on purpose, not the true derivative.
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {weight}));
  // embedding_backward is linear in grad; its own backward is a padded row lookup.
  Tensor grad = make(uniform_values(8 * 3, -1, 1, 55), {2, 4, 3}, kFloat64).requires_grad_();
  EXPECT_TRUE(
      gradients_match([&](const std::vector<Tensor>& in) { return embedding_backward(in[0], ids, 6, 2); }, {grad}));
}

// ---- determinism ------------------------------------------------------------------------------

// Float32 sums in source order, the order a serial loop would use.
std::vector<float> serial_row_sums(const std::vector<float>& init, const std::vector<int64_t>& ids,
                                   const std::vector<float>& rows, int64_t width) {
  std::vector<float> out = init;
  for (size_t n = 0; n < ids.size(); ++n)
    for (int64_t c = 0; c < width; ++c) out[ids[n] * width + c] += rows[n * width + c];
  return out;
}

::testing::AssertionResult same_bits(const Tensor& t, const std::vector<float>& expected) {
  Tensor c = t.contiguous();
  if (c.numel() != static_cast<int64_t>(expected.size())) return ::testing::AssertionFailure() << "size differs";
  if (std::memcmp(c.data_ptr(), expected.data(), expected.size() * sizeof(float)) != 0) {
    return ::testing::AssertionFailure() << "bits differ from the serial float32 sum";
  }
  return ::testing::AssertionSuccess();
}

TEST(IndexDeterminism, AccumulationsAreBitwiseSerialForAnyThreadCount) {
  const int64_t count = 3000, destinations = 37, width = 129;
  std::vector<double> id_values = integer_values(count, 0, destinations - 1, 61);
  std::vector<int64_t> ids(id_values.begin(), id_values.end());
  std::vector<double> row_values = uniform_values(count * width, -1, 1, 62);
  std::vector<double> init_values = uniform_values(destinations * width, -1, 1, 63);
  std::vector<float> rows(row_values.begin(), row_values.end()), init(init_values.begin(), init_values.end());
  const std::vector<float> expected_from_zero =
      serial_row_sums(std::vector<float>(destinations * width, 0), ids, rows, width);
  const std::vector<float> expected_from_init = serial_row_sums(init, ids, rows, width);

  Tensor index = index_tensor(id_values, {count});
  Tensor source = make(row_values, {count, width}, kFloat32);
  Tensor self = make(init_values, {destinations, width}, kFloat32);
  // scatter_add along dim 0 with each row's index repeated across the columns.
  Tensor wide_index = index.unsqueeze(1).expand({count, width}).contiguous();
  const int previous = get_num_threads();
  for (int threads : {1, 2, 4, 3}) {
    set_num_threads(threads);
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    EXPECT_TRUE(same_bits(embedding_backward(source, index, destinations), expected_from_zero));
    EXPECT_TRUE(same_bits(self.index_add(0, index, source), expected_from_init));
    EXPECT_TRUE(same_bits(self.scatter_add(0, wide_index, source), expected_from_init));
    // Many destinations sharing columns: index_add along the last dim.
    EXPECT_TRUE(same_bits(self.t().contiguous().index_add(1, index, source.t()).t(), expected_from_init));
  }
  set_num_threads(previous);
}

}  // namespace
}  // namespace ember
