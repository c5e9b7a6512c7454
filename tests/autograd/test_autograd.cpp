// The autograd engine and its rules: backward and autograd::grad, accumulation, graph
// retention, grad mode, leaves and detach, views, in-place ops and version checks, and
// gradcheck itself.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "autograd/function.h"
#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

Tensor leaf(const std::vector<double>& v, IntArrayRef sizes) { return make(v, sizes, kFloat64).requires_grad_(); }

Tensor leaf(const std::vector<double>& v) { return leaf(v, {static_cast<int64_t>(v.size())}); }

// ---- backward ---------------------------------------------------------------------------------

TEST(Backward, ExplicitGradient) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * x;
  y.backward(tensor({1.0, 0.5, -1.0}, kFloat64));
  EXPECT_TRUE(all_equal(x.grad(), {2, 2, -6}));
  EXPECT_EQ(x.grad().scalar_type(), kFloat64);
}

TEST(Backward, ImplicitGradientOnlyForScalars) {
  Tensor x = leaf({1, 2});
  EXPECT_TRUE(throws_error([&] { (x * 2).backward(); }, {"[backward]", "scalar", "[2]"}));
  EXPECT_TRUE(throws_error([&] { (x * 2).backward(ones({3}, kFloat64)); }, {"[backward]", "[3]", "[2]"}));
  EXPECT_TRUE(throws_error([] { ones({1}).backward(); }, {"[backward]", "does not require grad"}));
}

TEST(Backward, SharedSubexpressionsSumTheirGradients) {
  Tensor x = leaf({0.5, -1.5});
  Tensor y = x * 2;
  Tensor z = (y * y + y.exp()).sum();  // dz/dx = 2 * (2y + e^y)
  z.backward();
  auto xv = values(x);
  EXPECT_TRUE(all_close(x.grad(), {2 * (4 * xv[0] + std::exp(2 * xv[0])), 2 * (4 * xv[1] + std::exp(2 * xv[1]))}));
}

TEST(Backward, GradientsAccumulateAcrossCalls) {
  Tensor x = leaf({1, 2});
  (x * 3).sum().backward();
  (x * x).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {5, 7}));
  x.mutable_grad().zero_();
  (x * 3).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {3, 3}));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Backward, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({1, 2});
  Tensor y = (x.exp() * x).sum();
  y.backward({}, /*retain_graph=*/true);
  const auto once = values(x.grad());
  y.backward();
  EXPECT_TRUE(all_close(x.grad(), {2 * once[0], 2 * once[1]}));
  EXPECT_TRUE(throws_error([&] { y.backward(); }, {"[backward]", "second time", "retain_graph"}));
}

TEST(Backward, CreateGraphGivesHigherDerivatives) {
  Tensor x = leaf({2, -1});
  Tensor y = (x * x * x).sum();
  auto first = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(all_equal(first[0], {12, 3}));
  EXPECT_TRUE(first[0].requires_grad());
  auto second = autograd::grad({first[0].sum()}, {x});
  EXPECT_TRUE(all_equal(second[0], {12, -6}));
}

TEST(Backward, MultipleRoots) {
  Tensor x = leaf({1, 2});
  autograd::backward({(x * 2).sum(), x * x}, {Tensor(), tensor({1.0, 1.0}, kFloat64)});
  EXPECT_TRUE(all_equal(x.grad(), {4, 6}));
}

// ---- grad mode, leaves, detach --------------------------------------------------------------------

