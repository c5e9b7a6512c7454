// linear_cross_entropy against the unfused float64 path (linear, then cross_entropy, plus
// the z-loss from logsumexp) and against a loop-by-loop float64 formula.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/testing.h"
#include "cpu/capabilities.h"
#include "ember/ember.h"
#include "ember/nn/loss/linear_cross_entropy.h"

namespace ember {
namespace {

namespace F = nn::functional;
using nn::LinearCrossEntropyFuncOptions;
using testutil::element;
using testutil::gradients_match;
using testutil::values;

constexpr int64_t kBlock = nn::kLinearCrossEntropyTokenBlock;

// cross_entropy(softcap(linear(x, W, b)), target) + z_loss * lse^2, from ordinary ops.
Tensor unfused(const Tensor& x, const Tensor& weight, const Tensor& target, const LinearCrossEntropyFuncOptions& o) {
  const int64_t classes = weight.size(0);
  Tensor logits = F::linear(x, weight, o.bias()).reshape({-1, classes});
  if (o.softcap() > 0) logits = (logits / o.softcap()).tanh() * o.softcap();
  Tensor flat_target = target.reshape({-1});
  Tensor ce = F::cross_entropy(logits, flat_target,
                               nn::CrossEntropyFuncOptions()
                                   .weight(o.class_weight())
                                   .ignore_index(o.ignore_index())
                                   .reduction(o.reduction())
                                   .label_smoothing(o.label_smoothing()));
  if (o.reduction() == kNone) ce = ce.reshape(target.sizes());
  if (o.z_loss() == 0) return ce;
  Tensor kept = (flat_target != o.ignore_index()).to(logits.scalar_type());
  Tensor z = logits.logsumexp({1}).square() * kept * o.z_loss();
  switch (o.reduction()) {
    case kNone: return ce + z.reshape(target.sizes());
    case kSum: return ce + z.sum();
    default: return ce + z.sum() / kept.sum();
  }
}

// The loss from its definition, one token at a time in float64 (reductions kSum/kMean/kNone).
std::vector<double> formula_loss(const Tensor& x, const Tensor& weight, const Tensor& target,
                                 const LinearCrossEntropyFuncOptions& o) {
  const int64_t classes = weight.size(0), hidden = weight.size(1), tokens = target.numel();
  auto w = [&](int64_t c) { return o.class_weight().defined() ? element(o.class_weight(), c) : 1.0; };
  std::vector<double> per_token(tokens, 0.0);
  double ce_sum = 0, z_sum = 0, weight_sum = 0, kept = 0;
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t t = static_cast<int64_t>(element(target, i));
    if (t == o.ignore_index()) continue;
    std::vector<double> z(classes);
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      double v = o.bias().defined() ? element(o.bias(), c) : 0.0;
      for (int64_t h = 0; h < hidden; ++h) v += element(x, i * hidden + h) * element(weight, c * hidden + h);
      if (o.softcap() > 0) v = o.softcap() * std::tanh(v / o.softcap());
      z[c] = v;
      m = std::max(m, v);
    }
    double s = 0;
    for (double v : z) s += std::exp(v - m);
    const double lse = m + std::log(s);
    double smooth = 0;
    for (int64_t c = 0; c < classes; ++c) smooth -= w(c) * (z[c] - lse);
    const double eps = o.label_smoothing();
    const double ce = (1 - eps) * w(t) * (lse - z[t]) + eps / classes * smooth;
    per_token[i] = ce + o.z_loss() * lse * lse;
    ce_sum += ce;
    z_sum += lse * lse;
    weight_sum += w(t);
    kept += 1;
  }
  if (o.reduction() == kNone) return per_token;
  if (o.reduction() == kSum) return {ce_sum + o.z_loss() * z_sum};
  return {ce_sum / weight_sum + (o.z_loss() > 0 ? o.z_loss() * z_sum / kept : 0.0)};
}

struct Case {
  int64_t tokens, hidden, classes;
  ScalarType dtype = kFloat64;
  uint64_t seed = 1;
};

struct Inputs {
  Tensor x, weight, bias, class_weight, target;
};

