// Tensor::register_hook (order, replacement, leaves and non-leaves, retain_grad, removal),
// InferenceMode (inference tensors and the errors of using them with autograd), and anomaly
// detection (a NaN gradient names the backward node and the forward op).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/testing.h"

namespace ember {
namespace {

using namespace testutil;

Tensor leaf(const std::vector<double>& v) {
  return make(v, {static_cast<int64_t>(v.size())}, kFloat64).requires_grad_();
}

// ---- hooks ------------------------------------------------------------------------------------

TEST(TensorHook, ANonLeafHookReplacesTheGradientPassedOn) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  y.register_hook([](Tensor g) { return g * 3; });
  (y * y).sum().backward();  // dL/dy = 2y, times 3 by the hook, times 2 into x
  EXPECT_TRUE(all_close(x.grad(), {2 * 2 * 3 * 2, 2 * 4 * 3 * 2}));
}

TEST(TensorHook, HooksRunInRegistrationOrderEachSeeingThePreviousResult) {
  Tensor x = leaf({1.0, -1.0});
  Tensor y = x * 1;
  std::vector<std::string> order;
  std::vector<double> seen_by_observer;
  y.register_hook([&](const Tensor& g) {
    order.push_back("add");
    return g + 1;
  });
  y.register_hook([&](const Tensor& g) {
    order.push_back("observe");
    seen_by_observer = values(g);
  });
  y.register_hook([&](const Tensor& g) {
    order.push_back("double");
    return g * 2;
  });
  y.sum().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"add", "observe", "double"}));
  EXPECT_EQ(seen_by_observer, (std::vector<double>{2, 2}));
  EXPECT_TRUE(all_close(x.grad(), {4, 4}));
}

TEST(TensorHook, ALeafHookChangesWhatIsAccumulated) {
  Tensor x = leaf({1.0, 2.0});
  std::vector<std::vector<double>> seen;
  x.register_hook([&](const Tensor& g) {
    seen.push_back(values(g));
    return g * 10;
  });
  (x * x).sum().backward();
  (x * 3).sum().backward();
  EXPECT_EQ(seen, (std::vector<std::vector<double>>{{2, 4}, {3, 3}}));  // the incoming gradient, not .grad
  EXPECT_TRUE(all_close(x.grad(), {50, 70}));
  // autograd::grad returns the hooked gradient of a leaf too.
  auto g = autograd::grad({(x * 2).sum()}, {x});
  EXPECT_TRUE(all_close(g[0], {20, 20}));
}

TEST(TensorHook, ALeafHookRegisteredWhileItsAccumulatorLives) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 5;  // the graph holds x's gradient accumulator
  x.register_hook([](const Tensor& g) { return g * -1; });
  y.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {-5, -5}));
}

TEST(TensorHook, RetainGradStoresTheHookedGradient) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  y.retain_grad();
  y.register_hook([](const Tensor& g) { return g * 10; });  // registered after retain_grad, runs before it
  y.sum().backward();
  EXPECT_TRUE(all_close(y.grad(), {10, 10}));
  EXPECT_TRUE(all_close(x.grad(), {20, 20}));
}

TEST(TensorHook, PostAccumulateHooksSeeTheHookedGradient) {
  Tensor x = leaf({1.0});
  std::vector<double> after;
  x.register_hook([](const Tensor& g) { return g * 4; });
  x.register_post_accumulate_grad_hook([&](const Tensor& t) { after = values(t.grad()); });
  (x * 2).sum().backward();
  EXPECT_EQ(after, std::vector<double>{8});
}

TEST(TensorHook, RemoveHook) {
  Tensor x = leaf({1.0});
  const unsigned first = x.register_hook([](const Tensor& g) { return g * 2; });
  const unsigned second = x.register_hook([](const Tensor& g) { return g * 3; });
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(second, 1u);
  x.remove_hook(first);
  x.sum().backward();
  EXPECT_TRUE(all_close(x.grad(), {3}));
  EXPECT_TRUE(throws_error([&] { x.remove_hook(first); }, {"[remove_hook]", "no hook at position 0"}));
  EXPECT_TRUE(throws_error([&] { x.remove_hook(7); }, {"[remove_hook]", "position 7"}));
}

TEST(TensorHook, HooksBeforeAnInPlaceChangeSeeTheOldValuesGradient) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  std::vector<std::string> seen;
  y.register_hook([&](const Tensor& g) {
    seen.push_back("old " + std::to_string(values(g)[0]));
    return g * 10;
  });
  y.mul_(3);
  y.register_hook([&](const Tensor& g) { seen.push_back("new " + std::to_string(values(g)[0])); });
  y.sum().backward();
  EXPECT_EQ(seen, (std::vector<std::string>{"new 1.000000", "old 3.000000"}));
  EXPECT_TRUE(all_close(x.grad(), {60, 60}));
}

