// Custom autograd Functions (autograd::Function<T>, AutogradContext): gradients against
// hand-derived formulas and gradcheck in float64, saved data of every kind, saved tensors and
// their version checks, non-differentiable and dirty outputs, materialized gradients,
// needs_input_grad, double backward, and the errors of a wrong backward.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;
using autograd::AutogradContext;
using autograd::variable_list;

Tensor leaf(const std::vector<double>& v) {
  return make(v, {static_cast<int64_t>(v.size())}, kFloat64).requires_grad_();
}

// y = x * c with c kept in saved_data.
struct MulConstant : public autograd::Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};

TEST(CustomFunction, GradientOfAScalarArgumentFunction) {
  Tensor x = leaf({1.0, -2.0, 0.5});
  Tensor y = MulConstant::apply(x, 5.5);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_NE(y.grad_fn()->name().find("MulConstant"), std::string::npos) << y.grad_fn()->name();
  EXPECT_TRUE(all_close(y, {5.5, -11.0, 2.75}));
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {5.5, 5.5, 5.5}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return MulConstant::apply(in[0], -1.25); },
                              {x.detach().requires_grad_()}));
}

// y = sign * scale * sum_{dims}(x^n): every saved_data kind in one function.
struct PowerSum : public autograd::Function<PowerSum> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, int n, double scale, bool negate, std::string tag,
                        std::vector<int64_t> dims) {
    ctx->saved_data["n"] = n;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["negate"] = negate;
    ctx->saved_data["tag"] = tag;
    ctx->saved_data["dims"] = dims;
    ctx->saved_data["sizes"] = x.sizes();
    ctx->save_for_backward({x});
    return x.pow(static_cast<double>(n)).sum(dims) * (negate ? -scale : scale);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    EXPECT_EQ(ctx->saved_data["tag"].toStringRef(), "power-sum");
    EXPECT_TRUE(ctx->saved_data["n"].isInt());
    const int64_t n = ctx->saved_data["n"].toInt();
    const double factor = (ctx->saved_data["negate"].toBool() ? -1 : 1) * ctx->saved_data["scale"].toDouble();
    Tensor g = grad_outputs[0];
    for (int64_t d : ctx->saved_data["dims"].toIntVector()) g = g.unsqueeze(d);
    Tensor x = ctx->get_saved_variables()[0];
    EXPECT_EQ(ctx->saved_data["sizes"].toIntVector(), x.sizes());
    Tensor grad = g.expand(x.sizes()) * x.pow(static_cast<double>(n - 1)) * (factor * static_cast<double>(n));
    return {grad, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

TEST(CustomFunction, SavedDataOfEveryKindReachesBackward) {
  const std::vector<double> v{0.5, -1.5, 2.0, 1.25, -0.75, 3.0};
  Tensor x = make(v, {2, 3}, kFloat64).requires_grad_();
  Tensor y = PowerSum::apply(x, 3, 0.5, true, std::string("power-sum"), std::vector<int64_t>{1});
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2}));
  y.backward(make({1.0, -2.0}, {2}, kFloat64));
  std::vector<double> expected;  // d/dx of -0.5 * x^3 weighted by the row's gradient
  for (size_t i = 0; i < v.size(); ++i) expected.push_back((i < 3 ? 1.0 : -2.0) * -0.5 * 3 * v[i] * v[i]);
  EXPECT_TRUE(all_close(x.grad(), expected));
  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        return PowerSum::apply(in[0], 2, 1.5, false, std::string("power-sum"), std::vector<int64_t>{0});
      },
      {x.detach().requires_grad_()}));
}

TEST(CustomFunction, IValueAccessorsCheckTheKind) {
  IValue i = int64_t{3}, d = 2.5, b = false, s = "text", l = std::vector<int64_t>{1, 2}, t = ones({2});
  EXPECT_EQ(i.toInt(), 3);
  EXPECT_EQ(d.toDouble(), 2.5);
  EXPECT_FALSE(b.toBool());
  EXPECT_EQ(s.toStringRef(), "text");
  EXPECT_EQ(l.toIntVector(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(t.toTensor().is_same(t.toTensor()));
  EXPECT_TRUE(IValue().isNone());
  EXPECT_TRUE(throws_error([&] { (void)i.toDouble(); }, {"[IValue]", "expected Double", "Int"}));
  EXPECT_TRUE(throws_error([&] { (void)s.toTensor(); }, {"[IValue]", "expected Tensor", "String"}));
}

// Two inputs, two outputs: (a * b, a + b), with the inputs saved.
struct MulAndAdd : public autograd::Function<MulAndAdd> {
  static inline std::vector<bool> needs_seen;
  static variable_list forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return {a * b, a + b};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto saved = ctx->get_saved_variables();
    needs_seen = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad({0, 1})};
    Tensor ga = ctx->needs_input_grad(0) ? g[0] * saved[1] + g[1] : Tensor();
    Tensor gb = ctx->needs_input_grad(1) ? g[0] * saved[0] + g[1] : Tensor();
    return {ga, gb};
  }
};

