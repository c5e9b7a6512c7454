// softmax/log_softmax and cumsum/cumprod against float64 references computed here by
// plain loops, over dtypes, dims (last dim and strided middle dims), non-contiguous, empty
// and 0-dim inputs, special values, errors, gradients (gradcheck in float64 and
// hand-derived values at zeros), every SIMD level the CPU has, and the accuracy of the
// polynomial expf the float kernels use.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/softmax.h"
#include "ops/reduce_reference.h"

namespace ember {
namespace {

using namespace testutil;

// Last dims (contiguous rows, with and without a tail after the 16-lane blocks), middle
// dims (strided columns, inner 70 spans two column blocks), size-1 dims and a long row.
struct DimCase {
  std::vector<int64_t> sizes;
  int64_t dim;
};
const std::vector<DimCase> kDimCases = {
    {{4, 37}, -1}, {{4, 37}, 0},    {{3, 5, 70}, 1}, {{3, 5, 70}, 2}, {{2, 3, 4, 5}, 2},
    {{6, 1}, 1},   {{1, 6}, 0},     {{2, 16}, 1},    {{3000}, 0},     {{1}, 0},
};

std::string describe(const DimCase& c, InputLayout layout, ScalarType dtype) {
  std::ostringstream out;
  out << dtype_name(dtype) << " shape " << IntArrayRef(c.sizes) << " dim " << c.dim << " " << layout_name(layout);
  return out.str();
}

// Calls check(x, dim, what) for every dim case and layout, with values from `fill`.
void for_each_case(ScalarType dtype, const std::function<std::vector<double>(int64_t)>& fill,
                   const std::function<void(const Tensor&, int64_t, const std::string&)>& check) {
  for (const DimCase& c : kDimCases)
    for (InputLayout layout : kLayouts)
      check(make_layout(fill(count_of(c.sizes)), c.sizes, dtype, layout), c.dim, describe(c, layout, dtype));
}

// Compares with the reference rounded to the output dtype.
void expect_mapped(const Tensor& actual, const Tensor& x, int64_t dim, const std::function<Slice(const Slice&)>& f,
                   ScalarType dtype, Tolerance tol, const std::string& what) {
  EXPECT_EQ(actual.scalar_type(), dtype) << what;
  EXPECT_EQ(actual.sizes(), x.sizes()) << what;
  std::vector<double> expected = map_slices(x, dim, f);
  for (double& e : expected) e = round_to(dtype, e);
  EXPECT_TRUE(all_close(actual, expected, tol)) << what;
}

// Runs body once per SIMD level the CPU supports, restoring the best level afterwards.
void for_each_cpu_level(const std::function<void(const std::string&)>& body) {
  const cpu::Capability best = cpu::cpu_capability();
  for (cpu::Capability level : {cpu::Capability::Baseline, cpu::Capability::AVX2, cpu::Capability::AVX512}) {
    if (static_cast<int>(level) > static_cast<int>(best)) continue;
    cpu::set_cpu_capability(level);
    body(cpu::capability_name(level));
  }
  cpu::set_cpu_capability(best);
}

std::vector<double> wide_values(int64_t n) { return uniform_values(n, -10, 10, 41); }

// ---- softmax, log_softmax -------------------------------------------------------------------

TEST(Softmax, MatchesReferenceAtEverySimdLevel) {
  auto softmax_ref = [](const Slice& s) { return ref_softmax(s, false); };
  auto log_softmax_ref = [](const Slice& s) { return ref_softmax(s, true); };
  for_each_cpu_level([&](const std::string& level) {
    for (ScalarType dtype : kFloatTypes)
      for_each_case(dtype, wide_values, [&](const Tensor& x, int64_t dim, const std::string& what) {
        expect_mapped(x.softmax(dim), x, dim, softmax_ref, dtype, tolerance(dtype), what + " " + level);
        expect_mapped(ember::log_softmax(x, dim), x, dim, log_softmax_ref, dtype, tolerance(dtype), what + " " + level);
      });
  });
}

TEST(Softmax, SpecialValues) {
  // Rows: -inf entries, all -inf, NaN, huge equal values, one dominant value.
  Tensor x = make({-kInf, 0, std::log(3.0), -kInf, -kInf, -kInf, kNaN, 1, 2, 1000, 1000, 1000, 1e4, 0, 0}, {5, 3},
                  kFloat32);
  EXPECT_TRUE(all_close(x.softmax(1), {0, 0.25, 0.75, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 1.0 / 3, 1.0 / 3, 1.0 / 3,
                                       1, 0, 0}));
  EXPECT_TRUE(all_close(x.log_softmax(1), {-kInf, std::log(0.25), std::log(0.75), kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
                                           -std::log(3.0), -std::log(3.0), -std::log(3.0), 0, -1e4, -1e4}));
  // Same rows as columns: the strided path agrees.
  EXPECT_TRUE(all_close(x.t().contiguous().softmax(0).t(), values(x.softmax(1))));
  EXPECT_TRUE(all_close(x.t().contiguous().log_softmax(0).t(), values(x.log_softmax(1))));
}

TEST(Softmax, DtypeArgumentZeroDimAndEmpty) {
  Tensor x = make(wide_values(12), {3, 4}, kFloat32);
  Tensor wide = x.softmax(1, kFloat64);
  EXPECT_EQ(wide.scalar_type(), kFloat64);
  EXPECT_TRUE(all_close(wide, map_slices(x, 1, [](const Slice& s) { return ref_softmax(s, false); })));
  Tensor ints = make({1, 2, 3}, {3}, kInt64);
  EXPECT_TRUE(all_close(ints.log_softmax(0, kFloat32), ref_softmax({1, 2, 3}, true)));
  EXPECT_TRUE(all_equal(scalar_tensor(5.0).softmax(0), {1}));
  EXPECT_TRUE(all_equal(scalar_tensor(5.0).log_softmax(-1), {0}));
  EXPECT_EQ(zeros({0, 3}).softmax(1).sizes(), std::vector<int64_t>({0, 3}));
  EXPECT_EQ(zeros({3, 0}).log_softmax(1).sizes(), std::vector<int64_t>({3, 0}));
  EXPECT_EQ(zeros({3, 0, 2}).softmax(0).sizes(), std::vector<int64_t>({3, 0, 2}));
}

TEST(Softmax, Errors) {
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).softmax(2); }, {"[softmax]", "out of range"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).log_softmax(-3); }, {"[log_softmax]", "out of range"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}, kInt64).softmax(1); }, {"[softmax]", "int64"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}, kInt32).log_softmax(0, kInt64); }, {"[log_softmax]", "int64"}));
}

