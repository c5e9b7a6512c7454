// Rounding (floor, ceil, trunc, round with decimals, frac), remainder/fmod and `%`, clamp
// with tensor bounds, bitwise ops and their operators, in-place comparisons: each against
// float64 or integer references written here, on transposed, sliced, broadcast and empty
// inputs, with gradcheck for the differentiable ones and the errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

// [rows, cols] holding v in row-major order, stored transposed (column-major).
Tensor transposed(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype) {
  Tensor t = empty({cols, rows}, dtype).t();
  for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[static_cast<size_t>(i)]);
  return t;
}

// [rows, cols] holding v, every other column of a wider buffer.
Tensor strided(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype) {
  Tensor t = zeros({rows, 2 * cols}, dtype).slice(1, 0, std::nullopt, 2);
  for (int64_t i = 0; i < rows * cols; ++i) write_element(t, i, v[static_cast<size_t>(i)]);
  return t;
}

std::vector<Tensor> layouts(const std::vector<double>& v, int64_t rows, int64_t cols, ScalarType dtype) {
  return {make(v, {rows, cols}, dtype), transposed(v, rows, cols, dtype), strided(v, rows, cols, dtype)};
}

std::vector<double> map_values(const std::vector<double>& v, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double x : v) out.push_back(f(x));
  return out;
}

Tensor leaf(const std::vector<double>& v, IntArrayRef sizes) { return make(v, sizes, kFloat64).requires_grad_(); }

// ---- rounding ------------------------------------------------------------------------------

// Half to even without the rounding mode of the FPU: the nearest integer, ties to the even one.
double round_half_even(double x) {
  const double lower = std::floor(x), diff = x - lower;
  if (diff < 0.5) return lower;
  if (diff > 0.5) return lower + 1;
  return std::fmod(lower, 2) == 0 ? lower : lower + 1;
}

struct RoundingCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

std::vector<RoundingCase> rounding_cases() {
  return {
      {"floor", [](const Tensor& x) { return x.floor(); }, [](double x) { return std::floor(x); }},
      {"ceil", [](const Tensor& x) { return ember::ceil(x); }, [](double x) { return std::ceil(x); }},
      {"trunc", [](const Tensor& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }},
      {"round", [](const Tensor& x) { return ember::round(x); }, round_half_even},
      {"frac", [](const Tensor& x) { return x.frac(); }, [](double x) { return x - std::trunc(x); }},
      {"round_decimals_2", [](const Tensor& x) { return x.round(2); },
       [](double x) { return round_half_even(x * 100) / 100; }},
      {"round_decimals_-1", [](const Tensor& x) { return ember::round(x, -1); },
       [](double x) { return round_half_even(x / 10) * 10; }},
  };
}

TEST(Rounding, MatchesReferenceForFloatDtypesAndLayouts) {
  for (const auto& c : rounding_cases()) {
    for (ScalarType dtype : {kFloat32, kFloat64, kBFloat16}) {
      const std::vector<double> v = uniform_values(21, -40, 40, 3);
      for (const Tensor& x : layouts(v, 3, 7, dtype)) {
        SCOPED_TRACE(c.name + " " + dtype_name(dtype));
        Tensor y = c.op(x);
        ASSERT_EQ(y.scalar_type(), dtype);
        ASSERT_EQ(y.sizes(), x.sizes());
        // The reference sees the stored (rounded) inputs; decimals scale in the storage precision.
        EXPECT_TRUE(all_close(y, map_values(values(x), c.ref), dtype == kFloat64 ? Tolerance{1e-12, 1e-12}
                                                                                 : tolerance(dtype)));
      }
    }
  }
}

