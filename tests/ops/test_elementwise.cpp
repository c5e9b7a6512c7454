// Elementwise ops against float64 references computed here with <cmath>: every unary and
// binary op, in-place forms, comparisons, predicates, where/masked_fill, type promotion,
// gradients (gradcheck, float64) and each SIMD level the CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/testing.h"
#include "cpu/dispatch.h"

namespace ember {
namespace {

using namespace testutil;

const std::vector<ScalarType> kIntTypes = {kInt32, kInt64};

// ---- input layouts -----------------------------------------------------------------------

// A tensor of logical shape `sizes` holding `v`, laid out as `layout` describes.
enum class Layout { Contiguous, Transposed, Strided, Expanded };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "sliced with step";
    case Layout::Expanded: return "expanded";
  }
  return "?";
}

// 2-D inputs [rows, cols]. Expanded repeats the first row, so only v[0:cols] is used.
Tensor make_2d(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype, Layout layout) {
  switch (layout) {
    case Layout::Contiguous: return make(v, {rows, cols}, dtype);
    case Layout::Transposed: {
      Tensor t = empty({cols, rows}, dtype).t();
      for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[i]);
      return t;
    }
    case Layout::Strided: {
      Tensor t = zeros({rows, 2 * cols + 1}, dtype).slice(1, 1, std::nullopt, 2);
      for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[i]);
      return t;
    }
    case Layout::Expanded: {
      std::vector<double> row(v.begin(), v.begin() + cols);
      return make(row, {1, cols}, dtype).expand({rows, cols});
    }
  }
  return {};
}

const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Expanded};

std::vector<double> map_values(const std::vector<double>& v, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double x : v) out.push_back(f(x));
  return out;
}

// Values of `t` broadcast to `sizes` in row-major order, indexed without ember's expand.
std::vector<double> broadcast_values(const Tensor& t, const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> out(static_cast<size_t>(n));
  const int64_t lead = static_cast<int64_t>(sizes.size()) - t.dim();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, src = 0, src_stride = 1;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % sizes[d];
      rest /= sizes[d];
      if (d < lead) continue;
      const int64_t size = t.size(d - lead);
      src += (size == 1 ? 0 : idx) * src_stride;
      src_stride *= size;
    }
    out[i] = element(t, src);
  }
  return out;
}

// ---- unary ops ---------------------------------------------------------------------------

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_erf_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double sign_ref(double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }
double clamp_ref(double x, double lo, double hi) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); }

// How an op treats integer inputs: keeps the dtype, computes in float32, or refuses.
enum class IntInput { Keeps, ToFloat, Rejects };

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;             // input domain for random values
  IntInput ints;
  std::vector<double> kinks;  // points where the derivative jumps (gradcheck stays away)
};

std::vector<UnaryCase> unary_cases() {
  const double inf = kInf;
  return {
      {"exp", [](const Tensor& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -4, 4, IntInput::ToFloat, {}},
      {"log", [](const Tensor& x) { return ember::log(x); }, [](double x) { return std::log(x); }, 0.1, 6, IntInput::ToFloat, {}},
      {"log1p", [](const Tensor& x) { return x.log1p(); }, [](double x) { return std::log1p(x); }, -0.9, 5, IntInput::ToFloat, {}},
      {"expm1", [](const Tensor& x) { return ember::expm1(x); }, [](double x) { return std::expm1(x); }, -3, 3, IntInput::ToFloat, {}},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0.05, 9, IntInput::ToFloat, {}},
      {"rsqrt", [](const Tensor& x) { return ember::rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 9, IntInput::ToFloat, {}},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::abs(x); }, -5, 5, IntInput::Keeps, {0}},
      {"neg", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, -5, 5, IntInput::Keeps, {}},
      {"sin", [](const Tensor& x) { return ember::sin(x); }, [](double x) { return std::sin(x); }, -4, 4, IntInput::ToFloat, {}},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -4, 4, IntInput::ToFloat, {}},
      {"tan", [](const Tensor& x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2, IntInput::ToFloat, {}},
      {"tanh", [](const Tensor& x) { return ember::tanh(x); }, [](double x) { return std::tanh(x); }, -4, 4, IntInput::ToFloat, {}},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, sigmoid_ref, -8, 8, IntInput::ToFloat, {}},
      {"relu", [](const Tensor& x) { return ember::relu(x); }, [](double x) { return x > 0 ? x : 0.0; }, -3, 3, IntInput::Keeps, {0}},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_erf_ref, -4, 4, IntInput::ToFloat, {}},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh_ref, -4, 4, IntInput::ToFloat, {}},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigmoid_ref(x); }, -6, 6, IntInput::ToFloat, {}},
      {"erf", [](const Tensor& x) { return x.erf(); }, [](double x) { return std::erf(x); }, -2.5, 2.5, IntInput::ToFloat, {}},
      {"sign", [](const Tensor& x) { return x.sign(); }, sign_ref, -3, 3, IntInput::Keeps, {0}},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.2, 4, IntInput::ToFloat, {}},
      {"square", [](const Tensor& x) { return x.square(); }, [](double x) { return x * x; }, -3, 3, IntInput::Keeps, {}},
      {"pow_2", [](const Tensor& x) { return x.pow(2); }, [](double x) { return x * x; }, -3, 3, IntInput::Keeps, {}},
      {"pow_3", [](const Tensor& x) { return ember::pow(x, 3); }, [](double x) { return x * x * x; }, -2, 2, IntInput::Keeps, {}},
      {"pow_2.5", [](const Tensor& x) { return x.pow(2.5); }, [](double x) { return std::pow(x, 2.5); }, 0.1, 3, IntInput::Rejects, {}},
      {"pow_-0.5", [](const Tensor& x) { return x.pow(-0.5); }, [](double x) { return std::pow(x, -0.5); }, 0.2, 3, IntInput::Rejects, {}},
      {"clamp_min", [](const Tensor& x) { return x.clamp_min(-1); }, [inf](double x) { return clamp_ref(x, -1, inf); }, -3, 3, IntInput::Keeps, {-1}},
      {"clamp_max", [](const Tensor& x) { return x.clamp_max(1); }, [inf](double x) { return clamp_ref(x, -inf, 1); }, -3, 3, IntInput::Keeps, {1}},
      {"clamp", [](const Tensor& x) { return ember::clamp(x, -1, 2); }, [](double x) { return clamp_ref(x, -1, 2); }, -3, 3, IntInput::Keeps, {-1, 2}},
  };
}