// The engine sums two gradients of one input in place only into a tensor nothing else holds:
// a gradient a hook kept is not written by the sum that follows it.
TEST(TensorHook, AKeptGradientIsNotChangedByLaterSums) {
  for (bool kept_first : {true, false}) {
    // The engine runs later nodes first: the path made last reaches x's buffer first.
    Tensor x = leaf({1.0, 2.0});
    Tensor other, u;
    if (kept_first) other = x * 4.0;
    u = x.clone();
    if (!kept_first) other = x * 4.0;
    Tensor kept;
    u.register_hook([&](const Tensor& g) { kept = g; });
    // x's gradient: u's (kept by the hook, passed on as it is by CloneBackward) plus x * 4's.
    ((u * 3.0).sum() + other.sum()).backward();
    EXPECT_TRUE(all_close(kept, {3.0, 3.0})) << kept_first;
    EXPECT_TRUE(all_close(x.grad(), {7.0, 7.0})) << kept_first;
  }
  // Sums into the engine's own buffers give the same values in place.
  Tensor y = leaf({1.0, -1.0});
  ((y * 2.0) + (y * 3.0) + (y * 5.0)).sum().backward();
  EXPECT_TRUE(all_close(y.grad(), {10.0, 10.0}));
}

TEST(TensorHook, Errors) {
  Tensor plain = ones({2}, kFloat64);
  EXPECT_TRUE(throws_error([&] { plain.register_hook([](const Tensor& g) { return g; }); },
                           {"[register_hook]", "doesn't require gradient"}));
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g.sum(); });
  EXPECT_TRUE(throws_error([&] { y.sum().backward(); }, {"[register_hook]", "changed the size", "[2]", "[]"}));
}

// ---- inference mode -------------------------------------------------------------------------------

TEST(InferenceModeTest, TurnsOffGradModeAndMakesInferenceTensors) {
  Tensor x = leaf({1.0, 2.0});
  EXPECT_FALSE(InferenceMode::is_enabled());
  Tensor y, view_of_inference, view_of_normal;
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(is_grad_enabled());
    y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_inference());
    view_of_normal = x.view({2, 1});
    {
      InferenceMode off(false);
      EXPECT_FALSE(InferenceMode::is_enabled());
      EXPECT_TRUE(is_grad_enabled());
    }
    EXPECT_TRUE(InferenceMode::is_enabled());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_FALSE(x.is_inference());
  EXPECT_FALSE(view_of_normal.is_inference());
  view_of_inference = y.view({1, 2});
  EXPECT_TRUE(view_of_inference.is_inference());
  EXPECT_TRUE(y.detach().is_inference());
  EXPECT_FALSE((y * 2).is_inference());  // made outside inference mode
  EXPECT_FALSE(y.clone().is_inference());
}

TEST(InferenceModeTest, InferenceTensorsInAutogradOutsideInferenceMode) {
  Tensor weights = leaf({1.0, 2.0});
  Tensor features;
  {
    InferenceMode guard;
    features = make({3.0, 4.0}, {2}, kFloat64);
  }
  // mul saves its inputs for backward: an inference tensor cannot be saved (PyTorch's rule).
  EXPECT_TRUE(throws_error([&] { (void)(weights * features); }, {"Inference tensors cannot be saved for backward"}));
  // add, sub and cat save nothing: allowed, and the gradient flows to the normal tensor.
  (weights + features - features).sum().backward();
  EXPECT_TRUE(all_close(weights.grad(), {1, 1}));
  cat({weights, features}).sum().backward();
  EXPECT_TRUE(all_close(weights.grad(), {2, 2}));
  // In-place updates and requires_grad are refused outside inference mode, fine inside.
  EXPECT_TRUE(throws_error([&] { features.add_(1); }, {"[add]", "inference tensor", "outside InferenceMode"}));
  EXPECT_TRUE(throws_error([&] { features.requires_grad_(); }, {"[requires_grad_]", "inference tensor"}));
  {
    InferenceMode guard;
    features.add_(1);
  }
  EXPECT_TRUE(all_close(features, {4, 5}));
  // A clone is a normal tensor that autograd may use.
  Tensor normal = features.clone();
  (weights * normal).sum().backward();
  EXPECT_TRUE(all_close(weights.grad(), {6, 7}));
}

