// matmul, mm, bmm, linear, addmm, outer and the Tensor methods against float64 references
// computed here with plain loops: every PyTorch shape case of matmul (dot, matrix-vector,
// batched with broadcast batch dims), all float dtypes, non-contiguous, expanded, permuted
// and empty operands, odd sizes; gradients by gradcheck; user errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ember/backends.h"
#include "ember/detail/autocast_linear.h"
#include "ember/detail/linear_group.h"
#include "ops/reduce_reference.h"

namespace ember {
namespace {

using namespace testutil;

using Sizes = std::vector<int64_t>;

struct ShapeCase {
  Sizes a, b;
};

std::string describe(const Tensor& a, const Tensor& b) {
  std::ostringstream out;
  out << dtype_name(a.scalar_type()) << " " << IntArrayRef(a.sizes()) << " strides " << IntArrayRef(a.strides())
      << " @ " << IntArrayRef(b.sizes()) << " strides " << IntArrayRef(b.strides());
  return out.str();
}

// ---- reference -------------------------------------------------------------------------------

// Expected values of an output with what bounds their rounding error: `magnitude` is the sum
// of |terms| of each output element, `k` the number of products accumulated, and
// `extra_roundings` the roundings to the dtype beyond the final one (composite ops).
struct Reference {
  Sizes sizes;
  std::vector<double> exact, magnitude;
  int64_t k = 0;
  int extra_roundings = 0;
};

// Batch dims broadcast right-aligned, written here independently of ember's broadcast_shapes.
Sizes broadcast_batch(const Sizes& a, const Sizes& b) {
  const size_t n = std::max(a.size(), b.size());
  Sizes out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Flat index into an operand's own batch of the broadcast batch position `index`.
int64_t source_batch(const Sizes& index, const Sizes& own) {
  Sizes own_index(own.size());
  for (size_t d = 0; d < own.size(); ++d) {
    const int64_t i = index[index.size() - own.size() + d];
    own_index[d] = own[d] == 1 ? 0 : i;
  }
  return ravel(own_index, own);
}

// PyTorch's matmul: a 1-D `a` is a row [1, k] and a 1-D `b` a column [k, 1], both dims
// removed from the result; the dims before the last two broadcast.
Reference reference_matmul(const Tensor& a, const Tensor& b) {
  Sizes sa = a.sizes(), sb = b.sizes();
  if (a.dim() == 1) sa.insert(sa.begin(), 1);
  if (b.dim() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Sizes batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Sizes batch = broadcast_batch(batch_a, batch_b);
  const std::vector<double> va = values(a), vb = values(b);
  Reference r;
  r.k = k;
  for (int64_t flat = 0; flat < count_of(batch); ++flat) {
    const Sizes index = unravel(flat, batch);
    const double* pa = va.data() + source_batch(index, batch_a) * m * k;
    const double* pb = vb.data() + source_batch(index, batch_b) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += pa[i * k + p] * pb[p * n + j];
          magnitude += std::abs(pa[i * k + p] * pb[p * n + j]);
        }
        r.exact.push_back(sum);
        r.magnitude.push_back(magnitude);
      }
  }
  r.sizes = batch;
  if (a.dim() > 1) r.sizes.push_back(m);
  if (b.dim() > 1) r.sizes.push_back(n);
  return r;
}

// beta * self + alpha * product, self broadcast over the product's [m, n]; beta == 0 ignores
// self entirely (its NaN and inf included), as PyTorch's addmm does.
Reference reference_addmm(const Tensor& self, Reference product, double beta, double alpha) {
  const Sizes self_sizes = self.sizes();
  const std::vector<double> vs = values(self);
  for (size_t flat = 0; flat < product.exact.size(); ++flat) {
    const double s = beta == 0 ? 0 : vs[source_batch(unravel(static_cast<int64_t>(flat), product.sizes), self_sizes)];
    product.exact[flat] = alpha * product.exact[flat] + beta * s;
    product.magnitude[flat] = std::abs(alpha) * product.magnitude[flat] + std::abs(beta * s);
  }
  return product;
}

// ---- comparison ------------------------------------------------------------------------------

int precision_bits(ScalarType dtype) {
  switch (dtype) {
    case kFloat64: return 53;
    case kFloat32: return 24;
    case kFloat16: return 11;
    default: return 8;  // bfloat16
  }
}

// Spacing of dtype's values around |x| (f16 subnormals have a fixed spacing of 2^-24).
double ulp(ScalarType dtype, double x) {
  const double smallest = dtype == kFloat16 ? std::ldexp(1.0, -24) : std::numeric_limits<double>::denorm_min();
  if (x == 0) return smallest;
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = f * 2^exponent, f in [0.5, 1)
  return std::max(smallest, std::ldexp(1.0, exponent - precision_bits(dtype)));
}

// Accumulation runs in float32 for f32/f16/bf16 and in float64 for f64, then the result is
// rounded once to the dtype: |actual - round(exact)| <= 1 ulp + k * u_acc * sum|terms|.
// Each extra rounding of a composite op adds one ulp of the terms' magnitude.
::testing::AssertionResult matches(const Tensor& actual, const Reference& ref, ScalarType dtype) {
  if (actual.scalar_type() != dtype) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.scalar_type()) << " != " << dtype_name(dtype);
  }
  if (actual.sizes() != ref.sizes) {
    return ::testing::AssertionFailure() << "shape " << IntArrayRef(actual.sizes()) << " != " << IntArrayRef(ref.sizes);
  }
  const double unit = dtype == kFloat64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double got = element(actual, i), expected = round_to(dtype, ref.exact[i]);
    const double allowed = ulp(dtype, expected) + ref.extra_roundings * ulp(dtype, ref.magnitude[i]) +
                           static_cast<double>(ref.k + 2) * unit * ref.magnitude[i];
    if (!(std::abs(got - expected) <= allowed)) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got << ", expected " << expected
                                           << " (diff " << std::abs(got - expected) << ", allowed " << allowed << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- operands --------------------------------------------------------------------------------

// How an operand of a given logical shape sits in memory.
enum class MatrixLayout {
  Contiguous,
  Transposed,        // last two dims swapped in storage
  TransposedPadded,  // transposed with a leading dimension larger than the row count
  RowStep,           // every other row of a taller matrix
  ColumnStep,        // every other element of a wider last dim (no BLAS layout fits)
  ExpandedBatch,     // dim 0 expanded from size 1 (stride 0)
  PermutedBatch,     // dims 0 and 1 swapped in storage
};
const std::vector<MatrixLayout> kMatrixLayouts = {
    MatrixLayout::Contiguous, MatrixLayout::Transposed,    MatrixLayout::TransposedPadded, MatrixLayout::RowStep,
    MatrixLayout::ColumnStep, MatrixLayout::ExpandedBatch, MatrixLayout::PermutedBatch};

int64_t min_dims(MatrixLayout layout) {
  switch (layout) {
    case MatrixLayout::Contiguous:
    case MatrixLayout::ColumnStep: return 1;
    case MatrixLayout::ExpandedBatch:
    case MatrixLayout::PermutedBatch: return 3;
    default: return 2;
  }
}

Tensor allocate(Sizes sizes, ScalarType dtype, MatrixLayout layout) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  Sizes storage = sizes;
  switch (layout) {
    case MatrixLayout::Contiguous: return empty(sizes, dtype);
    case MatrixLayout::Transposed:
      std::swap(storage[nd - 1], storage[nd - 2]);
      return empty(storage, dtype).transpose(-1, -2);
    case MatrixLayout::TransposedPadded:
      std::swap(storage[nd - 1], storage[nd - 2]);
      storage[nd - 1] += 3;
      return empty(storage, dtype).narrow(-1, 0, sizes[nd - 2]).transpose(-1, -2);
    case MatrixLayout::RowStep:
      storage[nd - 2] *= 2;
      return empty(storage, dtype).slice(-2, 0, std::nullopt, 2);
    case MatrixLayout::ColumnStep:
      storage[nd - 1] *= 2;
      return empty(storage, dtype).slice(-1, 0, std::nullopt, 2);
    case MatrixLayout::ExpandedBatch:
      storage[0] = 1;
      return empty(storage, dtype).expand(sizes);
    case MatrixLayout::PermutedBatch:
      std::swap(storage[0], storage[1]);
      return empty(storage, dtype).transpose(0, 1);
  }
  return {};
}

