// Views and grad modes as libtorch has them: a view made in no-grad or inference mode
// (CreationMeta) requires grad through its base but accumulates nothing and refuses in-place
// changes while autograd records; ops on inference tensors alone record nothing; key_set();
// backward(inputs) and the pruning of nodes that lead to no input; UndefinedGrad; and the
// rvalue assignment of Tensor (x[i] = value writes into x).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;
using autograd::CreationMeta;

Tensor leaf(const std::vector<double>& v) {
  return make(v, {static_cast<int64_t>(v.size())}, kFloat64).requires_grad_();
}

// ---- views made in no-grad mode ---------------------------------------------------------------

TEST(ViewCreationMeta, AViewMadeWithoutGradModeRequiresGradButAccumulatesNothing) {
  Tensor base = leaf({1.0, 2.0, 3.0, 4.0});
  Tensor a = base * 1;  // a non-leaf that requires grad
  Tensor view;
  {
    NoGradGuard no_grad;
    view = a.view({2, 2});
  }
  EXPECT_TRUE(view.is_view());
  EXPECT_TRUE(view._base().is_same(a));
  EXPECT_EQ(autograd::impl::creation_meta(view), CreationMeta::NO_GRAD_MODE);
  EXPECT_TRUE(view.requires_grad());  // through its base
  EXPECT_TRUE(view.is_leaf());
  Tensor y = view * view;
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_FALSE(view.grad().defined());
  EXPECT_FALSE(base.grad().defined());  // the no-grad view cut the path to the leaf
  // A view of that view keeps the reason, also when made in grad mode.
  Tensor again = view.view({4});
  EXPECT_EQ(autograd::impl::creation_meta(again), CreationMeta::NO_GRAD_MODE);
}

TEST(ViewCreationMeta, InPlaceOnANoGradViewIsRefusedWhileAutogradRecords) {
  Tensor a = leaf({1.0, 2.0}) * 1;
  Tensor view;
  {
    NoGradGuard no_grad;
    view = a.view({2});
    view.mul_(2);  // fine where nothing records
  }
  EXPECT_TRUE(all_close(a, {2.0, 4.0}));
  EXPECT_TRUE(throws_error([&] { view.mul_(2); }, {"[mul]", "A view was created in no_grad mode", "modified inplace"}));
  // A view of a tensor that does not require grad has nothing to rebase: allowed.
  Tensor plain = make({1.0, 2.0}, {2}, kFloat64);
  Tensor plain_view;
  {
    NoGradGuard no_grad;
    plain_view = plain.view({2});
  }
  EXPECT_FALSE(plain_view.requires_grad());
  plain_view.mul_(3);
  EXPECT_TRUE(all_close(plain, {3.0, 6.0}));
}

TEST(ViewCreationMeta, GradModeViewsAreDefaultAndDetachIsNoView) {
  Tensor a = leaf({1.0, 2.0});
  Tensor view = a.view({2, 1});
  EXPECT_TRUE(view.is_view());
  EXPECT_EQ(autograd::impl::creation_meta(view), CreationMeta::DEFAULT);
  EXPECT_FALSE(a.is_view());
  EXPECT_FALSE(a.detach().is_view());
  EXPECT_FALSE(a._base().defined());
  EXPECT_TRUE(throws_error([&] { (void)autograd::impl::creation_meta(a); }, {"[creation_meta]", "not a view"}));
  // An in-place change of a view whose base is a leaf that requires grad names that case.
  EXPECT_TRUE(throws_error([&] { view.add_(1); }, {"[add]", "a view of a leaf Variable that requires grad"}));
  EXPECT_TRUE(throws_error([&] { a.add_(1); }, {"[add]", "a leaf Variable that requires grad"}));
}

// ---- inference mode -----------------------------------------------------------------------------

TEST(ViewCreationMeta, InferenceModeViewsOfNormalTensorsAreNormalViews) {
  Tensor a = leaf({1.0, 2.0, 3.0, 4.0}) * 1;
  Tensor view;
  {
    InferenceMode guard;
    view = a.view({2, 2});
    EXPECT_FALSE(view.is_inference());
    EXPECT_TRUE(view.requires_grad());
    EXPECT_TRUE(view.is_leaf());
  }
  EXPECT_EQ(autograd::impl::creation_meta(view), CreationMeta::INFERENCE_MODE);
  // A later no-grad view does not hide the inference-mode origin.
  Tensor again;
  {
    NoGradGuard no_grad;
    again = view.view({4});
  }
  EXPECT_EQ(autograd::impl::creation_meta(again), CreationMeta::INFERENCE_MODE);
  EXPECT_TRUE(throws_error([&] { again.add_(1); }, {"A view was created in inference mode", "modified inplace"}));
  // The base modified in place: asking the view for its history is an error.
  a.mul_(2);
  EXPECT_TRUE(throws_error([&] { (void)view.grad_fn(); },
                           {"A view was created in inference mode", "its base or another view of its base"}));
}

