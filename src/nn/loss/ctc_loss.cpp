// F::ctc_loss: the unbatched form and the reduction (kMean: each loss over its target length,
// at least 1, then the mean) around the CTC op of src/ops/ctc_loss.cpp.
#include "core/record_op.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ops/ctc_loss.h"

namespace ember::nn::functional {

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options) {
  const char* op = "ctc_loss";
  EMBER_RECORD_OP(op, log_probs, targets);
  EMBER_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, op,
              "log_probs must be [T, N, C] (or [T, C] unbatched), got shape ", log_probs.sizes());
  EMBER_CHECK(log_probs.is_floating_point(), op, "log_probs must be floating point, got ",
              dtype_name(log_probs.scalar_type()));
  const bool batched = log_probs.dim() == 3;
  if (!batched) {
    EMBER_CHECK(targets.dim() == 1 && input_lengths.dim() <= 1 && target_lengths.dim() <= 1, op,
                "unbatched log_probs [T, C] need 1-D targets and 0-dim lengths, got targets ", targets.sizes(),
                ", input_lengths ", input_lengths.sizes(), ", target_lengths ", target_lengths.sizes());
    Tensor out = ctc_loss(log_probs.unsqueeze(1), targets.unsqueeze(0), input_lengths.reshape({1}),
                          target_lengths.reshape({1}), options);
    return options.reduction() == kNone ? out.squeeze(0) : out;
  }
  EMBER_CHECK(options.reduction() != kBatchMean, op, "reduction 'batchmean' is only supported by kl_div");
  const ScalarType dtype = log_probs.scalar_type();
  const Tensor losses = ops::ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank(),
                                      options.zero_infinity());
  switch (options.reduction()) {
    case kNone:
      return losses.to(dtype);
    case kSum:
      return losses.sum().to(dtype);
    default: {
      const Tensor divisors = target_lengths.to(kInt64).clamp_min(1).to(losses.scalar_type());
      return (losses / divisors).mean().to(dtype);
    }
  }
}

}  // namespace ember::nn::functional