// Values uniform in [-1, 1] written position by position (an expanded operand keeps the
// last value written to each shared element; the references read the stored values back).
Tensor operand(const Sizes& sizes, ScalarType dtype, uint32_t seed, MatrixLayout layout = MatrixLayout::Contiguous) {
  Tensor t = allocate(sizes, dtype, layout);
  const std::vector<double> v = uniform_values(t.numel(), -1, 1, seed);
  for (int64_t i = 0; i < t.numel(); ++i) write_element(t, i, v[i]);
  return t;
}

Tensor leaf(const Sizes& sizes, uint32_t seed) {
  return operand(sizes, kFloat64, seed).requires_grad_(true);
}

// matmul and every spelling that accepts the shapes (method, mm for 2-D, bmm for equal
// 3-D batches) against one reference.
void expect_all_products(const Tensor& a, const Tensor& b) {
  const std::string what = describe(a, b);
  const Reference ref = reference_matmul(a, b);
  const ScalarType dtype = a.scalar_type();
  EXPECT_TRUE(matches(matmul(a, b), ref, dtype)) << "matmul " << what;
  EXPECT_TRUE(matches(a.matmul(b), ref, dtype)) << "Tensor::matmul " << what;
  if (a.dim() == 2 && b.dim() == 2) {
    EXPECT_TRUE(matches(mm(a, b), ref, dtype)) << "mm " << what;
    EXPECT_TRUE(matches(a.mm(b), ref, dtype)) << "Tensor::mm " << what;
  }
  if (a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0)) {
    EXPECT_TRUE(matches(bmm(a, b), ref, dtype)) << "bmm " << what;
    EXPECT_TRUE(matches(a.bmm(b), ref, dtype)) << "Tensor::bmm " << what;
  }
}

// The products of a shape case with operands in the given layouts, seeded seed and seed + 1.
void expect_case(const ShapeCase& c, ScalarType dtype, uint32_t seed, MatrixLayout layout_a = MatrixLayout::Contiguous,
                 MatrixLayout layout_b = MatrixLayout::Contiguous) {
  expect_all_products(operand(c.a, dtype, seed, layout_a), operand(c.b, dtype, seed + 1, layout_b));
}

// ---- forward: shapes -------------------------------------------------------------------------

