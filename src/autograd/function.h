// Building blocks for ops that record backward functions (internal).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_impl.h"
#include "ember/autograd.h"

namespace ember::autograd {

// A tensor kept for backward, with the version it had: an in-place change before backward
// is an error, as in PyTorch. Outputs are saved detached so the graph holds no cycle.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t, bool is_output = false);
  Tensor get() const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
};

// grads: one per forward output; needs[i]: whether input i wants a gradient.
using BackwardFunction = std::function<std::vector<Tensor>(std::vector<Tensor>& grads, const std::vector<bool>& needs)>;

class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, BackwardFunction fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override { fn_ = nullptr; }

 private:
  std::string name_;
  BackwardFunction fn_;
};

// Makes `view` (sharing `base`'s storage) a view of `base` for autograd: its base is
// `base`'s base, it is an inference tensor when `base` is, and its CreationMeta is
// `creation_meta` unless `base` is a view made other than by DEFAULT (that kind carries over).
void mark_view_of(const Tensor& view, const Tensor& base, CreationMeta creation_meta);
// The CreationMeta of a view made now: INFERENCE_MODE, NO_GRAD_MODE or DEFAULT.
CreationMeta creation_meta_for_current_mode();

// True when grad mode is on, some input requires grad and some input is not an inference
// tensor (an op on inference tensors alone records nothing, as libtorch's dispatch skips
// autograd for tensors without its key).
bool should_record(const std::vector<Tensor>& inputs);
bool should_record(std::initializer_list<Tensor> inputs);

// Attaches a backward node for `inputs` to `outputs` (does nothing if !should_record).
void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFunction fn);

// The edge a gradient for `t` flows into: its grad_fn, or its accumulator if it is a leaf
// that requires grad; invalid otherwise.
Edge gradient_edge(const Tensor& t);

// Makes `t` the output of `node` (output number `output_nr`) after an in-place op.
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);

// For in-place ops writing into `t` from `others`: throws if `t` is read-only, expanded
// (several elements share memory), or autograd cannot follow the change (a leaf requiring
// grad, or a view whose base would need the gradient).
void check_inplace(const Tensor& t, const char* op, const std::vector<Tensor>& others = {});

// Throws if `view` is a view made other than by DEFAULT whose base requires grad and was
// modified in place since (libtorch's indirect handle_view_on_rebase, run by grad_fn()).
void check_view_not_rebased(const Tensor& view);

// Reduces a broadcast gradient back to `sizes` by summing the expanded dims.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);

uint64_t next_sequence_nr();

// Runs node.tensor_pre_hooks on the gradients arriving at `node` (Tensor::register_hook).
void run_tensor_pre_hooks(const Node& node, std::vector<Tensor>& grads);

// Anomaly mode: the forward op a node name stands for ("DivBackward" -> "div", "sqrt" ->
// "sqrt"), and a node's description, the forward op with where each input came from
// ("div(sub(leaf, constant), leaf)": the ops that made them, two levels deep, leaves and
// constants).
std::string forward_op_name(const std::string& node_name);
std::string anomaly_trace(const std::string& forward_op, const std::vector<Tensor>& inputs);

}  // namespace ember::autograd