// For integer inputs: integers spanning the op's domain.
std::vector<double> inputs_for(const UnaryCase& c, ScalarType dtype, int64_t n, uint32_t seed) {
  if (is_floating_point(dtype)) return uniform_values(n, c.lo, c.hi, seed);
  return integer_values(n, static_cast<int>(std::ceil(c.lo)), static_cast<int>(std::floor(c.hi)), seed);
}

ScalarType unary_result_dtype(const UnaryCase& c, ScalarType in) {
  return is_floating_point(in) || c.ints == IntInput::Keeps ? in : kFloat32;
}

void check_unary(const UnaryCase& c, const Tensor& x) {
  const ScalarType out_dtype = unary_result_dtype(c, x.scalar_type());
  Tensor y = c.op(x);
  ASSERT_EQ(y.sizes(), x.sizes());
  ASSERT_EQ(y.scalar_type(), out_dtype);
  // Integer results are exact; float results computed from the stored inputs, then rounded.
  auto expected = map_values(values(x), c.ref);
  if (!is_floating_point(out_dtype)) EXPECT_TRUE(all_equal(y, expected));
  else EXPECT_TRUE(all_close(y, expected, tolerance(out_dtype)));
}

std::vector<ScalarType> unary_dtypes(const UnaryCase& c) {
  std::vector<ScalarType> out = kFloatTypes;
  if (c.ints != IntInput::Rejects) out.insert(out.end(), kIntTypes.begin(), kIntTypes.end());
  return out;
}

TEST(Unary, MatchesReferenceForEveryDtypeAndLayout) {
  for (const auto& c : unary_cases()) {
    for (ScalarType dtype : unary_dtypes(c)) {
      for (Layout layout : kLayouts) {
        SCOPED_TRACE(c.name + " " + dtype_name(dtype) + " " + layout_name(layout));
        check_unary(c, make_2d(inputs_for(c, dtype, 21, 7), 3, 7, dtype, layout));
      }
    }
  }
}

TEST(Unary, LongRunsEmptyAndZeroDim) {
  for (const auto& c : unary_cases()) {
    for (ScalarType dtype : unary_dtypes(c)) {
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      check_unary(c, make(inputs_for(c, dtype, 1031, 11), {1031}, dtype));
      check_unary(c, make({}, {0, 4}, dtype));
      check_unary(c, make(inputs_for(c, dtype, 1, 3), {}, dtype));
    }
  }
}

TEST(Unary, IntegerTensorToFractionalPowerThrows) {
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).pow(0.5); }, {"[pow]", "0.5"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).pow(-1); }, {"[pow]", "negative"}));
}

TEST(Unary, SpecialValues) {
  Tensor x = tensor({kNaN, kInf, -kInf, 0.0, -0.0}, kFloat32);
  EXPECT_TRUE(all_close(x.relu(), {kNaN, kInf, 0, 0, 0}, {0, 0}));
  EXPECT_TRUE(all_close(x.sign(), {kNaN, 1, -1, 0, 0}, {0, 0}));
  EXPECT_TRUE(all_close(x.clamp(-1, 1), {kNaN, 1, -1, 0, 0}, {0, 0}));
  EXPECT_TRUE(all_close(x.sigmoid(), {kNaN, 1, 0, 0.5, 0.5}, {0, 0}));
  EXPECT_TRUE(all_close(x.exp(), {kNaN, kInf, 0, 1, 1}, {0, 0}));
  EXPECT_TRUE(all_close(tensor({0.0, -1.0}).log(), {-kInf, kNaN}, {0, 0}));
  EXPECT_TRUE(all_close(tensor({0.0}).reciprocal(), {kInf}, {0, 0}));
}

TEST(Unary, GeluRejectsUnknownApproximation) {
  EXPECT_TRUE(throws_error([] { gelu(ones({2}), "fast"); }, {"[gelu]", "fast"}));
}

TEST(Unary, ClampNeedsABound) {
  EXPECT_TRUE(throws_error([] { ones({2}).clamp(); }, {"[clamp]"}));
}

TEST(Unary, ClampPromotesIntegerTensorsToFloatingBounds) {
  Tensor clamped = tensor({0, 1, 2}).clamp(0.5, 1.5);
  EXPECT_EQ(clamped.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(clamped, {0.5, 1, 1.5}));
  EXPECT_EQ(tensor({0, 1, 2}, kInt32).clamp_max(1).scalar_type(), kInt32);
  EXPECT_EQ(ones({2}, kFloat16).clamp(0.5).scalar_type(), kFloat16);
  EXPECT_TRUE(throws_error([] { Tensor i = tensor({0, 3}); i.clamp_(0.5); }, {"[clamp_]", "float32", "int64"}));
}

TEST(Unary, InPlaceFormsWriteIntoSelf) {
  struct InPlace {
    const char* name;
    std::function<void(Tensor&)> op_;
    std::function<Tensor(const Tensor&)> op;
    double lo, hi;
  };
  const std::vector<InPlace> cases = {
      {"exp_", [](Tensor& x) { x.exp_(); }, [](const Tensor& x) { return x.exp(); }, -2, 2},
      {"log_", [](Tensor& x) { x.log_(); }, [](const Tensor& x) { return x.log(); }, 0.1, 3},
      {"sqrt_", [](Tensor& x) { x.sqrt_(); }, [](const Tensor& x) { return x.sqrt(); }, 0.1, 3},
      {"neg_", [](Tensor& x) { x.neg_(); }, [](const Tensor& x) { return x.neg(); }, -2, 2},
      {"abs_", [](Tensor& x) { x.abs_(); }, [](const Tensor& x) { return x.abs(); }, -2, 2},
      {"tanh_", [](Tensor& x) { x.tanh_(); }, [](const Tensor& x) { return x.tanh(); }, -2, 2},
      {"sigmoid_", [](Tensor& x) { x.sigmoid_(); }, [](const Tensor& x) { return x.sigmoid(); }, -2, 2},
      {"relu_", [](Tensor& x) { x.relu_(); }, [](const Tensor& x) { return x.relu(); }, -2, 2},
      {"clamp_", [](Tensor& x) { x.clamp_(-0.5, 0.5); }, [](const Tensor& x) { return x.clamp(-0.5, 0.5); }, -2, 2},
  };
  for (const auto& c : cases) {
    for (ScalarType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype));
      // Into a transposed view: the base must change at the viewed positions.
      Tensor base = make(uniform_values(12, c.lo, c.hi, 5), {4, 3}, dtype);
      Tensor view = base.t();
      const auto before = values(view);
      const uint64_t version = view._version();
      Tensor expected = c.op(view);
      c.op_(view);
      EXPECT_EQ(view._version(), version + 1);
      EXPECT_TRUE(all_equal(view, values(expected)));
      EXPECT_TRUE(all_equal(base.t(), values(expected)));
      EXPECT_NE(values(view), before);
    }
  }
  Tensor ints = tensor({-3, 4});
  ints.abs_();
  EXPECT_TRUE(all_equal(ints, {3, 4}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({1, 2}); t.exp_(); }, {"exp", "int64"}));
}

