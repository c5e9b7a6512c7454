#include "ops/optimizer_update.h"

#include <algorithm>
#include <cmath>

#include "autograd/low_precision_copy.h"
#include "core/graph_capture.h"
#include "cpu/optimizer.h"
#include "cpu/parallel.h"
#include "ember/profiler.h"

namespace ember::ops {

bool adam_step_fuses(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  const Tensor all[] = {param, grad, exp_avg, exp_avg_sq};
  for (const Tensor& t : all)
    if (!t.defined() || t.scalar_type() != kFloat32 || !t.is_cpu() || !t.is_contiguous() || t.sizes() != param.sizes())
      return false;
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (all[i].storage().is_alias_of(all[j].storage())) return false;
  return true;
}

void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamStepScalars& s) {
  constexpr const char* kOp = "adam_step_";
  EMBER_CHECK(adam_step_fuses(param, grad, exp_avg, exp_avg_sq), kOp,
              "expects float32 contiguous CPU tensors of one shape that share no memory");
  profiler::RecordFunction record(kOp, profiler::Category::Op);
  cpu::AdamStep step;
  step.maximize = s.maximize;
  if (s.weight_decay != 0) {
    step.decay = s.decoupled_weight_decay ? cpu::AdamStep::Decay::Decoupled : cpu::AdamStep::Decay::Coupled;
    step.decay_value = static_cast<float>(s.decoupled_weight_decay ? 1 - s.lr * s.weight_decay : s.weight_decay);
  }
  const double lerp_weight = 1 - s.beta1;
  step.lerp_mirrored = !(std::abs(lerp_weight) < 0.5);
  step.lerp_weight = static_cast<float>(step.lerp_mirrored ? 1 - lerp_weight : lerp_weight);
  step.beta2 = static_cast<float>(s.beta2);
  step.one_minus_beta2 = static_cast<float>(1 - s.beta2);
  step.bias_correction2_sqrt = static_cast<float>(s.bias_correction2_sqrt);
  step.eps = static_cast<float>(s.eps);
  step.negative_step_size = static_cast<float>(-s.step_size);
  ScalarType low_dtype = kBFloat16;
  void* low = autograd::low_precision_copy_target(param, &low_dtype);
  core::launch(kOp, [&] {
    return [step, p = param.data_ptr<float>(), g = grad.data_ptr<float>(), m = exp_avg.data_ptr<float>(),
            v = exp_avg_sq.data_ptr<float>(), n = param.numel(), low, low_dtype] {
      cpu::adam_step(step, p, g, m, v, n, low, low_dtype);
    };
  });
  for (const Tensor* t : {&param, &exp_avg, &exp_avg_sq}) t->storage().bump_version();
  if (low) autograd::low_precision_copy_written(param);
}

std::vector<double> sums_of_squares(const std::vector<Tensor>& tensors) {
  profiler::RecordFunction record("sums_of_squares", profiler::Category::Op);
  struct Chunk {
    size_t tensor;
    int64_t begin, end;
  };
  std::vector<double> sums(tensors.size(), 0.0);
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const Tensor& x = tensors[t];
    const bool direct = x.is_cpu() && x.is_contiguous() && (x.scalar_type() == kFloat32 || x.scalar_type() == kFloat64);
    if (!direct) {
      sums[t] = x.to(kFloat64).square().sum().item<double>();
      continue;
    }
    for (int64_t begin = 0; begin < x.numel(); begin += cpu::kSquaresChunk)
      chunks.push_back({t, begin, std::min(x.numel(), begin + cpu::kSquaresChunk)});
  }
  std::vector<double> partial(chunks.size());
  cpu::parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const Tensor& x = tensors[chunks[c].tensor];
      partial[c] = cpu::chunk_sum_of_squares(x.scalar_type() == kFloat64, x.data_ptr(), chunks[c].begin, chunks[c].end);
    }
  });
  for (size_t c = 0; c < chunks.size(); ++c) sums[chunks[c].tensor] += partial[c];  // in chunk order
  return sums;
}

}  // namespace ember::ops
