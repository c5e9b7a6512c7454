// The fused rms_norm, rotary_embedding and swiglu against the composites they replace
// (DESIGN.md: every fused kernel has a composite reference), computed in float64 with
// ordinary ember ops; plus gradcheck, reduced precision, layouts, empty inputs and errors.
#include <cstdint>
#include <cstring>
#include <optional>

#include "cpu/dispatch.h"
#include "nn/nn_testing.h"

namespace ember {
namespace {

using namespace nntest;
namespace F = nn::functional;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// ---- the composite references ---------------------------------------------------------------

// x * rsqrt(mean(x^2) + eps) * weight over the trailing `dims`.
Tensor rms_norm_composite(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& dims, double eps) {
  Tensor out = x * (x.square().mean(dims, /*keepdim=*/true) + eps).rsqrt();
  return weight.defined() ? out * weight : out;
}

// x [..., T, hd], cos/sin [T, hd/2]: the pairs (x[i], x[i + hd/2]) rotated.
Tensor rotary_composite(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  return cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);
}

Tensor swiglu_composite(const Tensor& a, const Tensor& b) { return silu(a) * b; }

// ---- helpers ---------------------------------------------------------------------------------

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // of sum(out * probe) for each input that requires grad
};

// Runs fn on copies of `inputs` (those flagged in `wanted` as leaves requiring grad) and
// backpropagates sum(out * probe), with probe uniform values of the output's shape rounded to
// probe_dtype (default: the output's dtype).
Result run(const Fn& fn, const std::vector<Tensor>& inputs, const std::vector<bool>& wanted,
           std::optional<ScalarType> probe_dtype = std::nullopt) {
  std::vector<Tensor> leaves, grad_leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    leaves.push_back(inputs[i].detach().clone());
    if (wanted[i]) grad_leaves.push_back(leaves.back().requires_grad_(true));
  }
  Result r;
  r.out = fn(leaves);
  const Tensor probe =
      uniform(r.out.sizes(), 99, -1, 1, probe_dtype.value_or(r.out.scalar_type())).to(r.out.scalar_type());
  if (!grad_leaves.empty()) r.grads = autograd::grad({(r.out * probe).sum()}, grad_leaves);
  return r;
}

Result run(const Fn& fn, const std::vector<Tensor>& inputs, std::optional<ScalarType> probe_dtype = std::nullopt) {
  return run(fn, inputs, std::vector<bool>(inputs.size(), true), probe_dtype);
}

// The fused op and its composite agree on outputs and input gradients.
void expect_same(const Result& fused, const Result& composite, testutil::Tolerance tol, const std::string& what) {
  EXPECT_EQ(fused.out.sizes(), composite.out.sizes()) << what;
  EXPECT_TRUE(all_close(fused.out, values(composite.out), tol)) << what << ": output";
  ASSERT_EQ(fused.grads.size(), composite.grads.size()) << what;
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    EXPECT_EQ(fused.grads[i].sizes(), composite.grads[i].sizes()) << what << ": gradient " << i;
    EXPECT_TRUE(all_close(fused.grads[i], values(composite.grads[i]), tol)) << what << ": gradient " << i;
  }
}

// `inputs` converted to dtype.
std::vector<Tensor> as(const std::vector<Tensor>& inputs, ScalarType dtype) {
  std::vector<Tensor> out;
  for (const auto& t : inputs) out.push_back(t.to(dtype));
  return out;
}