// ---- binary ops --------------------------------------------------------------------------

double maximum_ref(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double minimum_ref(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }
double logaddexp_ref(double a, double b) { return std::log(std::exp(a) + std::exp(b)); }

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double a_lo, a_hi, b_lo, b_hi;
  IntInput ints;  // Keeps: int op int -> int; ToFloat: -> float32; Rejects: float only
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, -5, 5, -5, 5, IntInput::Keeps},
      {"add_alpha_3", [](const Tensor& a, const Tensor& b) { return ember::add(a, b, 3); }, [](double a, double b) { return a + 3 * b; }, -5, 5, -5, 5, IntInput::Keeps},
      {"add_alpha_0.5", [](const Tensor& a, const Tensor& b) { return a.add(b, 0.5); }, [](double a, double b) { return a + 0.5 * b; }, -5, 5, -5, 5, IntInput::Rejects},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, -5, 5, -5, 5, IntInput::Keeps},
      {"sub_alpha_2", [](const Tensor& a, const Tensor& b) { return ember::sub(a, b, 2); }, [](double a, double b) { return a - 2 * b; }, -5, 5, -5, 5, IntInput::Keeps},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, -5, 5, -5, 5, IntInput::Keeps},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, -5, 5, 0.5, 4, IntInput::ToFloat},
      {"maximum", [](const Tensor& a, const Tensor& b) { return ember::maximum(a, b); }, maximum_ref, -5, 5, -5, 5, IntInput::Keeps},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, minimum_ref, -5, 5, -5, 5, IntInput::Keeps},
      {"pow", [](const Tensor& a, const Tensor& b) { return ember::pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, 0.2, 3, -2, 3, IntInput::Rejects},
      {"atan2", [](const Tensor& a, const Tensor& b) { return ember::atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); }, -3, 3, -3, 3, IntInput::ToFloat},
      {"logaddexp", [](const Tensor& a, const Tensor& b) { return ember::logaddexp(a, b); }, logaddexp_ref, -6, 6, -6, 6, IntInput::Rejects},
      {"logaddexp_method", [](const Tensor& a, const Tensor& b) { return a.logaddexp(b); }, logaddexp_ref, -20, 3, -3, 20, IntInput::Rejects},
      {"hypot", [](const Tensor& a, const Tensor& b) { return ember::hypot(a, b); }, [](double a, double b) { return std::sqrt(a * a + b * b); }, 0.5, 5, -5, -0.5, IntInput::Rejects},
  };
}

std::vector<double> binary_inputs(double lo, double hi, ScalarType dtype, int64_t n, uint32_t seed) {
  if (is_floating_point(dtype)) return uniform_values(n, lo, hi, seed);
  return integer_values(n, static_cast<int>(std::ceil(lo)), static_cast<int>(std::floor(hi)), seed);
}

void check_binary(const BinaryCase& c, const Tensor& a, const Tensor& b, ScalarType out_dtype) {
  Tensor y = c.op(a, b);
  const std::vector<int64_t> shape = y.sizes();
  ASSERT_EQ(y.scalar_type(), out_dtype);
  auto av = broadcast_values(a, shape), bv = broadcast_values(b, shape);
  std::vector<double> expected;
  for (size_t i = 0; i < av.size(); ++i) expected.push_back(c.ref(av[i], bv[i]));
  if (!is_floating_point(out_dtype)) EXPECT_TRUE(all_equal(y, expected));
  else EXPECT_TRUE(all_close(y, expected, tolerance(out_dtype)));
}

// Operand shapes covering same-shape, broadcast both ways, 0-dim, empty and long runs.
struct ShapePair {
  std::vector<int64_t> a, b, out;
};
const std::vector<ShapePair> kShapePairs = {
    {{3, 7}, {3, 7}, {3, 7}}, {{3, 7}, {7}, {3, 7}}, {{3, 1}, {1, 7}, {3, 7}}, {{7}, {3, 7}, {3, 7}},
    {{3, 7}, {}, {3, 7}},     {{}, {3, 7}, {3, 7}},  {{}, {}, {}},              {{0, 7}, {7}, {0, 7}},
    {{1037}, {1037}, {1037}}, {{1037}, {}, {1037}},  {{}, {1037}, {1037}},      {{2, 1, 5}, {3, 1}, {2, 3, 5}},
};

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<ScalarType> binary_dtypes(const BinaryCase& c) {
  std::vector<ScalarType> out = kFloatTypes;
  if (c.ints != IntInput::Rejects) out.insert(out.end(), kIntTypes.begin(), kIntTypes.end());
  return out;
}

ScalarType binary_result_dtype(const BinaryCase& c, ScalarType in) {
  return is_floating_point(in) || c.ints == IntInput::Keeps ? in : kFloat32;
}

TEST(Binary, MatchesReferenceWithBroadcasting) {
  for (const auto& c : binary_cases()) {
    for (ScalarType dtype : binary_dtypes(c)) {
      for (const auto& s : kShapePairs) {
        SCOPED_TRACE(c.name + " " + dtype_name(dtype) + " " + ::testing::PrintToString(s.a) + " with " +
                     ::testing::PrintToString(s.b));
        Tensor a = make(binary_inputs(c.a_lo, c.a_hi, dtype, numel_of(s.a), 1), s.a, dtype);
        Tensor b = make(binary_inputs(c.b_lo, c.b_hi, dtype, numel_of(s.b), 2), s.b, dtype);
        check_binary(c, a, b, binary_result_dtype(c, dtype));
        EXPECT_EQ(c.op(a, b).sizes(), s.out);
      }
    }
  }
}