TEST(GradMode, NoGradGuardStopsRecording) {
  Tensor x = leaf({1, 2});
  {
    NoGradGuard guard;
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    {
      AutoGradMode enable(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(is_grad_enabled());
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(GradMode, LeafRules) {
  Tensor plain = ones({2});
  EXPECT_TRUE(plain.is_leaf());
  EXPECT_FALSE(plain.requires_grad());
  EXPECT_TRUE((plain * 2).is_leaf()) << "results of ops on tensors without grad are leaves";
  Tensor x = leaf({1, 2});
  EXPECT_TRUE(x.is_leaf());
  Tensor y = x * 2;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward");
  y.sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(y.grad().defined()) << "non-leaves keep no .grad unless retain_grad()";
  EXPECT_FALSE((x > 1).requires_grad()) << "comparisons are not differentiable";
  EXPECT_FALSE(x.to(kInt64).requires_grad());
}

TEST(GradMode, RequiresGradFlagChanges) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2;
  EXPECT_TRUE(throws_error([&] { y.requires_grad_(false); }, {"[requires_grad_]", "leaf"}));
  EXPECT_NO_THROW(y.requires_grad_(true));  // already true: allowed, as in PyTorch
  EXPECT_TRUE(throws_error([] { tensor({1, 2}).requires_grad_(); }, {"[requires_grad_]", "int64"}));
  Tensor z = ones({2});
  z.requires_grad_();
  EXPECT_TRUE(z.requires_grad());
  z.requires_grad_(false);
  EXPECT_FALSE(z.requires_grad());
}

TEST(GradMode, RetainGradOnNonLeaf) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 3;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  Tensor z = (y * y).sum();
  z.backward({}, true);
  EXPECT_TRUE(all_equal(y.grad(), {6, 12}));
  z.backward();
  EXPECT_TRUE(all_equal(y.grad(), {12, 24})) << "retained grads accumulate too";
  EXPECT_TRUE(all_equal(x.grad(), {36, 72}));
  EXPECT_TRUE(throws_error([] { ones({2}).retain_grad(); }, {"[retain_grad]"}));
}

TEST(GradMode, DetachSharesStorageAndCutsTheGraph) {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.data_ptr(), y.data_ptr());
  (x * d).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {2, 4})) << "no gradient flows through the detached factor";
  Tensor w = x * 5;
  w.detach_();
  EXPECT_FALSE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}

// ---- autograd::grad -------------------------------------------------------------------------------