TEST(Rounding, TiesSignsAndSpecialValues) {
  Tensor ties = tensor({0.5, 1.5, 2.5, -0.5, -2.5, 3.5}, kFloat64);
  EXPECT_TRUE(all_equal(ties.round(), {0, 2, 2, 0, -2, 4}));
  EXPECT_TRUE(std::signbit(tensor({-0.4}, kFloat64).round().item<double>()));
  EXPECT_TRUE(all_close(tensor({1234.5678}, kFloat64).round(2), {1234.57}, {1e-12, 0}));
  EXPECT_TRUE(all_equal(tensor({1250.0, 1350.0, -77.0}, kFloat64).round(-2), {1200, 1400, -100}));
  Tensor special = tensor({kNaN, kInf, -kInf}, kFloat32);
  for (const auto& c : rounding_cases()) {
    SCOPED_TRACE(c.name);
    if (c.name == "frac") EXPECT_TRUE(all_close(c.op(special), {kNaN, kNaN, kNaN}, {0, 0}));
    else EXPECT_TRUE(all_close(c.op(special), {kNaN, kInf, -kInf}, {0, 0}));
  }
  EXPECT_TRUE(all_equal(tensor({-2.75, 2.75}, kFloat32).frac(), {-0.75, 0.75}));
}

TEST(Rounding, IntegerTensorsComeBackUnchanged) {
  for (ScalarType dtype : {kInt64, kInt32, kUInt8}) {
    Tensor x = make({0, 3, 7, 100}, {4}, dtype);
    for (const auto& y : {x.floor(), x.ceil(), x.trunc(), x.round()}) {
      EXPECT_EQ(y.scalar_type(), dtype);
      EXPECT_TRUE(all_equal(y, {0, 3, 7, 100}));
    }
  }
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).frac(); }, {"[frac]", "int64"}));
  EXPECT_TRUE(throws_error([] { tensor({15, 25}).round(-1); }, {"[round]", "decimals=-1", "int64"}));
  EXPECT_TRUE(throws_error([] { ones({2}).round(400); }, {"[round]", "decimals=400"}));
  EXPECT_TRUE(throws_error([] { tensor({true}).floor(); }, {"[floor]", "bool"}));
}

TEST(Rounding, EmptyZeroDimAndInPlace) {
  EXPECT_EQ(empty({0, 3}).floor().sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(all_equal(scalar_tensor(-1.5).ceil(), {-1}));
  Tensor base = make({1.25, -1.75, 2.5, 3.5, -0.5, 9.99}, {2, 3}, kFloat32);
  Tensor view = base.t();
  view.round_();
  EXPECT_TRUE(all_equal(base, {1, -2, 2, 4, -0, 10}));
  view.add_(0.5).floor_();
  EXPECT_TRUE(all_equal(base, {1, -2, 2, 4, 0, 10}));
  Tensor f = make({1.25, -1.75}, {2}, kFloat64);
  f.frac_();
  EXPECT_TRUE(all_equal(f, {0.25, -0.75}));
  Tensor g = make({1.25, -1.75}, {2}, kFloat64);
  g.round_(1).trunc_();
  EXPECT_TRUE(all_equal(g, {1, -1}));
  Tensor c = make({1.25, -1.75}, {2}, kFloat64);
  c.ceil_();
  EXPECT_TRUE(all_equal(c, {2, -1}));
}

TEST(Rounding, Gradients) {
  // frac's derivative is 1; the step functions have derivative 0 away from their jumps.
  Tensor x = leaf({0.3, -1.6, 2.2, 4.7, -0.2, 7.4}, {2, 3});
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().frac(); }, {x}));
  for (const auto& c : rounding_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return c.op(in[0]) * in[0]; }, {x}));
  }
}

// ---- remainder and fmod ----------------------------------------------------------------------

// Python's modulo written from the floored quotient; C's from the truncated one.
double python_mod(double a, double b) { return a - b * std::floor(a / b); }
double c_mod(double a, double b) { return a - b * std::trunc(a / b); }
int64_t python_mod_int(int64_t a, int64_t b) { return ((a % b) + b) % b; }
int64_t c_mod_int(int64_t a, int64_t b) { return a - b * (a / b); }

