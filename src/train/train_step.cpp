// The training step (forward, backward, clipping, optimizer) and the learning-rate schedule.
#include "train/train_step.h"

#include <cmath>
#include <optional>

#include "ember/ember.h"

namespace ember::train {

double learning_rate(int64_t step, int64_t warmup, int64_t total, double lr, double min_lr) {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / std::max<int64_t>(1, total - warmup));
  return min_lr + (lr - min_lr) * 0.5 * (1 + std::cos(M_PI * progress));
}

optim::AdamW make_optimizer(const nn::Module& model, double lr, double weight_decay) {
  std::vector<Tensor> decay, no_decay;
  for (const auto& item : model.named_parameters())
    if (item.value().requires_grad()) (item.value().dim() >= 2 ? decay : no_decay).push_back(item.value());
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(lr).weight_decay(weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(lr).weight_decay(0)));
  return optim::AdamW(std::move(groups), optim::AdamWOptions(lr));
}

optim::AdamW make_optimizer(models::GPT& model, double lr, double weight_decay) {
  return make_optimizer(*model, lr, weight_decay);
}

ShardedTraining shard_for_training(models::GPT& model, bool separate_reduce_scatter) {
  const size_t blocks = model->layers->size();
  for (size_t i = 0; i < blocks; ++i)
    distributed::fsdp::fully_shard(*model->layers->ptr(i), {.reshard_after_forward = i + 1 < blocks});
  ShardedTraining sharded{distributed::fsdp::fully_shard(model)};
  sharded.root.set_separate_reduce_scatter_group(separate_reduce_scatter);
  return sharded;
}

double mean_over_ranks(double value) {
  Tensor total = full({}, value, kFloat64);
  distributed::all_reduce(total, distributed::ReduceOp::AVG);
  return total.item<double>();
}

bool same_on_all_ranks(int64_t value) {
  // The largest value and the largest negated one: equal magnitudes when all agree.
  Tensor extremes = tensor({value, -value}, kInt64);
  distributed::all_reduce(extremes, distributed::ReduceOp::MAX);
  return extremes[0].item<int64_t>() == value && extremes[1].item<int64_t>() == -value;
}

StepResult train_step(models::GPT& model, optim::AdamW& optimizer, int64_t accum,
                      const std::function<data::Batch(int64_t)>& batch_of, double clip,
                      const models::LossOptions& loss_options, const ShardedTraining* sharded) {
  const LossOf loss_of = [&](const data::Batch& b) {
    return model.call(&models::GPTImpl::loss, b.inputs, b.targets, b.doc_ids, loss_options);
  };
  return train_step(optimizer, *model, accum, batch_of, loss_of, clip, sharded);
}

StepResult train_step(optim::AdamW& optimizer, const nn::Module& model, int64_t accum,
                      const std::function<data::Batch(int64_t)>& batch_of, const LossOf& loss_of, double clip,
                      const ShardedTraining* sharded) {
  StepResult result;
  {
    profiler::Range range("zero_grad");
    optimizer.zero_grad();
  }
  Tensor loss_over_ranks;
  distributed::Work loss_averaged;
  for (int64_t micro = 0; micro < accum; ++micro) {
    const bool last = micro == accum - 1;
    if (sharded) sharded->root.set_requires_gradient_sync(last);
    std::optional<profiler::Range> range(std::in_place, "data");
    data::Batch b = batch_of(micro);
    range.emplace("forward");
    Tensor loss = loss_of(b) / static_cast<double>(accum);
    result.loss += loss.item<double>();
    if (sharded && last) {
      // Averaged over the ranks while backward runs, rather than after it on the critical path.
      loss_over_ranks = full({}, result.loss, kFloat64);
      loss_averaged = distributed::all_reduce(loss_over_ranks, distributed::ReduceOp::AVG, {.async_op = true});
    }
    range.emplace("backward");
    loss.backward();
  }
  if (sharded) {
    loss_averaged.wait();
    result.loss = loss_over_ranks.item<double>();
  }
  if (clip > 0) {
    profiler::Range range("clip_grad_norm_");
    result.grad_norm = sharded ? distributed::fsdp::clip_grad_norm_(model.parameters(), clip)
                               : nn::utils::clip_grad_norm_(model.parameters(), clip);
  }
  profiler::Range range("optimizer.step");
  optimizer.step();
  return result;
}

}  // namespace ember::train