// Odd sizes crossing the kernels' block edges; m = 1 takes the few-rows low-precision path.
const std::vector<ShapeCase> kShapeCases = {
    // 1-D . 1-D: a dot product with a 0-dim result
    {{1}, {1}}, {{33}, {33}}, {{129}, {129}},
    // 2-D @ 1-D, 1-D @ 2-D
    {{7, 33}, {33}}, {{65}, {65, 7}},
    // 2-D @ 2-D
    {{1, 1}, {1, 1}}, {{1, 129}, {129, 65}}, {{7, 33}, {33, 65}}, {{65, 129}, {129, 7}}, {{129, 65}, {65, 129}},
    {{33, 7}, {7, 1}},
    // batched: equal batches, broadcast batch dims, N-D @ 2-D, 2-D @ N-D, N-D @ 1-D, 1-D @ N-D
    {{3, 7, 33}, {3, 33, 5}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{3, 4}, {2, 4, 5}}, {{1, 7, 5}, {3, 5, 6}},
    {{2, 3, 7, 5}, {5, 6}}, {{2, 3, 7, 4}, {4}}, {{4}, {2, 3, 4, 5}}, {{6, 1, 2, 33}, {1, 5, 33, 7}},
};

TEST(Linalg, MatmulShapeCasesMatchReference) {
  uint32_t seed = 1;
  for (ScalarType dtype : kFloatTypes)
    for (const ShapeCase& c : kShapeCases) expect_case(c, dtype, seed += 2);
}

TEST(Linalg, MatmulResultShapesFollowPyTorch) {
  auto shape_of = [](const Sizes& a, const Sizes& b) { return matmul(zeros(a), zeros(b)).sizes().vec(); };
  EXPECT_EQ(shape_of({3}, {3}), Sizes{});
  EXPECT_EQ(shape_of({2, 3}, {3}), (Sizes{2}));
  EXPECT_EQ(shape_of({3}, {3, 4}), (Sizes{4}));
  EXPECT_EQ(shape_of({2, 1, 3, 4}, {5, 4, 2}), (Sizes{2, 5, 3, 2}));
  EXPECT_EQ(shape_of({3, 4}, {2, 4, 5}), (Sizes{2, 3, 5}));
  EXPECT_EQ(shape_of({2, 3, 7, 4}, {4}), (Sizes{2, 3, 7}));
  EXPECT_EQ(shape_of({4}, {2, 3, 4, 5}), (Sizes{2, 3, 5}));
}

// ---- forward: layouts ------------------------------------------------------------------------

// Every pair of operand layouts that fits the operands' ranks, for each dtype.
const std::vector<ShapeCase> kLayoutCases = {
    {{7, 33}, {33, 5}}, {{3, 7, 33}, {3, 33, 5}}, {{2, 3, 7, 5}, {3, 5, 4}}, {{4, 7, 5}, {5, 6}},
    {{4, 7, 5}, {5}},   {{33}, {2, 33, 7}},       {{1, 9}, {2, 9, 3}},
};

TEST(Linalg, NonContiguousOperandsMatchReference) {
  uint32_t seed = 100;
  for (ScalarType dtype : kFloatTypes)
    for (const ShapeCase& c : kLayoutCases)
      for (MatrixLayout layout_a : kMatrixLayouts)
        for (MatrixLayout layout_b : kMatrixLayouts) {
          if (min_dims(layout_a) > static_cast<int64_t>(c.a.size()) ||
              min_dims(layout_b) > static_cast<int64_t>(c.b.size()))
            continue;
          expect_case(c, dtype, seed += 2, layout_a, layout_b);
        }
}

TEST(Linalg, OperandsAreNotModified) {
  Tensor a = operand({3, 7, 5}, kFloat32, 7, MatrixLayout::Transposed);
  Tensor b = operand({5, 4}, kFloat32, 8, MatrixLayout::ColumnStep);
  const std::vector<double> before_a = values(a), before_b = values(b);
  matmul(a, b);
  EXPECT_TRUE(all_equal(a, before_a));
  EXPECT_TRUE(all_equal(b, before_b));
}

// ---- forward: empty ----------------------------------------------------------------------------

TEST(Linalg, ZeroSizeDimsGiveEmptyOrZeroResults) {
  // m = 0, n = 0, k = 0 (a sum over nothing: zeros), batch 0, in each code path.
  const std::vector<ShapeCase> cases = {
      {{0, 5}, {5, 3}},       {{4, 5}, {5, 0}},       {{4, 0}, {0, 3}},          {{0}, {0}},
      {{0}, {0, 3}},          {{4, 0}, {0}},          {{0, 3, 4}, {0, 4, 5}},    {{3, 4, 0}, {3, 0, 5}},
      {{3, 0, 4}, {3, 4, 5}}, {{0, 3, 4}, {4, 5}},    {{2, 3, 0}, {0, 5}},       {{2, 0, 3}, {3, 4}},
      {{2, 1, 3, 0}, {5, 0, 2}}, {{0, 1, 3, 4}, {5, 4, 2}}, {{3, 0}, {2, 0, 4}}, {{2, 3, 0}, {0}},
  };
  uint32_t seed = 500;
  for (ScalarType dtype : kFloatTypes)
    for (const ShapeCase& c : cases) expect_case(c, dtype, seed += 2);
}

// ---- linear ------------------------------------------------------------------------------------

// x @ weight^T, plus bias broadcast over the last dim (one more rounding).
Reference reference_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Reference r = reference_matmul(x, weight.t());
  if (!bias.defined()) return r;
  const std::vector<double> vb = values(bias);
  const int64_t out_features = weight.size(0);
  for (size_t i = 0; i < r.exact.size(); ++i) {
    r.exact[i] += vb[i % out_features];
    r.magnitude[i] += std::abs(vb[i % out_features]);
  }
  r.extra_roundings = 1;
  return r;
}