TEST(Softmax, Gradients) {
  Tensor x = make(uniform_values(60, -3, 3, 43), {3, 4, 5}, kFloat64);
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.softmax(dim); }, float64_leaf(x))) << "softmax";
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.log_softmax(dim); }, float64_leaf(x)))
        << "log_softmax";
    EXPECT_TRUE(
        gradients_match([dim](const Tensor& t) { return ember::softmax(t, dim); }, float64_leaf(x.permute({2, 0, 1}))))
        << "softmax permuted";
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.log_softmax(dim); }, float64_leaf(x.transpose(0, 1))))
        << "log_softmax transposed";
  }
  EXPECT_TRUE(gradients_match([](const Tensor& t) { return t.softmax(0); }, float64_leaf(scalar_tensor(1.5, kFloat64))))
      << "0-dim softmax";
  // Through the dtype argument: the gradient comes back in the input's dtype. softmax rows
  // sum to one, so the gradient of their sum is zero; log_softmax's is 1 - n * softmax.
  Tensor f32 = make(uniform_values(6, -1, 1, 47), {2, 3}, kFloat32);
  Tensor grad = grad_of_sum([](const Tensor& t) { return t.log_softmax(1, kFloat64); }, f32);
  EXPECT_EQ(grad.scalar_type(), kFloat32);
  std::vector<double> expected = map_slices(f32, 1, [](const Slice& s) {
    Slice p = ref_softmax(s, false);
    for (double& v : p) v = 1 - 3 * v;
    return p;
  });
  EXPECT_TRUE(all_close(grad, expected, {1e-6, 1e-6}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.softmax(1); }, f32), {0, 0, 0, 0, 0, 0},
                        {0, 1e-6}));
}

