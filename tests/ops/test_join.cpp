// cat, stack, tril and triu against references written here with plain loops: mixed sizes
// and dtypes, transposed inputs, PyTorch's legacy empty tensors, every error, gradcheck.
#include <gtest/gtest.h>

#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

using Sizes = std::vector<int64_t>;

// Concatenation of the inputs' values along `dim`, element by element.
std::vector<double> ref_cat(const std::vector<Tensor>& inputs, int64_t dim) {
  Sizes out_sizes = inputs[0].sizes();
  out_sizes[dim] = 0;
  for (const Tensor& t : inputs) out_sizes[dim] += t.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out_sizes[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(out_sizes.size()); ++d) inner *= out_sizes[d];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : inputs) {
      std::vector<double> v = values(t);
      const int64_t block = t.size(dim) * inner;
      out.insert(out.end(), v.begin() + o * block, v.begin() + (o + 1) * block);
    }
  }
  return out;
}

Tensor transposed(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype) {
  Tensor t = empty({cols, rows}, dtype).t();
  for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[i]);
  return t;
}

TEST(Cat, MatchesReferenceAlongEveryDim) {
  for (int64_t dim : {0, 1, 2}) {
    std::vector<Tensor> inputs;
    for (int64_t part = 0; part < 3; ++part) {
      Sizes sizes = {2, 3, 4};
      sizes[dim] = part + 1;  // 1, 2, 3 along dim
      int64_t n = 1;
      for (int64_t s : sizes) n *= s;
      inputs.push_back(make(uniform_values(n, -1, 1, static_cast<uint32_t>(dim * 10 + part)), sizes, kFloat32));
    }
    Tensor out = cat(inputs, dim);
    Sizes expected_sizes = {2, 3, 4};
    expected_sizes[dim] = 6;
    EXPECT_EQ(out.sizes(), expected_sizes);
    EXPECT_TRUE(all_equal(out, ref_cat(inputs, dim))) << "dim " << dim;
    EXPECT_TRUE(all_equal(cat(inputs, dim - 3), ref_cat(inputs, dim))) << "negative dim " << dim - 3;
  }
}

TEST(Cat, NonContiguousAndEmptyParts) {
  Tensor a = transposed(uniform_values(12, -1, 1, 1), 3, 4, kFloat64);  // [3, 4]
  Tensor b = make(uniform_values(8, -1, 1, 2), {2, 4}, kFloat64);
  Tensor c = make(uniform_values(20, -1, 1, 3), {5, 4}, kFloat64).slice(0, 0, std::nullopt, 2);  // [3, 4] strided
  Tensor none = zeros({0, 4}, kFloat64);
  EXPECT_TRUE(all_equal(cat({a, none, b, c}, 0), ref_cat({a, b, c}, 0)));
  EXPECT_TRUE(all_equal(cat({a, c}, 1), ref_cat({a, c}, 1)));
  EXPECT_EQ(cat({none, none}, 0).sizes(), (Sizes{0, 4}));
  EXPECT_EQ(cat({zeros({2, 0}), zeros({2, 0})}, 1).sizes(), (Sizes{2, 0}));
}

TEST(Cat, PromotesDtypes) {
  Tensor i = make({1, 2}, {2}, kInt32);
  Tensor f = make({0.5}, {1}, kFloat32);
  Tensor out = cat({i, f});
  EXPECT_EQ(out.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(out, {1, 2, 0.5}));
  EXPECT_EQ(cat({make({1}, {1}, kFloat16), make({2}, {1}, kBFloat16)}).scalar_type(), kFloat32);
  EXPECT_EQ(cat({make({1}, {1}, kInt64), make({1}, {1}, kBool)}).scalar_type(), kInt64);
  EXPECT_EQ(cat({make({1}, {1}, kUInt8), make({1}, {1}, kInt8)}).scalar_type(), kInt32);  // ember has no int16
}

TEST(Cat, SkipsLegacyEmptyTensors) {
  Tensor legacy = zeros({0}, kFloat64);
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  Tensor out = cat({legacy, a, legacy, a}, 1);
  EXPECT_EQ(out.sizes(), (Sizes{2, 6}));
  EXPECT_EQ(out.scalar_type(), kFloat64);  // skipped tensors still take part in type promotion
  EXPECT_TRUE(all_equal(out, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  Tensor only = cat({legacy, zeros({0}, kInt32)});
  EXPECT_EQ(only.sizes(), (Sizes{0}));
  EXPECT_EQ(only.scalar_type(), kFloat64);

  Tensor x = make({1, 2, 3, 4}, {2, 2}, kFloat64).requires_grad_();
  Tensor e = zeros({0}, kFloat64).requires_grad_();
  cat({e, x}, 0).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {1, 1, 1, 1}));
  EXPECT_EQ(e.grad().sizes(), (Sizes{0}));
}

TEST(Cat, Errors) {
  EXPECT_TRUE(throws_error([] { cat({}); }, {"[cat]", "non-empty"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2}), scalar_tensor(1.0)}); }, {"[cat]", "zero-dimensional", "position 1"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3}), zeros({2, 3}), zeros({2, 3, 1})}); },
                           {"[cat]", "same number of dimensions", "got 2 and 3", "tensor 2"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3}), zeros({2, 4})}, 0); },
                           {"[cat]", "except in dimension 0", "expected size 3 but got size 4", "tensor number 1"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2, 3})}, 2); }, {"[cat]", "dimension out of range"}));
  EXPECT_TRUE(throws_error([] { cat({zeros({2}), Tensor()}); }, {"[cat]", "tensor 1", "undefined"}));
}