TEST(Linalg, LinearMatchesReference) {
  const int64_t in = 33, out = 7;
  uint32_t seed = 700;
  for (ScalarType dtype : kFloatTypes)
    for (const Sizes& x_sizes : {Sizes{in}, Sizes{5, in}, Sizes{2, 5, in}, Sizes{0, in}})
      for (MatrixLayout weight_layout : {MatrixLayout::Contiguous, MatrixLayout::Transposed, MatrixLayout::RowStep})
        for (bool with_bias : {false, true}) {
          Tensor x = operand(x_sizes, dtype, seed++);
          Tensor weight = operand({out, in}, dtype, seed++, weight_layout);
          Tensor bias = with_bias ? operand({out}, dtype, seed++, MatrixLayout::ColumnStep) : Tensor();
          EXPECT_TRUE(matches(linear(x, weight, bias), reference_linear(x, weight, bias), dtype))
              << describe(x, weight) << (with_bias ? " with bias" : "");
        }
}

// detail::linear_group (a decoding step's q/k/v projections, Note [Grouped products]): the
// products equal linear's, bitwise, on the grouped path (few bf16/f16 rows, row-major weights:
// linear's on ember's kernel, where the autotuner may send a narrow member alone elsewhere)
// and on its fallbacks (more rows, float32, a transposed weight, a recording autograd).
TEST(Linalg, LinearGroupEqualsSeparateLinears) {
  const int64_t in = 40;
  uint32_t seed = 900;
  for (ScalarType dtype : kFloatTypes)
    for (const Sizes& x_sizes : {Sizes{in}, Sizes{1, 1, in}, Sizes{2, 3, in}, Sizes{10, in}, Sizes{0, in}})
      for (MatrixLayout last_layout : {MatrixLayout::Contiguous, MatrixLayout::RowStep, MatrixLayout::Transposed}) {
        const Tensor x = operand(x_sizes, dtype, seed++);
        const std::vector<Tensor> weights = {operand({48, in}, dtype, seed++), operand({8, in}, dtype, seed++),
                                             operand({17, in}, dtype, seed++, last_layout)};
        NoGradGuard no_grad;
        const std::vector<Tensor> grouped = detail::linear_group(x, weights);
        ASSERT_EQ(grouped.size(), weights.size());
        for (size_t i = 0; i < weights.size(); ++i) {
          const Tensor expected = linear(x, weights[i]);
          // Where the products ran as a group, the member's own product on the group's backend.
          const std::string backend = backends::gemm_backend();
          backends::set_gemm_backend("ember");
          const Tensor on_ember = linear(x, weights[i]);
          backends::set_gemm_backend("openblas");
          const Tensor on_openblas = linear(x, weights[i]);
          backends::set_gemm_backend(backend);
          EXPECT_EQ(grouped[i].sizes(), expected.sizes());
          EXPECT_TRUE(equal(grouped[i], expected) || equal(grouped[i], on_ember) || equal(grouped[i], on_openblas))
              << describe(x, weights[i]) << " member " << i;
          EXPECT_TRUE(matches(grouped[i], reference_linear(x, weights[i], Tensor()), dtype)) << describe(x, weights[i]);
        }
      }
}

TEST(Linalg, LinearGroupRecordsGradientsAsLinearDoes) {
  const Tensor x = operand({1, 1, 24}, kBFloat16, 950).requires_grad_();
  const Tensor w0 = operand({16, 24}, kBFloat16, 951).requires_grad_(), w1 = operand({5, 24}, kBFloat16, 952);
  const std::vector<Tensor> out = detail::linear_group(x, {w0, w1});
  (out[0].to(kFloat32).sum() + out[1].to(kFloat32).square().sum()).backward();
  const Tensor x2 = x.detach().requires_grad_(), w02 = w0.detach().requires_grad_();
  (linear(x2, w02).to(kFloat32).sum() + linear(x2, w1).to(kFloat32).square().sum()).backward();
  EXPECT_TRUE(equal(x.grad(), x2.grad()));
  EXPECT_TRUE(equal(w0.grad(), w02.grad()));
}

