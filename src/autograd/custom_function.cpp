// Custom autograd Functions: wiring a forward call into the graph and checking what the
// user's backward returns (torch/csrc/autograd/custom_function.cpp).
#include "ember/autograd/custom_function.h"

#include <unordered_map>

#include "autograd/function.h"
#include "ember/autograd/anomaly_mode.h"
#include "ember/detail/demangle.h"

namespace ember {

const char* IValue::tagKind() const {
  static constexpr const char* kKinds[] = {"None",   "Int",    "Double",  "Bool",
                                           "Tensor", "String", "IntList", "DoubleList"};
  return kKinds[value_.index()];
}

namespace autograd {

namespace detail {

std::string demangle(const char* name) { return ::ember::detail::demangle(name); }

}  // namespace detail

struct AutogradContext::SavedVariables {
  std::vector<SavedTensor> tensors;
};

namespace {

// A tensor sharing `t`'s storage and geometry with no autograd history (PyTorch returns an
// input given back unchanged as x.view_as(x), so that it can take a history of its own).
Tensor alias_of(const Tensor& t, CreationMeta creation_meta) {
  const TensorImpl* impl = t.unsafeGetTensorImpl();
  Tensor out = core::make_view(impl->storage, impl->sizes, impl->strides, impl->offset, impl->dtype);
  mark_view_of(out, t, creation_meta);
  return out;
}

// Whether `sizes` broadcasts to `target` (a gradient of that shape sums back to `sizes`).
bool is_expandable_to(const std::vector<int64_t>& sizes, const std::vector<int64_t>& target) {
  if (sizes.size() > target.size()) return false;
  const size_t lead = target.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && sizes[d] != target[lead + d]) return false;
  }
  return true;
}

}  // namespace

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

void AutogradContext::mark_dirty(const variable_list& inputs) {
  dirty_inputs_.clear();
  for (const Tensor& t : inputs) dirty_inputs_.insert(t.unsafeGetTensorImpl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  non_differentiable_.clear();
  for (const Tensor& t : outputs) non_differentiable_.insert(t.unsafeGetTensorImpl());
}

void AutogradContext::set_materialize_grads(bool value) { materialize_grads_ = value; }

variable_list AutogradContext::get_saved_variables() const {
  EMBER_CHECK(!has_freed_buffers_, "backward",
              "trying to backward through the graph a second time (the saved tensors of a custom Function were "
              "freed); pass retain_graph=true to the first backward");
  variable_list out;
  if (saved_) {
    for (const SavedTensor& saved : saved_->tensors) out.push_back(saved.get());
  }
  return out;
}

bool AutogradContext::needs_input_grad(size_t index) const {
  auto node = grad_fn_.lock();
  return node && node->should_compute_input_grad(index);
}

bool AutogradContext::needs_input_grad(std::initializer_list<size_t> indices) const {
  for (size_t index : indices)
    if (needs_input_grad(index)) return true;
  return false;
}

bool CustomFunctionNode::begin(const std::shared_ptr<CustomFunctionNode>& self, const variable_list& inputs) {
  ctx_.grad_fn_ = self;
  for (const Tensor& t : inputs) {
    input_info_.push_back(t.defined() ? OutputInfo{t.sizes(), t.scalar_type()} : OutputInfo{{}, kFloat32});
  }
  if (!should_record(inputs)) return false;
  sequence_nr = next_sequence_nr();
  for (const Tensor& t : inputs) next_edges.push_back(gradient_edge(t));
  if (AnomalyMode::is_enabled()) anomaly_trace = autograd::anomaly_trace(name(), inputs);
  return true;
}

void CustomFunctionNode::finish(const std::shared_ptr<CustomFunctionNode>& self, const variable_list& inputs,
                                variable_list& outputs, bool is_executable) {
  const std::string op = name();
  std::unordered_set<const TensorImpl*> input_impls;
  for (const Tensor& t : inputs) input_impls.insert(t.unsafeGetTensorImpl());
  for (const TensorImpl* dirty : ctx_.dirty_inputs_) {
    EMBER_CHECK(input_impls.count(dirty), op.c_str(), "only input tensors should be given to ctx->mark_dirty()");
    dirty->storage.bump_version();
  }

  std::unordered_set<const TensorImpl*> output_impls;
  this->outputs.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& var = outputs[i];
    if (!var.defined()) continue;
    const TensorImpl* impl = var.unsafeGetTensorImpl();
    output_impls.insert(impl);
    const bool is_input = input_impls.count(impl) > 0;
    const bool is_modified = ctx_.dirty_inputs_.count(impl) > 0;
    const bool is_differentiable =
        is_executable && !ctx_.non_differentiable_.count(impl) && is_floating_point(var.scalar_type());
    const auto output_nr = static_cast<uint32_t>(i);
    if (!is_differentiable) {
      if (!var.requires_grad()) {
        if (is_input && !is_modified) var = alias_of(var, CreationMeta::NO_GRAD_MODE);
      } else {
        var = is_input ? var.detach() : var.detach_();
      }
      this->outputs[i] = {var.sizes(), var.scalar_type()};  // backward still gets a (zero) gradient slot
    } else if (is_modified) {
      check_inplace(var, op.c_str(), inputs);
      var.mutable_grad() = Tensor();
      set_history(var, self, output_nr);
    } else {
      if (is_input) var = alias_of(var, CreationMeta::IN_CUSTOM_FUNCTION);
      // A view made by forward cannot be modified in place: its history is this Function.
      if (var.unsafeGetTensorImpl()->is_tracked_view()) {
        var.unsafeGetTensorImpl()->creation_meta = CreationMeta::IN_CUSTOM_FUNCTION;
      }
      set_history(var, self, output_nr);
    }
  }
  for (const TensorImpl* dirty : ctx_.dirty_inputs_) {
    EMBER_CHECK(output_impls.count(dirty), op.c_str(),
                "some inputs marked dirty in forward were not returned as outputs; inputs modified in place must all "
                "be outputs of the Function");
  }

  if (is_executable) {
    ctx_.saved_ = std::make_shared<AutogradContext::SavedVariables>();
    for (const Tensor& t : ctx_.to_save_) ctx_.saved_->tensors.emplace_back(t, t.defined() && t.grad_fn() == self);
  }
  ctx_.to_save_.clear();
}