TEST(Remainder, FloatsMatchReferenceWithBroadcastAndLayouts) {
  const std::vector<double> av = uniform_values(12, -9, 9, 5);
  std::vector<double> bv = uniform_values(4, 0.7, 3, 6);
  bv[1] = -bv[1];
  bv[3] = -bv[3];
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const Tensor& a : layouts(av, 3, 4, dtype)) {
      Tensor b = make(bv, {4}, dtype);
      std::vector<double> rem, fm;
      const auto stored_a = values(a), stored_b = values(b);
      for (size_t i = 0; i < 12; ++i) {
        rem.push_back(python_mod(stored_a[i], stored_b[i % 4]));
        fm.push_back(c_mod(stored_a[i], stored_b[i % 4]));
      }
      SCOPED_TRACE(dtype_name(dtype));
      const Tolerance tol = dtype == kFloat64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
      EXPECT_TRUE(all_close(a.remainder(b), rem, tol));
      EXPECT_TRUE(all_close(a % b, rem, tol));
      EXPECT_TRUE(all_close(ember::remainder(a, b), rem, tol));
      EXPECT_TRUE(all_close(a.fmod(b), fm, tol));
      EXPECT_TRUE(all_close(ember::fmod(a, b), fm, tol));
    }
  }
}

TEST(Remainder, SignFollowsDivisorForRemainderAndDividendForFmod) {
  Tensor a = tensor({7.0, -7.0, 7.0, -7.0, 6.0, -0.0}, kFloat64);
  Tensor b = tensor({3.0, 3.0, -3.0, -3.0, 3.0, 2.0}, kFloat64);
  EXPECT_TRUE(all_equal(a % b, {1, 2, -2, -1, 0, 0}));
  EXPECT_TRUE(all_equal(a.fmod(b), {1, -1, 1, -1, 0, 0}));
  EXPECT_TRUE(all_close(tensor({1.0, kInf}).remainder(0.0), {kNaN, kNaN}, {0, 0}));
  EXPECT_TRUE(all_close(tensor({1.0}).fmod(0.0), {kNaN}, {0, 0}));
}

TEST(Remainder, IntegersMatchReference) {
  const std::vector<double> av = integer_values(24, -50, 50, 9);
  std::vector<double> bv = integer_values(6, 1, 9, 10);
  for (size_t i = 0; i < bv.size(); i += 2) bv[i] = -bv[i];
  for (ScalarType dtype : {kInt64, kInt32, kInt8}) {
    Tensor a = transposed(av, 4, 6, dtype), b = make(bv, {6}, dtype);
    std::vector<double> rem, fm;
    for (size_t i = 0; i < av.size(); ++i) {
      const auto x = static_cast<int64_t>(av[i]), y = static_cast<int64_t>(bv[i % 6]);
      rem.push_back(static_cast<double>(python_mod_int(x, y)));
      fm.push_back(static_cast<double>(c_mod_int(x, y)));
    }
    SCOPED_TRACE(dtype_name(dtype));
    Tensor r = a % b;
    EXPECT_EQ(r.scalar_type(), dtype);
    EXPECT_TRUE(all_equal(r, rem));
    EXPECT_TRUE(all_equal(a.fmod(b), fm));
  }
  // The one quotient that overflows: INT64_MIN / -1; its remainder is 0.
  Tensor lowest = full({2}, std::numeric_limits<int64_t>::min(), kInt64);
  EXPECT_TRUE(all_equal(lowest % -1, {0, 0}));
  EXPECT_TRUE(all_equal(lowest.fmod(-1), {0, 0}));
}

TEST(Remainder, ScalarFormsPromoteAsPyTorch) {
  Tensor i = tensor({-5, 5});
  EXPECT_EQ((i % 3).scalar_type(), kInt64);
  EXPECT_TRUE(all_equal(i % 3, {1, 2}));
  Tensor f = i % 2.5;
  EXPECT_EQ(f.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(f, {0, 0}));
  EXPECT_TRUE(all_equal(7 % tensor({-3, 4}), {-2, 3}));
  EXPECT_TRUE(all_equal(ember::remainder(7, tensor({-3, 4})), {-2, 3}));
  EXPECT_TRUE(all_equal(ember::fmod(tensor({-7, 7}), 3), {-1, 1}));
  EXPECT_EQ(empty({0}, kInt64).remainder(3).sizes(), (std::vector<int64_t>{0}));
}