TEST(Binary, NonContiguousOperands) {
  for (const auto& c : binary_cases()) {
    for (ScalarType dtype : binary_dtypes(c)) {
      for (Layout la : kLayouts) {
        for (Layout lb : {Layout::Transposed, Layout::Strided}) {
          SCOPED_TRACE(c.name + " " + dtype_name(dtype) + " " + layout_name(la) + " with " + layout_name(lb));
          Tensor a = make_2d(binary_inputs(c.a_lo, c.a_hi, dtype, 15, 3), 3, 5, dtype, la);
          Tensor b = make_2d(binary_inputs(c.b_lo, c.b_hi, dtype, 15, 4), 3, 5, dtype, lb);
          check_binary(c, a, b, binary_result_dtype(c, dtype));
        }
      }
    }
  }
}

TEST(Binary, IntegerDivisionIsTrueDivisionInFloat32) {
  Tensor y = tensor({7, -7, 1, 0}, kInt32) / tensor({2, 2, 0, 0}, kInt32);
  EXPECT_EQ(y.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(y, {3.5, -3.5, kInf, kNaN}, {0, 0}));
  EXPECT_EQ((tensor({3}) / 2).scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(tensor({3}) / 2, {1.5}, {0, 0}));
}

TEST(Binary, IntegerPowIsExact) {
  Tensor base = tensor({3, -2, 10, 0, 1}), exponent = tensor({4, 3, 12, 0, 7});
  EXPECT_TRUE(all_equal(base.pow(exponent), {81, -8, 1e12, 1, 1}));
  EXPECT_EQ(base.pow(exponent).scalar_type(), kInt64);
}

TEST(Binary, MaximumMinimumPropagateNaN) {
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = make({kNaN, 1, 2, kNaN, -kInf}, {5}, dtype);
    Tensor b = make({0, kNaN, 1, kNaN, 3}, {5}, dtype);
    EXPECT_TRUE(all_close(maximum(a, b), {kNaN, kNaN, 2, kNaN, 3}, {0, 0}));
    EXPECT_TRUE(all_close(minimum(a, b), {kNaN, kNaN, 1, kNaN, -kInf}, {0, 0}));
    EXPECT_TRUE(all_close(ember::max(a, b), {kNaN, kNaN, 2, kNaN, 3}, {0, 0}));
  }
}

TEST(Binary, LogaddexpSpecialValuesAndIntegers) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Past exp's range, equal and opposite infinities, NaN; log(2) + 1000 computed in float64.
    Tensor a = make({1000, -1000, kInf, -kInf, kInf, kNaN, 2}, {7}, dtype);
    Tensor b = make({1000, 0, kInf, -kInf, -kInf, 1, kNaN}, {7}, dtype);
    EXPECT_TRUE(all_close(logaddexp(a, b), {1000 + std::log(2.0), 0, kInf, -kInf, kInf, kNaN, kNaN},
                          tolerance(dtype)));
  }
  EXPECT_TRUE(throws_error([] { logaddexp(tensor({1}), tensor({2})); }, {"[logaddexp]", "int64"}));
  EXPECT_TRUE(throws_error([] { logaddexp(ones({2, 3}), ones({2})); }, {"[logaddexp]", "[2, 3]", "[2]"}));
}

TEST(Binary, HypotSpecialValuesAndIntegers) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Squares past float32's range, infinities (even beside NaN, as C's hypot), NaN.
    Tensor a = make({3, 1e30, kInf, kNaN, -kInf, 0}, {6}, dtype);
    Tensor b = make({-4, 1e30, kNaN, 1, 2, 0}, {6}, dtype);
    EXPECT_TRUE(all_close(hypot(a, b), {5, 1e30 * std::sqrt(2.0), kInf, kNaN, kInf, 0}, tolerance(dtype)));
  }
  EXPECT_TRUE(throws_error([] { hypot(tensor({3}), tensor({4})); }, {"[hypot]", "int64"}));
}

TEST(Binary, ScalarOperands) {
  Tensor x = tensor({1.0, 2.0, 4.0});
  EXPECT_TRUE(all_close(x + 2, {3, 4, 6}));
  EXPECT_TRUE(all_close(2 + x, {3, 4, 6}));
  EXPECT_TRUE(all_close(x - 1.5, {-0.5, 0.5, 2.5}));
  EXPECT_TRUE(all_close(1.5 - x, {0.5, -0.5, -2.5}));
  EXPECT_TRUE(all_close(x * 3, {3, 6, 12}));
  EXPECT_TRUE(all_close(x / 2, {0.5, 1, 2}));
  EXPECT_TRUE(all_close(2 / x, {2, 1, 0.5}));
  EXPECT_TRUE(all_close(x.add(1, 2), {3, 4, 6}));
  EXPECT_TRUE(all_close(x.sub(1, 3), {-2, -1, 1}));
  EXPECT_TRUE(all_close(pow(2, x), {2, 4, 16}));
  EXPECT_EQ(pow(2, x).scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(pow(2, tensor({3, 4})), {8, 16}));
}