TEST(Grad, ReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = leaf({1, 2}), w = leaf({3, 4});
  Tensor y = (x * w).sum();
  auto g = autograd::grad({y}, {x, w});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(all_equal(g[0], {3, 4}));
  EXPECT_TRUE(all_equal(g[1], {1, 2}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  auto weighted = autograd::grad({x * w}, {x}, {tensor({2.0, -1.0}, kFloat64)});
  EXPECT_TRUE(all_equal(weighted[0], {6, -4}));
}

TEST(Grad, OfAnIntermediateTensor) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2;
  auto g = autograd::grad({(h * h).sum()}, {h});
  EXPECT_TRUE(all_equal(g[0], {4, 8}));
}

TEST(Grad, AllowUnused) {
  Tensor x = leaf({1, 2}), unused = leaf({5});
  Tensor y = (x * 2).sum();
  EXPECT_TRUE(throws_error([&] { autograd::grad({y}, {x, unused}, {}, true); }, {"[autograd::grad]", "1", "allow_unused"}));
  auto g = autograd::grad({y}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_TRUE(all_equal(g[0], {2, 2}));
  EXPECT_FALSE(g[1].defined());
  EXPECT_TRUE(throws_error([&] { autograd::grad({y}, {ones({2})}); }, {"[autograd::grad]", "does not require grad"}));
}

// ---- views -----------------------------------------------------------------------------------------

TEST(Views, GradientsFlowThroughEveryView) {
  Tensor x = leaf(uniform_values(24, -1, 1, 3), {4, 6});
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> views = {
      {"slice", [](const Tensor& t) { return t.slice(1, 1, 6, 2); }},
      {"narrow", [](const Tensor& t) { return t.narrow(0, 1, 2); }},
      {"select", [](const Tensor& t) { return t.select(1, -2); }},
      {"expand", [](const Tensor& t) { return t.select(0, 1).unsqueeze(0).expand({3, 6}); }},
      {"permute", [](const Tensor& t) { return t.view({2, 2, 6}).permute({2, 0, 1}); }},
      {"transpose", [](const Tensor& t) { return t.t(); }},
      {"view", [](const Tensor& t) { return t.view({3, 8}); }},
      {"reshape", [](const Tensor& t) { return t.t().reshape({-1}); }},
      {"flatten", [](const Tensor& t) { return t.flatten(); }},
      {"unflatten", [](const Tensor& t) { return t.unflatten(1, {2, 3}); }},
      {"squeeze", [](const Tensor& t) { return t.unsqueeze(1).squeeze(); }},
      {"as_strided", [](const Tensor& t) { return t.as_strided({3, 3}, {2, 1}, 1); }},
      {"as_strided_overlapping", [](const Tensor& t) { return t.as_strided({5, 4}, {1, 1}); }},
      {"diagonal", [](const Tensor& t) { return t.diagonal(1); }},
      {"split", [](const Tensor& t) { return t.split(4, 1)[1]; }},
      {"chunk", [](const Tensor& t) { return t.chunk(3, 0)[0]; }},
      {"unbind", [](const Tensor& t) { return t.unbind(0)[3]; }},
      {"view_of_view", [](const Tensor& t) { return t.slice(0, 1, 3).t().select(0, 2); }},
  };
  for (const auto& [name, f] : views) {
    SCOPED_TRACE(name);
    // Squared so the gradient depends on which elements the view reads.
    EXPECT_TRUE(gradients_match([&](const Tensor& t) { return f(t) * f(t); }, x));
  }
}

TEST(Views, UnbindRecordsOneNodeThatStacksTheGradients) {
  Tensor x = leaf(uniform_values(12, -1, 1, 5), {3, 4});
  auto columns = x.unbind(-1);
  ASSERT_EQ(columns.size(), 4u);
  for (const Tensor& column : columns) EXPECT_EQ(column.grad_fn(), columns[0].grad_fn());
  EXPECT_EQ(columns[0].grad_fn()->name(), "UnbindBackward");
  // d/dx[r][c] of sum(col0) + 2 sum(col1) + 4 sum(col3) is 1, 2, 0 (unused), 4 in every row.
  (columns[0].sum() + columns[1].sum() * 2 + columns[3].sum() * 4).backward();
  EXPECT_TRUE(all_equal(x.grad(), {1, 2, 0, 4, 1, 2, 0, 4, 1, 2, 0, 4}));
  for (int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE(dim);
    // Every part weighted differently, so a gradient sent to the wrong slice shows.
    EXPECT_TRUE(gradients_match(
        [dim](const Tensor& t) {
          auto parts = t.unbind(dim);
          Tensor total = (parts[0] * parts[0]).sum();
          for (size_t i = 1; i < parts.size(); ++i)
            total = total + (parts[i] * parts[i]).sum() * static_cast<double>(i + 1);
          return total;
        },
        x));
  }
  // Differentiable backward: with y = sum_c (c + 1) sum(col_c^2), dy/dx = 2 (c + 1) x, whose
  // sum has the gradient 2 (c + 1).
  Tensor z = leaf(uniform_values(6, -1, 1, 7), {2, 3});
  auto parts = z.unbind(1);
  Tensor y = (parts[0] * parts[0]).sum() + (parts[1] * parts[1]).sum() * 2 + (parts[2] * parts[2]).sum() * 3;
  Tensor dy = autograd::grad({y}, {z}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(all_close(dy, {2 * values(z)[0], 4 * values(z)[1], 6 * values(z)[2], 2 * values(z)[3],
                             4 * values(z)[4], 6 * values(z)[5]}));
  dy.sum().backward();
  EXPECT_TRUE(all_equal(z.grad(), {2, 4, 6, 2, 4, 6}));
}

TEST(Views, ExpandAndOverlappingAsStridedAccumulate) {
  Tensor x = leaf({1, 2, 3});
  x.expand({4, 3}).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {4, 4, 4}));
  Tensor y = leaf({1, 2, 3, 4});
  y.as_strided({3, 2}, {1, 1}).sum().backward();  // windows [0,1], [1,2], [2,3]
  EXPECT_TRUE(all_equal(y.grad(), {1, 2, 2, 1}));
  Tensor z = leaf({1, 2, 3, 4});
  z.select(0, -1).backward();
  EXPECT_TRUE(all_equal(z.grad(), {0, 0, 0, 1}));
  Tensor w = leaf({1, 2, 3, 4, 5});
  w.slice(0, 0, 5, 2).sum().backward();
  EXPECT_TRUE(all_equal(w.grad(), {1, 0, 1, 0, 1}));
}

// ---- in-place ------------------------------------------------------------------------------------

TEST(InPlace, OnANonLeafKeepsTheChainRule) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 2;
  y.add_(1);
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(all_equal(y, {3, 5, 7}));
  (y * y).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {12, 20, 28}));  // d/dx (2x + 1)^2 = 4 (2x + 1)
}

TEST(InPlace, NonRequiringTensorTakesHistoryFromItsOperand) {
  Tensor x = leaf({1, 2});
  Tensor acc = zeros({2}, kFloat64);
  acc.add_(x * x);
  acc.mul_(x);  // acc = x^3
  EXPECT_TRUE(acc.requires_grad());
  acc.sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), {3, 12}));
}

TEST(InPlace, OnALeafRequiringGradThrows) {
  Tensor x = leaf({1, 2});
  EXPECT_TRUE(throws_error([&] { x.add_(1); }, {"add", "leaf", "requires grad"}));
  EXPECT_TRUE(throws_error([&] { x.exp_(); }, {"exp", "leaf"}));
  EXPECT_TRUE(throws_error([&] { x.copy_(ones({2})); }, {"copy_", "leaf"}));
  EXPECT_TRUE(throws_error([&] { x.fill_(0); }, {"fill_", "leaf"}));
  EXPECT_TRUE(throws_error([&] { x.normal_(); }, {"normal_", "leaf"}));
  {
    NoGradGuard guard;  // the way optimizers update parameters
    x.sub_(1);
  }
  EXPECT_TRUE(all_equal(x, {0, 1}));
}