// Random inputs; every 5th target is ignored when `ignore` is set.
Inputs make_inputs(const Case& c, bool ignore = true) {
  manual_seed(c.seed);
  Inputs in;
  in.x = randn({c.tokens, c.hidden}, kFloat64).to(c.dtype);
  in.weight = (randn({c.classes, c.hidden}, kFloat64) * 0.5).to(c.dtype);
  in.bias = randn({c.classes}, kFloat64).to(c.dtype);
  in.class_weight = rand({c.classes}, kFloat64) + 0.5;
  in.target = randint(c.classes, {c.tokens});
  if (ignore)
    for (int64_t i = 0; i < c.tokens; i += 5) testutil::write_element(in.target, i, -100);
  return in;
}

// Leaves requiring grad, copied from `in` (so each run starts with fresh .grad).
struct Leaves {
  Tensor x, weight, bias;
};

Leaves leaves(const Inputs& in, bool with_bias) {
  return {in.x.clone().requires_grad_(), in.weight.clone().requires_grad_(),
          with_bias ? in.bias.clone().requires_grad_() : Tensor()};
}

// The loss and the gradients of sum(loss * grad_output) for input, weight and bias.
struct Outcome {
  Tensor loss, grad_x, grad_weight, grad_bias;
};

using LossFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const LinearCrossEntropyFuncOptions&);

Tensor fused(const Tensor& x, const Tensor& weight, const Tensor& target, const LinearCrossEntropyFuncOptions& o) {
  return F::linear_cross_entropy(x, weight, target, o);
}

Outcome evaluate(LossFn fn, const Inputs& in, LinearCrossEntropyFuncOptions o, bool with_bias,
                 const Tensor& grad_output) {
  Leaves l = leaves(in, with_bias);
  if (with_bias) o.bias(l.bias);
  Outcome out;
  out.loss = fn(l.x, l.weight, in.target, o);
  out.loss.backward(grad_output.defined() ? grad_output.to(out.loss.scalar_type()) : Tensor());
  out.grad_x = l.x.grad();
  out.grad_weight = l.weight.grad();
  if (with_bias) out.grad_bias = l.bias.grad();
  return out;
}

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, testutil::Tolerance tol,
                                 const char* what) {
  if (!actual.defined() || !expected.defined())
    return ::testing::AssertionFailure() << what << ": undefined (" << actual.defined() << ", " << expected.defined() << ")";
  auto r = testutil::all_close(actual, values(expected), tol);
  if (!r) r << " [" << what << "]";
  return r;
}

void expect_outcomes_close(const Outcome& a, const Outcome& b, testutil::Tolerance tol) {
  EXPECT_TRUE(close(a.loss, b.loss, tol, "loss"));
  EXPECT_TRUE(close(a.grad_x, b.grad_x, tol, "grad_x"));
  EXPECT_TRUE(close(a.grad_weight, b.grad_weight, tol, "grad_weight"));
  if (a.grad_bias.defined() || b.grad_bias.defined()) {
    EXPECT_TRUE(close(a.grad_bias, b.grad_bias, tol, "grad_bias"));
  }
}

struct Config {
  std::string name;
  bool bias = false, class_weight = false;
  double smoothing = 0, z_loss = 0, softcap = 0;
};

std::vector<Config> configs() {
  return {{"plain"},
          {"bias", true},
          {"class_weight_smoothing", false, true, 0.2},
          {"smoothing", false, false, 0.1},
          {"z_loss", false, false, 0, 1e-2},
          {"softcap", false, false, 0, 0, 3.0},
          {"everything", true, true, 0.15, 1e-3, 2.5}};
}

LinearCrossEntropyFuncOptions options_for(const Config& c, const Inputs& in, Reduction reduction) {
  auto o = LinearCrossEntropyFuncOptions()
               .reduction(reduction)
               .label_smoothing(c.smoothing)
               .z_loss(c.z_loss)
               .softcap(c.softcap)
               .chunk_size(kBlock);
  if (c.class_weight) o.class_weight(in.class_weight);
  return o;
}

// ---- forward and backward against the unfused float64 path --------------------------------

