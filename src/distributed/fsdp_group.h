// FSDP internals shared by fully_shard (fsdp.cpp) and the state dicts and checkpoints
// (fsdp_checkpoint.cpp).
#pragma once
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/distributed/collectives.h"
#include "ember/distributed/fsdp.h"
#include "ember/storage.h"

namespace ember::distributed::fsdp {

// One parameter of a group: the module's tensor `param` shows either rows [0, local_rows) of
// `padded_shard` or the gathered parameter in `unsharded_storage`.
struct ShardedParameter {
  Tensor param;
  std::string name;  // relative to the fully_shard module
  std::vector<int64_t> full_sizes;
  ScalarType dtype = kFloat32;  // of the shard: the parameter's own
  int64_t rows_per_rank = 0;
  int64_t local_rows = 0;
  int64_t row_numel = 0;
  int64_t offset = 0;             // of the padded shard in a rank's flat buffer, in elements
  Tensor padded_shard;            // [rows_per_rank, ...]; rows from local_rows on stay zero
  Storage unsharded_storage;      // the gathered parameter; 0 bytes while sharded
  Tensor sharded_grad;            // the shard's .grad while the parameter is gathered
  Tensor unsharded_grad;          // taken from .grad by the post-accumulate-grad hook
  Tensor accumulated_grad;        // unsharded, in the reduce dtype, summed without sync
  bool reduced = false;           // this backward's reduce-scatter carried a gradient for it
  bool hooked = false;            // requires_grad when fully_shard installed its hook
  RemovableHandle gradient_hook;

  int64_t rows() const { return full_sizes[0]; }
  int64_t shard_numel() const { return rows_per_rank * row_numel; }
  // Rank r's chunk of the full parameter: rows [first_row(r), first_row(r) + rows_of(r)).
  int64_t first_row(int rank) const { return std::min(rows(), rank * rows_per_rank); }
  int64_t rows_of(int rank) const { return std::clamp(rows() - rank * rows_per_rank, int64_t{0}, rows_per_rank); }
  Tensor local_shard() const { return padded_shard.narrow(0, 0, local_rows); }
  bool requires_grad() const { return param.requires_grad(); }
};

// What the groups under one root share: the order of their forwards, recorded in the first
// forward and used to prefetch, and the end of a backward pass.
struct Context {
  std::vector<std::weak_ptr<ParamGroup>> groups;  // the root first
  std::vector<std::weak_ptr<ParamGroup>> pre_forward_order, post_forward_order;
  bool recording = true;
  bool final_callback_queued = false;
};

class ParamGroup : public std::enable_shared_from_this<ParamGroup> {
 public:
  ParamGroup(nn::Module& module, std::vector<ShardedParameter> params, const FSDPOptions& options,
             std::shared_ptr<ProcessGroup> group, ScalarType param_dtype, ScalarType reduce_dtype);
  ~ParamGroup();

  // Called once after construction: the hooks need weak_from_this.
  void install_gradient_hooks();

  void unshard();
  void wait_for_unshard();
  void reshard();

  void pre_forward(std::vector<Tensor>& inputs);
  void post_forward(std::vector<Tensor>& outputs);
  void pre_backward();
  void on_gradient_accumulated(size_t index);

  nn::Module& module() const { return *module_; }
  bool is_sharded() const { return state_ == State::Sharded; }
  const std::vector<ShardedParameter>& params() const { return params_; }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }
  void set_requires_gradient_sync(bool value) { requires_gradient_sync_ = value; }
  void set_reshard_after_forward(bool value) { reshard_after_forward_ = value; }
  void set_reduce_scatter_group(std::shared_ptr<ProcessGroup> group) {
    reduce_scatter_group_ = group ? std::move(group) : group_;
  }

 private:
  enum class State { Sharded, Gathering, Unsharded };

  void lazy_init();
  // Throws when a parameter was replaced (set_data, Module::to) or changed requires_grad
  // after fully_shard: the group would gather a stale shard or lose the gradient.
  void check_parameters_unchanged() const;
  // After a forward or backward pass that threw: the pass's partial gradients dropped,
  // pending reduce-scatters waited for, the parameters sharded, the counters reset.
  void recover_from_failed_pass();
  // Issues the all-gather of the group `step` places from this one in `order`.
  void prefetch(const std::vector<std::weak_ptr<ParamGroup>>& order, int step) const;
  void register_pre_backward(std::vector<Tensor>& outputs);
  void queue_end_of_backward();
  void post_backward();
  void reduce_scatter_gradients();
  // Sets the reduced shards as .grad (after the pass's last reduce-scatter was issued).
  void finish_backward();
  static void end_of_backward(const std::shared_ptr<Context>& context);

  nn::Module* module_;
  std::vector<ShardedParameter> params_;
  std::shared_ptr<ProcessGroup> group_, reduce_scatter_group_;
  int world_, rank_;
  ScalarType param_dtype_, reduce_dtype_;
  int64_t per_rank_numel_ = 0;
  bool cast_forward_inputs_;
  bool reshard_after_forward_;
  bool requires_gradient_sync_ = true;
  bool is_root_ = false;
  std::shared_ptr<Context> context_;

  State state_ = State::Sharded;
  Work all_gather_work_;
  Tensor all_gather_output_;
  bool reduce_scatter_pending_ = false;
  Work reduce_scatter_work_;
  Tensor reduce_scatter_output_;
  // This backward pass: the group was gathered for it, how many gradients arrived, reduced.
  bool in_backward_ = false;
  size_t gradients_expected_ = 0;  // parameters with a post-accumulate-grad hook
  size_t gradients_ready_ = 0;
  bool post_backward_done_ = false;
};

// The group owning `param` and its entry there, when a fully_shard took it.
struct ParameterShard {
  std::shared_ptr<ParamGroup> group;
  const ShardedParameter* parameter = nullptr;
};
std::optional<ParameterShard> find_shard(const Tensor& param);

}  // namespace ember::distributed::fsdp