TEST(Binary, ShapeMismatchNamesTheOpAndShapes) {
  EXPECT_TRUE(throws_error([] { ones({2, 3}) + ones({4}); }, {"[add]", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([] { ones({2, 3}) * ones({3, 2}); }, {"[mul]", "[2, 3]", "[3, 2]"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).add(tensor({1, 2}), 0.5); }, {"[add]", "alpha", "0.5"}));
  EXPECT_TRUE(throws_error([] { tensor({true}) - tensor({true}); }, {"[sub]", "bool"}));
  EXPECT_TRUE(throws_error([] { ones({2}) + Tensor(); }, {"[add]", "undefined"}));
}

// ---- in-place binary ----------------------------------------------------------------------

using InPlaceBinary = std::function<void(Tensor&, const Tensor&)>;

struct BinaryInPlaceCase {
  std::string name;
  InPlaceBinary op_;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
};

std::vector<BinaryInPlaceCase> binary_inplace_cases() {
  return {
      {"add_", [](Tensor& a, const Tensor& b) { a.add_(b, 2); }, [](const Tensor& a, const Tensor& b) { return a.add(b, 2); }},
      {"sub_", [](Tensor& a, const Tensor& b) { a -= b; }, [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul_", [](Tensor& a, const Tensor& b) { a *= b; }, [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div_", [](Tensor& a, const Tensor& b) { a /= b; }, [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"pow_", [](Tensor& a, const Tensor& b) { a.pow_(b); }, [](const Tensor& a, const Tensor& b) { return a.pow(b); }},
      {"atan2_", [](Tensor& a, const Tensor& b) { a.atan2_(b); }, [](const Tensor& a, const Tensor& b) { return a.atan2(b); }},
      {"hypot_", [](Tensor& a, const Tensor& b) { a.hypot_(b); }, [](const Tensor& a, const Tensor& b) { return a.hypot(b); }},
  };
}

TEST(BinaryInPlace, MatchesOutOfPlaceWithBroadcastOther) {
  for (const auto& c : binary_inplace_cases()) {
    for (ScalarType dtype : kFloatTypes) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        SCOPED_TRACE(c.name + " " + dtype_name(dtype) + " " + layout_name(layout));
        Tensor a = make_2d(uniform_values(15, 0.5, 3, 8), 3, 5, dtype, layout);
        Tensor b = make(uniform_values(5, 0.5, 2, 9), {5}, dtype);
        const std::vector<double> expected = values(c.op(a, b));
        void* data = a.data_ptr();
        const uint64_t version = a._version();
        c.op_(a, b);
        EXPECT_EQ(a.data_ptr(), data);
        EXPECT_EQ(a._version(), version + 1);
        EXPECT_EQ(a.scalar_type(), dtype);
        EXPECT_TRUE(all_equal(a, expected));
      }
    }
  }
}

TEST(BinaryInPlace, OtherOfAnotherDtypeIsCastIntoSelf) {
  Tensor a = tensor({1.0, 2.0}, kFloat32);
  a.add_(tensor({1, 2}, kInt64));
  EXPECT_TRUE(all_close(a, {2, 4}));
  Tensor h = tensor({1.0, 2.0}, kFloat16);
  h.mul_(tensor({0.5, 0.25}, kFloat64));
  EXPECT_EQ(h.scalar_type(), kFloat16);
  EXPECT_TRUE(all_close(h, {0.5, 0.5}));
  Tensor i = tensor({1, 2}, kInt32);
  i += 3;
  i *= tensor({2, 2}, kInt64);
  EXPECT_EQ(i.scalar_type(), kInt32);
  EXPECT_TRUE(all_equal(i, {8, 10}));
}

TEST(BinaryInPlace, ScalarForms) {
  Tensor a = tensor({2.0, 4.0});
  a.add_(1).sub_(0.5).mul_(2).div_(4).pow_(2);
  EXPECT_TRUE(all_close(a, {1.5625, 5.0625}));
}

TEST(BinaryInPlace, ReadsOfAnAliasedOperandSeeOldValues) {
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, kFloat32);
  x.add_(x.t());
  EXPECT_TRUE(all_equal(x, {2, 6, 10, 6, 10, 14, 10, 14, 18}));
  Tensor y = make({1, 2, 3, 4}, {4}, kFloat64);
  y.slice(0, 1).add_(y.slice(0, 0, 3));
  EXPECT_TRUE(all_equal(y, {1, 3, 5, 7}));
}

TEST(BinaryInPlace, RejectsAnExpandedSelf) {
  EXPECT_TRUE(throws_error([] { Tensor e = ones({1}).expand({3}); e.add_(1); }, {"add", "single memory location", "[3]"}));
  EXPECT_TRUE(throws_error([] { Tensor e = ones({2, 1}).expand({2, 3}); e.exp_(); }, {"exp", "single memory location"}));
  EXPECT_TRUE(throws_error([] { Tensor e = ones({1}).expand({2}); e.copy_(tensor({1.0, 2.0})); }, {"copy_", "single"}));
  Tensor size_one = ones({1}).expand({1, 1});
  size_one.add_(1);
  EXPECT_TRUE(all_equal(size_one, {2}));
}

TEST(BinaryInPlace, RejectsResultsSelfCannotHold) {
  EXPECT_TRUE(throws_error([] { Tensor i = tensor({1, 2}); i.div_(tensor({2, 2})); }, {"div", "float32", "int64"}));
  EXPECT_TRUE(throws_error([] { Tensor i = tensor({1, 2}); i.add_(2.5); }, {"add", "float32", "int64"}));
  EXPECT_TRUE(throws_error([] { Tensor a = ones({1, 3}); a.add_(ones({2, 3})); }, {"add", "[1, 3]", "[2, 3]"}));
}

// ---- comparisons and logical ops -------------------------------------------------------------

struct CompareCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<bool(double, double)> ref;
};

std::vector<CompareCase> compare_cases() {
  return {
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }, [](double a, double b) { return a == b; }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ember::ne(a, b); }, [](double a, double b) { return a != b; }},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, [](double a, double b) { return a < b; }},
      {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); }, [](double a, double b) { return a <= b; }},
      {"gt", [](const Tensor& a, const Tensor& b) { return ember::gt(a, b); }, [](double a, double b) { return a > b; }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, [](double a, double b) { return a >= b; }},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return a && b; }, [](double a, double b) { return a != 0 && b != 0; }},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }, [](double a, double b) { return a != 0 || b != 0; }},
      {"logical_xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); }, [](double a, double b) { return (a != 0) != (b != 0); }},
  };
}

TEST(Compare, MatchesReferenceIncludingNaNAndMixedDtypes) {
  // Small integers give many ties; NaN compares unequal to everything.
  const std::vector<double> av = {-1, 0, 1, 2, kNaN, 0, 2, 1, -1, kNaN, 0, 1};
  const std::vector<double> bv = {-1, 1, 1, 0, 0, kNaN, 2, -1, 0, kNaN, 0, 2};
  const std::vector<std::pair<ScalarType, ScalarType>> dtypes = {
      {kFloat32, kFloat32}, {kFloat64, kFloat32}, {kBFloat16, kFloat16}, {kInt32, kInt64},
      {kInt64, kFloat32},   {kBool, kBool},       {kBool, kInt32}};
  for (const auto& c : compare_cases()) {
    for (auto [da, db] : dtypes) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        SCOPED_TRACE(c.name + " " + dtype_name(da) + " vs " + dtype_name(db) + " " + layout_name(layout));
        Tensor a = make_2d(av, 3, 4, da, layout), b = make_2d(bv, 3, 4, db, Layout::Strided);
        Tensor y = c.op(a, b);
        ASSERT_EQ(y.scalar_type(), kBool);
        auto x1 = values(a), x2 = values(b);
        std::vector<double> expected;
        for (size_t i = 0; i < x1.size(); ++i) expected.push_back(c.ref(x1[i], x2[i]));
        EXPECT_TRUE(all_equal(y, expected));
      }
    }
  }
}

