// The CTC loss op behind F::ctc_loss: argument checks as PyTorch's
// (aten/src/ATen/native/LossCTC.cpp) and the kernels of src/cpu/ctc_loss.h for the
// per-sequence losses and their gradient. F::ctc_loss (src/nn/loss/ctc_loss.cpp) handles the
// unbatched form and the reduction.
#include "ops/ctc_loss.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "autograd/function.h"
#include "core/tensor_impl.h"
#include "cpu/ctc_loss.h"
#include "ember/autograd.h"
#include "ember/functions.h"

namespace ember::ops {
namespace {

// Integer lengths [N] as int64 values.
std::vector<int64_t> lengths_of(const Tensor& lengths, int64_t batch, const char* what) {
  EMBER_CHECK(is_integral(lengths.scalar_type()) && lengths.scalar_type() != kBool, "ctc_loss", what,
              " must be integral (an integer tensor), got ", dtype_name(lengths.scalar_type()));
  EMBER_CHECK(lengths.dim() == 1 && lengths.size(0) == batch, "ctc_loss", what, " must have one value per sequence (",
              batch, "), got shape ", lengths.sizes());
  Tensor values = lengths.to(kInt64).contiguous();
  const int64_t* data = values.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + batch);
}

// The label layout of a batch: owned here so that the backward node can keep it.
struct CTCLabels {
  Tensor targets;  // int64, contiguous
  std::vector<int64_t> offsets, input_lengths, target_lengths;

  cpu::CTCProblem bind(cpu::CTCProblem problem, const Tensor& log_probs) const {
    problem.log_probs = log_probs.data_ptr();
    problem.targets = targets.data_ptr<int64_t>();
    problem.target_offsets = offsets.data();
    problem.input_lengths = input_lengths.data();
    problem.target_lengths = target_lengths.data();
    return problem;
  }
};

// The per-sequence losses [N] in log_probs' dtype (float32 or float64), with their backward.
Tensor ctc_sequence_losses(const Tensor& log_probs, const cpu::CTCProblem& problem,
                           std::shared_ptr<const CTCLabels> labels, bool zero_infinity) {
  const ScalarType dtype = log_probs.scalar_type();
  const Tensor x = log_probs.detach().contiguous();
  const int64_t width = 2 * problem.max_target_length + 1;
  Tensor nll = core::make_tensor({problem.batch}, dtype);
  Tensor log_alpha = core::make_tensor({problem.batch, problem.max_time, width}, dtype);
  cpu::ctc_loss_forward(labels->bind(problem, x), nll.data_ptr(), log_alpha.data_ptr());
  if (!autograd::should_record({log_probs})) return nll;
  autograd::SavedTensor saved_x(x), saved_nll(nll, true), saved_alpha(log_alpha);
  autograd::record("CtcLossBackward", {log_probs}, {nll},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>&) -> std::vector<Tensor> {
                     EMBER_CHECK(!is_grad_enabled(), "ctc_loss",
                                 "double backward (create_graph=true) is not supported");
                     const Tensor g = grads[0].to(dtype).contiguous();
                     const Tensor lp = saved_x.get();
                     Tensor grad = core::make_tensor(lp.sizes(), dtype);
                     cpu::ctc_loss_backward(labels->bind(problem, lp), g.data_ptr(), saved_nll.get().data_ptr(),
                                            saved_alpha.get().data_ptr(), zero_infinity, grad.data_ptr());
                     return {grad};
                   });
  return nll;
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  const char* op = "ctc_loss";
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  EMBER_CHECK(blank >= 0 && blank < C, op, "blank ", blank, " must be a class index within [0, ", C, ")");
  EMBER_CHECK(is_integral(targets.scalar_type()) && targets.scalar_type() != kBool, op,
              "targets must be an integer tensor, got ", dtype_name(targets.scalar_type()));
  const auto in_lengths = lengths_of(input_lengths, N, "input_lengths");
  const auto tg_lengths = lengths_of(target_lengths, N, "target_lengths");

  std::vector<int64_t> offsets(static_cast<size_t>(N));
  int64_t max_target_length = 0, total = 0;
  for (int64_t b = 0; b < N; ++b) {
    EMBER_CHECK(in_lengths[b] >= 0 && in_lengths[b] <= T, op, "input_lengths[", b, "] = ", in_lengths[b],
                " must be within [0, ", T, "] (T, the length of log_probs)");
    EMBER_CHECK(tg_lengths[b] >= 0, op, "target_lengths[", b, "] = ", tg_lengths[b], " must not be negative");
    max_target_length = std::max(max_target_length, tg_lengths[b]);
    total += tg_lengths[b];
  }
  Tensor flat_targets = targets.to(kInt64).contiguous();
  if (targets.dim() == 1) {  // concatenated targets
    EMBER_CHECK(targets.size(0) == total, op, "1-D (concatenated) targets must hold sum(target_lengths) = ", total,
                " labels, got ", targets.size(0));
    for (int64_t b = 0, position = 0; b < N; position += tg_lengths[b], ++b) offsets[b] = position;
  } else {
    EMBER_CHECK(targets.dim() == 2 && targets.size(0) == N, op, "padded targets must be [N, S] with N = ", N,
                ", got shape ", targets.sizes());
    EMBER_CHECK(targets.size(1) >= max_target_length, op, "Expected tensor to have size at least ",
                max_target_length, " at dimension 1, but got size ", targets.size(1),
                " for the padded targets [N, S] (S >= max(target_lengths))");
    for (int64_t b = 0; b < N; ++b) offsets[b] = b * targets.size(1);
  }
  const int64_t* label_data = flat_targets.data_ptr<int64_t>();
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t i = 0; i < tg_lengths[b]; ++i) {
      const int64_t label = label_data[offsets[b] + i];
      EMBER_CHECK(label >= 0 && label < C, op, "target ", label, " of sequence ", b, " (position ", i,
                  ") is not a class index within [0, ", C, ")");
      // PyTorch documents this as invalid but does not check it (its gradient then differs
      // from the loss's derivative at the last step).
      EMBER_CHECK(label != blank, op, "target ", label, " of sequence ", b, " (position ", i,
                  ") is the blank index; targets must not contain blank");
    }
  }

  const ScalarType compute = log_probs.scalar_type() == kFloat64 ? kFloat64 : kFloat32;
  cpu::CTCProblem problem;
  problem.dtype = compute;
  problem.max_time = T;
  problem.batch = N;
  problem.classes = C;
  problem.max_target_length = max_target_length;
  problem.blank = blank;
  auto labels = std::make_shared<const CTCLabels>(CTCLabels{flat_targets, offsets, in_lengths, tg_lengths});
  Tensor losses = ctc_sequence_losses(log_probs.to(compute), problem, labels, zero_infinity);
  if (zero_infinity) {
    losses = where(losses == std::numeric_limits<double>::infinity(), zeros({}, compute), losses);
  }
  return losses;
}

}  // namespace ember::ops
