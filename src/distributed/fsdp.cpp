// FSDP2-style parameter groups: dim-0 shards with padding, flat all-gather and
// reduce-scatter buffers, and the module and autograd hooks that drive them.
//
// Note [Swapping sharded and gathered parameters]
// A module reads its parameters through tensors it holds itself (Linear::weight), so a
// parameter cannot be replaced by another tensor: each one is switched in place with
// set_data between its local shard and the gathered parameter, which lives in a Storage kept
// for the whole run and reallocated (to 0 bytes when sharded). Autograd saved the parameter
// tensor (or views of that storage) in forward; backward gathers the group again before its
// nodes run, so they read the gathered values. The copy into the storage is a plain memcpy,
// which leaves the storage's version alone and the saved tensors' version checks valid. The
// gathered parameter's .grad is taken by a post-accumulate-grad hook as soon as backward
// accumulates it; the shard's .grad is kept aside while the parameter is gathered.
#include "distributed/fsdp_group.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "autograd/function.h"
#include "autograd/low_precision_copy.h"
#include "core/tensor_impl.h"
#include "ember/autograd.h"
#include "ember/distributed/collectives.h"
#include "ember/functions.h"

namespace ember::distributed::fsdp {

namespace {

constexpr const char* kOp = "fully_shard";

// The group each fully_shard module got, so that outer calls find inner ones.
std::mutex g_registry_mutex;
std::unordered_map<const nn::Module*, std::weak_ptr<ParamGroup>> g_registry;

std::shared_ptr<ParamGroup> group_of(const nn::Module* module) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto it = g_registry.find(module);
  return it == g_registry.end() ? nullptr : it->second.lock();
}

std::vector<std::shared_ptr<ParamGroup>> all_groups() {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  std::vector<std::shared_ptr<ParamGroup>> groups;
  for (const auto& [module, weak] : g_registry)
    if (auto group = weak.lock()) groups.push_back(group);
  return groups;
}

// The groups of the fully_shard modules strictly inside `module`, in module order.
std::vector<std::shared_ptr<ParamGroup>> groups_inside(const nn::Module& module) {
  std::vector<std::shared_ptr<ParamGroup>> groups;
  for (const auto& inner : module.modules(/*include_self=*/false))
    if (auto group = group_of(inner.get())) groups.push_back(group);
  return groups;
}

}  // namespace

std::optional<ParameterShard> find_shard(const Tensor& param) {
  // The parameter itself, or a detached alias of it (a state_dict entry).
  auto same = [&](const Tensor& p) {
    return p.is_same(param) || (p.storage().is_alias_of(param.storage()) &&
                                p.storage_offset() == param.storage_offset() && p.sizes() == param.sizes());
  };
  for (const auto& group : all_groups()) {
    for (const ShardedParameter& p : group->params())
      if (same(p.param)) return ParameterShard{group, &p};
  }
  return std::nullopt;
}

namespace {

int64_t product(const std::vector<int64_t>& sizes, size_t from) {
  int64_t result = 1;
  for (size_t d = from; d < sizes.size(); ++d) result *= sizes[d];
  return result;
}

// Takes this rank's rows of `param` (torch.chunk's split, padded to rows_per_rank) and makes
// the parameter show them.
ShardedParameter shard_parameter(const std::string& name, const Tensor& param, int world, int rank) {
  NoGradGuard no_grad;
  ShardedParameter p;
  p.param = param;
  p.name = name;
  p.full_sizes = param.sizes();
  p.dtype = param.scalar_type();
  p.rows_per_rank = (p.rows() + world - 1) / world;
  p.local_rows = p.rows_of(rank);
  p.row_numel = product(p.full_sizes, 1);
  std::vector<int64_t> shard_sizes = p.full_sizes;
  shard_sizes[0] = p.rows_per_rank;
  p.padded_shard = zeros(shard_sizes, p.dtype);
  const int64_t first_row = p.first_row(rank);
  if (p.local_rows > 0) p.local_shard().copy_(param.narrow(0, first_row, p.local_rows));
  Tensor grad = param.grad().defined() ? param.grad().narrow(0, first_row, p.local_rows).clone() : Tensor();
  p.unsharded_storage = Storage::allocate(0);
  param.set_data(p.local_shard());
  Tensor handle = param;
  handle.mutable_grad() = grad;
  return p;
}

void check_floating(std::optional<ScalarType> dtype, const char* what) {
  EMBER_CHECK(!dtype || is_floating_point(*dtype), kOp, "mp_policy.", what, " must be a floating dtype, got ",
              dtype_name(*dtype));
}

}  // namespace