TEST(Compare, BroadcastAndScalars) {
  Tensor a = tensor({1, 2, 3}, kInt32);
  EXPECT_TRUE(all_equal(a < 2.5, {1, 1, 0}));  // compared in float32, not truncated to 2
  EXPECT_TRUE(all_equal(a == 2, {0, 1, 0}));
  EXPECT_TRUE(all_equal(a.ge(2), {0, 1, 1}));
  EXPECT_TRUE(all_equal(a != 3, {1, 1, 0}));
  EXPECT_TRUE(all_equal(tensor({0.5, kNaN}) != kNaN, {1, 1}));
  Tensor grid = a.unsqueeze(1) > a;  // [3, 1] vs [3]
  EXPECT_EQ(grid.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(all_equal(grid, {0, 0, 0, 1, 0, 0, 1, 1, 0}));
  EXPECT_TRUE(all_equal(ones({0, 3}) < 1, {}));
  EXPECT_EQ((ones({0, 3}) < 1).sizes(), (std::vector<int64_t>{0, 3}));
}

TEST(Compare, LogicalNot) {
  EXPECT_TRUE(all_equal(!tensor({0.0, 1.5, -0.0, kNaN}), {1, 0, 1, 0}));
  EXPECT_TRUE(all_equal(logical_not(tensor({0, 3})), {1, 0}));
  EXPECT_TRUE(all_equal(tensor({true, false}).logical_not(), {0, 1}));
}

TEST(Predicates, IsNanIsInfIsFinite) {
  const std::vector<double> v = {0, kInf, -kInf, kNaN, 1.5, -0.0};
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = make(v, {6}, dtype);
    EXPECT_TRUE(all_equal(x.isnan(), {0, 0, 0, 1, 0, 0}));
    EXPECT_TRUE(all_equal(isinf(x), {0, 1, 1, 0, 0, 0}));
    EXPECT_TRUE(all_equal(x.isfinite(), {1, 0, 0, 0, 1, 1}));
    EXPECT_EQ(x.isnan().scalar_type(), kBool);
  }
  for (ScalarType dtype : {kInt32, kInt64, kBool, kUInt8}) {
    Tensor x = make({0, 1, 1}, {3}, dtype);
    EXPECT_TRUE(all_equal(isnan(x), {0, 0, 0}));
    EXPECT_TRUE(all_equal(x.isinf(), {0, 0, 0}));
    EXPECT_TRUE(all_equal(isfinite(x), {1, 1, 1}));
  }
  Tensor transposed = make({kNaN, 1, 2, kInf}, {2, 2}, kFloat32).t();
  EXPECT_TRUE(all_equal(transposed.isnan(), {1, 0, 0, 0}));
}

// ---- where and masked_fill ------------------------------------------------------------------

TEST(Where, BroadcastsAndPromotes) {
  Tensor cond = tensor({true, false, true});                                     // [3]
  Tensor a = make(uniform_values(6, -1, 1, 4), {2, 3}, kFloat32);                 // [2, 3]
  Tensor b = make(uniform_values(2, -1, 1, 5), {2, 1}, kFloat64);                 // [2, 1]
  Tensor y = where(cond, a, b);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y.scalar_type(), kFloat64);
  auto av = values(a), bv = values(b);
  EXPECT_TRUE(all_equal(y, {av[0], bv[0], av[2], av[3], bv[1], av[5]}));
  EXPECT_TRUE(all_equal(a.where(cond, b), values(y)));

  Tensor ints = tensor({1, 2, 3}, kInt32);
  Tensor s1 = where(cond, 1.5, ints);
  EXPECT_EQ(s1.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(s1, {1.5, 2, 1.5}));
  Tensor s2 = where(cond, ints, 7);
  EXPECT_EQ(s2.scalar_type(), kInt32);
  EXPECT_TRUE(all_equal(s2, {1, 7, 3}));
  Tensor t = where(make({1, 0, 1, 0}, {2, 2}, kBool).t(), ones({2, 2}), zeros({2, 2}));
  EXPECT_TRUE(all_equal(t, {1, 1, 0, 0}));
  EXPECT_TRUE(throws_error([&] { where(ints, a, b); }, {"[where]", "bool", "int32"}));
  EXPECT_TRUE(throws_error([&] { where(tensor({true, false}), a, b); }, {"[where]", "[2]", "[2, 3]"}));
}