std::vector<Tensor> CustomFunctionNode::apply(std::vector<Tensor>&& grads) {
  const std::string op = name();
  variable_list returned = call_backward(std::move(grads));
  const size_t num_inputs = is_variable_input_.size();
  // Extra results are fine when they are all undefined (libtorch).
  if (returned.size() > num_inputs) {
    bool extras_undefined = true;
    for (size_t i = num_inputs; i < returned.size(); ++i) extras_undefined = extras_undefined && !returned[i].defined();
    if (extras_undefined) returned.resize(num_inputs);
  }
  EMBER_CHECK(returned.size() == num_inputs, "backward", "function ", op,
              " returned an incorrect number of gradients (expected ", num_inputs, ", got ", returned.size(), ")");

  std::vector<Tensor> gradients;
  for (size_t i = 0; i < num_inputs; ++i) {
    Tensor g = returned[i];
    if (!is_variable_input_[i]) {
      EMBER_CHECK(!g.defined(), "backward", "function ", op, " returned a defined gradient at position ", i + 1,
                  ", but the corresponding forward input was not a Tensor");
      continue;
    }
    const size_t input_nr = gradients.size();
    if (!g.defined() || !should_compute_input_grad(input_nr)) {
      gradients.emplace_back();
      continue;
    }
    const OutputInfo& info = input_info_[input_nr];
    if (g.sizes() != info.sizes) {
      EMBER_CHECK(is_expandable_to(info.sizes, g.sizes()), "backward", "function ", op,
                  " returned an invalid gradient at index ", i, " - got ", g.sizes(),
                  " but expected shape compatible with ", info.sizes);
      g = sum_to(g, info.sizes);
    }
    if (g.scalar_type() != info.dtype) g = g.to(info.dtype);
    gradients.push_back(std::move(g));
  }
  return gradients;
}

void CustomFunctionNode::release_variables() {
  ctx_.saved_.reset();
  ctx_.has_freed_buffers_ = true;
}

}  // namespace autograd
}  // namespace ember
