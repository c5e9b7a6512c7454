// `ember bench fused`: rms_norm, rotary_embedding and swiglu (forward + backward) against
// the compositions of ember ops they replaced in the GPT, side by side at the shapes of
// `ember train`'s default model (batch 16, 128 positions, dim 192, 6 heads, hidden 512).
// rotary_embedding runs on the GPT's transposed [B, H, T, hd] view directly (the kernel
// reads the strides) and on a contiguous copy of it, to show which is faster.
#include "bench.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;

// Median ms of forward + backward of `fn`, with gradients of the inputs reset every time.
double step_ms(const std::function<Tensor()>& fn, const std::vector<Tensor>& inputs, const Tensor& probe, int reps) {
  return time_ms(
      [&] {
        for (Tensor t : inputs) t.set_grad(Tensor());
        fn().backward(probe);
      },
      reps);
}

nlohmann::json row(const std::string& name, double fused_ms, double composite_ms) {
  note(name + ": fused " + std::to_string(fused_ms) + " ms, composite " + std::to_string(composite_ms) + " ms");
  return {{"name", name}, {"fused_ms", fused_ms}, {"composite_ms", composite_ms}, {"speedup", composite_ms / fused_ms}};
}

nlohmann::json run(const Options& options) {
  const int reps = options.quick ? 5 : 30;
  const int64_t B = 16, T = 128, dim = 192, heads = 6, head_dim = 32, hidden = 512, half = head_dim / 2;
  manual_seed(0);
  nlohmann::json results = nlohmann::json::array();

  Tensor x = randn({B, T, dim}).requires_grad_(), weight = (randn({dim}) * 0.1 + 1).requires_grad_();
  Tensor norm_probe = randn({B, T, dim});
  const double eps = 1e-5;
  results.push_back(row(
      "rms_norm",
      step_ms([&] { return F::rms_norm(x, F::RMSNormFuncOptions({dim}).weight(weight).eps(eps)); }, {x, weight},
              norm_probe, reps),
      step_ms([&] { return x * (x.square().mean({2}, true) + eps).rsqrt() * weight; }, {x, weight}, norm_probe, reps)));

  Tensor q = randn({B, T, heads, head_dim}).requires_grad_();
  Tensor angles = outer(arange(T, kFloat32), randn({half}).abs());
  Tensor cos = angles.cos(), sin = angles.sin(), rope_probe = randn({B, heads, T, head_dim});
  auto composite_rope = [&] {
    Tensor view = q.transpose(1, 2), x1 = view.narrow(-1, 0, half), x2 = view.narrow(-1, half, half);
    return cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);
  };
  const double composite_rope_ms = step_ms(composite_rope, {q}, rope_probe, reps);
  results.push_back(
      row("rotary_embedding_strided",
          step_ms([&] { return F::rotary_embedding(q.transpose(1, 2), cos, sin); }, {q}, rope_probe, reps),
          composite_rope_ms));
  results.push_back(
      row("rotary_embedding_contiguous_first",
          step_ms([&] { return F::rotary_embedding(q.transpose(1, 2).contiguous(), cos, sin); }, {q}, rope_probe, reps),
          composite_rope_ms));

  Tensor a = randn({B, T, hidden}).requires_grad_(), b = randn({B, T, hidden}).requires_grad_();
  Tensor glu_probe = randn({B, T, hidden});
  results.push_back(row("swiglu", step_ms([&] { return F::swiglu(a, b); }, {a, b}, glu_probe, reps),
                        step_ms([&] { return silu(a) * b; }, {a, b}, glu_probe, reps)));
  return results;
}

Register reg("fused", run);

}  // namespace
}  // namespace ember::bench