TEST(Remainder, IntegerDivisionByZeroIsAnError) {
  EXPECT_TRUE(throws_error([] { tensor({1, 2}) % tensor({1, 0}); }, {"[remainder]", "division by zero", "int64"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}, kInt32).fmod(0); }, {"[fmod]", "division by zero"}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({1, 2}); t.remainder_(0); }, {"[remainder]", "division by zero"}));
  EXPECT_TRUE(throws_error([] { tensor({true}) % tensor({true}); }, {"[remainder]", "bool"}));
}

TEST(Remainder, InPlace) {
  Tensor base = make({5, -5, 7, -7, 1, 9}, {2, 3}, kFloat32);
  base.t().remainder_(tensor({3.0f, -4.0f}));
  EXPECT_TRUE(all_equal(base, {2, 1, 1, -3, -3, -3}));
  Tensor ints = tensor({5, -5});
  ints.fmod_(3);
  EXPECT_TRUE(all_equal(ints, {2, -2}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({5, 6}); t.remainder_(2.5); }, {"remainder", "float32", "int64"}));
}

TEST(Remainder, Gradients) {
  // Away from the jumps (a / b an integer): d/da = 1, d/db = -floor(a / b) or -trunc(a / b).
  Tensor a = leaf({5.3, -5.3, 7.1, -2.9, 0.4, 8.8}, {2, 3});
  Tensor b = leaf({2.1, -1.7, 3.3}, {3});
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0] % in[1]; }, {a, b}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].fmod(in[1]); }, {a, b}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().remainder(1.5); }, {a}));
  Tensor x = leaf({5.3, -5.3}, {2}), y = leaf({2.0, 2.0}, {2});
  (x % y).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {1, 1}));
  EXPECT_TRUE(all_equal(y.grad(), {-2, 3}));  // -floor(2.65), -floor(-2.65)
}

// ---- clamp with tensor bounds ------------------------------------------------------------------

double clamp_ref(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNaN;
  return std::min(std::max(x, lo), hi);
}

TEST(ClampTensor, MatchesReferenceWithBroadcastBounds) {
  const std::vector<double> xv = uniform_values(12, -3, 3, 12);
  const std::vector<double> lov = {-1, 0.5, -2, 1.5};     // [4], broadcast over rows
  const std::vector<double> hiv = {1, -0.5, 2};           // [3, 1]; row 1 has hi < some lo
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const Tensor& x : layouts(xv, 3, 4, dtype)) {
      Tensor lo = make(lov, {4}, dtype), hi = make(hiv, {3, 1}, dtype);
      std::vector<double> both, only_lo, only_hi;
      const auto stored = values(x);
      for (size_t i = 0; i < 12; ++i) {
        both.push_back(clamp_ref(stored[i], lov[i % 4], hiv[i / 4]));
        only_lo.push_back(clamp_ref(stored[i], lov[i % 4], kInf));
        only_hi.push_back(clamp_ref(stored[i], -kInf, hiv[i / 4]));
      }
      SCOPED_TRACE(dtype_name(dtype));
      EXPECT_TRUE(all_equal(x.clamp(lo, hi), both));
      EXPECT_TRUE(all_equal(ember::clamp(x, lo, hi), both));
      EXPECT_TRUE(all_equal(x.clamp_min(lo), only_lo));
      EXPECT_TRUE(all_equal(ember::clamp_min(x, lo), only_lo));
      EXPECT_TRUE(all_equal(x.clamp_max(hi), only_hi));
      EXPECT_TRUE(all_equal(ember::clamp_max(x, hi), only_hi));
      EXPECT_TRUE(all_equal(x.clamp(std::nullopt, hi), only_hi));
    }
  }
}