TEST(MaskedFill, OutOfPlaceAndInPlace) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  Tensor mask = tensor({false, true, false});
  Tensor y = x.masked_fill(mask, -1.5);
  EXPECT_TRUE(all_equal(y, {1, -1.5, 3, 4, -1.5, 6}));
  EXPECT_TRUE(all_equal(x, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(all_equal(masked_fill(x, x > 4, 0), {1, 2, 3, 4, 0, 0}));

  Tensor ints = tensor({1, 2, 3});
  EXPECT_EQ(ints.masked_fill(mask, 2.7).scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(ints.masked_fill(mask, 2.7), {1, 2, 3}));
  EXPECT_TRUE(all_equal(ints.masked_fill(mask, 9), {1, 9, 3}));

  Tensor base = make({1, 2, 3, 4, 5, 6}, {3, 2}, kBFloat16);
  Tensor view = base.t();  // [2, 3], non-contiguous
  view.masked_fill_(mask, kInf);
  EXPECT_TRUE(all_close(base, {1, 2, kInf, kInf, 5, 6}, {0, 0}));
  EXPECT_TRUE(throws_error([&] { x.masked_fill(tensor({1, 0, 1}), 0); }, {"[masked_fill]", "bool"}));
  EXPECT_TRUE(throws_error([&] { x.masked_fill(ones({3, 2, 3}, kBool), 0); }, {"[masked_fill]", "[3, 2, 3]"}));
}

// ---- type promotion -------------------------------------------------------------------------

TEST(TypePromotion, FollowsPyTorch) {
  auto t = [](ScalarType dtype) { return ones({2}, dtype); };
  auto scalar = [](ScalarType dtype) { return ones({}, dtype); };
  EXPECT_EQ((t(kInt32) + 2.5).scalar_type(), kFloat32);
  EXPECT_EQ((t(kInt32) + 2).scalar_type(), kInt32);
  EXPECT_EQ((t(kInt32) + t(kInt64)).scalar_type(), kInt64);
  EXPECT_EQ((t(kBool) + 1).scalar_type(), kInt64);
  EXPECT_EQ((t(kBool) + 1.5).scalar_type(), kFloat32);
  EXPECT_EQ((t(kBool) + t(kUInt8)).scalar_type(), kUInt8);
  EXPECT_EQ((t(kFloat16) + scalar(kFloat64)).scalar_type(), kFloat16);
  EXPECT_EQ((t(kFloat16) + 2.5).scalar_type(), kFloat16);
  EXPECT_EQ((t(kBFloat16) + t(kFloat16)).scalar_type(), kFloat32);
  EXPECT_EQ((t(kInt32) + scalar(kFloat64)).scalar_type(), kFloat64);
  EXPECT_EQ((t(kInt64) + scalar(kFloat16)).scalar_type(), kFloat16);
  EXPECT_EQ((t(kInt32) + scalar(kInt64)).scalar_type(), kInt32);
  EXPECT_EQ((t(kFloat32) + scalar(kFloat64)).scalar_type(), kFloat32);
  EXPECT_EQ((t(kFloat32) + t(kFloat64)).scalar_type(), kFloat64);
  EXPECT_EQ((scalar(kFloat32) + scalar(kFloat64)).scalar_type(), kFloat64);
  EXPECT_EQ((scalar(kInt32) + 2.5).scalar_type(), kFloat32);
  EXPECT_EQ((scalar(kInt32) + t(kUInt8)).scalar_type(), kUInt8);
  EXPECT_EQ((t(kUInt8) + t(kInt8)).scalar_type(), kInt32);  // PyTorch: int16, which ember lacks
  EXPECT_EQ((t(kInt32) / t(kInt32)).scalar_type(), kFloat32);
  EXPECT_EQ((t(kInt64) / scalar(kFloat64)).scalar_type(), kFloat64);
  EXPECT_EQ(maximum(t(kInt32), t(kFloat16)).scalar_type(), kFloat16);
  EXPECT_EQ(atan2(t(kInt32), t(kInt32)).scalar_type(), kFloat32);
  EXPECT_EQ((t(kInt32) < 2.5).scalar_type(), kBool);
}

TEST(TypePromotion, ValuesSurviveThePromotion) {
  // 2**40 + 1 must not pass through float32 when int64 meets an int scalar.
  EXPECT_TRUE(all_equal(tensor({int64_t{1} << 40}) + 1, {1099511627777.0}));
  EXPECT_TRUE(all_close(tensor({1, 2}, kInt32) + 0.25, {1.25, 2.25}));
  EXPECT_TRUE(all_close(tensor({1, 2}, kInt32) * scalar_tensor(0.1, kFloat64), {0.1, 0.2}, tolerance(kFloat64)));
  EXPECT_TRUE(all_equal(tensor({true, false}) + 1, {2, 1}));
}

// ---- gradients ------------------------------------------------------------------------------

// Float64 values in [lo, hi] at least `margin` away from every kink.
std::vector<double> smooth_inputs(int64_t n, double lo, double hi, const std::vector<double>& kinks, uint32_t seed) {
  auto v = uniform_values(n, lo, hi, seed);
  for (double& x : v)
    for (double k : kinks)
      if (std::abs(x - k) < 0.1) x = k + (x < k ? -0.2 : 0.2);
  return v;
}

Tensor leaf(const std::vector<double>& v, IntArrayRef sizes) { return make(v, sizes, kFloat64).requires_grad_(); }

TEST(Gradients, UnaryOps) {
  for (const auto& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    Tensor x = leaf(smooth_inputs(6, c.lo, c.hi, c.kinks, 21), {2, 3});
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.op(in[0]); }, {x}));
    // Through a transposed view of the leaf.
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.op(in[0].t()); }, {x}));
  }
}

TEST(Gradients, SignHasZeroGradient) {
  Tensor x = leaf({-1, 2, 3}, {3});
  x.sign().sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {0, 0, 0}));
}

TEST(Gradients, BinaryOpsWithBroadcasting) {
  const std::vector<ShapePair> shapes = {{{2, 3}, {2, 3}, {}}, {{2, 3}, {3}, {}}, {{2, 1}, {1, 3}, {}}, {{2, 3}, {}, {}}};
  for (const auto& c : binary_cases()) {
    for (const auto& s : shapes) {
      SCOPED_TRACE(c.name + " " + ::testing::PrintToString(s.a) + " with " + ::testing::PrintToString(s.b));
      // Disjoint ranges keep maximum/minimum away from ties, where they are not differentiable.
      const bool extreme = c.name == "maximum" || c.name == "minimum";
      Tensor a = leaf(uniform_values(numel_of(s.a), c.a_lo, extreme ? 0 : c.a_hi, 31), s.a);
      Tensor b = leaf(uniform_values(numel_of(s.b), extreme ? 0.5 : c.b_lo, c.b_hi, 32), s.b);
      if (c.name == "atan2") b = leaf(uniform_values(numel_of(s.b), 0.5, 3, 33), s.b);
      EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.op(in[0], in[1]); }, {a, b}));
    }
  }
}

TEST(Gradients, MaximumTieSplitsGradient) {
  Tensor a = leaf({1, 2, 3}, {3}), b = leaf({1, 5, 0}, {3});
  maximum(a, b).sum().backward();
  EXPECT_TRUE(all_equal(a.grad(), {0.5, 0, 1}));
  EXPECT_TRUE(all_equal(b.grad(), {0.5, 1, 0}));
}

TEST(Gradients, PowAtZeroBase) {
  // d/da a^b at a = 0: 0 for b > 1, and 0 for b == 0 (PyTorch masks exponent 0).
  Tensor a = leaf({0, 0, 2}, {3}), b = leaf({2, 0, 3}, {3});
  pow(a, b).sum().backward();
  EXPECT_TRUE(all_equal(a.grad(), {0, 0, 12}));
  EXPECT_TRUE(all_close(b.grad(), {0, 0, 8 * std::log(2.0)}));
}

