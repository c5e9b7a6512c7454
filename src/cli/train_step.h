// The optimisation step shared by `ember train` and `ember bench train`.
#pragma once
#include <functional>

#include "ember/data/text.h"
#include "ember/models/gpt.h"
#include "ember/optim.h"

namespace ember::cli {

// AdamW with weight decay on the matrices and none on the norm weights.
optim::AdamW make_optimizer(models::GPT& model, double lr, double weight_decay);

struct StepResult {
  double loss = 0;       // mean over the micro-batches, nats per token
  double grad_norm = 0;  // before clipping; 0 when clipping is off
};

// zero_grad, forward and backward of `accum` micro-batches (batch_of(i) gives the i-th),
// gradient clipping to `clip` (0 = off), one optimizer step.
StepResult train_step(models::GPT& model, optim::AdamW& optimizer, int64_t accum,
                      const std::function<data::Batch(int64_t)>& batch_of, double clip,
                      const models::LossOptions& loss_options);

}  // namespace ember::cli