// Saves both inputs for backward.
struct SavesInputs : public autograd::Function<SavesInputs> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return a + b;
  }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) { return {g[0], g[0]}; }
};

TEST(InferenceModeTest, ACustomFunctionCannotSaveAnInferenceTensor) {
  Tensor weights = leaf({1.0});
  Tensor features;
  {
    InferenceMode guard;
    features = ones({1}, kFloat64);
    // Inside inference mode nothing records, so nothing is saved.
    EXPECT_FALSE(SavesInputs::apply(weights, features).requires_grad());
  }
  EXPECT_TRUE(throws_error([&] { SavesInputs::apply(weights, features); },
                           {"Inference tensors cannot be saved for backward"}));
}

// ---- anomaly detection -----------------------------------------------------------------------------

TEST(Anomaly, SqrtOfANegativeNamesTheForwardOp) {
  Tensor x = leaf({-1.0, 4.0});
  autograd::DetectAnomalyGuard detect;
  EXPECT_TRUE(autograd::AnomalyMode::is_enabled());
  Tensor loss = (x - 0.0).sqrt().sum();
  EXPECT_TRUE(throws_error([&] { loss.backward(); },
                           {"[backward]", "Function 'sqrt' returned nan values in its 0th output",
                            "forward op sqrt(sub(leaf, constant))"}));
}

TEST(Anomaly, TheTraceNamesTheProducersThreeLevelsDeep) {
  Tensor a = leaf({1.0}), b = leaf({2.0});
  autograd::DetectAnomalyGuard detect;
  Tensor shallow = (a * b - 5.0).sqrt().sum();  // sqrt of -3
  EXPECT_TRUE(throws_error([&] { shallow.backward(); }, {"forward op sqrt(sub(mul(leaf, leaf), constant))"}));
  Tensor deep = (a * b).log().exp().neg().sqrt().sum();  // sqrt of -2: the trace stops after three producers
  EXPECT_TRUE(throws_error([&] { deep.backward(); }, {"forward op sqrt(neg(exp(log)))"}));
}

TEST(Anomaly, ZeroOverZeroNamesDivAndItsInputs) {
  Tensor a = leaf({0.0, 1.0}), b = leaf({0.0, 2.0});
  std::string message;
  {
    autograd::DetectAnomalyGuard detect;
    Tensor loss = (a / b).sum();
    try {
      loss.backward();
    } catch (const Error& e) {
      message = e.what();
    }
  }
  EXPECT_FALSE(autograd::AnomalyMode::is_enabled());
  // d/da = 1/b = inf (not NaN); d/db = -a/b^2 = 0/0 = NaN: the second output.
  EXPECT_NE(message.find("Function 'DivBackward' returned nan values in its 1th output"), std::string::npos) << message;
  EXPECT_NE(message.find("forward op div(leaf, leaf)"), std::string::npos) << message;
}

TEST(Anomaly, WithoutTheGuardNaNGradientsPassSilently) {
  Tensor x = leaf({-1.0, 4.0});
  x.sqrt().sum().backward();
  const auto g = values(x.grad());
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_DOUBLE_EQ(g[1], 0.25);
  // check_nan = false: anomaly mode on, no NaN check.
  Tensor y = leaf({-1.0});
  autograd::DetectAnomalyGuard detect(/*check_nan=*/false);
  EXPECT_FALSE(autograd::AnomalyMode::should_check_nan());
  y.sqrt().sum().backward();
  EXPECT_TRUE(std::isnan(values(y.grad())[0]));
}

TEST(Anomaly, AForwardRunOutsideTheGuardIsNamedAsNotRecorded) {
  Tensor x = leaf({-4.0});
  Tensor loss = x.sqrt().sum();
  autograd::DetectAnomalyGuard detect;
  EXPECT_TRUE(throws_error([&] { loss.backward(); }, {"Function 'sqrt'", "not recorded", "DetectAnomalyGuard"}));
}

struct ThrowingBackward : public autograd::Function<ThrowingBackward> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 1; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list) {
    EMBER_FAIL("my_backward", "cannot differentiate here");
  }
};

TEST(Anomaly, AnErrorInBackwardNamesTheForwardOp) {
  Tensor x = leaf({1.0});
  autograd::DetectAnomalyGuard detect;
  Tensor loss = (ThrowingBackward::apply(x * 2)).sum();
  EXPECT_TRUE(throws_error([&] { loss.backward(); },
                           {"[my_backward] cannot differentiate here", "ThrowingBackward", "forward op",
                            "ThrowingBackward(mul(leaf, constant))"}));
}

}  // namespace
}  // namespace ember