TEST(Linalg, LinearGroupOfEmptyFeaturesGivesZeros) {
  NoGradGuard no_grad;
  const std::vector<Tensor> out = detail::linear_group(ones({2, 3, 0}, kBFloat16), {ones({4, 0}, kBFloat16), ones({5, 0}, kBFloat16)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].sizes(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_TRUE(equal(out[0], zeros({2, 3, 4}, kBFloat16)));
}

TEST(Linalg, LinearGroupErrorsAreLinears) {
  const Tensor x = ones({2, 6}, kBFloat16);
  EXPECT_THROW(detail::linear_group(x, {ones({3, 6}, kBFloat16), ones({3, 5}, kBFloat16)}), Error);
  EXPECT_THROW(detail::linear_group(Tensor(), {ones({3, 6}, kBFloat16)}), Error);
}

// detail::autocast_linear (Note [Autocast linear]): a float32 weight computing in x's bf16/f16.
// The output and x's gradient are the composite linear(x, w.to(dtype))'s, bitwise; the
// weight's gradient is gᵀx to float32 accuracy against float64, where the composite's, rounded
// to bf16/f16 on the way, is off by up to half their unit (2^-9 relative for bf16): the bound
// below is far tighter. 1200 rows put the weight gradient's k in several spans.
TEST(Linalg, AutocastLinearKeepsTheWeightGradientInFloat32) {
  uint32_t seed = 970;
  for (ScalarType dtype : {kBFloat16, kFloat16})
    for (const Sizes& x_sizes : {Sizes{2, 3, 40}, Sizes{7, 40}, Sizes{2, 600, 40}})
      for (bool with_bias : {false, true}) {
        const std::string what = std::string(dtype_name(dtype)) + " x " + ::testing::PrintToString(x_sizes) +
                                 (with_bias ? " with bias" : "");
        const Tensor x = operand(x_sizes, dtype, seed++).requires_grad_();
        const Tensor w = operand({24, 40}, kFloat32, seed++).requires_grad_();
        const Tensor b = with_bias ? operand({24}, kFloat32, seed++).requires_grad_() : Tensor();
        Sizes y_sizes = x_sizes;
        y_sizes.back() = 24;
        const Tensor g = operand(y_sizes, dtype, seed++);
        const Tensor y = detail::autocast_linear(x, w, b);
        y.backward(g);
        const Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_();
        const Tensor b2 = with_bias ? b.detach().requires_grad_() : Tensor();
        const Tensor y2 = linear(x2, w2.to(dtype), with_bias ? b2.to(dtype) : Tensor());
        y2.backward(g);
        EXPECT_TRUE(equal(y, y2)) << what;
        EXPECT_TRUE(equal(x.grad(), x2.grad())) << what;
        if (with_bias) EXPECT_TRUE(equal(b.grad(), b2.grad())) << what;
        ASSERT_EQ(w.grad().scalar_type(), kFloat32) << what;
        const Reference ref = reference_matmul(g.reshape({-1, 24}).t(), x.detach().reshape({-1, 40}));
        EXPECT_TRUE(matches(w.grad(), ref, kFloat32)) << what;
        if (ref.k < 100)  // (for 1200 terms the float32 bound is looser than f16's rounding)
          EXPECT_FALSE(matches(w2.grad(), ref, kFloat32)) << what << ": the bound must catch a rounded gradient";
      }
}

// A group of autocast linear layers on one input (the GPT's query, key and value) gives what
// separate autocast_linear calls give, outputs and every gradient bit for bit, where each
// member's own product runs on the group's backend (forced here: the bands of OpenBLAS's
// grouped tiles at 1200 rows, ember's few-rows job at 6); without autograd it is linear_group.
TEST(Linalg, AutocastLinearGroupEqualsSeparateCalls) {
  const std::string backend = backends::gemm_backend();
  for (const char* forced : {"openblas", "ember"}) {
    backends::set_gemm_backend(forced);
    uint32_t seed = 1000;
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (const Sizes& x_sizes : {Sizes{2, 3, 40}, Sizes{2, 600, 40}}) {
        const std::string what = std::string(forced) + " " + dtype_name(dtype) + " x " + ::testing::PrintToString(x_sizes);
        const Tensor x = operand(x_sizes, dtype, seed++).requires_grad_();
        std::vector<Tensor> weights, probes;
        for (int64_t n : {24, 8, 50}) {
          weights.push_back(operand({n, 40}, kFloat32, seed++).requires_grad_());
          Sizes y_sizes = x_sizes;
          y_sizes.back() = n;
          probes.push_back(operand(y_sizes, kFloat32, seed++));
        }
        const Tensor x2 = x.detach().requires_grad_();
        std::vector<Tensor> weights2;
        for (const Tensor& w : weights) weights2.push_back(w.detach().requires_grad_());
        const std::vector<Tensor> grouped = detail::autocast_linear_group(x, weights);
        ASSERT_EQ(grouped.size(), weights.size());
        Tensor loss = zeros({}), loss2 = zeros({});
        std::vector<Tensor> separate;
        for (size_t i = 0; i < weights.size(); ++i) {
          separate.push_back(detail::autocast_linear(x2, weights2[i]));
          loss = loss + (grouped[i].to(kFloat32) * probes[i]).sum();
          loss2 = loss2 + (separate[i].to(kFloat32) * probes[i]).sum();
        }
        loss.backward();
        loss2.backward();
        for (size_t i = 0; i < weights.size(); ++i) {
          EXPECT_TRUE(equal(grouped[i], separate[i])) << what << " member " << i;
          EXPECT_EQ(grouped[i].grad_fn()->name(), "AutocastLinearBackward") << what;
          EXPECT_TRUE(equal(weights[i].grad(), weights2[i].grad())) << what << " member " << i;
        }
        EXPECT_TRUE(equal(x.grad(), x2.grad())) << what;
      }
  }
  backends::set_gemm_backend(backend);
  const Tensor x = operand({5, 40}, kBFloat16, 1100);
  const std::vector<Tensor> weights = {operand({24, 40}, kFloat32, 1101).requires_grad_(),
                                       operand({8, 40}, kFloat32, 1102).requires_grad_()};
  NoGradGuard no_grad;
  const std::vector<Tensor> grouped = detail::autocast_linear_group(x, weights);
  const std::vector<Tensor> expected = detail::linear_group(x, {weights[0].to(kBFloat16), weights[1].to(kBFloat16)});
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_FALSE(grouped[i].requires_grad());
    EXPECT_TRUE(equal(grouped[i], expected[i])) << "member " << i;
  }
}

// Where the fused gradient does not apply, autocast_linear is the composite, gradients
// included: float32 x, a weight that needs no gradient, no grad mode; and with create_graph
// the weight's gradient can be differentiated again.
TEST(Linalg, AutocastLinearFallsBackToTheComposite) {
  const Tensor w = operand({6, 10}, kFloat32, 990).requires_grad_();
  const Tensor x32 = operand({4, 10}, kFloat32, 991).requires_grad_();
  const Tensor y32 = detail::autocast_linear(x32, w);
  EXPECT_TRUE(equal(y32, linear(x32, w)));
  EXPECT_EQ(y32.grad_fn()->name(), linear(x32, w).grad_fn()->name());
  const Tensor x = operand({4, 10}, kBFloat16, 992).requires_grad_();
  const Tensor frozen = w.detach();
  EXPECT_TRUE(equal(detail::autocast_linear(x, frozen), linear(x, frozen.to(kBFloat16))));
  {
    NoGradGuard no_grad;
    const Tensor y = detail::autocast_linear(x, w);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(equal(y, linear(x, w.to(kBFloat16))));
  }
  const Tensor y = detail::autocast_linear(x, w);
  const Tensor loss = y.to(kFloat32).square().sum();
  const Tensor dw = autograd::grad({loss}, {w}, {}, true, true)[0];
  ASSERT_TRUE(dw.requires_grad());
  EXPECT_EQ(dw.scalar_type(), kFloat32);
  dw.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  // The same second derivative as the composite's, to bf16's accuracy.
  const Tensor x2 = x.detach().requires_grad_();
  const Tensor loss2 = linear(x2, w.to(kBFloat16)).to(kFloat32).square().sum();
  autograd::grad({loss2}, {w}, {}, true, true)[0].sum().backward();
  EXPECT_TRUE(allclose(x.grad().to(kFloat32), x2.grad().to(kFloat32), 0.02, 0.02));
}

// ---- addmm -------------------------------------------------------------------------------------

TEST(Linalg, AddmmMatchesReferenceForBetaAndAlpha) {
  const int64_t m = 7, k = 33, n = 5;
  const std::vector<std::pair<double, double>> beta_alpha = {{1, 1}, {0.5, 2}, {-1, 0.25}, {0, 1}, {0, 3}, {2, 0}};
  uint32_t seed = 900;
  for (ScalarType dtype : kFloatTypes)
    for (const Sizes& self_sizes : {Sizes{m, n}, Sizes{n}, Sizes{1, n}, Sizes{m, 1}, Sizes{}})
      for (auto [beta, alpha] : beta_alpha) {
        Tensor self = operand(self_sizes, dtype, seed++);
        Tensor mat1 = operand({m, k}, dtype, seed++, MatrixLayout::Transposed);
        Tensor mat2 = operand({k, n}, dtype, seed++);
        Reference ref = reference_addmm(self, reference_matmul(mat1, mat2), beta, alpha);
        ref.extra_roundings = 3;  // product, alpha * product, beta * self, then the sum
        EXPECT_TRUE(matches(addmm(self, mat1, mat2, beta, alpha), ref, dtype))
            << dtype_name(dtype) << " self " << IntArrayRef(self_sizes) << " beta " << beta << " alpha " << alpha;
      }
}

TEST(Linalg, AddmmWithBetaZeroIgnoresNaNAndInfInSelf) {
  uint32_t seed = 1100;
  for (ScalarType dtype : kFloatTypes) {
    Tensor self = make({kNaN, kInf, -kInf, kNaN, 0, kNaN}, {2, 3}, dtype);
    Tensor mat1 = operand({2, 4}, dtype, seed++), mat2 = operand({4, 3}, dtype, seed++);
    // Scaling by 2 is exact, so one rounding as in a plain product.
    const Reference ref = reference_addmm(self, reference_matmul(mat1, mat2), 0, 2);
    Tensor out = addmm(self, mat1, mat2, 0, 2);
    EXPECT_TRUE(matches(out, ref, dtype)) << dtype_name(dtype);
    EXPECT_FALSE(isnan(out).any().item<bool>()) << dtype_name(dtype);
  }
}

// ---- outer -------------------------------------------------------------------------------------

TEST(Linalg, OuterMatchesReference) {
  uint32_t seed = 1200;
  for (ScalarType dtype : kFloatTypes)
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 33}, {65, 1}, {0, 3}, {4, 0}}) {
      Tensor a = operand({m}, dtype, seed++, MatrixLayout::ColumnStep), b = operand({n}, dtype, seed++);
      // outer(a, b) is a [m, 1] @ [1, n] product: one term per element.
      Reference ref = reference_matmul(a.unsqueeze(1), b.unsqueeze(0));
      EXPECT_TRUE(matches(outer(a, b), ref, dtype)) << describe(a, b);
    }
}