// Float32 matches float64, and in float16 and bfloat16 the fused op matches itself in float32
// on the same (rounded) inputs and output gradient, to the rounding of the result.
void expect_reduced_precision_matches(const Fn& fn, const std::vector<Tensor>& inputs64, const std::string& what) {
  const Result exact = run(fn, inputs64);
  expect_same(run(fn, as(inputs64, kFloat32)), exact, {1e-5, 1e-5}, what + " float32 vs float64");
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    const std::vector<Tensor> rounded = as(inputs64, dtype);
    const Result low = run(fn, rounded);
    EXPECT_EQ(low.out.scalar_type(), dtype) << what;
    for (const Tensor& g : low.grads) EXPECT_EQ(g.scalar_type(), dtype) << what;
    expect_same(low, run(fn, as(rounded, kFloat32), dtype), testutil::tolerance(dtype), what + " " + dtype_name(dtype));
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// bf16/f16 results are rounded once from float32 (Note [Narrowing in blocks] and Note
// [Narrowing pairs] in src/cpu/simd/float_vector.h): at every SIMD level, over rows long
// enough for the blocks and pairs and ending in a tail, the output and the gradients of the
// first `checked_grads` inputs are the float32 kernel's on the same values, rounded once; and
// float32 matches float64. in = inputs64 (float64); the inputs after the first `converted` ones
// keep their dtype (position tables).
void expect_rounded_once_at_every_level(const Fn& fn, const std::vector<Tensor>& inputs64, const std::string& what,
                                        size_t converted = SIZE_MAX, size_t checked_grads = SIZE_MAX) {
  const cpu::Capability previous = cpu::cpu_capability();
  const auto convert = [&](const std::vector<Tensor>& in, ScalarType dtype) {
    std::vector<Tensor> out = in;
    for (size_t i = 0; i < out.size() && i < converted; ++i) out[i] = out[i].to(dtype);
    return out;
  };
  std::vector<bool> wanted(inputs64.size());
  for (size_t i = 0; i < wanted.size(); ++i) wanted[i] = i < converted;
  for (cpu::Capability level : {cpu::Capability::Baseline, cpu::Capability::AVX2, cpu::Capability::AVX512}) {
    if (cpu::set_cpu_capability(level) != level) continue;
    const std::string name = what + " " + cpu::capability_name(level);
    expect_same(run(fn, convert(inputs64, kFloat32), wanted), run(fn, inputs64, wanted), {1e-5, 1e-5},
                name + " float32 vs float64");
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      const std::vector<Tensor> rounded = convert(inputs64, dtype);
      const Result low = run(fn, rounded, wanted), wide = run(fn, convert(rounded, kFloat32), wanted, dtype);
      EXPECT_TRUE(same_bytes(low.out, wide.out.to(dtype))) << name << " " << dtype_name(dtype);
      for (size_t k = 0; k < low.grads.size() && k < checked_grads; ++k)
        EXPECT_TRUE(same_bytes(low.grads[k], wide.grads[k].to(dtype))) << name << " " << dtype_name(dtype) << " gradient " << k;
    }
  }
  cpu::set_cpu_capability(previous);
}