TEST(InPlace, OnAViewOfATensorRequiringGradThrows) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = x * 1;
  EXPECT_TRUE(throws_error([&] { y.slice(0, 0, 2).mul_(2); }, {"mul", "view"}));
}

TEST(InPlace, ModifyingASavedTensorMakesBackwardThrow) {
  Tensor x = leaf({0.5, 1.0});
  Tensor a = x * 2;
  Tensor b = a.sin();  // saves a
  a.mul_(3);
  EXPECT_TRUE(throws_error([&] { b.sum().backward(); }, {"modified by an inplace operation", "version"}));

  Tensor y = x.exp();  // saves its output
  Tensor z = y * 1;
  y.add_(1);
  EXPECT_TRUE(throws_error([&] { z.sum().backward(); }, {"inplace operation"}));
}

TEST(InPlace, CopyIntoAFreshTensorPropagatesTheGradient) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = zeros({2, 3}, kFloat32);  // broadcast and a different dtype
  y.copy_(x * 2);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  (y * tensor({1.0, 2.0}).view({2, 1})).sum().backward();
  EXPECT_EQ(x.grad().scalar_type(), kFloat64);
  EXPECT_TRUE(all_equal(x.grad(), {6, 6, 6}));

  Tensor w = leaf({1, 2});
  Tensor h = w * w;
  h.copy_(ones({2}, kFloat64));  // overwritten by a constant: no gradient to w
  EXPECT_FALSE(h.requires_grad());
}

// ---- hooks and callbacks run by backward, set_data ------------------------------------------------

TEST(Hooks, PostAccumulateGradHookSeesTheAccumulatedGradient) {
  Tensor x = leaf({1, 2});
  std::vector<std::vector<double>> seen;
  RemovableHandle handle = x.register_post_accumulate_grad_hook([&](const Tensor& t) {
    EXPECT_TRUE(t.is_same(x));
    seen.push_back(values(t.grad()));
  });
  (x * x + x * 3).sum().backward();  // x feeds two ops, one accumulation: 2x + 3
  (x * 2).sum().backward();          // accumulates onto the first: 2x + 5
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{5, 7}));
  EXPECT_EQ(seen[1], (std::vector<double>{7, 9}));
  autograd::grad({(x * x).sum()}, {x});  // accumulates nothing
  EXPECT_EQ(seen.size(), 2u);
  handle.remove();
  handle.remove();
  (x * 2).sum().backward();
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Hooks, PostAccumulateGradHookMayTakeTheGradient) {
  Tensor x = leaf({1, 2});
  std::vector<Tensor> taken;
  x.register_post_accumulate_grad_hook([&](const Tensor& t) {
    Tensor param = t;
    taken.push_back(param.grad());
    param.mutable_grad() = Tensor();
  });
  (x * x).sum().backward();
  (x * x).sum().backward();  // nothing left to accumulate onto
  EXPECT_FALSE(x.grad().defined());
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_TRUE(all_equal(taken[0], {2, 4}));
  EXPECT_TRUE(all_equal(taken[1], {2, 4}));
}

TEST(Hooks, PostAccumulateGradHookNeedsALeafThatRequiresGrad) {
  Tensor x = leaf({1, 2});
  auto hook = [](const Tensor&) {};
  EXPECT_TRUE(throws_error([&] { (x * 2).register_post_accumulate_grad_hook(hook); },
                           {"[register_post_accumulate_grad_hook]", "non-leaf", "[2]"}));
  EXPECT_TRUE(throws_error([&] { ones({3}).register_post_accumulate_grad_hook(hook); },
                           {"[register_post_accumulate_grad_hook]", "do not require grad", "[3]"}));
}