TEST(LinearCrossEntropy, EveryOptionAndReductionMatchesUnfusedFloat64) {
  // 2 * kBlock + 22 tokens: chunks of kBlock, kBlock and 22 (not a multiple of the chunk);
  // 537 classes: one full class tile and a partial one.
  const int64_t tokens = 2 * kBlock + 22;
  const Inputs in = make_inputs({tokens, 12, 537});
  for (const Config& c : configs()) {
    for (Reduction reduction : {kNone, kMean, kSum}) {
      SCOPED_TRACE(c.name + " / " + reduction_name(reduction));
      const auto o = options_for(c, in, reduction);
      Tensor grad_output = reduction == kNone ? randn({tokens}, kFloat64) : scalar_tensor(0.75, kFloat64);
      expect_outcomes_close(evaluate(fused, in, o, c.bias, grad_output), evaluate(unfused, in, o, c.bias, grad_output),
                            {1e-10, 1e-12});
    }
  }
}

TEST(LinearCrossEntropy, LossMatchesTheFormulaTokenByToken) {
  const Inputs in = make_inputs({70, 5, 9, kFloat64, 3});
  for (const Config& c : configs()) {
    for (Reduction reduction : {kNone, kMean, kSum}) {
      SCOPED_TRACE(c.name + " / " + reduction_name(reduction));
      auto o = options_for(c, in, reduction);
      if (c.bias) o.bias(in.bias);
      EXPECT_TRUE(testutil::all_close(F::linear_cross_entropy(in.x, in.weight, in.target, o),
                                      formula_loss(in.x, in.weight, in.target, o), {1e-11, 1e-12}));
    }
  }
}

TEST(LinearCrossEntropy, Float32MatchesFloat64) {
  const Inputs in64 = make_inputs({200, 24, 301});
  Inputs in32 = in64;
  in32.x = in64.x.to(kFloat32);
  in32.weight = in64.weight.to(kFloat32);
  in32.bias = in64.bias.to(kFloat32);
  const Config everything = configs().back();
  for (Reduction reduction : {kNone, kMean, kSum}) {
    SCOPED_TRACE(reduction_name(reduction));
    Tensor grad_output = reduction == kNone ? randn({200}, kFloat64) : Tensor();
    const Outcome expected = evaluate(unfused, in64, options_for(everything, in64, reduction), true, grad_output);
    const Outcome actual = evaluate(fused, in32, options_for(everything, in32, reduction), true, grad_output);
    expect_outcomes_close(actual, expected, {2e-5, 2e-5});
  }
}

TEST(LinearCrossEntropy, BatchedInputAndNonContiguousOperands) {
  const Inputs in = make_inputs({24, 6, 11});
  // input [2, 12, 6] read through a transpose; weight a transposed [6, 11] tensor.
  Tensor x = in.x.reshape({2, 12, 6}).transpose(0, 1).contiguous().transpose(0, 1);
  Tensor weight = in.weight.t().contiguous().t();
  Tensor target = in.target.reshape({2, 12});
  ASSERT_FALSE(x.is_contiguous());
  ASSERT_FALSE(weight.is_contiguous());
  for (Reduction reduction : {kNone, kMean}) {
    auto o = LinearCrossEntropyFuncOptions().reduction(reduction).z_loss(0.01);
    Tensor xl = x.detach().requires_grad_(), wl = weight.detach().requires_grad_();
    Tensor xr = x.detach().requires_grad_(), wr = weight.detach().requires_grad_();
    Tensor a = F::linear_cross_entropy(xl, wl, target, o), b = unfused(xr, wr, target, o);
    EXPECT_EQ(a.sizes(), b.sizes());
    EXPECT_TRUE(close(a, b, {1e-12, 1e-12}, "loss"));
    a.sum().backward();
    b.sum().backward();
    EXPECT_TRUE(close(xl.grad(), xr.grad(), {1e-12, 1e-12}, "grad_x"));
    EXPECT_TRUE(close(wl.grad(), wr.grad(), {1e-12, 1e-12}, "grad_weight"));
  }
  // A sliced input (row stride larger than the row).
  Tensor wide = randn({24, 10}, kFloat64);
  Tensor sliced = wide.narrow(1, 2, 6);
  EXPECT_TRUE(close(F::linear_cross_entropy(sliced, in.weight, in.target),
                    unfused(sliced, in.weight, in.target, {}), {1e-12, 1e-12}, "sliced"));
}

