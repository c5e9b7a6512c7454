// einsum against a float64 plain-loop reference: every assignment of the labels is visited and
// the product of the operands' elements added to the output element it names (size-1 dims
// broadcast by reading index 0). The reference takes an explicit equation of letters only;
// each case writes the ellipsis and implicit outputs out by hand. Gradients by gradcheck,
// user errors by message.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ops/reduce_reference.h"

namespace ember {
namespace {

using namespace testutil;
using Sizes = std::vector<int64_t>;

// Output values of the explicit, letters-only `equation` ("ij,jk->ik") over float64 loops.
std::vector<double> reference_einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  const size_t arrow = equation.find("->");
  const std::string output = equation.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = equation.find(',', start);
    const size_t end = std::min(comma, arrow);
    terms.push_back(equation.substr(start, end - start));
    if (comma == std::string::npos || comma > arrow) break;
    start = comma + 1;
  }
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) {
      const int64_t size = operands[i].size(static_cast<int64_t>(d));
      auto [it, fresh] = extent.emplace(terms[i][d], size);
      if (!fresh && it->second == 1) it->second = size;
    }
  }
  std::vector<char> labels;
  Sizes label_sizes, out_sizes;
  for (const auto& [label, size] : extent) {
    labels.push_back(label);
    label_sizes.push_back(size);
  }
  for (char c : output) out_sizes.push_back(extent[c]);
  std::vector<double> out(count_of(out_sizes), 0.0);
  std::map<char, int64_t> value;
  for (int64_t flat = 0; flat < count_of(label_sizes); ++flat) {
    const Sizes assignment = unravel(flat, label_sizes);
    for (size_t l = 0; l < labels.size(); ++l) value[labels[l]] = assignment[l];
    double product = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      Sizes index;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        index.push_back(operands[i].size(static_cast<int64_t>(d)) == 1 ? 0 : value[terms[i][d]]);
      }
      product *= element(operands[i], ravel(index, operands[i].sizes()));
    }
    Sizes out_index;
    for (char c : output) out_index.push_back(value[c]);
    out[ravel(out_index, out_sizes)] += product;
  }
  return out;
}

struct Case {
  std::string equation;            // as given to ember::einsum
  std::string reference_equation;  // explicit, letters only
  std::vector<Sizes> shapes;
  Sizes expected_shape;
  bool transpose_first = false;    // operand 0 as the transpose of a contiguous tensor
};

const std::vector<Case> kCases = {
    {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}},
    {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}, true},
    {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}},
    {"ii", "ii->", {{4, 4}}, {}},
    {"ii->i", "ii->i", {{4, 4}}, {4}, true},
    {"i,j->ij", "i,j->ij", {{3}, {5}}, {3, 5}},
    {"ij->ji", "ij->ji", {{3, 5}}, {5, 3}},
    {"ba", "ba->ab", {{3, 5}}, {5, 3}},
    {"...ij,...jk", "ABij,Bjk->ABik", {{5, 1, 2, 3}, {4, 3, 2}}, {5, 4, 2, 2}},
    {"...ij,...jk->...ik", "Aij,Ajk->Aik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}},
    {"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {2, 5}},
    {"ij->", "ij->", {{3, 4}}, {}},
    {"ij->j", "ij->j", {{3, 4}}, {4}, true},
    {"i,i->", "i,i->", {{7}, {7}}, {}},
    {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, {2, 4}},
    {"iji->j", "iji->j", {{3, 4, 3}}, {4}},
    {"ij,ij->ij", "ij,ij->ij", {{3, 1}, {3, 4}}, {3, 4}},
    {"i...->...i", "iAB->ABi", {{3, 2, 4}}, {2, 4, 3}},
    {"Ab,bc", "Ab,bc->Ac", {{2, 3}, {3, 4}}, {2, 4}},
    {"bA,cb", "bA,cb->Ac", {{3, 2}, {4, 3}}, {2, 4}},
    {"...ii->...i", "Aii->Ai", {{2, 3, 3}}, {2, 3}},
    {"ij,jk->ik", "ij,jk->ik", {{3, 0}, {0, 5}}, {3, 5}},
    {"ij,kl->", "ij,kl->", {{2, 3}, {4, 5}}, {}},
    {" i j , j k -> i k ", "ij,jk->ik", {{2, 3}, {3, 2}}, {2, 2}},
};

std::vector<Tensor> make_operands(const Case& c, ScalarType dtype, uint32_t seed) {
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    Sizes shape = c.shapes[i];
    const bool transpose = c.transpose_first && i == 0;
    if (transpose) std::swap(shape[0], shape[1]);
    Tensor t = make(uniform_values(count_of(shape), -1, 1, seed + static_cast<uint32_t>(i)), shape, dtype);
    operands.push_back(transpose ? t.t() : t);
  }
  return operands;
}

TEST(Einsum, MatchesPlainLoopReference) {
  for (ScalarType dtype : {kFloat64, kFloat32}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(c.equation + " " + dtype_name(dtype));
      const std::vector<Tensor> operands = make_operands(c, dtype, 11);
      const Tensor out = einsum(c.equation, operands);
      EXPECT_EQ(out.sizes(), c.expected_shape);
      EXPECT_EQ(out.scalar_type(), dtype);
      const Tolerance tol = dtype == kFloat64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
      EXPECT_TRUE(all_close(out, reference_einsum(c.reference_equation, operands), tol));
    }
  }
}

