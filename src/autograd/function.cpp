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

namespace impl {
namespace {
DispatchKeySet tls_included() {
  return t_inference_mode ? DispatchKeySet() : DispatchKeySet(DispatchKey::ADInplaceOrView);
}
DispatchKeySet tls_excluded() { return t_inference_mode ? autograd_dispatch_keyset : DispatchKeySet(); }
}  // namespace

bool tls_is_dispatch_key_included(DispatchKey key) { return tls_included().has(key); }
bool tls_is_dispatch_key_excluded(DispatchKey key) { return tls_excluded().has(key); }
bool tls_is_dispatch_keyset_included(DispatchKeySet keys) { return tls_included().isSupersetOf(keys); }
bool tls_is_dispatch_keyset_excluded(DispatchKeySet keys) { return tls_excluded().isSupersetOf(keys); }
}  // namespace impl

namespace autograd {

SavedTensor::SavedTensor(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  EMBER_CHECK(!t.is_inference(), "autograd",
              "Inference tensors cannot be saved for backward (shape ", t.sizes(),
              "); clone() the tensor outside InferenceMode to get a normal tensor and use that in autograd");
  tensor_ = is_output ? t.detach() : t;
  version_ = t._version();
}

Tensor SavedTensor::get() const {
  if (tensor_.defined() && tensor_._version() != version_) {
    EMBER_FAIL("autograd",
               "one of the variables needed for gradient computation has been modified by an inplace operation: "
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

namespace {
template <typename Range>
bool should_record_range(const Range& inputs) {
  if (!is_grad_enabled()) return false;
  bool requires_grad = false, has_normal = false;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    requires_grad = requires_grad || t.requires_grad();
    has_normal = has_normal || !t.is_inference();
  }
  return requires_grad && has_normal;
}
}  // namespace

bool should_record(const std::vector<Tensor>& inputs) { return should_record_range(inputs); }
bool should_record(std::initializer_list<Tensor> inputs) { return should_record_range(inputs); }

CreationMeta creation_meta_for_current_mode() {
  if (InferenceMode::is_enabled()) return CreationMeta::INFERENCE_MODE;
  return is_grad_enabled() ? CreationMeta::DEFAULT : CreationMeta::NO_GRAD_MODE;
}

void mark_view_of(const Tensor& view, const Tensor& base, CreationMeta creation_meta) {
  TensorImpl* out = view.unsafeGetTensorImpl();
  const TensorImpl* in = base.unsafeGetTensorImpl();
  out->view_base = in->view_base ? in->view_base : base.impl();
  out->is_inference = in->is_inference;  // a view is of its base's kind
  // libtorch's propagate_creation_meta: a view of a view keeps the first non-DEFAULT reason,
  // and INFERENCE_MODE over any later one.
  const CreationMeta previous = in->is_tracked_view() ? in->creation_meta : CreationMeta::DEFAULT;
  if (creation_meta == CreationMeta::DEFAULT || previous == CreationMeta::INFERENCE_MODE) creation_meta = previous;
  out->creation_meta = creation_meta;
  out->view_version = in->storage.version();
}

namespace impl {
CreationMeta creation_meta(const Tensor& view) {
  EMBER_CHECK(view.defined() && view.is_view(), "creation_meta", "the tensor is not a view");
  return view.unsafeGetTensorImpl()->creation_meta;
}
}  // namespace impl

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
      // Own the gradient: steal it if nothing else refers to it, else copy. The storage's one
      // other holder may be the base of the view the gradient is (a product computed in the
      // weight's layout, then transposed), which nothing else reaches: taking such a view
      // saved a copy of every weight's gradient each step.
      const TensorImpl& impl = *g.unsafeGetTensorImpl();
      const long holders = g.storage().use_count();
      const bool only_holder = holders == 1 || (holders == 2 && impl.view_base && impl.view_base.use_count() == 1 &&
                                                impl.view_base->storage.is_alias_of(g.storage()));
      const bool unique = g.impl().use_count() == 1 && only_holder && g.is_contiguous() && !g.requires_grad();
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
  // A view made without recording requires grad through its base but accumulates nothing
  // (libtorch's grad_accumulator() of a leaf whose own flag is off).
  if (!meta.requires_grad) return {};
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

namespace {

// libtorch's handle_view_on_rebase: why a view made other than by DEFAULT cannot take a new
// history. `indirect`: its base (or another view of it) was modified, not the view itself.
std::string view_rebase_message(CreationMeta creation_meta, bool indirect) {
  std::string modified = indirect ? "its base or another view of its base has been modified inplace"
                                  : "is being modified inplace";
  switch (creation_meta) {
    case CreationMeta::NO_GRAD_MODE:
      return "A view was created in no_grad mode and " + modified +
             " with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
             "You can clarify your code by moving both the view and the inplace either both inside the no_grad "
             "block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
             "tracked).";
    case CreationMeta::INFERENCE_MODE:
      return "A view was created in inference mode and " + modified +
             " in normal mode. Given that this use case is ambiguous and error-prone, it is forbidden; clone() the "
             "view outside inference mode first.";
    case CreationMeta::IN_CUSTOM_FUNCTION:
      return "A view was created inside a custom Function (or because an input was returned as-is) and " + modified +
             ": the autograd logic to handle view+inplace would override the custom backward of the Function, "
             "leading to incorrect gradients. This behavior is forbidden; clone() the output of the custom Function.";
    case CreationMeta::MULTI_OUTPUT_NODE:
      return "A view is the output of a function that returns multiple views and " + modified +
             ". Such functions do not allow the output views to be modified inplace; replace the inplace operation "
             "by an out-of-place one.";
    case CreationMeta::DEFAULT: break;
  }
  return {};
}

}  // namespace

void check_view_not_rebased(const Tensor& view) {
  const TensorImpl* impl = view.unsafeGetTensorImpl();
  if (!impl->is_tracked_view() || impl->creation_meta == CreationMeta::DEFAULT) return;
  if (impl->storage.version() == impl->view_version) return;
  if (!Tensor(impl->view_base).requires_grad()) return;
  EMBER_FAIL("grad_fn", view_rebase_message(impl->creation_meta, /*indirect=*/true));
}

void check_inplace(const Tensor& t, const char* op, const std::vector<Tensor>& others) {
  core::check_writable(t, op);
  EMBER_CHECK(!t.is_inference() || InferenceMode::is_enabled(), op,
              "Inplace update to inference tensor outside InferenceMode is not allowed (shape ", t.sizes(),
              "); clone() it to get a normal tensor first");
  // An expanded tensor would have one element updated once per alias (x.expand(...).add_(1)).
  for (int64_t d = 0; d < t.dim(); ++d) {
    EMBER_CHECK(t.size(d) <= 1 || t.stride(d) != 0, op,
                "unsupported operation: more than one element of the written-to tensor (shape ", t.sizes(),
                ", strides ", t.strides(), ") refers to a single memory location; clone() it first");
  }
  if (!is_grad_enabled()) return;
  const bool others_require_grad = should_record(others);
  if (!t.requires_grad() && !others_require_grad) return;
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->is_tracked_view()) {
    EMBER_CHECK(impl->creation_meta == CreationMeta::DEFAULT, op,
                view_rebase_message(impl->creation_meta, /*indirect=*/false));
    EMBER_CHECK(!t.requires_grad() || !Tensor(impl->view_base).is_leaf(), op,
                "a view of a leaf Variable that requires grad is being used in an in-place operation (view shape ",
                t.sizes(), "); wrap it in NoGradGuard or clone() it");
  }
  if (t.requires_grad() && t.is_leaf()) {
    EMBER_FAIL(op, "a leaf Variable that requires grad is being used in an in-place operation (shape ", t.sizes(),
               "); wrap it in NoGradGuard or clone() it");
  }
  if (impl->is_tracked_view()) {
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