// ---- the group ------------------------------------------------------------------------------

ParamGroup::ParamGroup(nn::Module& module, std::vector<ShardedParameter> params, const FSDPOptions& options,
                       std::shared_ptr<ProcessGroup> group, ScalarType param_dtype, ScalarType reduce_dtype)
    : module_(&module),
      params_(std::move(params)),
      group_(group),
      reduce_scatter_group_(group),
      world_(group->size()),
      rank_(group->rank()),
      param_dtype_(param_dtype),
      reduce_dtype_(reduce_dtype),
      cast_forward_inputs_(options.mp_policy.param_dtype.has_value()),
      reshard_after_forward_(options.reshard_after_forward) {
  for (ShardedParameter& p : params_) {
    p.offset = per_rank_numel_;
    per_rank_numel_ += p.shard_numel();
  }
}

ParamGroup::~ParamGroup() {
  for (ShardedParameter& p : params_) p.gradient_hook.remove();
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  auto it = g_registry.find(module_);
  if (it != g_registry.end() && it->second.expired()) g_registry.erase(it);
}

void ParamGroup::install_gradient_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;
    params_[i].hooked = true;
    ++gradients_expected_;
    params_[i].gradient_hook = params_[i].param.register_post_accumulate_grad_hook(
        [weak = weak_from_this(), i](const Tensor&) {
          if (auto group = weak.lock()) group->on_gradient_accumulated(i);
        });
  }
}

void ParamGroup::check_parameters_unchanged() const {
  for (const ShardedParameter& p : params_) {
    EMBER_CHECK(p.param.storage().is_alias_of(p.padded_shard.storage()) && p.param.scalar_type() == p.dtype, kOp,
                "parameter '", p.name, "' of ", module_->name(), " was replaced after fully_shard (now ",
                dtype_name(p.param.scalar_type()), " ", p.param.sizes(), ", sharded as ", dtype_name(p.dtype),
                "); change parameters before calling fully_shard");
    EMBER_CHECK(p.requires_grad() == p.hooked, kOp, "parameter '", p.name, "' of ", module_->name(),
                " changed requires_grad to ", p.requires_grad() ? "true" : "false",
                " after fully_shard; set requires_grad before calling fully_shard");
  }
}

void ParamGroup::unshard() {
  if (state_ != State::Sharded) return;
  check_parameters_unchanged();
  NoGradGuard no_grad;
  Tensor input = empty({per_rank_numel_}, param_dtype_);
  for (const ShardedParameter& p : params_)
    input.narrow(0, p.offset, p.shard_numel()).view(p.padded_shard.sizes()).copy_(p.padded_shard);
  all_gather_output_ = empty({world_ * per_rank_numel_}, param_dtype_);
  all_gather_work_ = all_gather_into_tensor(all_gather_output_, input, {.group = group_, .async_op = true});
  state_ = State::Gathering;
}

void ParamGroup::wait_for_unshard() {
  if (state_ == State::Sharded) unshard();
  if (state_ != State::Gathering) return;
  all_gather_work_.wait();
  const size_t element = element_size(param_dtype_);
  const char* gathered = static_cast<const char*>(all_gather_output_.data_ptr());
  for (ShardedParameter& p : params_) {
    const size_t row_bytes = static_cast<size_t>(p.row_numel) * element;
    p.unsharded_storage.reallocate(static_cast<size_t>(p.rows()) * row_bytes);
    char* unsharded = static_cast<char*>(p.unsharded_storage.data());
    for (int r = 0; r < world_; ++r) {
      if (p.rows_of(r) == 0) continue;
      std::memcpy(unsharded + static_cast<size_t>(r * p.rows_per_rank) * row_bytes,
                  gathered + static_cast<size_t>(r * per_rank_numel_ + p.offset) * element,
                  static_cast<size_t>(p.rows_of(r)) * row_bytes);
    }
    Tensor param = p.param;
    autograd::drop_low_precision_copy(param);  // the memcpy above keeps the version
    p.sharded_grad = std::exchange(param.mutable_grad(), Tensor());
    param.set_data(core::make_view(p.unsharded_storage, p.full_sizes, core::contiguous_strides(p.full_sizes), 0,
                                   param_dtype_));
  }
  all_gather_output_ = Tensor();
  all_gather_work_ = Work();
  state_ = State::Unsharded;
}