// ---- gradients ---------------------------------------------------------------------------------

std::string shapes(const ShapeCase& c) {
  std::ostringstream out;
  out << IntArrayRef(c.a) << " @ " << IntArrayRef(c.b);
  return out.str();
}

// Gradients of broadcast operands sum over the dims they were broadcast along.
const std::vector<ShapeCase> kGradCases = {
    {{3}, {3}},          {{2, 3}, {3}},          {{3}, {3, 2}},          {{2, 3}, {3, 4}},
    {{2, 2, 3}, {2, 3, 2}}, {{2, 1, 2, 3}, {3, 3, 2}}, {{2, 3}, {2, 3, 2}}, {{2, 2, 3}, {3, 2}},
    {{2, 2, 3}, {3}},    {{3}, {2, 3, 2}},       {{1, 2, 3}, {2, 3, 2}}, {{2, 2, 3}, {1, 3, 2}},
    {{2, 1, 2, 3}, {1, 3, 3, 2}},
};

TEST(Linalg, MatmulGradcheckForEveryShapeCase) {
  uint32_t seed = 1300;
  for (const ShapeCase& c : kGradCases) {
    EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                                {leaf(c.a, seed), leaf(c.b, seed + 1)}))
        << shapes(c);
    EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].matmul(in[1]); },
                                {leaf(c.a, seed + 2), leaf(c.b, seed + 3)}))
        << "Tensor::matmul " + shapes(c);
    seed += 4;
  }
}

