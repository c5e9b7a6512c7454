// Fully sharded data parallel in the style of PyTorch's FSDP2
// (torch.distributed.fsdp.fully_shard).
//
//   for (auto& block : blocks) fsdp::fully_shard(block, options);  // bottom-up: blocks first,
//   fsdp::FSDPModule root = fsdp::fully_shard(model, options);      // then the root
//   optim::AdamW optimizer(model->parameters(), ...);               // steps on the local shards
//
// Each fully_shard call makes one parameter group: the parameters of the module that no
// fully_shard inside it took. Every parameter is sharded on dim 0 in torch.chunk's way (rank
// r holds rows [r c, (r + 1) c) with c = ceil(dim 0 / world size), fewer or none at the end);
// module.parameters(), the optimizer and .grad see the local shard. Around the module's forward
// (its holder's operator() or call(), see nn::Module's forward hooks) the group's shards are
// gathered with one flat all-gather and swapped into the module's parameter tensors, and
// swapped out again after forward (reshard_after_forward); before the group's backward they
// are gathered again, and once backward has accumulated all their gradients one flat
// reduce-scatter (sum, then divided by the world size) takes the gradients back to shards, set
// as .grad when the backward pass ends. The next group's all-gather is issued while the
// current one computes (forward in the order of the first forward, backward in reverse), and
// reduce-scatters run asynchronously.
//
// Every rank must build the same model and run the same forward and backward passes: the
// collectives of a step pair up across ranks by order.
#pragma once
#include <memory>
#include <optional>

#include "ember/distributed/process_group.h"
#include "ember/dtype.h"
#include "ember/nn/module.h"

namespace ember::distributed::fsdp {

// torch.distributed.fsdp.MixedPrecisionPolicy.
struct MixedPrecisionPolicy {
  // The dtype parameters are gathered in, in which forward and backward compute; floating
  // Tensor arguments of the module's forward are cast to it. nullopt: the parameters' own.
  std::optional<ScalarType> param_dtype{};
  // The dtype gradients are reduced in. nullopt: param_dtype, else the parameters' own.
  std::optional<ScalarType> reduce_dtype{};
};

struct FSDPOptions {
  // Free the gathered parameters after forward and gather them again for backward. The root
  // keeps its parameters gathered from forward to backward either way, as in PyTorch.
  bool reshard_after_forward = true;
  MixedPrecisionPolicy mp_policy{};
  std::shared_ptr<ProcessGroup> group{};  // null: the default group
};

class ParamGroup;

// The handle fully_shard returns (the methods PyTorch adds to an FSDPModule).
class FSDPModule {
 public:
  FSDPModule() = default;
  explicit FSDPModule(std::weak_ptr<ParamGroup> group) : group_(std::move(group)) {}

  // Gathers the group's parameters into the module (the module then sees full parameters);
  // with async_op the all-gather is only issued and the next forward, unshard() or
  // wait_for_unshard() installs them.
  void unshard(bool async_op = false) const;
  void wait_for_unshard() const;
  // Back to the local shards (frees the gathered parameters).
  void reshard() const;

  // false: backward keeps the gradients unsharded and accumulates them locally, no
  // reduce-scatter (gradient accumulation); the next backward with true reduces the sum.
  // With recurse, also every fully_shard module inside this one.
  void set_requires_gradient_sync(bool requires_gradient_sync, bool recurse = true) const;
  void set_reshard_after_forward(bool reshard_after_forward, bool recurse = true) const;
  // true: reduce-scatters of this group and every group inside it run on a second process
  // group of the same ranks, so they overlap the next all-gather instead of queueing behind
  // it on one communicator. Creates that group: every rank must call it, in the same order.
  void set_separate_reduce_scatter_group(bool separate) const;

  nn::Module& module() const;

 private:
  std::shared_ptr<ParamGroup> group(const char* op) const;
  std::weak_ptr<ParamGroup> group_;
};

// Shards `module`'s parameters that no inner fully_shard took and installs the hooks that
// gather and reduce them. Throws ember::Error when the module was sharded before, when one of
// its parameters belongs to the group of a module outside it (apply fully_shard bottom-up),
// for a 0-dimensional or non-floating parameter, for parameters of different dtypes without
// mp_policy.param_dtype, and when the process group is not initialised.
FSDPModule fully_shard(nn::Module& module, const FSDPOptions& options = {});

template <typename ModuleType>
FSDPModule fully_shard(const nn::ModuleHolder<ModuleType>& module, const FSDPOptions& options = {}) {
  return fully_shard(*module.get(), options);
}

// nn::utils::clip_grad_norm_ (2-norm) over the full gradients of parameters that fully_shard
// split across the ranks of the default group: the squares of every rank's shards are summed
// (a parameter no fully_shard took counts once). Every rank calls it; returns the total norm.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm);

}  // namespace ember::distributed::fsdp
