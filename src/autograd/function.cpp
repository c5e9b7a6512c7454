#include "autograd/function.h"

#include <atomic>

#include "core/graph_capture.h"
#include "ember/autograd/anomaly_mode.h"
#include "ember/functions.h"

namespace ember {
namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_inference_mode = false;
}

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled) : previous_inference_(t_inference_mode), previous_grad_(t_grad_enabled) {
  t_inference_mode = enabled;
  t_grad_enabled = !enabled;
}

InferenceMode::~InferenceMode() {
  t_inference_mode = previous_inference_;
  t_grad_enabled = previous_grad_;
}

bool InferenceMode::is_enabled() { return t_inference_mode; }

namespace autograd {

SavedTensor::SavedTensor(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  EMBER_CHECK(!t.is_inference(), "autograd",
              "inference tensors cannot be saved for backward (shape ", t.sizes(),
              "); clone() the tensor outside InferenceMode to get a normal tensor and use that in autograd");
  tensor_ = is_output ? t.detach() : t;
  version_ = t._version();
}

Tensor SavedTensor::get() const {
  if (tensor_.defined() && tensor_._version() != version_) {
    EMBER_FAIL("autograd",
               "one of the tensors needed for gradient computation has been modified by an in-place operation: "
               "saved at version ",
               version_, ", now at version ", tensor_._version(), " (shape ", tensor_.sizes(), ")");
  }
  return tensor_;
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  EMBER_CHECK(fn_ != nullptr, "backward",
              "trying to backward through the graph a second time (in ", name_,
              "); pass retain_graph=true to the first backward");
  std::vector<bool> needs(next_edges.size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = next_edges[i].is_valid();
  return fn_(grads, needs);
}

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool should_record(std::initializer_list<Tensor> inputs) {
  if (!is_grad_enabled()) return false;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

namespace {

// Accumulates into the .grad of a leaf.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor& g = grads[0];
    if (!g.defined()) return {};
    AutogradMeta& meta = leaf_->autograd_meta();
    if (!meta.grad.defined()) {
      // Own the gradient: steal it if nothing else refers to it, else copy.
      bool unique = g.impl().use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous() && !g.requires_grad();
      meta.grad = is_grad_enabled() ? g : (unique ? g : g.clone());
      if (!is_grad_enabled()) meta.grad = meta.grad.detach();
      if (core::Capture* capture = core::active_capture()) core::note_grad_assigned(*capture, leaf_);
    } else if (is_grad_enabled()) {
      meta.grad = meta.grad + g;  // create_graph: keep the graph of the accumulated gradient
    } else {
      meta.grad.add_(g);
    }
    meta.post_accumulate_grad_hooks.run(Tensor(leaf_));
    return {};
  }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl* impl = t.unsafeGetTensorImpl();
  AutogradMeta& meta = impl->autograd_meta();
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  auto acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl());
    acc->outputs.push_back({t.sizes(), t.scalar_type()});
    acc->sequence_nr = UINT64_MAX;  // leaves run last among ready nodes
    if (meta.hooks) acc->tensor_pre_hooks.emplace_back(0, meta.hooks);
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& meta = t.unsafeGetTensorImpl()->autograd_meta();
  meta.requires_grad = true;
  // Hooks registered so far stay with the old node: they see the gradient of the value
  // before an in-place change; later ones go to the new node (PyTorch's rule).
  if (meta.grad_fn != node) meta.hooks = nullptr;
  meta.grad_fn = node;
  meta.output_nr = output_nr;
  if (node->outputs.size() <= output_nr) node->outputs.resize(output_nr + 1);
  node->outputs[output_nr] = {t.sizes(), t.scalar_type()};
  if (meta.retains_grad) node->retained.emplace_back(output_nr, t.impl());
}

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFunction fn) {
  if (!should_record(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(fn));
  node->sequence_nr = next_sequence_nr();
  if (AnomalyMode::is_enabled()) node->anomaly_trace = anomaly_trace(forward_op_name(name), inputs);
  node->next_edges.reserve(inputs.size());
  for (const auto& t : inputs) node->next_edges.push_back(gradient_edge(t));
  node->outputs.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !is_floating_point(outputs[i].scalar_type())) continue;
    set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
}

void check_inplace(const Tensor& t, const char* op, const std::vector<Tensor>& others) {
  core::check_writable(t, op);
  EMBER_CHECK(!t.is_inference() || InferenceMode::is_enabled(), op,
              "in-place update to an inference tensor (shape ", t.sizes(),
              ") outside InferenceMode is not allowed; clone() it to get a normal tensor first");
  // An expanded tensor would have one element updated once per alias (x.expand(...).add_(1)).
  for (int64_t d = 0; d < t.dim(); ++d) {
    EMBER_CHECK(t.size(d) <= 1 || t.stride(d) != 0, op,
                "unsupported operation: more than one element of the written-to tensor (shape ", t.sizes(),
                ", strides ", t.strides(), ") refers to a single memory location; clone() it first");
  }
  if (!is_grad_enabled()) return;
  if (t.requires_grad() && t.is_leaf()) {
    EMBER_FAIL(op, "a leaf tensor that requires grad (shape ", t.sizes(),
               ") is used in an in-place operation; wrap it in NoGradGuard or clone() it");
  }
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  bool base_requires_grad = impl->view_base && impl->view_base->autograd && impl->view_base->autograd->requires_grad;
  if (impl->view_base && (base_requires_grad || should_record(others))) {
    EMBER_FAIL(op, "in-place operation on a view of a tensor that requires grad (view shape ", t.sizes(),
               ") is not supported; compute the result out of place (cat, where, index_add) instead");
  }
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes.vec()) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (sizes[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor out = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  return out.reshape(sizes);
}

}  // namespace autograd
}  // namespace ember