void ParamGroup::reshard() {
  if (state_ == State::Gathering) {
    all_gather_work_.wait();  // its buffers are in use until then
    all_gather_output_ = Tensor();
    all_gather_work_ = Work();
  } else if (state_ == State::Unsharded) {
    for (ShardedParameter& p : params_) {
      Tensor param = p.param;
      param.set_data(p.local_shard());
      param.mutable_grad() = std::move(p.sharded_grad);
      p.sharded_grad = Tensor();
      p.unsharded_storage.reallocate(0);
    }
  }
  state_ = State::Sharded;
}

void ParamGroup::lazy_init() {
  context_ = std::make_shared<Context>();
  is_root_ = true;
  context_->groups.push_back(weak_from_this());
  for (const auto& inner : groups_inside(*module_)) {
    inner->context_ = context_;
    inner->is_root_ = false;
    context_->groups.push_back(inner);
  }
}

void ParamGroup::prefetch(const std::vector<std::weak_ptr<ParamGroup>>& order, int step) const {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i].lock().get() != this) continue;
    const int64_t next = static_cast<int64_t>(i) + step;
    if (next < 0 || next >= static_cast<int64_t>(order.size())) return;
    if (auto group = order[static_cast<size_t>(next)].lock()) group->unshard();
    return;
  }
}

void ParamGroup::pre_forward(std::vector<Tensor>& inputs) {
  if (!context_) lazy_init();
  if (is_root_) {
    // The end-of-backward callback clears the flag: still set, the last backward threw.
    if (context_->final_callback_queued) {
      for (const auto& weak : context_->groups)
        if (auto group = weak.lock()) group->recover_from_failed_pass();
      context_->final_callback_queued = false;
    }
    // Recording starts again when the first forward threw before it ended.
    if (context_->recording) context_->pre_forward_order.clear(), context_->post_forward_order.clear();
  }
  if (context_->recording) context_->pre_forward_order.push_back(weak_from_this());
  // The next group's all-gather is issued before this one is waited for, so that it moves
  // while this one completes and is copied out.
  unshard();
  if (!context_->recording) prefetch(context_->pre_forward_order, +1);
  wait_for_unshard();
  if (!cast_forward_inputs_) return;
  for (Tensor& input : inputs) {
    if (input.defined() && input.is_floating_point() && input.scalar_type() != param_dtype_)
      input = input.to(param_dtype_);
  }
}

void ParamGroup::post_forward(std::vector<Tensor>& outputs) {
  if (context_->recording) context_->post_forward_order.push_back(weak_from_this());
  if (is_root_) context_->recording = false;
  // Without an output FSDP can see (a Tensor, a vector or tuple of them), nothing would gather
  // the parameters again before backward reads them.
  EMBER_CHECK(!is_grad_enabled() || gradients_expected_ == 0 ||
                  std::any_of(outputs.begin(), outputs.end(), [](const Tensor& t) { return t.defined(); }),
              kOp, "the forward of ", module_->name(), " returned no Tensor (nor a vector or tuple of Tensors) ",
              "while gradients are enabled; FSDP needs its outputs to gather the parameters for backward");
  const bool backward_follows = is_grad_enabled() && std::any_of(outputs.begin(), outputs.end(), [](const Tensor& t) {
                                  return t.defined() && t.requires_grad();
                                });
  if (!backward_follows || (reshard_after_forward_ && !is_root_)) reshard();
  if (backward_follows) register_pre_backward(outputs);
}

// The outputs are replaced by aliases whose backward node gathers the group first: every
// gradient into the module's graph passes through it.
void ParamGroup::register_pre_backward(std::vector<Tensor>& outputs) {
  std::vector<Tensor> sources, aliases;
  std::vector<size_t> positions;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
    sources.push_back(outputs[i]);
    aliases.push_back(outputs[i].detach());
    positions.push_back(i);
  }
  std::weak_ptr<ParamGroup> weak = weak_from_this();
  autograd::record("FSDPPreBackward", sources, aliases,
                   [weak](std::vector<Tensor>& grads, const std::vector<bool>&) -> std::vector<Tensor> {
                     if (auto group = weak.lock()) group->pre_backward();
                     return grads;
                   });
  for (size_t k = 0; k < positions.size(); ++k) outputs[positions[k]] = aliases[k];
}