TEST(Einsum, PathChoosesTheContractionOrder) {
  const Case c{"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {2, 5}};
  const std::vector<Tensor> operands = make_operands(c, kFloat64, 5);
  const std::vector<double> expected = reference_einsum(c.reference_equation, operands);
  // (jk, kl) first, then the first operand with their product; and (ij, kl) first.
  EXPECT_TRUE(all_close(einsum(c.equation, operands, IntArrayRef({1, 2, 0, 1})), expected));
  EXPECT_TRUE(all_close(einsum(c.equation, operands, IntArrayRef({0, 2, 0, 1})), expected));
}

TEST(Einsum, Gradcheck) {
  for (const Case& c : kCases) {
    bool empty = false;
    for (const Sizes& shape : c.shapes) empty = empty || count_of(shape) == 0;
    if (empty) continue;  // nothing to differentiate
    SCOPED_TRACE(c.equation);
    std::vector<Tensor> operands = make_operands(c, kFloat64, 23);
    for (Tensor& t : operands) t = t.detach().requires_grad_(true);
    const std::string equation = c.equation;
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return einsum(equation, in); }, operands));
  }
}

TEST(Einsum, BatchedProductBackwardInFloat64) {
  // out[b, i, k] = sum_j a[b, i, j] c[b, j, k]; d sum(out) / d a[b, i, j] = sum_k c[b, j, k] and
  // d sum(out) / d c[b, j, k] = sum_i a[b, i, j].
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64).view({1, 2, 2}).requires_grad_(true);
  Tensor c = tensor({5.0, 6.0}, kFloat64).view({1, 2, 1}).requires_grad_(true);
  Tensor out = einsum("bij,bjk->bik", {a, c});
  EXPECT_EQ(values(out), (std::vector<double>{17, 39}));
  out.sum().backward();
  EXPECT_EQ(a.grad().scalar_type(), kFloat64);
  EXPECT_EQ(values(a.grad()), (std::vector<double>{5, 6, 5, 6}));
  EXPECT_EQ(values(c.grad()), (std::vector<double>{4, 6}));
}

TEST(Einsum, ExpandedAndSlicedOperands) {
  // Stride-0 and stepped views go through the same reshape/bmm path as contiguous ones.
  const Tensor a = make(uniform_values(3, -1, 1, 31), {3, 1}, kFloat64).expand({3, 4});
  const Tensor b = make(uniform_values(40, -1, 1, 32), {4, 10}, kFloat64).slice(1, 0, 10, 2);  // [4, 5]
  const Tensor c = make(uniform_values(30, -1, 1, 33), {5, 6}, kFloat64).t();                   // [6, 5]
  EXPECT_TRUE(all_close(einsum("ij,jk->ik", {a, b}), reference_einsum("ij,jk->ik", {a, b})));
  EXPECT_TRUE(all_close(einsum("ij,jk,lk->il", {a, b, c}), reference_einsum("ij,jk,lk->il", {a, b, c})));
  EXPECT_TRUE(all_close(einsum("ij,ij->i", {a, a}), reference_einsum("ij,ij->i", {a, a})));
}

TEST(Einsum, TraceAndDiagonalOfAKnownMatrix) {
  const Tensor x = arange(9, kFloat64).view({3, 3});  // [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
  EXPECT_TRUE(all_equal(einsum("ii->i", {x}), {0, 4, 8}));
  EXPECT_TRUE(all_equal(einsum("ii", {x}), {12}));
  EXPECT_TRUE(all_equal(einsum("ij->i", {x}), {3, 12, 21}));
}

TEST(Einsum, Errors) {
  const Tensor a = zeros({2, 3}), b = zeros({4, 5}), square = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { einsum("ij,jk->ik", {a}); }, {"[einsum]", "fewer operands", "1"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij->ij", {a, a}); }, {"[einsum]", "more operands", "2"}));
  EXPECT_TRUE(throws_error([&] { einsum("i1->i", {a}); }, {"[einsum]", "invalid subscript '1'", "index 1"}));
  EXPECT_TRUE(throws_error([&] { einsum("ijk->i", {a}); }, {"[einsum]", "subscripts in the equation (3)", "(2)",
                                                            "operand 0"}));
  EXPECT_TRUE(throws_error([&] { einsum("ii->i", {square}); }, {"[einsum]", "subscript i is repeated for operand 0",
                                                               "2 != 3"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij,jk->ik", {a, b}); }, {"[einsum]", "subscript j", "size 3",
                                                                  "size 4", "operand 1"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij->ik", {a}); }, {"[einsum]", "output subscript k does not appear"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij->ii", {a}); }, {"[einsum]", "output subscript i appears more than once"}));
  EXPECT_TRUE(throws_error([&] { einsum("i.j->i", {a}); }, {"[einsum]", "'.'", "ellipsis"}));
  EXPECT_TRUE(throws_error([&] { einsum("...i...->i", {a}); }, {"[einsum]", "more than one ellipsis"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij", {}); }, {"[einsum]", "at least one operand"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij,jk->ik", {a, zeros({3, 2})}, IntArrayRef({0, 0})); },
                           {"[einsum]", "path pair 0", "(0, 0)"}));
  EXPECT_TRUE(throws_error([&] { einsum("ij,jk->ik", {a, zeros({3, 2})}, IntArrayRef({0})); },
                           {"[einsum]", "path must hold 1 pairs"}));
}

}  // namespace
}  // namespace ember