TEST(LinearCrossEntropy, AllIgnoredAndEmpty) {
  Inputs in = make_inputs({10, 4, 7});
  in.target.fill_(-100);
  for (Reduction reduction : {kNone, kMean, kSum}) {
    SCOPED_TRACE(reduction_name(reduction));
    auto o = LinearCrossEntropyFuncOptions().reduction(reduction).z_loss(0.1).label_smoothing(0.1);
    const Tensor seed = reduction == kNone ? ones({10}, kFloat64) : Tensor();
    const Outcome got = evaluate(fused, in, o, false, seed);
    // PyTorch gives zero gradients here, also for 'mean' (0 / 0 loss, NaN); the composite's
    // division by the zero weight sum would give NaN gradients, so only its loss is compared.
    EXPECT_TRUE(close(got.loss, unfused(in.x, in.weight, in.target, o), {0, 0}, "loss"));
    if (reduction == kMean) {
      EXPECT_TRUE(std::isnan(got.loss.item<double>()));
    }
    EXPECT_EQ(got.grad_x.abs().max().item<double>(), 0.0);
    EXPECT_EQ(got.grad_weight.abs().max().item<double>(), 0.0);
  }
  Tensor x = empty({0, 4}, kFloat64).requires_grad_(), w = in.weight.clone().requires_grad_();
  Tensor target = empty({0}, kInt64);
  EXPECT_TRUE(std::isnan(F::linear_cross_entropy(x, w, target).item<double>()));
  Tensor total = F::linear_cross_entropy(x, w, target, LinearCrossEntropyFuncOptions().reduction(kSum));
  EXPECT_EQ(total.item<double>(), 0.0);
  total.backward();
  EXPECT_EQ(x.grad().sizes(), std::vector<int64_t>({0, 4}));
  EXPECT_EQ(w.grad().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(F::linear_cross_entropy(x, w, target, LinearCrossEntropyFuncOptions().reduction(kNone)).sizes(),
            std::vector<int64_t>({0}));
}

// ---- gradcheck ------------------------------------------------------------------------------

TEST(LinearCrossEntropy, Gradcheck) {
  const Inputs in = make_inputs({7, 3, 5, kFloat64, 11});
  for (const Config& c : configs()) {
    for (Reduction reduction : {kNone, kMean, kSum}) {
      SCOPED_TRACE(c.name + " / " + reduction_name(reduction));
      const auto o = options_for(c, in, reduction);
      std::vector<Tensor> inputs{in.x.clone().requires_grad_(), in.weight.clone().requires_grad_(),
                                 in.bias.clone().requires_grad_()};
      auto fn = [&](const std::vector<Tensor>& v) {
        return F::linear_cross_entropy(v[0], v[1], in.target, LinearCrossEntropyFuncOptions(o).bias(v[2]));
      };
      EXPECT_TRUE(gradients_match(fn, inputs));
    }
  }
}

// ---- reproducibility --------------------------------------------------------------------------

void expect_bitwise_equal(const Outcome& a, const Outcome& b) {
  EXPECT_TRUE(equal(a.loss, b.loss));
  EXPECT_TRUE(equal(a.grad_x, b.grad_x));
  EXPECT_TRUE(equal(a.grad_weight, b.grad_weight));
  EXPECT_TRUE(equal(a.grad_bias, b.grad_bias));
}

// Also at the AVX2 level, where bf16 operands are widened to float32 (lce_widens_operands).
constexpr cpu::Capability kWidenedAndNative[] = {cpu::Capability::AVX2, cpu::Capability::AVX512_BF16,
                                                 cpu::Capability::AMX};

TEST(LinearCrossEntropy, IndependentOfChunkSizeAndThreadCount) {
  cpu::for_each_capability_of(kWidenedAndNative, [] {
    for (ScalarType dtype : {kFloat32, kBFloat16}) {
      SCOPED_TRACE(dtype_name(dtype));
      const Inputs in = make_inputs({5 * kBlock + 13, 40, 2100, dtype, 5});  // 2100: two vocab blocks
      auto o = LinearCrossEntropyFuncOptions().label_smoothing(0.1).z_loss(1e-3).class_weight(in.class_weight);
      const Outcome reference = evaluate(fused, in, LinearCrossEntropyFuncOptions(o).chunk_size(kBlock), true, {});
      expect_bitwise_equal(evaluate(fused, in, LinearCrossEntropyFuncOptions(o).chunk_size(2 * kBlock), true, {}),
                           reference);
      expect_bitwise_equal(evaluate(fused, in, o, true, {}), reference);  // auto: one chunk
      // On AMX the gradients wait for groups of chunks (Note [Deferred gradients]). A budget of
      // two token blocks of float32 logits: chunks of 256 tokens, all three in one group.
      expect_bitwise_equal(evaluate(fused, in, LinearCrossEntropyFuncOptions(o).memory_budget(2 * kBlock * 2100 * 4),
                                    true, {}),
                           reference);
      // Chunks of one block and a budget of two blocks of bf16 gradients: groups of two chunks,
      // then a last group of one chunk and a part.
      const auto grouped = LinearCrossEntropyFuncOptions(o).chunk_size(kBlock).memory_budget(2 * kBlock * 2100);
      expect_bitwise_equal(evaluate(fused, in, grouped, true, {}), reference);
      const int threads = get_num_threads();
      set_num_threads(1);
      expect_bitwise_equal(evaluate(fused, in, LinearCrossEntropyFuncOptions(o).chunk_size(3 * kBlock), true, {}),
                           reference);
      set_num_threads(threads);
    }
  });
}

// Where bf16/f16 operands are widened (lce_widens_operands), the loss is float32's on the
// widened values: outputs and gradients are float32's rounded once, whether the weight is
// widened all at once (a small head) or tile by tile (above 2^20 values).
TEST(LinearCrossEntropy, WidenedOperandsGiveFloat32RoundedOnce) {
  constexpr cpu::Capability kWidened[] = {cpu::Capability::AVX2};
  cpu::for_each_capability_of(kWidened, [] {
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (int64_t classes : {300, 4200}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " V=" + std::to_string(classes));
        const Inputs low = make_inputs({2 * kBlock + 3, 300, classes, dtype, 12});  // two hidden tiles
        Inputs wide = low;
        wide.x = low.x.to(kFloat32);
        wide.weight = low.weight.to(kFloat32);
        wide.bias = low.bias.to(kFloat32);
        const auto o = LinearCrossEntropyFuncOptions().label_smoothing(0.1).z_loss(1e-3).class_weight(low.class_weight);
        const Outcome a = evaluate(fused, low, o, true, {}), b = evaluate(fused, wide, o, true, {});
        EXPECT_TRUE(equal(a.loss, b.loss.to(dtype)));
        EXPECT_TRUE(equal(a.grad_x, b.grad_x.to(dtype)));
        EXPECT_TRUE(equal(a.grad_weight, b.grad_weight.to(dtype)));
        EXPECT_TRUE(equal(a.grad_bias, b.grad_bias.to(dtype)));
      }
  });
}