TEST(ClampTensor, BroadcastsNaNsAndPromotes) {
  // The result takes the broadcast shape of all three, as torch.clamp.
  Tensor x = tensor({0.0, 5.0}, kFloat64).reshape({2, 1});
  Tensor lo = tensor({1.0, 2.0, 3.0}, kFloat64);
  EXPECT_EQ(x.clamp(lo).sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(all_equal(x.clamp(lo), {1, 2, 3, 5, 5, 5}));
  EXPECT_TRUE(all_close(tensor({kNaN, 1.0, 1.0}).clamp(tensor({0.0, kNaN, 0.0}), tensor({2.0, 2.0, kNaN})),
                        {kNaN, kNaN, kNaN}, {0, 0}));
  Tensor promoted = tensor({0, 1, 2}).clamp(tensor({0.5f}));
  EXPECT_EQ(promoted.scalar_type(), kFloat32);
  EXPECT_TRUE(all_equal(promoted, {0.5, 1, 2}));
  EXPECT_TRUE(all_equal(tensor({-5, 0, 5}).clamp(tensor({-1}), tensor({1})), {-1, 0, 1}));
  EXPECT_EQ(empty({0, 2}).clamp(zeros({2})).sizes(), (std::vector<int64_t>{0, 2}));
}

TEST(ClampTensor, InPlaceAndErrors) {
  Tensor base = make({-3, -1, 0, 1, 3, 5}, {2, 3}, kFloat32);
  base.t().clamp_(tensor({-2.0f, 0.0f}), tensor({4.0f}));
  EXPECT_TRUE(all_equal(base, {-2, -1, 0, 1, 3, 4}));
  base.clamp_min_(tensor({0.0f})).clamp_max_(tensor({2.0f}));
  EXPECT_TRUE(all_equal(base, {0, 0, 0, 1, 2, 2}));
  base.clamp_min_(1).clamp_max_(1.5);
  EXPECT_TRUE(all_equal(base, {1, 1, 1, 1, 1.5, 1.5}));
  EXPECT_TRUE(throws_error([] { ones({2}).clamp(std::optional<Tensor>(), std::optional<Tensor>()); },
                           {"[clamp]", "min", "max"}));
  EXPECT_TRUE(throws_error([] { Tensor t = ones({2}); t.clamp_(zeros({3, 2})); }, {"clamp_", "[2]", "[3, 2]"}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({1, 2}); t.clamp_(tensor({0.5f})); }, {"clamp_", "float32", "int64"}));
  EXPECT_TRUE(throws_error([] { ones({2}).clamp(zeros({3})); }, {"[clamp]", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error([] { tensor({true}).clamp(tensor({false})); }, {"[clamp]", "bool"}));
}

TEST(ClampTensor, Gradients) {
  // x crosses both bounds; row 1's hi (-0.5) is below lo (0.5) in column 1, so max decides there.
  Tensor x = leaf(uniform_values(12, -3, 3, 12), {3, 4});
  Tensor lo = leaf({-1, 0.5, -2, 1.5}, {4});
  Tensor hi = leaf({1, -0.5, 2}, {3, 1});
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].clamp(in[1], in[2]); }, {x, lo, hi}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return in[0].t().clamp_min(in[1]); },
                              {leaf(uniform_values(12, -3, 3, 4), {4, 3}), leaf({0.1, -0.2, 0.3, 0.0}, {4})}));
  // Hand-derived: lo > hi everywhere, so the output is hi and only hi gets the gradient.
  Tensor a = leaf({0.0, 5.0}, {2}), l = leaf({2.0, 2.0}, {2}), h = leaf({1.0, 1.0}, {2});
  a.clamp(l, h).sum().backward();
  EXPECT_TRUE(all_equal(a.grad(), {0, 0}));
  EXPECT_TRUE(all_equal(l.grad(), {0, 0}));
  EXPECT_TRUE(all_equal(h.grad(), {1, 1}));
}