TEST(ViewCreationMeta, ViewsOfInferenceTensorsAreInferenceTensorsNotViews) {
  Tensor c;
  {
    InferenceMode guard;
    c = make({1.0, 2.0}, {2}, kFloat64).requires_grad_();
    EXPECT_TRUE(c.requires_grad());
    Tensor inside = c.view({1, 2});
    EXPECT_FALSE(inside.is_view());
    EXPECT_FALSE(inside.requires_grad());
  }
  Tensor outside = c.view({2, 1});
  EXPECT_TRUE(outside.is_inference());
  EXPECT_FALSE(outside.is_view());
  EXPECT_FALSE(outside.requires_grad());
  EXPECT_TRUE(outside.is_leaf());
}

TEST(ViewCreationMeta, KeySetMarksInferenceTensors) {
  Tensor normal = make({1.0}, {1}, kFloat64);
  Tensor inference;
  {
    InferenceMode guard;
    inference = make({1.0}, {1}, kFloat64);
  }
  EXPECT_TRUE(normal.key_set().has(DispatchKey::CPU));
  EXPECT_TRUE(normal.key_set().has(DispatchKey::AutogradCPU));
  EXPECT_TRUE(normal.key_set().has(DispatchKey::ADInplaceOrView));
  EXPECT_TRUE(inference.key_set().has(DispatchKey::CPU));
  EXPECT_FALSE(inference.key_set().has(DispatchKey::AutogradCPU));
  EXPECT_FALSE(inference.key_set().has(DispatchKey::ADInplaceOrView));
  EXPECT_FALSE(inference.key_set().has_any(autograd_dispatch_keyset));
}

TEST(ViewCreationMeta, OpsOnInferenceTensorsAloneRecordNothing) {
  Tensor c;
  {
    InferenceMode guard;
    c = make({1.0, 2.0}, {2}, kFloat64).requires_grad_();
  }
  // Outside inference mode: c * c has no normal input, so it records nothing (and saves
  // nothing, so no error), as libtorch's dispatch skips autograd for inference tensors.
  Tensor square = c * c;
  EXPECT_FALSE(square.requires_grad());
  EXPECT_FALSE(square.is_inference());
  EXPECT_TRUE(all_close(square, {1.0, 4.0}));
  // With a normal input the op records, and the inference leaf gets its gradient.
  Tensor s = leaf({3.0, 5.0});
  Tensor out = c + s;
  EXPECT_TRUE(out.requires_grad());
  out.sum().backward();
  EXPECT_TRUE(all_close(c.grad(), {1.0, 1.0}));
  EXPECT_TRUE(all_close(s.grad(), {1.0, 1.0}));
  EXPECT_TRUE(throws_error([&] { (void)(c * s); }, {"Inference tensors cannot be saved for backward"}));
}

// ---- backward(inputs), pruning, UndefinedGrad ------------------------------------------------------

TEST(BackwardInputs, AccumulatesOnlyIntoTheGivenInputs) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = leaf({3.0, 4.0});
  Tensor z = x * x + x * y + y * y;  // dz/dx = 2x + y, dz/dy = x + 2y
  z.backward(ones({2}, kFloat64), /*retain_graph=*/true, /*create_graph=*/false, {x});
  EXPECT_TRUE(all_close(x.grad(), {5.0, 8.0}));
  EXPECT_FALSE(y.grad().defined());
  autograd::backward({z}, {ones({2}, kFloat64)}, std::nullopt, false, {y});
  EXPECT_TRUE(all_close(y.grad(), {7.0, 10.0}));
  EXPECT_TRUE(all_close(x.grad(), {5.0, 8.0}));  // untouched by the second pass
  EXPECT_TRUE(throws_error([&] { z.backward(ones({2}, kFloat64), true, false, std::vector<Tensor>{}); },
                           {"[backward]", "cannot be empty"}));
}

TEST(BackwardInputs, ANonLeafInputGetsTheGradientArrivingAtIt) {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 3;
  Tensor w = h * h;  // dw/dh = 2h = 6x
  w.backward(ones({2}, kFloat64), false, false, {h});
  EXPECT_TRUE(all_close(h.grad(), {6.0, 12.0}));
  EXPECT_FALSE(x.grad().defined());
}

// Counts its backward calls.
struct CountingIdentity : public autograd::Function<CountingIdentity> {
  static int calls;
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 1; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list grads) {
    ++calls;
    return grads;
  }
};
int CountingIdentity::calls = 0;