TEST(LinearCrossEntropy, RetainedGraphBackwardTwice) {
  const Inputs in = make_inputs({30, 4, 9});
  for (Reduction reduction : {kMean, kNone}) {
    Leaves l = leaves(in, true);
    Tensor loss = F::linear_cross_entropy(l.x, l.weight, in.target,
                                          LinearCrossEntropyFuncOptions().reduction(reduction).bias(l.bias));
    Tensor seed = reduction == kNone ? ones({30}, kFloat64) : Tensor();
    loss.backward(seed, true);
    Tensor first = l.weight.grad().clone();
    loss.backward(seed);  // the second pass recomputes
    EXPECT_TRUE(close(l.weight.grad(), first * 2, {1e-12, 1e-14}, "grad_weight twice"));
  }
}

TEST(LinearCrossEntropy, DoubleBackwardIsRefused) {
  const Inputs in = make_inputs({6, 3, 4});
  Leaves l = leaves(in, false);
  Tensor loss = F::linear_cross_entropy(l.x, l.weight, in.target);
  EXPECT_TRUE(testutil::throws_error([&] { autograd::grad({loss}, {l.x}, {}, std::nullopt, true); },
                                     {"linear_cross_entropy", "double backward"}));
}

// ---- reduced precision ------------------------------------------------------------------------

// Largest |a - truth| over all elements, relative to the largest |truth|.
double relative_error(const Tensor& a, const Tensor& truth) {
  return (a.to(kFloat64) - truth).abs().max().item<double>() / truth.abs().max().item<double>();
}