void ParamGroup::queue_end_of_backward() {
  in_backward_ = true;
  if (context_->final_callback_queued) return;
  context_->final_callback_queued = true;
  autograd::queue_callback([context = context_] { end_of_backward(context); });
}

void ParamGroup::pre_backward() {
  queue_end_of_backward();
  unshard();
  prefetch(context_->post_forward_order, -1);
  wait_for_unshard();
}

void ParamGroup::on_gradient_accumulated(size_t index) {
  if (state_ != State::Unsharded || !context_) return;  // not a backward through this group's forward
  queue_end_of_backward();
  ShardedParameter& p = params_[index];
  Tensor param = p.param;
  Tensor grad = std::exchange(param.mutable_grad(), Tensor());
  p.unsharded_grad = p.unsharded_grad.defined() ? p.unsharded_grad + grad : grad;
  if (++gradients_ready_ == gradients_expected_) post_backward();
}

void ParamGroup::post_backward() {
  if (post_backward_done_) return;
  post_backward_done_ = true;
  NoGradGuard no_grad;
  if (requires_gradient_sync_) {
    reduce_scatter_gradients();
  } else {
    for (ShardedParameter& p : params_) {
      if (!p.unsharded_grad.defined()) continue;
      Tensor grad = p.unsharded_grad.to(reduce_dtype_);
      p.accumulated_grad = p.accumulated_grad.defined() ? p.accumulated_grad + grad : grad;
      p.unsharded_grad = Tensor();
    }
  }
  reshard();
}

// One flat reduce-scatter: rank r's chunk holds, for each parameter, the gradient rows of
// its shard r (zero padding past the last row).
void ParamGroup::reduce_scatter_gradients() {
  const bool any_gradient =
      std::any_of(params_.begin(), params_.end(), [](const ShardedParameter& p) { return p.requires_grad(); });
  if (!any_gradient || per_rank_numel_ == 0) return;
  Tensor input = zeros({world_ * per_rank_numel_}, reduce_dtype_);
  for (ShardedParameter& p : params_) {
    Tensor grad = p.unsharded_grad.defined() ? p.unsharded_grad.to(reduce_dtype_) : Tensor();
    if (p.accumulated_grad.defined()) grad = grad.defined() ? grad + p.accumulated_grad : p.accumulated_grad;
    p.unsharded_grad = p.accumulated_grad = Tensor();
    p.reduced = grad.defined();
    if (!p.reduced) continue;
    Tensor rows = grad.reshape({p.rows(), p.row_numel});
    for (int r = 0; r < world_; ++r) {
      const int64_t n = p.rows_of(r);
      if (n == 0) continue;
      input.narrow(0, r * per_rank_numel_ + p.offset, n * p.row_numel)
          .view({n, p.row_numel})
          .copy_(rows.narrow(0, r * p.rows_per_rank, n));
    }
  }
  // AVG divides in float32 on the way out of the reduction: one rounding for bfloat16.
  reduce_scatter_output_ = empty({per_rank_numel_}, reduce_dtype_);
  reduce_scatter_work_ = reduce_scatter_tensor(reduce_scatter_output_, input, ReduceOp::AVG,
                                               {.group = reduce_scatter_group_, .async_op = true});
  reduce_scatter_pending_ = true;
}

void ParamGroup::finish_backward() {
  if (reduce_scatter_pending_) {
    reduce_scatter_work_.wait();
    NoGradGuard no_grad;
    const Tensor& average = reduce_scatter_output_;
    for (ShardedParameter& p : params_) {
      // A parameter no rank had a gradient for keeps an undefined .grad, as without FSDP
      // (optimizers skip it).
      if (!std::exchange(p.reduced, false)) continue;
      std::vector<int64_t> shard_sizes = p.full_sizes;
      shard_sizes[0] = p.local_rows;
      Tensor shard_grad =
          average.narrow(0, p.offset, p.local_rows * p.row_numel).view(shard_sizes).to(p.dtype, false, /*copy=*/true);
      Tensor param = p.param;
      Tensor& grad = param.mutable_grad();
      if (grad.defined()) grad.add_(shard_grad);
      else grad = shard_grad;
    }
    reduce_scatter_output_ = Tensor();
    reduce_scatter_work_ = Work();
    reduce_scatter_pending_ = false;
  }
  reshard();
  in_backward_ = post_backward_done_ = false;
  gradients_ready_ = 0;
}

