// The optimisation step and schedule shared by `ember train` and the bench suites (train, fsdp).
#pragma once
#include <functional>

#include "ember/data/text.h"
#include "ember/distributed/fsdp.h"
#include "ember/models/gpt.h"
#include "ember/optim.h"

namespace ember::train {

// Linear warmup over `warmup` steps to `lr`, then cosine decay to `min_lr` at step `total`.
double learning_rate(int64_t step, int64_t warmup, int64_t total, double lr, double min_lr);

// AdamW over the parameters that require grad, with weight decay on the matrices and none on
// the vectors (norm weights, biases).
optim::AdamW make_optimizer(const nn::Module& model, double lr, double weight_decay);
optim::AdamW make_optimizer(models::GPT& model, double lr, double weight_decay);

struct StepResult {
  double loss = 0;       // mean over the micro-batches, nats per token
  double grad_norm = 0;  // before clipping; 0 when clipping is off
};

// `ember train --fsdp`: the model's root fully_shard handle. Gradients are reduced on the
// last micro-batch only, losses are averaged and gradients clipped over all ranks.
struct ShardedTraining {
  distributed::fsdp::FSDPModule root;
};

// fully_shard on every block, then on the model; reduce-scatter on its own group or on the
// all-gather's. The last block keeps its parameters gathered from forward to backward (as
// torchtitan does): its backward starts right after the loss, so resharding it would only
// add an all-gather that nothing overlaps.
ShardedTraining shard_for_training(models::GPT& model, bool separate_reduce_scatter);

// The mean over the ranks of the default group of each rank's `value`.
double mean_over_ranks(double value);
// Whether every rank of the default group passed the same `value`.
bool same_on_all_ranks(int64_t value);

// The loss of one micro-batch: the model's forward.
using LossOf = std::function<Tensor(const data::Batch&)>;

// zero_grad, forward and backward of `accum` micro-batches (batch_of(i) gives the i-th, this
// rank's rows of it under FSDP), clipping the gradients of the model's parameters to `clip`
// (0 = off), one optimizer step.
StepResult train_step(optim::AdamW& optimizer, const nn::Module& model, int64_t accum,
                      const std::function<data::Batch(int64_t)>& batch_of, const LossOf& loss_of, double clip,
                      const ShardedTraining* sharded = nullptr);
// The GPT's step: its loss through the holder (FSDP's hooks gather the root's parameters around it).
StepResult train_step(models::GPT& model, optim::AdamW& optimizer, int64_t accum,
                      const std::function<data::Batch(int64_t)>& batch_of, double clip,
                      const models::LossOptions& loss_options, const ShardedTraining* sharded = nullptr);

}  // namespace ember::train