TEST(LinearCrossEntropy, ReducedPrecisionIsAtLeastAsAccurateAsUnfused) {
  cpu::for_each_capability_of(kWidenedAndNative, [] {
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      SCOPED_TRACE(dtype_name(dtype));
      // Inputs exactly representable in dtype, so both paths start from the same values.
      Inputs in = make_inputs({3 * kBlock + 5, 64, 2100, dtype, 9});  // V not a multiple of the vocab block
      Inputs in64 = in;
      in64.x = in.x.to(kFloat64);
      in64.weight = in.weight.to(kFloat64);
      in64.bias = in.bias.to(kFloat64);
      for (Reduction reduction : {kMean, kSum}) {
        SCOPED_TRACE(reduction_name(reduction));
        auto o = LinearCrossEntropyFuncOptions().reduction(reduction).label_smoothing(0.1).z_loss(1e-3);
        const Outcome truth = evaluate(unfused, in64, o, true, {});
        const Outcome low_fused = evaluate(fused, in, o, true, {});
        const Outcome low_unfused = evaluate(unfused, in, o, true, {});
        EXPECT_EQ(low_fused.grad_weight.scalar_type(), dtype);
        for (auto member : {&Outcome::loss, &Outcome::grad_x, &Outcome::grad_weight, &Outcome::grad_bias}) {
          const double fused_error = relative_error(low_fused.*member, truth.*member);
          const double unfused_error = relative_error(low_unfused.*member, truth.*member);
          EXPECT_LE(fused_error, unfused_error);
          EXPECT_LT(fused_error, 1e-2);
        }
      }
    }
  });
}

TEST(LinearCrossEntropy, Float32LossDtypeReturnsTheLossUnrounded) {
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    const Inputs in = make_inputs({2 * kBlock + 3, 48, 300, dtype, 4});
    for (Reduction reduction : {kMean, kSum, kNone}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduction_name(reduction));
      auto o = LinearCrossEntropyFuncOptions().reduction(reduction).label_smoothing(0.1).z_loss(1e-3);
      // A gradient representable in every dtype, so both runs see the same one.
      Tensor grad_output = reduction == kNone ? (randn(in.target.sizes()) * 0.25).to(kBFloat16).to(kFloat32)
                                              : scalar_tensor(0.75);
      const Outcome plain = evaluate(fused, in, o, true, grad_output);
      const Outcome wide = evaluate(fused, in, LinearCrossEntropyFuncOptions(o).loss_dtype(kFloat32), true, grad_output);
      ASSERT_EQ(plain.loss.scalar_type(), dtype);
      ASSERT_EQ(wide.loss.scalar_type(), kFloat32);
      EXPECT_TRUE(equal(wide.loss.to(dtype), plain.loss));
      for (auto member : {&Outcome::grad_x, &Outcome::grad_weight, &Outcome::grad_bias})
        EXPECT_TRUE(equal(wide.*member, plain.*member));
      // Against the float64 formula on the same (exactly representable) values: float32's
      // accuracy, not the input dtype's.
      LinearCrossEntropyFuncOptions o64 = LinearCrossEntropyFuncOptions(o).bias(in.bias.to(kFloat64));
      const std::vector<double> truth = formula_loss(in.x.to(kFloat64), in.weight.to(kFloat64), in.target, o64);
      const Tensor wide_values = wide.loss.to(kFloat64).reshape({-1});
      for (int64_t i = 0; i < wide_values.numel(); ++i) {
        if (reduction == kNone && element(in.target, i) == -100) continue;
        EXPECT_NEAR(element(wide_values, i), truth[i], 2e-6 * std::abs(truth[i]) + 1e-6) << "token " << i;
      }
    }
  }
  EXPECT_TRUE(testutil::throws_error(
      [] {
        F::linear_cross_entropy(ones({2, 3}), ones({4, 3}), zeros({2}, kInt64),
                                LinearCrossEntropyFuncOptions().loss_dtype(kInt64));
      },
      {"linear_cross_entropy", "loss_dtype", "int64"}));
}

// ---- memory -----------------------------------------------------------------------------------

TEST(LinearCrossEntropy, TransientMemoryIsOneChunk) {
  const int64_t tokens = 2048, hidden = 16, classes = 4096;
  const Inputs in = make_inputs({tokens, hidden, classes, kFloat32, 2});
  Leaves l = leaves(in, false);
  const int64_t budget = kBlock * classes * 4;  // one token block of float32 logits
  empty_cache();
  const int64_t before = memory_stats().allocated_bytes;
  reset_peak_memory_stats();
  Tensor loss = F::linear_cross_entropy(l.x, l.weight, in.target, LinearCrossEntropyFuncOptions().memory_budget(budget));
  loss.backward();
  const int64_t extra = memory_stats().peak_allocated_bytes - before;
  const int64_t gradients = (tokens * hidden + classes * hidden) * 4;
  const int64_t logits = tokens * classes * 4;
  // One chunk of logits plus per-token float64 rows and small odds and ends.
  EXPECT_LE(extra - gradients, budget + tokens * 8 * 8 + (int64_t{64} << 10));
  EXPECT_LT(extra, logits / 8);
}