TEST(Cat, Gradients) {
  Tensor a = make(uniform_values(6, -1, 1, 4), {2, 3}, kFloat64).requires_grad_();
  Tensor b = transposed(uniform_values(4, -1, 1, 5), 2, 2, kFloat64).requires_grad_();
  Tensor c = make(uniform_values(2, -1, 1, 6), {2, 1}, kFloat64);  // no gradient wanted
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return cat({in[0], c, in[1]}, 1); }, {a, b}));
  // A float32 input of a float64 result gets a float32 gradient.
  Tensor f = make({1, 2}, {2}, kFloat32).requires_grad_();
  Tensor d = make({3}, {1}, kFloat64).requires_grad_();
  (cat({f, d}) * make({1, 2, 3}, {3}, kFloat64)).sum().backward();
  EXPECT_EQ(f.grad().scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(f.grad(), {1, 2}));
  EXPECT_TRUE(all_equal(d.grad(), {3}));
}

TEST(Stack, MatchesReference) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  Tensor b = transposed({7, 8, 9, 10, 11, 12}, 2, 3, kFloat32);
  Tensor s0 = stack({a, b});
  EXPECT_EQ(s0.sizes(), (Sizes{2, 2, 3}));
  EXPECT_TRUE(all_equal(s0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  Tensor s1 = stack({a, b}, 1);
  EXPECT_EQ(s1.sizes(), (Sizes{2, 2, 3}));
  EXPECT_TRUE(all_equal(s1, {1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12}));
  Tensor s2 = stack({a, b}, -1);
  EXPECT_EQ(s2.sizes(), (Sizes{2, 3, 2}));
  EXPECT_TRUE(all_equal(s2, {1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12}));
  Tensor scalars = stack({scalar_tensor(1.0), scalar_tensor(2.0), scalar_tensor(3.0)});
  EXPECT_EQ(scalars.sizes(), (Sizes{3}));
  EXPECT_TRUE(all_equal(scalars, {1, 2, 3}));
  EXPECT_EQ(stack({zeros({0}), zeros({0})}).sizes(), (Sizes{2, 0}));
}

TEST(Stack, ErrorsAndGradients) {
  EXPECT_TRUE(throws_error([] { stack({}); }, {"[stack]", "non-empty"}));
  EXPECT_TRUE(throws_error([] { stack({zeros({2, 3}), zeros({2, 3}), zeros({3, 2})}); },
                           {"[stack]", "equal size", "[2, 3] at entry 0", "[3, 2] at entry 2"}));
  EXPECT_TRUE(throws_error([] { stack({zeros({2, 3})}, 3); }, {"[stack]", "dimension out of range"}));
  Tensor a = make(uniform_values(6, -1, 1, 7), {2, 3}, kFloat64).requires_grad_();
  Tensor b = make(uniform_values(6, -1, 1, 8), {2, 3}, kFloat64).requires_grad_();
  for (int64_t dim : {0, 1, 2}) {
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, dim); }, {a, b}));
  }
}

// x[..., i, j] kept when j - i <= diagonal (lower) or >= diagonal (upper).
std::vector<double> ref_triangle(const Tensor& x, int64_t diagonal, bool lower) {
  std::vector<double> v = values(x);
  const int64_t rows = x.size(-2), cols = x.size(-1);
  for (int64_t p = 0; p < static_cast<int64_t>(v.size()); ++p) {
    const int64_t i = (p / cols) % rows, j = p % cols;
    const bool keep = lower ? j - i <= diagonal : j - i >= diagonal;
    if (!keep) v[p] = 0;
  }
  return v;
}

TEST(Triangle, MatchesReferenceForEveryDiagonal) {
  Tensor batched = make(uniform_values(2 * 3 * 5, 1, 2, 9), {2, 3, 5}, kFloat32);
  Tensor tall = transposed(uniform_values(5 * 3, 1, 2, 10), 5, 3, kFloat64);
  Tensor ints = make(integer_values(16, 1, 9, 11), {4, 4}, kInt64);
  for (const Tensor& x : {batched, tall, ints}) {
    for (int64_t diagonal = -6; diagonal <= 6; ++diagonal) {
      SCOPED_TRACE(::testing::Message() << "shape " << IntArrayRef(x.sizes()) << " diagonal " << diagonal);
      Tensor lower = tril(x, diagonal), upper = triu(x, diagonal);
      EXPECT_EQ(lower.sizes(), x.sizes());
      EXPECT_EQ(lower.scalar_type(), x.scalar_type());
      EXPECT_TRUE(all_equal(lower, ref_triangle(x, diagonal, true)));
      EXPECT_TRUE(all_equal(upper, ref_triangle(x, diagonal, false)));
    }
  }
  EXPECT_EQ(tril(zeros({0, 3})).sizes(), (Sizes{0, 3}));
  EXPECT_EQ(triu(zeros({2, 3, 0})).sizes(), (Sizes{2, 3, 0}));
}

TEST(Triangle, ErrorsAndGradients) {
  EXPECT_TRUE(throws_error([] { tril(zeros({3})); }, {"[tril]", "at least 2 dimensions", "[3]"}));
  EXPECT_TRUE(throws_error([] { triu(scalar_tensor(1.0)); }, {"[triu]", "at least 2 dimensions"}));
  Tensor x = make(uniform_values(2 * 3 * 4, -1, 1, 12), {2, 3, 4}, kFloat64).requires_grad_();
  for (int64_t diagonal : {-1, 0, 2}) {
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return tril(in[0], diagonal); }, {x}));
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return triu(in[0], diagonal); }, {x}));
  }
}

}  // namespace
}  // namespace ember