TEST(BackwardInputs, NodesLeadingToNoInputDoNotRun) {
  CountingIdentity::calls = 0;
  Tensor x = leaf({1.0});
  Tensor y = leaf({2.0});
  Tensor out = CountingIdentity::apply(x * 2) + y * 3;
  auto grads = autograd::grad({out}, {y}, {}, true);
  EXPECT_TRUE(all_close(grads[0], {3.0}));
  EXPECT_EQ(CountingIdentity::calls, 0);
  out.backward({}, true, false, {y});
  EXPECT_EQ(CountingIdentity::calls, 0);
  EXPECT_FALSE(x.grad().defined());
  out.backward();
  EXPECT_EQ(CountingIdentity::calls, 1);
  EXPECT_TRUE(all_close(x.grad(), {2.0}));
  // Unreachable input with allow_unused: undefined, and still nothing unrelated runs.
  Tensor unused = leaf({5.0});
  auto none = autograd::grad({out}, {unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_FALSE(none[0].defined());
  EXPECT_EQ(CountingIdentity::calls, 1);
  EXPECT_TRUE(throws_error([&] { (void)autograd::grad({out}, {unused}, {}, true); },
                           {"[autograd::grad]", "Set allow_unused=True"}));
}

TEST(UndefinedGradNode, PassesValuesAndSendsNoGradientBack) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  Tensor passed = autograd::UndefinedGrad().apply({y})[0];
  EXPECT_TRUE(all_close(passed, {2.0, 4.0}));
  EXPECT_TRUE(passed.requires_grad());
  EXPECT_FALSE(passed.is_same(y));
  (passed * 3).sum().backward();
  EXPECT_FALSE(x.grad().defined());
}

TEST(TensorData, SharesValuesWithoutHistory) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  Tensor data = y.tensor_data();
  EXPECT_FALSE(data.requires_grad());
  EXPECT_EQ(data.data_ptr(), y.data_ptr());
  Tensor var = autograd::make_variable(y.variable_data(), /*requires_grad=*/true);
  EXPECT_TRUE(var.requires_grad());
  EXPECT_TRUE(var.is_leaf());
  (var * var).sum().backward();
  EXPECT_TRUE(all_close(var.grad(), {4.0, 8.0}));
  EXPECT_FALSE(x.grad().defined());
}

// Each backward runs a backward of its own until the counter in x reaches 0.
struct Reenter : public autograd::Function<Reenter> {
  static int deepest;
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    {
      AutoGradMode enable_grad(true);
      ctx->saved_data["x"] = autograd::make_variable(x.tensor_data(), true) - 1;
    }
    return ctx->saved_data["x"].toTensor().detach();
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list grads) {
    Tensor x = ctx->saved_data["x"].toTensor();
    deepest = std::max(deepest, 300 - static_cast<int>(x.item<float>()));
    if (x.is_nonzero()) {
      AutoGradMode enable_grad(true);
      apply(x).sum().backward();
    }
    return grads;
  }
};
int Reenter::deepest = 0;

TEST(ReentrantBackward, DeepNestingRunsPastTheThreadHandOff) {
  // 300 nested passes: beyond the depth where a nested pass moves to a thread of its own.
  Reenter::deepest = 0;
  Tensor v = make({300.0}, {1}, kFloat32).requires_grad_();
  Reenter::apply(v).sum().backward();
  EXPECT_EQ(Reenter::deepest, 300);
  EXPECT_TRUE(all_close(v.grad(), {1.0}));
}

// ---- Tensor's assignments ---------------------------------------------------------------------------

TEST(TensorAssignment, ToATemporaryWritesIntoTheViewedTensor) {
  Tensor x = zeros({2, 2}, kFloat64);
  x[0] = 5;
  x[1][1] = 2.5;
  EXPECT_TRUE(all_close(x.flatten(), {5.0, 5.0, 0.0, 2.5}));
  x[1] = make({7.0, 8.0}, {2}, kFloat64);
  EXPECT_TRUE(all_close(x.flatten(), {5.0, 5.0, 7.0, 8.0}));
  x.select(1, 0) = make({1.0, 2.0}, {2}, kInt64);  // converted as copy_ does
  EXPECT_TRUE(all_close(x.flatten(), {1.0, 5.0, 2.0, 8.0}));
  // A named tensor is rebound, its old data untouched.
  Tensor y = x;
  y = zeros({3}, kFloat64);
  EXPECT_EQ(x.numel(), 4);
  EXPECT_TRUE(all_close(x.flatten(), {1.0, 5.0, 2.0, 8.0}));
}

TEST(ScalarConversions, ToFloatAndToInt) {
  Scalar d(2.75);
  EXPECT_EQ(d.toFloat(), 2.75f);
  EXPECT_EQ(d.toInt(), 2);
  Scalar i(int64_t{-7});
  EXPECT_EQ(i.toFloat(), -7.0f);
  EXPECT_EQ(i.toInt(), -7);
  auto p = ember::make_unique<int>(3);
  EXPECT_EQ(*p, 3);
}

TEST(TensorIsNonzero, OneElementOnly) {
  EXPECT_TRUE(make({0.5}, {1, 1}, kFloat64).is_nonzero());
  EXPECT_FALSE(make({0.0}, {}, kFloat32).is_nonzero());
  EXPECT_TRUE(throws_error([] { (void)zeros({2}).is_nonzero(); }, {"[is_nonzero]", "more than one value"}));
  EXPECT_TRUE(throws_error([] { (void)zeros({0}).is_nonzero(); }, {"[is_nonzero]", "no values"}));
}

}  // namespace
}  // namespace ember