// ---- errors -----------------------------------------------------------------------------------

TEST(LinearCrossEntropy, BadInputsThrow) {
  const Inputs in = make_inputs({8, 3, 5}, false);
  Tensor bad_target = in.target.clone();
  testutil::write_element(bad_target, 6, 5);
  EXPECT_TRUE(testutil::throws_error([&] { F::linear_cross_entropy(in.x, in.weight, bad_target); },
                                     {"linear_cross_entropy", "target 5 at position 6", "5 classes"}));
  EXPECT_TRUE(testutil::throws_error([&] { F::linear_cross_entropy(in.x, in.weight.t(), in.target); },
                                     {"linear_cross_entropy", "weight of shape [3, 5]"}));
  EXPECT_TRUE(testutil::throws_error([&] { F::linear_cross_entropy(in.x, in.weight.to(kFloat32), in.target); },
                                     {"linear_cross_entropy", "float32", "float64"}));
  EXPECT_TRUE(testutil::throws_error([&] { F::linear_cross_entropy(in.x, in.weight, in.target.narrow(0, 0, 7)); },
                                     {"linear_cross_entropy", "target shape [7]"}));
  EXPECT_TRUE(testutil::throws_error([&] { F::linear_cross_entropy(in.x, in.weight, in.target.to(kFloat64)); },
                                     {"linear_cross_entropy", "integer"}));
  auto with = [&](LinearCrossEntropyFuncOptions o) { return [&, o] { F::linear_cross_entropy(in.x, in.weight, in.target, o); }; };
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().chunk_size(kBlock + 1)),
                                     {"linear_cross_entropy", "chunk_size"}));
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().label_smoothing(1.5)), {"label_smoothing"}));
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().z_loss(-1)), {"z_loss"}));
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().softcap(-1)), {"softcap"}));
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().bias(zeros({4}, kFloat64))), {"bias"}));
  EXPECT_TRUE(testutil::throws_error(with(LinearCrossEntropyFuncOptions().class_weight(ones({6}, kFloat64))),
                                     {"class_weight"}));
}

// ---- the module -----------------------------------------------------------------------------

TEST(LinearCrossEntropyLoss, OwnsItsProjection) {
  nn::LinearCrossEntropyLoss head(nn::LinearCrossEntropyLossOptions(6, 11).bias(true).z_loss(1e-3));
  auto names = head->named_parameters().keys();
  EXPECT_EQ(names, std::vector<std::string>({"weight", "bias"}));
  EXPECT_EQ(head->weight.sizes(), std::vector<int64_t>({11, 6}));
  manual_seed(4);
  Tensor x = randn({5, 6}), target = randint(11, {5});
  Tensor expected = unfused(x, head->weight, target, LinearCrossEntropyFuncOptions().bias(head->bias).z_loss(1e-3));
  EXPECT_TRUE(close(head->forward(x, target), expected, {1e-6, 1e-6}, "loss"));
}

TEST(LinearCrossEntropyLoss, TiedToTheEmbedding) {
  manual_seed(8);
  nn::Embedding embedding(10, 4);
  nn::LinearCrossEntropyLoss head(nn::LinearCrossEntropyLossOptions(4, 10).tied_weight(embedding->weight));
  EXPECT_TRUE(head->weight.is_same(embedding->weight));
  Tensor tokens = randint(10, {2, 7}), target = randint(10, {2, 7});
  head->forward(embedding->forward(tokens), target).backward();
  Tensor fused_grad = embedding->weight.grad().clone();

  embedding->weight.mutable_grad() = Tensor();
  unfused(embedding->forward(tokens), embedding->weight, target, {}).backward();
  EXPECT_TRUE(close(fused_grad, embedding->weight.grad(), {1e-5, 1e-6}, "tied grad"));
}

}  // namespace
}  // namespace ember