// ---- bitwise ops -------------------------------------------------------------------------------

TEST(Bitwise, IntegersMatchReference) {
  const std::vector<double> av = integer_values(12, -60, 60, 21), bv = integer_values(4, -60, 60, 22);
  for (ScalarType dtype : {kInt64, kInt32, kInt8}) {
    Tensor a = transposed(av, 3, 4, dtype), b = make(bv, {4}, dtype);
    std::vector<double> and_ref, or_ref, xor_ref, not_ref;
    for (size_t i = 0; i < av.size(); ++i) {
      const auto x = static_cast<int64_t>(av[i]), y = static_cast<int64_t>(bv[i % 4]);
      and_ref.push_back(static_cast<double>(x & y));
      or_ref.push_back(static_cast<double>(x | y));
      xor_ref.push_back(static_cast<double>(x ^ y));
      not_ref.push_back(static_cast<double>(-x - 1));  // two's complement: ~x == -x - 1
    }
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_EQ((a & b).scalar_type(), dtype);
    EXPECT_TRUE(all_equal(a & b, and_ref));
    EXPECT_TRUE(all_equal(ember::bitwise_and(a, b), and_ref));
    EXPECT_TRUE(all_equal(a | b, or_ref));
    EXPECT_TRUE(all_equal(a.bitwise_or(b), or_ref));
    EXPECT_TRUE(all_equal(a ^ b, xor_ref));
    EXPECT_TRUE(all_equal(ember::bitwise_xor(a, b), xor_ref));
    EXPECT_TRUE(all_equal(~a, not_ref));
    EXPECT_TRUE(all_equal(ember::bitwise_not(a), not_ref));
  }
  EXPECT_TRUE(all_equal(~make({5, 0, 255}, {3}, kUInt8), {250, 255, 0}));
  EXPECT_TRUE(all_equal(tensor({12, 10}) & 6, {4, 2}));
  EXPECT_TRUE(all_equal(6 | tensor({12, 1}), {14, 7}));
  EXPECT_TRUE(all_equal(tensor({12, 10}) ^ 6, {10, 12}));
  EXPECT_EQ((empty({0, 3}, kInt64) & tensor({1, 2, 3})).sizes(), (std::vector<int64_t>{0, 3}));
}

TEST(Bitwise, BoolsAndPromotion) {
  Tensor a = tensor({true, true, false, false}), b = tensor({true, false, true, false});
  EXPECT_EQ((a & b).scalar_type(), kBool);
  EXPECT_TRUE(all_equal(a & b, {1, 0, 0, 0}));
  EXPECT_TRUE(all_equal(a | b, {1, 1, 1, 0}));
  EXPECT_TRUE(all_equal(a ^ b, {0, 1, 1, 0}));
  EXPECT_TRUE(all_equal(~a, {0, 0, 1, 1}));
  EXPECT_TRUE(all_equal(a & true, {1, 1, 0, 0}));
  // bool with int promotes to int; int32 with a python int stays int32.
  Tensor mixed = a & tensor({3, 3, 3, 3}, kInt32);
  EXPECT_EQ(mixed.scalar_type(), kInt32);
  EXPECT_TRUE(all_equal(mixed, {1, 1, 0, 0}));
  EXPECT_EQ((tensor({1, 2}, kInt32) | 4).scalar_type(), kInt32);
}

TEST(Bitwise, FloatingPointIsAnErrorNamingTheDtype) {
  EXPECT_TRUE(throws_error([] { ones({2}) & ones({2}); }, {"[bitwise_and]", "float32"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}) | ones({2}, kFloat64); }, {"[bitwise_or]", "float64"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}) ^ 1.5; }, {"[bitwise_xor]", "float32"}));
  EXPECT_TRUE(throws_error([] { ~ones({2}, kFloat16); }, {"[bitwise_not]", "float16"}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({1, 2}); t &= ones({2}); }, {"bitwise_and", "float32"}));
  EXPECT_TRUE(throws_error([] { tensor({1, 2}) & tensor({1, 2, 3}); }, {"[bitwise_and]", "[2]", "[3]"}));
}