TEST(CustomFunction, TwoOutputsWithSavedInputsAndNeedsInputGrad) {
  Tensor a = leaf({1.0, 2.0, -3.0});
  Tensor b = make({0.5, -1.0, 4.0}, {3}, kFloat64);  // needs no gradient
  auto outs = MulAndAdd::apply(a, b);
  (outs[0] * 2 + outs[1] * 3).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {2 * 0.5 + 3, 2 * -1.0 + 3, 2 * 4.0 + 3}));
  EXPECT_EQ(MulAndAdd::needs_seen, (std::vector<bool>{true, false, true}));

  // Only the first output used: the second's gradient arrives as zeros (materialized).
  Tensor c = leaf({1.0, 2.0, -3.0}), d = leaf({0.5, -1.0, 4.0});
  MulAndAdd::apply(c, d)[0].sum().backward();
  EXPECT_TRUE(all_close(c.grad(), {0.5, -1.0, 4.0}));
  EXPECT_TRUE(all_close(d.grad(), {1.0, 2.0, -3.0}));

  EXPECT_TRUE(gradients_match(
      [](const std::vector<Tensor>& in) {
        auto o = MulAndAdd::apply(in[0], in[1]);
        return o[0] * o[1];
      },
      {leaf({0.3, -0.7, 1.1}), leaf({2.0, 0.4, -0.9})}));
}

// y = exp(x), keeping the output for backward.
struct Exp : public autograd::Function<Exp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

TEST(CustomFunction, SavedOutputAndVersionCheck) {
  Tensor x = leaf({0.0, 1.0, -2.0});
  Tensor y = Exp::apply(x);
  y.sum().backward(Tensor(), /*retain_graph=*/true);
  EXPECT_TRUE(all_close(x.grad(), {1.0, std::exp(1.0), std::exp(-2.0)}));
  EXPECT_TRUE(gradients_match([](const std::vector<Tensor>& in) { return Exp::apply(in[0]); }, {leaf({0.2, -0.4})}));

  {
    NoGradGuard no_grad;
    y.mul_(2);  // changes the saved output
  }
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); }, {"modified by an inplace operation"}));

  Tensor z = Exp::apply(leaf({1.0}));
  z.sum().backward();
  EXPECT_TRUE(throws_error([&] { z.sum().backward(); }, {"[backward]", "second time"}));
}

// y = x^3 with a differentiable backward: second derivatives through the custom Function.
struct Cube : public autograd::Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

TEST(CustomFunction, DoubleBackwardThroughADifferentiableBackward) {
  Tensor x = leaf({1.5, -2.0});
  Tensor y = Cube::apply(x).sum();
  auto first = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(all_close(first[0], {3 * 1.5 * 1.5, 3 * 4.0}));
  auto second = autograd::grad({first[0].sum()}, {x});
  EXPECT_TRUE(all_close(second[0], {6 * 1.5, 6 * -2.0}));
}

// (2x, x > 0 as a mask): the mask is not differentiable.
struct DoubleAndMask : public autograd::Function<DoubleAndMask> {
  static inline bool mask_grad_defined = false;
  static inline double mask_grad_abs_sum = -1;
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor mask = (x > 0).to(kFloat64);
    ctx->mark_non_differentiable({mask});
    return {x * 2, mask};
  }
  static variable_list backward(AutogradContext*, variable_list g) {
    mask_grad_defined = g[1].defined();
    if (g[1].defined()) mask_grad_abs_sum = g[1].abs().sum().item<double>();
    return {g[0] * 2};
  }
};

TEST(CustomFunction, NonDifferentiableOutputsDoNotRequireGrad) {
  Tensor x = leaf({1.0, -1.0});
  auto outs = DoubleAndMask::apply(x);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_FALSE(outs[1].requires_grad());
  EXPECT_TRUE(all_equal(outs[1], {1, 0}));
  (outs[0] * outs[1]).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2, 0}));
  EXPECT_TRUE(DoubleAndMask::mask_grad_defined);  // materialized as zeros
  EXPECT_EQ(DoubleAndMask::mask_grad_abs_sum, 0);
}

// Two outputs; backward reports whether the unused one's gradient came undefined.
struct TwoOutputsNoMaterialize : public autograd::Function<TwoOutputsNoMaterialize> {
  static inline bool materialize = true;
  static inline bool second_defined = false;
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(materialize);
    return {x * 3, x * 4};
  }
  static variable_list backward(AutogradContext*, variable_list g) {
    second_defined = g[1].defined();
    return {second_defined ? g[0] * 3 + g[1] * 4 : g[0] * 3};
  }
};