void ParamGroup::recover_from_failed_pass() {
  if (reduce_scatter_pending_) {
    reduce_scatter_pending_ = false;
    reduce_scatter_output_ = Tensor();
    std::exchange(reduce_scatter_work_, Work()).wait();  // its buffers are in use until then
  }
  for (ShardedParameter& p : params_) {
    p.unsharded_grad = Tensor();
    p.reduced = false;
  }
  reshard();
  in_backward_ = post_backward_done_ = false;
  gradients_ready_ = 0;
}

// Groups whose gradients did not all arrive (unused parameters) reduce what they have, in
// backward order on every rank; then every group waits for its reduce-scatter.
void ParamGroup::end_of_backward(const std::shared_ptr<Context>& context) {
  std::vector<std::shared_ptr<ParamGroup>> order;
  for (auto it = context->post_forward_order.rbegin(); it != context->post_forward_order.rend(); ++it)
    if (auto group = it->lock()) order.push_back(group);
  for (const auto& weak : context->groups) {
    auto group = weak.lock();
    if (group && std::find(order.begin(), order.end(), group) == order.end()) order.push_back(group);
  }
  for (const auto& group : order)
    if (group->in_backward_) group->post_backward();
  for (const auto& group : order) group->finish_backward();
  context->final_callback_queued = false;
}

// ---- fully_shard and the handle -------------------------------------------------------------

FSDPModule fully_shard(nn::Module& module, const FSDPOptions& options) {
  EMBER_CHECK(is_initialized(), kOp, "the process group is not initialized: call init_process_group first");
  std::shared_ptr<ProcessGroup> group = options.group ? options.group : world();
  EMBER_CHECK(group->is_member(), kOp, "rank ", get_rank(), " is not a member of group \"", group->name(),
              "\" (ranks ", group->ranks(), ")");
  EMBER_CHECK(!group_of(&module), kOp, "the module (", module.name(), ") is already sharded: fully_shard was ",
              "applied to it before");
  check_floating(options.mp_policy.param_dtype, "param_dtype");
  check_floating(options.mp_policy.reduce_dtype, "reduce_dtype");

  std::unordered_set<const TensorImpl*> taken_inside;
  for (const auto& inner : groups_inside(module))
    for (const ShardedParameter& p : inner->params()) taken_inside.insert(p.param.unsafeGetTensorImpl());
  std::unordered_map<const TensorImpl*, std::string> taken_outside;
  for (const auto& other : all_groups()) {
    for (const ShardedParameter& p : other->params()) {
      const TensorImpl* impl = p.param.unsafeGetTensorImpl();
      if (!taken_inside.count(impl)) taken_outside.emplace(impl, other->module().name());
    }
  }

  std::vector<std::pair<std::string, Tensor>> owned;
  for (const auto& item : module.named_parameters()) {
    const Tensor& param = item.value();
    const TensorImpl* impl = param.unsafeGetTensorImpl();
    if (taken_inside.count(impl)) continue;
    auto outside = taken_outside.find(impl);
    EMBER_CHECK(outside == taken_outside.end(), kOp, "parameter '", item.key(), "' of ", module.name(),
                " already belongs to the group of a ", outside->second, " that is not inside it; apply ",
                "fully_shard bottom-up (inner modules first)");
    EMBER_CHECK(param.dim() > 0, kOp, "parameter '", item.key(), "' of ", module.name(),
                " is 0-dimensional (shape []): it cannot be sharded on dim 0");
    EMBER_CHECK(param.is_floating_point(), kOp, "parameter '", item.key(), "' of ", module.name(), " has dtype ",
                dtype_name(param.scalar_type()), ": only floating-point parameters can be sharded");
    if (!options.mp_policy.param_dtype && !owned.empty()) {
      const Tensor& first = owned.front().second;
      EMBER_CHECK(param.scalar_type() == first.scalar_type(), kOp, "parameters '", owned.front().first, "' (",
                  dtype_name(first.scalar_type()), ") and '", item.key(), "' (", dtype_name(param.scalar_type()),
                  ") of ", module.name(), " differ in dtype; one all-gather needs one dtype: set ",
                  "mp_policy.param_dtype");
    }
    owned.emplace_back(item.key(), param);
  }

  std::vector<ShardedParameter> params;
  for (const auto& [name, param] : owned) params.push_back(shard_parameter(name, param, group->size(), group->rank()));
  const ScalarType own_dtype = params.empty() ? kFloat32 : params.front().dtype;
  const ScalarType param_dtype = options.mp_policy.param_dtype.value_or(own_dtype);
  const ScalarType reduce_dtype = options.mp_policy.reduce_dtype.value_or(param_dtype);
  auto state = std::make_shared<ParamGroup>(module, std::move(params), options, group, param_dtype, reduce_dtype);
  state->install_gradient_hooks();
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    g_registry[&module] = state;
  }
  module.register_forward_pre_hook([state](nn::Module&, std::vector<Tensor>& inputs) { state->pre_forward(inputs); });
  module.register_forward_hook([state](nn::Module&, const std::vector<Tensor>&, std::vector<Tensor>& outputs) {
    state->post_forward(outputs);
  });
  return FSDPModule(state);
}