TEST(Linalg, BroadcastGradientSumsOverBroadcastDims) {
  // d/dB sum(A @ B) for B [k, n] shared by a batch of 3: each entry sums A's column sums over the batch.
  Tensor a = leaf({3, 2, 4}, 1400), b = leaf({4, 5}, 1401);
  matmul(a, b).sum().backward();
  std::vector<double> expected(20, 0.0);
  const std::vector<double> va = values(a);
  for (int64_t batch = 0; batch < 3; ++batch)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t p = 0; p < 4; ++p)
        for (int64_t j = 0; j < 5; ++j) expected[p * 5 + j] += va[(batch * 2 + i) * 4 + p];
  ASSERT_TRUE(b.grad().defined());
  EXPECT_EQ(b.grad().sizes(), (Sizes{4, 5}));
  EXPECT_TRUE(all_close(b.grad(), expected));
}

TEST(Linalg, GradcheckThroughNonContiguousOperands) {
  // Transposed and expanded views made inside fn, so the backward sees the strided operands.
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return mm(in[0].t(), in[1]); },
                              {leaf({4, 3}, 1500), leaf({4, 2}, 1501)}))
      << "mm(a.t(), b)";
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return bmm(in[0].mT(), in[1].expand({3, 4, 2}));
      },
      {leaf({3, 4, 2}, 1502), leaf({1, 4, 2}, 1503)}))
      << "bmm(a.mT(), b expanded)";
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return matmul(in[0].permute({1, 0, 2, 3}), in[1].mT());
      },
      {leaf({3, 2, 2, 4}, 1504), leaf({5, 4}, 1505)}))
      << "matmul(a permuted, b.mT())";
}

TEST(Linalg, MmBmmGradcheck) {
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return mm(in[0], in[1]); },
                              {leaf({3, 4}, 1600), leaf({4, 2}, 1601)}))
      << "mm";
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].mm(in[1]); },
                              {leaf({1, 4}, 1602), leaf({4, 1}, 1603)}))
      << "Tensor::mm";
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                              {leaf({2, 3, 4}, 1604), leaf({2, 4, 2}, 1605)}))
      << "bmm";
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].bmm(in[1]); },
                              {leaf({3, 1, 4}, 1606), leaf({3, 4, 3}, 1607)}))
      << "Tensor::bmm";
}

TEST(Linalg, LinearGradcheck) {
  uint32_t seed = 1700;
  for (const Sizes& x_sizes : {Sizes{4}, Sizes{3, 4}, Sizes{2, 3, 4}}) {
    std::ostringstream sizes_text;
    sizes_text << "linear x " << IntArrayRef(x_sizes);
    const std::string what = sizes_text.str();
    EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                                {leaf(x_sizes, seed), leaf({5, 4}, seed + 1), leaf({5}, seed + 2)}))
        << what + " with bias";
    EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); },
                                {leaf(x_sizes, seed + 3), leaf({5, 4}, seed + 4)}))
        << what + " without bias";
    seed += 5;
  }
}

// A matrix stored transposed (linear's weight.t(), or any mm operand whose strides are a
// transpose's) gets its gradient in its own layout, as libtorch's mm backward gives it: the
// leaf's gradient is contiguous (and AccumulateGrad keeps it without a copy), with the values
// of the float64 products.
TEST(Linalg, TransposedOperandsGetGradientsInTheirLayout) {
  const Tensor x = leaf({6, 4}, 1800), w = leaf({5, 4}, 1801), p = leaf({3, 6}, 1802), z = leaf({3, 4}, 1803);
  std::vector<bool> arrived_contiguous;  // as the leaves' hooks see the gradients
  std::vector<const void*> arrived_at;
  for (const Tensor* t : {&w, &p})
    t->register_hook([&](const Tensor& g) {
      arrived_contiguous.push_back(g.is_contiguous());
      arrived_at.push_back(g.data_ptr());
    });
  (linear(x, w).square().sum() + mm(p.t(), z).sum()).backward();
  EXPECT_EQ(arrived_contiguous, std::vector<bool>({true, true}));
  ASSERT_EQ(arrived_at.size(), 2u);
  EXPECT_EQ(w.grad().data_ptr(), arrived_at[0]) << "the gradient was copied";
  EXPECT_EQ(p.grad().data_ptr(), arrived_at[1]) << "the gradient was copied";
  // d/dW sum((x Wᵀ)²) = 2 (x Wᵀ)ᵀ x; d/dP sum(Pᵀ z): every column of P's gradient is z's row sums.
  const Tensor x64 = x.detach().to(kFloat64), w64 = w.detach().to(kFloat64), z64 = z.detach().to(kFloat64);
  EXPECT_TRUE(w.grad().to(kFloat64).allclose(2 * x64.matmul(w64.t()).t().matmul(x64), 1e-5, 1e-5));
  EXPECT_TRUE(p.grad().to(kFloat64).allclose(z64.sum(1, true).expand({3, 6}), 1e-5, 1e-5));
}