// Cos and sin tables of `positions` x `half` angles, as the GPT builds them.
std::pair<Tensor, Tensor> rope_tables(int64_t positions, int64_t half, ScalarType dtype = kFloat64) {
  Tensor inv_freq = pow(10000.0, arange(0, half, 1, kFloat64) * (-1.0 / static_cast<double>(half)));
  Tensor angles = outer(arange(positions, kFloat64), inv_freq);
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

// ---- rms_norm --------------------------------------------------------------------------------

Fn fused_rms_norm(std::vector<int64_t> shape, double eps, bool weighted = true) {
  return [=](const std::vector<Tensor>& in) {
    return F::rms_norm(in[0], F::RMSNormFuncOptions(shape).weight(weighted ? in[1] : Tensor()).eps(eps));
  };
}

Fn composite_rms_norm(std::vector<int64_t> dims, double eps, bool weighted = true) {
  return [=](const std::vector<Tensor>& in) {
    return rms_norm_composite(in[0], weighted ? in[1] : Tensor(), dims, eps);
  };
}

TEST(FusedRMSNorm, MatchesCompositeInFloat64) {
  // Widths below, at and past the 8-lane vectors, with tails.
  for (int64_t width : {1, 7, 8, 37, 192}) {
    const std::vector<Tensor> in = {uniform({3, 5, width}, 1, -2, 2), uniform({width}, 2, 0.5, 1.5)};
    const std::string what = "width " + std::to_string(width);
    expect_same(run(fused_rms_norm({width}, 1e-5), in), run(composite_rms_norm({2}, 1e-5), in), {1e-12, 1e-12}, what);
    expect_same(run(fused_rms_norm({width}, 0.5, false), {in[0]}), run(composite_rms_norm({2}, 0.5, false), {in[0]}),
                {1e-12, 1e-12}, what + " without weight");
  }
  // Normalising over two trailing dims.
  const std::vector<Tensor> in = {uniform({4, 3, 5}, 3, -2, 2), uniform({3, 5}, 4)};
  expect_same(run(fused_rms_norm({3, 5}, 1e-3), in), run(composite_rms_norm({1, 2}, 1e-3), in), {1e-12, 1e-12},
              "normalized_shape [3, 5]");
}

TEST(FusedRMSNorm, Gradcheck) {
  EXPECT_TRUE(gradients_match(fused_rms_norm({13}, 1e-3), {leaf(uniform({4, 13}, 5)), leaf(uniform({13}, 6))},
                              tight_gradcheck()));
  EXPECT_TRUE(gradients_match(fused_rms_norm({2, 3}, 1e-3), {leaf(uniform({2, 2, 3}, 7)), leaf(uniform({2, 3}, 8))},
                              tight_gradcheck()));
}

TEST(FusedRMSNorm, ReducedPrecisionMatchesFloat32) {
  expect_reduced_precision_matches(fused_rms_norm({67}, 1e-5), {uniform({9, 67}, 9, -3, 3), uniform({67}, 10, 0.5, 2)},
                                   "rms_norm");
}

// The weight's gradient is summed in float64 and rounded once to its dtype (to float32 and
// then to bf16 is a double rounding), so x's gradient and the output are compared bitwise.
TEST(FusedRMSNorm, ReducedPrecisionIsFloat32RoundedOnceAtEveryLevel) {
  expect_rounded_once_at_every_level(fused_rms_norm({203}, 1e-5), {uniform({7, 203}, 48, -3, 3), uniform({203}, 49, 0.5, 2)},
                                     "rms_norm", SIZE_MAX, /*checked_grads=*/1);
}

TEST(FusedRMSNorm, WeightOfAnotherDtypePromotes) {
  const Tensor x = uniform({3, 16}, 11, -2, 2, kBFloat16), w = uniform({16}, 12, 0.5, 1.5, kFloat32);
  const Tensor y = F::rms_norm(x, F::RMSNormFuncOptions({16}).weight(w).eps(1e-5));
  EXPECT_EQ(y.scalar_type(), kFloat32);
  EXPECT_TRUE(all_close(y, values(rms_norm_composite(x.to(kFloat64), w.to(kFloat64), {1}, 1e-5)), {1e-5, 1e-6}));
}

TEST(FusedRMSNorm, NonContiguousInput) {
  // x is a permuted view of a [5, 3, 24] leaf: gradients flow back through the view.
  const Fn fused = [](const std::vector<Tensor>& in) {
    return F::rms_norm(in[0].permute({1, 0, 2}), F::RMSNormFuncOptions({24}).weight(in[1]).eps(1e-5));
  };
  const Fn composite = [](const std::vector<Tensor>& in) {
    return rms_norm_composite(in[0].permute({1, 0, 2}), in[1], {2}, 1e-5);
  };
  const std::vector<Tensor> in = {uniform({5, 3, 24}, 13), uniform({24}, 14)};
  expect_same(run(fused, in), run(composite, in), {1e-12, 1e-12}, "permuted input");
  // Normalising over a dim that is not contiguous in memory.
  const Fn fused_t = [](const std::vector<Tensor>& in) {
    return F::rms_norm(in[0].t(), F::RMSNormFuncOptions({6}).weight(in[1]).eps(1e-5));
  };
  const Fn composite_t = [](const std::vector<Tensor>& in) { return rms_norm_composite(in[0].t(), in[1], {1}, 1e-5); };
  const std::vector<Tensor> in_t = {uniform({6, 10}, 15), uniform({6}, 16)};
  expect_same(run(fused_t, in_t), run(composite_t, in_t), {1e-12, 1e-12}, "transposed input");
}

TEST(FusedRMSNorm, EmptyInputs) {
  const Result no_rows = run(fused_rms_norm({8}, 1e-5), {zeros({0, 8}, kFloat64), uniform({8}, 17)});
  EXPECT_EQ(no_rows.out.sizes(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(no_rows.grads[0].sizes(), (std::vector<int64_t>{0, 8}));
  EXPECT_TRUE(all_close(no_rows.grads[1], std::vector<double>(8, 0.0), {0, 0}));
  const Result empty_rows = run(fused_rms_norm({0}, 1e-5), {zeros({3, 0}, kFloat64), zeros({0}, kFloat64)});
  EXPECT_EQ(empty_rows.out.sizes(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(empty_rows.grads[1].sizes(), (std::vector<int64_t>{0}));
}

TEST(FusedRMSNorm, ErrorsNameTheOpAndShapes) {
  const Tensor x = zeros({2, 4});
  EXPECT_TRUE(throws_error([&] { F::rms_norm(x, F::RMSNormFuncOptions({4}).weight(zeros({3}))); },
                           {"[rms_norm]", "weight", "[3]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { F::rms_norm(x, F::RMSNormFuncOptions({5})); }, {"[rms_norm]", "[5]", "[2, 4]"}));
  EXPECT_TRUE(throws_error([&] { F::rms_norm(zeros({2, 4}, kInt64), F::RMSNormFuncOptions({4})); },
                           {"[rms_norm]", "floating-point", "int64"}));
}

TEST(FusedRMSNorm, DoubleBackwardIsRejected) {
  const Tensor x = leaf(uniform({2, 4}, 18));
  EXPECT_TRUE(throws_error(
      [&] {
        autograd::grad({F::rms_norm(x, F::RMSNormFuncOptions({4})).square().sum()}, {x}, {}, true,
                       /*create_graph=*/true);
      },
      {"[rms_norm]", "double backward"}));
}

TEST(FusedRMSNorm, WeightGradientIsBitwiseIdenticalForAnyThreadCount) {
  const int previous = get_num_threads();
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    const Tensor x = uniform({3001, 96}, 19, -2, 2, dtype), w = uniform({96}, 20, 0.5, 1.5, dtype);
    const Fn fn = fused_rms_norm({96}, 1e-5);
    set_num_threads(1);
    const Result reference = run(fn, {x, w});
    for (int threads : {2, 4}) {
      set_num_threads(threads);
      const Result r = run(fn, {x, w});
      EXPECT_TRUE(same_bytes(r.out, reference.out)) << dtype_name(dtype) << " output at " << threads << " threads";
      EXPECT_TRUE(same_bytes(r.grads[0], reference.grads[0]))
          << dtype_name(dtype) << " dx at " << threads << " threads";
      EXPECT_TRUE(same_bytes(r.grads[1], reference.grads[1]))
          << dtype_name(dtype) << " dw at " << threads << " threads";
    }
  }
  set_num_threads(previous);
}

// ---- rotary_embedding ------------------------------------------------------------------------

// in = {x, cos, sin}: gradients for x only (cos and sin are position tables).
Fn fused_rotary(std::function<Tensor(const Tensor&)> view = [](const Tensor& t) { return t; }) {
  return [=](const std::vector<Tensor>& in) { return F::rotary_embedding(view(in[0]), in[1], in[2]); };
}

Fn composite_rotary(std::function<Tensor(const Tensor&)> view = [](const Tensor& t) { return t; }) {
  return [=](const std::vector<Tensor>& in) { return rotary_composite(view(in[0]), in[1], in[2]); };
}

const std::vector<bool> kXOnly = {true, false, false};

TEST(FusedRotaryEmbedding, MatchesCompositeInFloat64) {
  // half = 1, 5 (all tail), 8 (one vector), 13 (vector + tail).
  for (int64_t half : {1, 5, 8, 13}) {
    auto [cos, sin] = rope_tables(7, half);
    const std::vector<Tensor> in = {uniform({2, 3, 7, 2 * half}, 21), cos, sin};
    expect_same(run(fused_rotary(), in, kXOnly), run(composite_rotary(), in, kXOnly), {1e-12, 1e-12},
                "half " + std::to_string(half));
  }
  // No leading dims.
  auto [cos, sin] = rope_tables(5, 4);
  const std::vector<Tensor> in = {uniform({5, 8}, 22), cos, sin};
  expect_same(run(fused_rotary(), in, kXOnly), run(composite_rotary(), in, kXOnly), {1e-12, 1e-12}, "[T, hd]");
}

TEST(FusedRotaryEmbedding, NonContiguousInputs) {
  auto [cos, sin] = rope_tables(6, 4);
  // The GPT's layout: [B, T, H, hd] viewed as [B, H, T, hd].
  const auto heads_first = [](const Tensor& t) { return t.transpose(1, 2); };
  const std::vector<Tensor> in = {uniform({2, 6, 3, 8}, 23), cos, sin};
  expect_same(run(fused_rotary(heads_first), in, kXOnly), run(composite_rotary(heads_first), in, kXOnly),
              {1e-12, 1e-12}, "transposed heads");
  // The pairs are not contiguous: x is [.., hd, T] transposed.
  const auto swapped = [](const Tensor& t) { return t.transpose(-1, -2); };
  const std::vector<Tensor> in_swapped = {uniform({3, 8, 6}, 24), cos, sin};
  expect_same(run(fused_rotary(swapped), in_swapped, kXOnly), run(composite_rotary(swapped), in_swapped, kXOnly),
              {1e-12, 1e-12}, "transposed last dims");
  // A narrowed leading dim and broadcast tables from a longer cache narrowed to T.
  auto [long_cos, long_sin] = rope_tables(10, 4);
  const auto narrowed = [](const Tensor& t) { return t.narrow(0, 1, 2); };
  const std::vector<Tensor> in_narrow = {uniform({4, 2, 6, 8}, 25), long_cos.narrow(0, 0, 6), long_sin.narrow(0, 0, 6)};
  expect_same(run(fused_rotary(narrowed), in_narrow, kXOnly), run(composite_rotary(narrowed), in_narrow, kXOnly),
              {1e-12, 1e-12}, "narrowed batch");
}

// The output takes the input's strides where they are a permutation of a contiguous layout
// (the GPT's transposed [B, T, H, hd] projections, whose transposes back then stay views), else
// it is contiguous; the same bits either way.
TEST(FusedRotaryEmbedding, OutputIsLaidOutAsItsInput) {
  auto [cos, sin] = rope_tables(6, 4);
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    const Tensor x = uniform({2, 6, 3, 8}, 26).to(dtype);
    const Tensor heads_first = x.transpose(1, 2);
    const Tensor out = F::rotary_embedding(heads_first, cos, sin);
    EXPECT_EQ(out.strides(), heads_first.strides());
    EXPECT_TRUE(equal(out, F::rotary_embedding(heads_first.contiguous(), cos, sin)));
    const Tensor gapped = heads_first.narrow(1, 0, 2);  // not one dense block: contiguous output
    const Tensor from_gapped = F::rotary_embedding(gapped, cos, sin);
    EXPECT_TRUE(from_gapped.is_contiguous());
    EXPECT_TRUE(equal(from_gapped, F::rotary_embedding(gapped.contiguous(), cos, sin)));
  }
}

TEST(FusedRotaryEmbedding, Gradcheck) {
  auto [cos, sin] = rope_tables(5, 3);
  const Tensor x = leaf(uniform({2, 5, 2, 6}, 26));
  EXPECT_TRUE(gradients_match(
      [&](const std::vector<Tensor>& in) { return F::rotary_embedding(in[0].transpose(1, 2), cos, sin); }, {x},
      tight_gradcheck()));
}

TEST(FusedRotaryEmbedding, SecondOrderGradients) {
  // grad_x of sum(rope(x) * w) is rope^-1(w), so d/dw of sum(grad_x * v) is rope(v).
  auto [cos, sin] = rope_tables(4, 3);
  const Tensor x = leaf(uniform({2, 4, 6}, 27)), w = leaf(uniform({2, 4, 6}, 28)), v = uniform({2, 4, 6}, 29);
  const Tensor gx =
      autograd::grad({(F::rotary_embedding(x, cos, sin) * w).sum()}, {x}, {}, true, /*create_graph=*/true)[0];
  const Tensor gw = autograd::grad({(gx * v).sum()}, {w})[0];
  EXPECT_TRUE(all_close(gw, values(rotary_composite(v, cos, sin)), {1e-12, 1e-12}));
}

TEST(FusedRotaryEmbedding, ReducedPrecisionMatchesFloat32) {
  auto [cos, sin] = rope_tables(9, 12, kFloat32);
  const Fn fn = [&](const std::vector<Tensor>& in) { return F::rotary_embedding(in[0], cos, sin); };
  expect_reduced_precision_matches(fn, {uniform({2, 3, 9, 24}, 30, -3, 3)}, "rotary_embedding");
  // Tables of another dtype than x are converted, the result keeps x's dtype.
  const Tensor x = uniform({9, 24}, 31, -3, 3, kBFloat16);
  const Tensor y = F::rotary_embedding(x, cos.to(kFloat64), sin.to(kBFloat16));
  EXPECT_EQ(y.scalar_type(), kBFloat16);
  EXPECT_TRUE(all_close(y, values(rotary_composite(x.to(kFloat64), cos.to(kFloat64), sin.to(kBFloat16).to(kFloat64))),
                        testutil::tolerance(kBFloat16)));
}

TEST(FusedRotaryEmbedding, ReducedPrecisionIsFloat32RoundedOnceAtEveryLevel) {
  // half = 41: two pairs of 8-lane vectors, a vector and a scalar tail in each half.
  auto [cos, sin] = rope_tables(9, 41, kFloat32);
  expect_rounded_once_at_every_level(fused_rotary(), {uniform({2, 3, 9, 82}, 50, -3, 3), cos, sin}, "rotary_embedding",
                                     /*converted=*/1);
}

TEST(FusedRotaryEmbedding, EmptyInputs) {
  auto [cos, sin] = rope_tables(4, 2);
  const Result no_batch = run(fused_rotary(), {zeros({0, 4, 4}, kFloat64), cos, sin}, kXOnly);
  EXPECT_EQ(no_batch.out.sizes(), (std::vector<int64_t>{0, 4, 4}));
  EXPECT_EQ(no_batch.grads[0].sizes(), (std::vector<int64_t>{0, 4, 4}));
  auto [cos0, sin0] = rope_tables(0, 2);
  EXPECT_EQ(F::rotary_embedding(zeros({2, 0, 4}, kFloat64), cos0, sin0).sizes(), (std::vector<int64_t>{2, 0, 4}));
}

TEST(FusedRotaryEmbedding, ErrorsNameTheOpAndShapes) {
  auto [cos, sin] = rope_tables(4, 2);
  EXPECT_TRUE(throws_error(
      [&] {
        F::rotary_embedding(zeros({2, 4, 5}, kFloat64), cos, sin);
      },
      {"[rotary_embedding]", "even", "[2, 4, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::rotary_embedding(zeros({2, 3, 4}, kFloat64), cos, sin);
      },
      {"[rotary_embedding]", "[3, 2]", "[4, 2]", "[2, 3, 4]"}));
  EXPECT_TRUE(
      throws_error([&] { F::rotary_embedding(zeros({4}, kFloat64), cos, sin); }, {"[rotary_embedding]", "[4]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        F::rotary_embedding(zeros({4, 4}, kInt64), cos, sin);
      },
      {"[rotary_embedding]", "floating-point", "int64"}));
  const Tensor trainable = cos.clone().requires_grad_(true);
  EXPECT_TRUE(throws_error(
      [&] {
        F::rotary_embedding(zeros({4, 4}, kFloat64), trainable, sin);
      },
      {"[rotary_embedding]", "require grad"}));
  NoGradGuard no_grad;  // without grad mode nothing is recorded, so trainable tables are fine
  EXPECT_EQ(F::rotary_embedding(zeros({4, 4}, kFloat64), trainable, sin).sizes(), (std::vector<int64_t>{4, 4}));
}

// ---- swiglu ----------------------------------------------------------------------------------

Fn fused_swiglu(std::function<Tensor(const Tensor&)> view = [](const Tensor& t) { return t; }) {
  return [=](const std::vector<Tensor>& in) { return F::swiglu(view(in[0]), view(in[1])); };
}

Fn composite_swiglu(std::function<Tensor(const Tensor&)> view = [](const Tensor& t) { return t; }) {
  return [=](const std::vector<Tensor>& in) { return swiglu_composite(view(in[0]), view(in[1])); };
}

TEST(FusedSwiGLU, MatchesCompositeInFloat64) {
  for (int64_t n : {1, 8, 37}) {
    const std::vector<Tensor> in = {uniform({3, n}, 32, -6, 6), uniform({3, n}, 33)};
    expect_same(run(fused_swiglu(), in), run(composite_swiglu(), in), {1e-12, 1e-12}, "n " + std::to_string(n));
  }
  // Large arguments saturate the sigmoid without NaN.
  const Tensor a = testutil::make({-1000, -100, -30, -1, 0, 1, 30, 100, 1000}, {9}, kFloat64);
  const std::vector<Tensor> in = {a, uniform({9}, 34)};
  expect_same(run(fused_swiglu(), in), run(composite_swiglu(), in), {1e-12, 1e-300}, "saturated");
}

TEST(FusedSwiGLU, Float32SaturatesLikeComposite) {
  const Tensor a = testutil::make({-1000, -105, -100, -88, -30, -1, 0, 1, 30, 88, 100, 1000}, {12}, kFloat32);
  const std::vector<Tensor> in = {a, uniform({12}, 35, -1, 1, kFloat32)};
  expect_same(run(fused_swiglu(), in), run(composite_swiglu(), as(in, kFloat64)), {1e-6, 1e-30}, "float32 saturated");
}

TEST(FusedSwiGLU, NonContiguousInputs) {
  const auto transposed = [](const Tensor& t) { return t.t(); };
  const std::vector<Tensor> in = {uniform({11, 6}, 36, -4, 4), uniform({11, 6}, 37)};
  expect_same(run(fused_swiglu(transposed), in), run(composite_swiglu(transposed), in), {1e-12, 1e-12}, "transposed");
}

TEST(FusedSwiGLU, Gradcheck) {
  EXPECT_TRUE(gradients_match(fused_swiglu(), {leaf(uniform({3, 7}, 38, -4, 4)), leaf(uniform({3, 7}, 39))},
                              tight_gradcheck()));
}

TEST(FusedSwiGLU, ReducedPrecisionMatchesFloat32) {
  expect_reduced_precision_matches(fused_swiglu(), {uniform({5, 29}, 40, -6, 6), uniform({5, 29}, 41, -2, 2)},
                                   "swiglu");
  // Mixed dtypes promote, and each gradient has its input's dtype.
  const Result mixed = run(fused_swiglu(), {uniform({4}, 42, -2, 2, kBFloat16), uniform({4}, 43, -1, 1, kFloat32)});
  EXPECT_EQ(mixed.out.scalar_type(), kFloat32);
  EXPECT_EQ(mixed.grads[0].scalar_type(), kBFloat16);
  EXPECT_EQ(mixed.grads[1].scalar_type(), kFloat32);
}

TEST(FusedSwiGLU, ReducedPrecisionIsFloat32RoundedOnceAtEveryLevel) {
  expect_rounded_once_at_every_level(fused_swiglu(), {uniform({3, 1029}, 46, -6, 6), uniform({3, 1029}, 47, -2, 2)},
                                     "swiglu");
}

TEST(FusedSwiGLU, EmptyInputs) {
  const Result r = run(fused_swiglu(), {zeros({0, 5}, kFloat64), zeros({0, 5}, kFloat64)});
  EXPECT_EQ(r.out.sizes(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(r.grads[0].sizes(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(r.grads[1].sizes(), (std::vector<int64_t>{0, 5}));
}

TEST(FusedSwiGLU, OnlyTheRequestedGradient) {
  const std::vector<Tensor> in = {uniform({2, 9}, 44, -3, 3), uniform({2, 9}, 45)};
  for (const std::vector<bool>& wanted : {std::vector<bool>{true, false}, std::vector<bool>{false, true}}) {
    const Result fused = run(fused_swiglu(), in, wanted), composite = run(composite_swiglu(), in, wanted);
    expect_same(fused, composite, {1e-12, 1e-12}, wanted[0] ? "grad of a only" : "grad of b only");
  }
}

TEST(FusedSwiGLU, ErrorsNameTheOpAndShapes) {
  EXPECT_TRUE(throws_error([] { F::swiglu(zeros({2, 3}), zeros({3, 2})); }, {"[swiglu]", "[2, 3]", "[3, 2]"}));
  EXPECT_TRUE(
      throws_error([] { F::swiglu(zeros({2}, kInt64), zeros({2}, kInt64)); }, {"[swiglu]", "floating-point", "int64"}));
  const Tensor a = leaf(uniform({2, 4}, 46));
  EXPECT_TRUE(
      throws_error([&] { autograd::grad({F::swiglu(a, a).square().sum()}, {a}, {}, true, /*create_graph=*/true); },
                   {"[swiglu]", "double backward"}));
}

}  // namespace
}  // namespace ember