TEST(Hooks, QueuedCallbacksRunAfterTheWholeGraph) {
  Tensor a = leaf({1}), b = leaf({2});
  std::vector<std::string> events;
  auto queue_from = [&](const std::string& name) {
    return [&, name](const Tensor&) {
      events.push_back(name);
      autograd::queue_callback([&, name] {
        const bool both = a.grad().defined() && b.grad().defined();
        events.push_back("callback " + name + (both ? " after both gradients" : " too early"));
        if (name == "a") autograd::queue_callback([&] { events.push_back("queued by a callback"); });
      });
    };
  };
  a.register_post_accumulate_grad_hook(queue_from("a"));
  b.register_post_accumulate_grad_hook(queue_from("b"));
  (a * 3 + b * b).sum().backward();
  ASSERT_EQ(events.size(), 5u);
  const std::string first = events[0], second = events[1];
  EXPECT_EQ(std::set<std::string>({first, second}), std::set<std::string>({"a", "b"}));
  EXPECT_EQ(events[2], "callback " + first + " after both gradients");
  EXPECT_EQ(events[3], "callback " + second + " after both gradients");
  EXPECT_EQ(events[4], "queued by a callback");
  EXPECT_TRUE(throws_error([] { autograd::queue_callback([] {}); }, {"[queue_callback]", "outside a backward pass"}));
}

TEST(Hooks, SetDataChangesWhatEveryHandleSeesAndKeepsAutogradState) {
  Tensor x = leaf({1, 2});
  Tensor alias = x;
  x.set_data(tensor({3.0, 4.0, 5.0}, kFloat32));
  EXPECT_EQ(alias.sizes(), std::vector<int64_t>({3}));
  EXPECT_EQ(alias.scalar_type(), kFloat32);
  EXPECT_TRUE(alias.requires_grad() && alias.is_leaf());
  (x * x).sum().backward();
  EXPECT_TRUE(all_equal(alias.grad(), {6, 8, 10}));

  // Saved tensors read the data the tensor holds when backward runs (FSDP swaps parameters
  // between forward and backward), checked against that data's version.
  Tensor y = leaf({1, 2});
  Tensor square = (y * y).sum();
  y.set_data(tensor({10.0, 20.0}, kFloat64));
  square.backward();
  EXPECT_TRUE(all_equal(y.grad(), {20, 40}));
  Tensor z = leaf({1, 2});
  Tensor cube = (z * z * z).sum();
  Tensor replacement = tensor({1.0, 2.0}, kFloat64);
  replacement.add_(1);  // one version later than the data saved
  z.set_data(replacement);
  EXPECT_TRUE(throws_error([&] { cube.backward(); }, {"modified by an inplace operation", "version"}));
}

// ---- gradcheck and custom functions ------------------------------------------------------------------

// y = x^2 recorded with a chosen derivative factor: 2 is right, anything else is wrong.
Tensor square_with_derivative(const Tensor& x, double factor) {
  Tensor out;
  {
    NoGradGuard guard;
    out = x * x;
  }
  autograd::SavedTensor saved(x);
  autograd::record("CustomSquareBackward", {x}, {out},
                   [saved, factor](std::vector<Tensor>& g, const std::vector<bool>&) -> std::vector<Tensor> {
                     return {g[0] * saved.get() * factor};
                   });
  return out;
}

TEST(Gradcheck, AcceptsACorrectCustomFunction) {
  Tensor x = leaf({0.3, -1.2, 2.0});
  EXPECT_TRUE(gradients_match([](const Tensor& t) { return square_with_derivative(t, 2); }, x));
  EXPECT_TRUE(autograd::gradcheck([](const std::vector<Tensor>& in) { return square_with_derivative(in[0], 2); }, {x}));
  ASSERT_NE(square_with_derivative(x, 2).grad_fn(), nullptr);
  EXPECT_EQ(square_with_derivative(x, 2).grad_fn()->name(), "CustomSquareBackward");
}

TEST(Gradcheck, DetectsAWrongGradient) {
  Tensor x = leaf({0.3, -1.2, 2.0});
  const std::string report =
      autograd::gradcheck_report([](const std::vector<Tensor>& in) { return square_with_derivative(in[0], 3); }, {x});
  EXPECT_NE(report.find("mismatch"), std::string::npos) << report;
  EXPECT_NE(report.find("input 0"), std::string::npos) << report;
  EXPECT_FALSE(autograd::gradcheck([](const std::vector<Tensor>& in) { return square_with_derivative(in[0], 3); }, {x}));
  const std::string tiny_error = autograd::gradcheck_report(
      [](const std::vector<Tensor>& in) { return square_with_derivative(in[0], 2.01); }, {x});
  EXPECT_FALSE(tiny_error.empty()) << "a 0.5% error must not pass";
}

TEST(Gradcheck, RequiresFloat64Inputs) {
  Tensor x = ones({2}, TensorOptions(kFloat32).requires_grad(true));
  EXPECT_TRUE(
      throws_error([&] { autograd::gradcheck_report([](const std::vector<Tensor>& in) { return in[0] * 2; }, {x}); },
                   {"[gradcheck]", "float32"}));
}

}  // namespace
}  // namespace ember