TEST(Gradients, ScalarOperandForms) {
  Tensor x = leaf(uniform_values(4, 0.5, 2, 41), {4});
  auto check = [&](const std::function<Tensor(const Tensor&)>& f) {
    return gradients_match([&](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
  };
  EXPECT_TRUE(check([](const Tensor& t) { return t * 3 + 1; }));
  EXPECT_TRUE(check([](const Tensor& t) { return 2 - t / 4; }));
  EXPECT_TRUE(check([](const Tensor& t) { return 2 / t; }));
  EXPECT_TRUE(check([](const Tensor& t) { return pow(2, t); }));
  EXPECT_TRUE(check([](const Tensor& t) { return t.add(1, 2.5).sub(3, 0.5); }));
}

TEST(Gradients, WhereAndMaskedFill) {
  Tensor cond = tensor({true, false, true});
  Tensor a = leaf(uniform_values(6, -1, 1, 51), {2, 3}), b = leaf(uniform_values(2, -1, 1, 52), {2, 1});
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); }, {a, b}));
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return in[0].masked_fill(cond, 2); }, {a}));
  where(cond, a, b).sum().backward();
  EXPECT_TRUE(all_equal(a.grad(), {1, 0, 1, 1, 0, 1}));
  EXPECT_TRUE(all_equal(b.grad(), {1, 1}));
}

TEST(Gradients, InPlaceOpsOnNonLeaves) {
  Tensor x = leaf(uniform_values(6, 0.2, 2, 61), {2, 3});
  Tensor other = leaf(uniform_values(3, 0.5, 2, 62), {3});
  auto check = [&](const std::function<void(Tensor&, const Tensor&)>& f) {
    return gradients_match(
        [&](const std::vector<Tensor>& in) {
          Tensor y = in[0] * 1;
          f(y, in[1]);
          return y;
        },
        {x, other});
  };
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.add_(o, 2); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.mul_(o).exp_(); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.div_(o).sqrt_(); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.pow_(o).log_(); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.sub_(o).tanh_().sigmoid_(); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.atan2_(o).neg_(); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.sub_(1.1).relu_().add_(o); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.sub_(1.1).abs_().clamp_(0.15, 0.6).mul_(o); }));
  EXPECT_TRUE(check([](Tensor& y, const Tensor& o) { y.masked_fill_(o > 1.2, 0).mul_(o); }));
}

TEST(Gradients, MixedDtypeOperandsGetGradientsInTheirOwnDtype) {
  Tensor a = ones({3}, TensorOptions(kFloat32).requires_grad(true));
  Tensor b = ones({3}, TensorOptions(kFloat64).requires_grad(true));
  (a * b * 2).sum().backward();
  EXPECT_EQ(a.grad().scalar_type(), kFloat32);
  EXPECT_EQ(b.grad().scalar_type(), kFloat64);
  EXPECT_TRUE(all_equal(a.grad(), {2, 2, 2}));
}

// ---- every SIMD level ---------------------------------------------------------------------------

class SimdLevel : public ::testing::TestWithParam<cpu::Capability> {
 protected:
  void SetUp() override {
    previous_ = cpu::cpu_capability();
    if (cpu::set_cpu_capability(GetParam()) != GetParam()) {
      cpu::set_cpu_capability(previous_);
      GTEST_SKIP() << "CPU lacks " << cpu::capability_name(GetParam());
    }
  }
  void TearDown() override { cpu::set_cpu_capability(previous_); }

 private:
  cpu::Capability previous_ = cpu::Capability::Baseline;
};

TEST_P(SimdLevel, UnaryOpsMatchReference) {
  for (const auto& c : unary_cases()) {
    for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32}) {
      if (c.ints == IntInput::Rejects && !is_floating_point(dtype)) continue;
      SCOPED_TRACE(c.name + " " + dtype_name(dtype));
      check_unary(c, make(inputs_for(c, dtype, 1029, 17), {1029}, dtype));
      check_unary(c, make_2d(inputs_for(c, dtype, 40, 18), 5, 8, dtype, Layout::Transposed));
    }
  }
}

TEST_P(SimdLevel, BinaryOpsMatchReference) {
  const std::vector<ShapePair> shapes = {{{1029}, {1029}, {}}, {{1029}, {}, {}}, {{}, {1029}, {}}, {{33, 31}, {31}, {}}};
  for (const auto& c : binary_cases()) {
    for (ScalarType dtype : binary_dtypes(c)) {
      for (const auto& s : shapes) {
        SCOPED_TRACE(c.name + " " + dtype_name(dtype) + " " + ::testing::PrintToString(s.a));
        Tensor a = make(binary_inputs(c.a_lo, c.a_hi, dtype, numel_of(s.a), 5), s.a, dtype);
        Tensor b = make(binary_inputs(c.b_lo, c.b_hi, dtype, numel_of(s.b), 6), s.b, dtype);
        check_binary(c, a, b, binary_result_dtype(c, dtype));
      }
    }
  }
}

TEST_P(SimdLevel, CastsAndComparisonsMatchReference) {
  auto v = uniform_values(1029, -300, 300, 19);
  for (ScalarType from : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32}) {
    Tensor x = make(v, {1029}, from);
    for (ScalarType to : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64}) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      EXPECT_TRUE(all_equal(x.to(to), map_values(values(x), [to](double e) { return round_to(to, e); })));
    }
    EXPECT_TRUE(all_equal(x > 0.5, map_values(values(x), [](double e) { return e > 0.5; })));
  }
}

// A same-dtype copy keeps every bit, a NaN's payload too (a signalling bf16 NaN is not
// quieted), contiguous and strided.
TEST_P(SimdLevel, CopiesKeepEveryBit) {
  std::vector<uint16_t> bits(1029);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i * 40503u);
  bits[3] = 0x7f81;  // bf16 signalling NaN
  bits[4] = 0xffc1;  // bf16 quiet NaN with a payload
  bits[5] = 0x7c01;  // f16 signalling NaN
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor source = from_blob(bits.data(), {1029}, TensorOptions(dtype));
    const Tensor copied = source.clone();
    ASSERT_EQ(std::memcmp(copied.data_ptr(), bits.data(), bits.size() * 2), 0);
    const Tensor strided = from_blob(bits.data(), {343, 3}, TensorOptions(dtype)).t().contiguous();
    const auto* out = static_cast<const uint16_t*>(strided.data_ptr());
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t r = 0; r < 343; ++r) ASSERT_EQ(out[c * 343 + r], bits[static_cast<size_t>(r * 3 + c)]);
  }
}

INSTANTIATE_TEST_SUITE_P(Elementwise, SimdLevel,
                         ::testing::Values(cpu::Capability::Baseline, cpu::Capability::AVX2, cpu::Capability::AVX512),
                         [](const auto& info) { return std::string(cpu::capability_name(info.param)); });

}  // namespace
}  // namespace ember