TEST(CustomFunction, SetMaterializeGradsFalsePassesUndefinedGradients) {
  for (bool materialize : {true, false}) {
    TwoOutputsNoMaterialize::materialize = materialize;
    Tensor x = leaf({1.0, 2.0});
    TwoOutputsNoMaterialize::apply(x)[0].sum().backward();
    EXPECT_EQ(TwoOutputsNoMaterialize::second_defined, materialize);
    EXPECT_TRUE(all_close(x.grad(), {3, 3}));
  }
}

// x += 1 in place, returned as the output.
struct AddOneInPlace : public autograd::Function<AddOneInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

TEST(CustomFunction, MarkDirtyRebasesTheModifiedInput) {
  Tensor a = leaf({1.0, 2.0});
  Tensor x = a * 3;
  const uint64_t version = x._version();
  Tensor y = AddOneInPlace::apply(x);
  EXPECT_TRUE(y.is_same(x));
  EXPECT_GT(x._version(), version);
  EXPECT_NE(x.grad_fn()->name().find("AddOneInPlace"), std::string::npos);
  EXPECT_TRUE(all_close(x, {4, 7}));
  (y * y).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {2 * 4 * 3, 2 * 7 * 3}));

  Tensor leaf_input = leaf({1.0});
  EXPECT_TRUE(throws_error([&] { AddOneInPlace::apply(leaf_input); }, {"AddOneInPlace", "leaf"}));
}

// Returns its input unchanged.
struct Identity : public autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2}; }
};

TEST(CustomFunction, AnInputReturnedAsItIsBecomesAnAliasWithItsOwnHistory) {
  Tensor x = leaf({1.0, -1.0});
  Tensor y = Identity::apply(x);
  EXPECT_FALSE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.storage().data(), x.storage().data());
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {2, 2}));
}

// Returns a gradient for an absent optional argument, which is not an input.
struct GradientForAbsentOptional : public autograd::Function<GradientForAbsentOptional> {
  static Tensor forward(AutogradContext*, const Tensor& x, const std::optional<Tensor>&) { return x * 1; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};

// Optional and list arguments count as inputs.
struct ListArgs : public autograd::Function<ListArgs> {
  static Tensor forward(AutogradContext*, const Tensor& x, const std::optional<Tensor>& bias,
                        const std::vector<Tensor>& extras) {
    return x + *bias + extras[0] * 2 + extras[1] * 3;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0], g[0] * 2, g[0] * 3}; }
};

TEST(CustomFunction, OptionalAndListArgumentsAreInputs) {
  Tensor x = leaf({1.0}), b = leaf({2.0}), e0 = leaf({3.0}), e1 = leaf({4.0});
  ListArgs::apply(x, std::optional<Tensor>(b), std::vector<Tensor>{e0, e1}).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {1}));
  EXPECT_TRUE(all_close(b.grad(), {1}));
  EXPECT_TRUE(all_close(e0.grad(), {2}));
  EXPECT_TRUE(all_close(e1.grad(), {3}));
  // An absent optional is not a tensor input: backward must return no gradient there.
  Tensor z = leaf({1.0});
  EXPECT_TRUE(throws_error(
      [&] { GradientForAbsentOptional::apply(z, std::optional<Tensor>()).sum().backward(); },
      {"[backward]", "GradientForAbsentOptional", "defined gradient at position 2", "not a Tensor"}));
}

struct WrongCount : public autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, const Tensor& a, const Tensor& b) { return a * b; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

struct WrongShape : public autograd::Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& a) { return a.sum(); }
  static variable_list backward(AutogradContext*, variable_list) { return {ones({5}, kFloat64)}; }
};

struct BroadcastGradient : public autograd::Function<BroadcastGradient> {
  static Tensor forward(AutogradContext*, const Tensor& a) { return a * 1; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0].unsqueeze(0).expand({2, 3})}; }
};

TEST(CustomFunction, BackwardResultsAreChecked) {
  Tensor a = leaf({1.0, 2.0, 3.0}), b = leaf({1.0, 1.0, 1.0});
  EXPECT_TRUE(throws_error([&] { WrongCount::apply(a, b).sum().backward(); },
                           {"[backward]", "WrongCount", "incorrect number of gradients (expected 2, got 1)"}));
  EXPECT_TRUE(throws_error([&] { WrongShape::apply(a).backward(); },
                           {"[backward]", "WrongShape", "invalid gradient at index 0", "[5]", "[3]"}));
  // A gradient of a shape that broadcasts from the input's is summed back (libtorch).
  BroadcastGradient::apply(a).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {2, 2, 2}));
}

TEST(CustomFunction, NoGraphWithoutGradMode) {
  Tensor x = leaf({1.0, 2.0});
  {
    NoGradGuard no_grad;
    Tensor y = MulConstant::apply(x, 2.0);
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor plain = make({1.0, 2.0}, {2}, kFloat64);
  Tensor y = Exp::apply(plain);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(y.grad_fn());
}

}  // namespace
}  // namespace ember