TEST(Linalg, AddmmGradcheck) {
  uint32_t seed = 1800;
  for (const Sizes& self_sizes : {Sizes{3, 2}, Sizes{2}, Sizes{3, 1}})
    for (auto [beta, alpha] : std::vector<std::pair<double, double>>{{1, 1}, {0.5, -2}, {0, 1.5}}) {
      std::ostringstream what;
      what << "addmm self " << IntArrayRef(self_sizes) << " beta " << beta << " alpha " << alpha;
      EXPECT_TRUE(gradients_match(
          [beta = beta, alpha = alpha](const std::vector<Tensor>& in) {
            return addmm(in[0], in[1], in[2], beta, alpha);
          },
          {leaf(self_sizes, seed), leaf({3, 4}, seed + 1), leaf({4, 2}, seed + 2)}))
          << what.str();
      seed += 3;
    }
}

TEST(Linalg, OuterGradcheck) {
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return outer(in[0], in[1]); },
                              {leaf({3}, 1900), leaf({4}, 1901)}))
      << "outer";
}

// ---- errors ------------------------------------------------------------------------------------

TEST(Linalg, MismatchedInnerDimsNameShapes) {
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3}), zeros({4, 5})); },
                           {"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"}));
  EXPECT_TRUE(throws_error([] { matmul(zeros({3}), zeros({4})); },
                           {"[matmul] shapes [3] and [4] cannot be multiplied (3 != 4)"}));
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3, 4}), zeros({5})); },
                           {"[matmul] shapes [2, 3, 4] and [5] cannot be multiplied (4 != 5)"}));
  EXPECT_TRUE(throws_error([] { matmul(zeros({3}), zeros({2, 4, 5})); },
                           {"[matmul] shapes [3] and [2, 4, 5] cannot be multiplied (3 != 4)"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).matmul(zeros({2, 3})); }, {"[matmul]", "(3 != 2)"}));
  EXPECT_TRUE(throws_error([] { mm(zeros({2, 3}), zeros({4, 5})); },
                           {"[mm] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"}));
  EXPECT_TRUE(throws_error([] { bmm(zeros({2, 3, 4}), zeros({2, 5, 6})); },
                           {"[bmm]", "[2, 3, 4]", "[2, 5, 6]", "cannot be multiplied"}));
}

TEST(Linalg, BatchDimsThatDoNotBroadcastAreErrors) {
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3, 4}), zeros({3, 4, 5})); }, {"[matmul]", "broadcast"}));
  EXPECT_TRUE(throws_error([] { bmm(zeros({2, 3, 4}), zeros({3, 4, 5})); },
                           {"[bmm]", "[2, 3, 4]", "[3, 4, 5]", "cannot be multiplied"}));
}

TEST(Linalg, RankErrors) {
  EXPECT_TRUE(throws_error([] { matmul(scalar_tensor(2.0), zeros({3})); }, {"[matmul]", "at least 1 dimension"}));
  EXPECT_TRUE(throws_error([] { matmul(Tensor(), zeros({3})); }, {"[matmul]", "undefined"}));
  EXPECT_TRUE(throws_error([] { mm(zeros({2, 3, 4}), zeros({4, 5})); }, {"[mm]", "2-D", "3-D"}));
  EXPECT_TRUE(throws_error([] { bmm(zeros({3, 4}), zeros({4, 5})); }, {"[bmm]", "3-D", "2-D"}));
  EXPECT_TRUE(throws_error([] { outer(zeros({2, 3}), zeros({3})); }, {"[outer]", "1-D", "2-D"}));
}

TEST(Linalg, IntegerAndMixedDtypesAreErrors) {
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3}, kInt64), zeros({3, 2}, kInt64)); }, {"[matmul]", "int64"}));
  EXPECT_TRUE(throws_error([] { mm(zeros({2, 3}, kInt32), zeros({3, 2}, kInt32)); }, {"[mm]", "int32"}));
  EXPECT_TRUE(throws_error([] { bmm(zeros({1, 2, 3}, kInt64), zeros({1, 3, 2}, kInt64)); }, {"[bmm]", "int64"}));
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); },
                           {"[matmul]", "same dtype", "float32", "float64"}));
  EXPECT_TRUE(throws_error([] { matmul(zeros({2, 3}, kBFloat16), zeros({3}, kFloat16)); },
                           {"[matmul]", "bfloat16", "float16"}));
  EXPECT_TRUE(throws_error([] { bmm(zeros({1, 2, 3}), zeros({1, 3, 2}, kBFloat16)); }, {"[bmm]", "same dtype"}));
  EXPECT_TRUE(throws_error([] { addmm(zeros({2, 2}, kFloat64), zeros({2, 3}), zeros({3, 2})); },
                           {"[addmm]", "float64", "float32"}));
}

TEST(Linalg, LinearAndAddmmShapeErrors) {
  EXPECT_TRUE(throws_error([] { linear(zeros({2, 3}), zeros({5, 4})); }, {"[linear]", "[2, 3]", "[5, 4]"}));
  EXPECT_TRUE(throws_error([] { linear(zeros({3}), zeros({5, 4})); }, {"[linear]", "[3]", "[5, 4]"}));
  EXPECT_TRUE(throws_error([] { linear(zeros({2, 4}), zeros({2, 5, 4})); }, {"[linear]", "2-D", "[2, 5, 4]"}));
  EXPECT_TRUE(throws_error([] { linear(zeros({2, 4}), zeros({5, 4}), zeros({4})); }, {"[linear]", "bias", "[4]"}));
  EXPECT_TRUE(throws_error([] { addmm(zeros({3, 2}), zeros({2, 3}), zeros({3, 2})); },
                           {"[addmm]", "[3, 2]", "[2, 2]"}));
}

}  // namespace
}  // namespace ember