// ---- the polynomial expf -------------------------------------------------------------------

// Error of `got` against exp(x) in units of the float spacing at the true value (never
// finer than the smallest subnormal). Values past FLT_MAX count as 2^128, the point where
// rounding overflows to inf, so inf there is exact.
double ulp_error(float got, double x) {
  const double overflow = std::ldexp(1.0, 128);
  const double target = std::min(std::exp(x), overflow);
  const double value = std::isinf(got) ? overflow : got;
  const double spacing = std::max(std::ldexp(1.0, std::ilogb(target) - 23), std::ldexp(1.0, -149));
  return std::abs(value - target) / spacing;
}

TEST(Softmax, PolynomialExpIsAccurateAtEverySimdLevel) {
  std::vector<float> inputs;
  for (int64_t i = 0; i <= 2000000; ++i) inputs.push_back(static_cast<float>(-105.0 + 195.0 * i / 2000000));
  for (float special : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.73f, -87.33f, -103.9f, -104.0f, 1e-8f, -1e-8f, 0.3465f,
                        -0.3466f})
    inputs.push_back(special);
  for_each_cpu_level([&](const std::string& level) {
    std::vector<float> out(inputs.size());
    EMBER_KERNEL(exp_f32)(inputs.data(), out.data(), static_cast<int64_t>(inputs.size()));
    double worst = 0;
    float worst_at = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double error = ulp_error(out[i], inputs[i]);
      if (error > worst) {
        worst = error;
        worst_at = inputs[i];
      }
    }
    EXPECT_LE(worst, 2.0) << level << ": worst error " << worst << " ulp at x = " << worst_at;
    const float specials[] = {-INFINITY, INFINITY, NAN, 0.0f, 200.0f, -200.0f};
    float special_out[6];
    EMBER_KERNEL(exp_f32)(specials, special_out, 6);
    EXPECT_EQ(special_out[0], 0.0f) << level;
    EXPECT_EQ(special_out[1], INFINITY) << level;
    EXPECT_TRUE(std::isnan(special_out[2])) << level;
    EXPECT_EQ(special_out[3], 1.0f) << level;
    EXPECT_EQ(special_out[4], INFINITY) << level;
    EXPECT_EQ(special_out[5], 0.0f) << level;
  });
}

// ---- cumsum, cumprod -------------------------------------------------------------------------

Slice ref_cumsum(const Slice& s) {
  Slice out;
  double total = 0;
  for (double v : s) out.push_back(total += v);
  return out;
}

Slice ref_cumprod(const Slice& s) {
  Slice out;
  double product = 1;
  for (double v : s) out.push_back(product *= v);
  return out;
}

ScalarType promoted(ScalarType dtype) { return is_floating_point(dtype) ? dtype : kInt64; }

TEST(Scan, CumsumMatchesReference) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kInt8, kUInt8, kBool}) {
    auto fill = [dtype](int64_t n) {
      if (is_floating_point(dtype)) return uniform_values(n, -2, 2, 53);
      return dtype == kBool || dtype == kUInt8 ? integer_values(n, 0, 1, 59) : integer_values(n, -4, 4, 61);
    };
    for_each_case(dtype, fill, [&](const Tensor& x, int64_t dim, const std::string& what) {
      const ScalarType out = promoted(dtype);
      expect_mapped(x.cumsum(dim), x, dim, ref_cumsum, out, tolerance(out), what);
    });
  }
}

TEST(Scan, CumprodMatchesReference) {
  for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64, kInt8}) {
    // Floats near 1 keep long products in range; integers in {-1, 0, 1} cannot overflow.
    auto fill = [dtype](int64_t n) {
      return is_floating_point(dtype) ? uniform_values(n, 0.9, 1.1, 67) : integer_values(n, -1, 1, 71);
    };
    for_each_case(dtype, fill, [&](const Tensor& x, int64_t dim, const std::string& what) {
      const ScalarType out = promoted(dtype);
      expect_mapped(ember::cumprod(x, dim), x, dim, ref_cumprod, out, tolerance(out), what);
    });
  }
}