TEST(Bitwise, InPlaceOperators) {
  Tensor base = make({12, 10, 7, 1, 0, 255}, {2, 3}, kInt64);
  Tensor view = base.t();
  view &= tensor({6, 3});
  EXPECT_TRUE(all_equal(base, {4, 2, 6, 1, 0, 3}));
  view |= 8;
  EXPECT_TRUE(all_equal(base, {12, 10, 14, 9, 8, 11}));
  view ^= tensor({1, 2});
  EXPECT_TRUE(all_equal(base, {13, 11, 15, 11, 10, 9}));
  base.bitwise_not_();
  EXPECT_TRUE(all_equal(base, {-14, -12, -16, -12, -11, -10}));
  Tensor flags = tensor({true, false});
  flags |= tensor({false, true});
  flags.bitwise_xor_(true);
  EXPECT_TRUE(all_equal(flags, {0, 0}));
  flags.bitwise_not_().bitwise_and_(tensor({true, false}));
  EXPECT_TRUE(all_equal(flags, {1, 0}));
  EXPECT_TRUE(throws_error([] { Tensor t = tensor({true}); t &= tensor({3}); }, {"bitwise_and", "int64", "bool"}));
}

// ---- in-place comparisons ---------------------------------------------------------------------

TEST(CompareInPlace, WritesOneOrZeroInSelfsDtype) {
  struct Case {
    const char* name;
    std::function<void(Tensor&, const Tensor&)> op;
    std::function<bool(double, double)> ref;
  };
  const std::vector<Case> cases = {
      {"eq_", [](Tensor& a, const Tensor& b) { a.eq_(b); }, [](double x, double y) { return x == y; }},
      {"ne_", [](Tensor& a, const Tensor& b) { a.ne_(b); }, [](double x, double y) { return x != y; }},
      {"lt_", [](Tensor& a, const Tensor& b) { a.lt_(b); }, [](double x, double y) { return x < y; }},
      {"le_", [](Tensor& a, const Tensor& b) { a.le_(b); }, [](double x, double y) { return x <= y; }},
      {"gt_", [](Tensor& a, const Tensor& b) { a.gt_(b); }, [](double x, double y) { return x > y; }},
      {"ge_", [](Tensor& a, const Tensor& b) { a.ge_(b); }, [](double x, double y) { return x >= y; }},
  };
  const std::vector<double> av = integer_values(12, -2, 2, 31), bv = integer_values(4, -2, 2, 32);
  for (const auto& c : cases) {
    for (ScalarType dtype : {kFloat32, kInt64, kFloat64}) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype));
      Tensor base = make(av, {4, 3}, dtype);
      Tensor a = base.t();  // [3, 4], transposed
      Tensor b = make(bv, {4}, kInt32);
      std::vector<double> expected;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) expected.push_back(c.ref(av[static_cast<size_t>(j * 3 + i)], bv[j]) ? 1 : 0);
      c.op(a, b);
      EXPECT_EQ(a.scalar_type(), dtype);
      EXPECT_TRUE(all_equal(a, expected));
    }
  }
  Tensor s = tensor({1.0, 2.0, 3.0}, kFloat64);
  s.ge_(2).eq_(0);
  EXPECT_TRUE(all_equal(s, {1, 0, 0}));
  EXPECT_TRUE(throws_error([] { Tensor t = ones({2}); t.lt_(ones({3, 2})); }, {"lt", "[2]", "[3, 2]"}));
}

TEST(CompareInPlace, HasNoGradient) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = x * 2;
  y.gt_(3);
  EXPECT_TRUE(all_equal(y, {0, 1, 1}));
  (y * x).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {0, 1, 1}));
}

}  // namespace
}  // namespace ember