std::shared_ptr<ParamGroup> FSDPModule::group(const char* op) const {
  auto group = group_.lock();
  EMBER_CHECK(group != nullptr, op, "the FSDP module is gone (or the handle is empty)");
  return group;
}

namespace {

// This group and, with recurse, the groups inside its module.
std::vector<std::shared_ptr<ParamGroup>> tree(const std::shared_ptr<ParamGroup>& group, bool recurse) {
  std::vector<std::shared_ptr<ParamGroup>> groups{group};
  if (recurse)
    for (auto& inner : groups_inside(group->module())) groups.push_back(inner);
  return groups;
}

}  // namespace

void FSDPModule::unshard(bool async_op) const {
  auto g = group("FSDPModule::unshard");
  g->unshard();
  if (!async_op) g->wait_for_unshard();
}

void FSDPModule::wait_for_unshard() const { group("FSDPModule::wait_for_unshard")->wait_for_unshard(); }

void FSDPModule::reshard() const { group("FSDPModule::reshard")->reshard(); }

void FSDPModule::set_requires_gradient_sync(bool requires_gradient_sync, bool recurse) const {
  for (auto& g : tree(group("FSDPModule::set_requires_gradient_sync"), recurse))
    g->set_requires_gradient_sync(requires_gradient_sync);
}

void FSDPModule::set_reshard_after_forward(bool reshard_after_forward, bool recurse) const {
  for (auto& g : tree(group("FSDPModule::set_reshard_after_forward"), recurse))
    g->set_reshard_after_forward(reshard_after_forward);
}

void FSDPModule::set_separate_reduce_scatter_group(bool separate) const {
  // One new group per communicator in the tree, created in tree order on every rank.
  std::map<const ProcessGroup*, std::shared_ptr<ProcessGroup>> separate_groups;
  for (auto& g : tree(group("FSDPModule::set_separate_reduce_scatter_group"), true)) {
    std::shared_ptr<ProcessGroup> reduce_scatter_group;
    if (separate) {
      auto& created = separate_groups[g->process_group().get()];
      if (!created) created = new_group(g->process_group()->ranks());
      reduce_scatter_group = created;
    }
    g->set_reduce_scatter_group(reduce_scatter_group);
  }
}

nn::Module& FSDPModule::module() const { return group("FSDPModule::module")->module(); }

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm) {
  EMBER_CHECK(max_norm >= 0, "clip_grad_norm_", "max_norm must be non-negative, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  double local_square = 0;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    grads.push_back(p.grad());
    const auto shard = find_shard(p);
    EMBER_CHECK(!shard || shard->group->process_group()->size() == get_world_size(), "clip_grad_norm_",
                "parameter '", shard ? shard->parameter->name : "", "' is sharded over a group of ",
                shard ? shard->group->process_group()->size() : 0, " ranks, not the whole world of ",
                get_world_size(), ": the norm is summed over the default group");
    if (shard || get_rank() == 0) local_square += p.grad().to(kFloat64).square().sum().item<double>();
  }
  Tensor total_square = full({}, local_square, kFloat64);
  all_reduce(total_square);
  const double total_norm = std::sqrt(total_square.item<double>());
  const double clip_coef = std::min(max_norm / (total_norm + 1e-6), 1.0);
  for (Tensor& g : grads) g.mul_(clip_coef);
  return total_norm;
}

}  // namespace ember::distributed::fsdp