TEST(Scan, DtypesEmptyAndErrors) {
  Tensor bytes = make({100, 100, 100}, {3}, kInt8);
  EXPECT_EQ(bytes.cumsum(0).scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(bytes.cumsum(0), {100, 200, 300}));  // no int8 overflow
  EXPECT_TRUE(all_equal(bytes.cumprod(0), {100, 10000, 1000000}));
  Tensor f32 = make({0.1, 0.2, 0.3}, {3}, kFloat32);
  Tensor wide = ember::cumsum(f32, 0, kFloat64);
  EXPECT_EQ(wide.scalar_type(), kFloat64);
  EXPECT_TRUE(all_close(wide, ref_cumsum(values(f32))));
  EXPECT_TRUE(all_close(make({1, 2, 3}, {3}, kInt32).cumprod(0, kFloat32), {1, 2, 6}));
  EXPECT_TRUE(all_equal(scalar_tensor(4.0).cumsum(0), {4}));
  EXPECT_EQ(scalar_tensor(4.0).cumprod(-1).dim(), 0);
  EXPECT_EQ(zeros({0, 3}).cumsum(0).sizes(), std::vector<int64_t>({0, 3}));
  EXPECT_EQ(zeros({3, 0}).cumprod(1).sizes(), std::vector<int64_t>({3, 0}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).cumsum(2); }, {"[cumsum]", "out of range"}));
  EXPECT_TRUE(throws_error([] { zeros({2, 3}).cumprod(-3); }, {"[cumprod]", "out of range"}));
  EXPECT_TRUE(throws_error([] { zeros({2}).cumsum(0, kBool); }, {"[cumsum]", "bool"}));
}

TEST(Scan, CumsumGradients) {
  Tensor x = make(uniform_values(60, -2, 2, 73), {3, 4, 5}, kFloat64);
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.cumsum(dim); }, float64_leaf(x))) << "cumsum";
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.cumsum(dim); }, float64_leaf(x.permute({2, 0, 1}))))
        << "cumsum permuted";
  }
  // d sum(cumsum(x)) / dx_i = number of outputs at or after i, in the input's dtype.
  Tensor grad = grad_of_sum([](const Tensor& t) { return t.cumsum(0, kFloat64); }, make({1, 2, 3, 4}, {4}, kFloat32));
  EXPECT_EQ(grad.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(grad, {4, 3, 2, 1}));
}

TEST(Scan, CumprodGradientsWithZeros) {
  // dx_i = sum_{j>=i} prod_{k<=j, k!=i} x_k, worked by hand.
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.cumprod(0); }, make({2, 3, 4}, {3}, kFloat64)),
                        {1 + 3 + 12, 2 + 8, 6}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.cumprod(0); }, make({2, 0, 3, 0, 5}, {5}, kFloat64)),
                        {1, 2 + 6, 0, 0, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.cumprod(0); }, make({0, 2, 3}, {3}, kFloat64)),
                        {1 + 2 + 6, 0, 0}));
  EXPECT_TRUE(all_close(grad_of_sum([](const Tensor& t) { return t.cumprod(0); }, make({2, 3, 0}, {3}, kFloat64)),
                        {1 + 3, 2, 6}));
  // cumprod is linear in each element, so central differences are exact even at zeros.
  Tensor x = make(uniform_values(60, -2, 2, 79), {3, 4, 5}, kFloat64);
  for (int64_t dim : {0, 1, 2}) {
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.cumprod(dim); }, float64_leaf(x))) << "cumprod";
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.cumprod(dim); }, float64_leaf(x.transpose(0, 2))))
        << "cumprod transposed";
  }
  // Slices with no zero, one zero and two zeros side by side.
  Tensor zeros_in_rows = make({1.5, -2, 0.5, 3, 2, 0, 3, -1, 0, 2, 0, 4}, {3, 4}, kFloat64);
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(gradients_match([dim](const Tensor& t) { return t.cumprod(dim); }, float64_leaf(zeros_in_rows)))
        << "cumprod with zeros";
    EXPECT_TRUE(
        gradients_match([dim](const Tensor& t) { return t.cumprod(dim, kFloat64); }, float64_leaf(zeros_in_rows.t())))
        << "cumprod with zeros, transposed";
  }
}

}  // namespace
}  // namespace ember
