// Tensor::register_hook: gradient hooks kept by the tensor and shared with the node its
// gradient passes through (its grad_fn, or its AccumulateGrad when it is a leaf).
#include "autograd/function.h"

namespace ember {

unsigned Tensor::_register_hook(std::function<Tensor(const Tensor&)> hook) const {
  EMBER_CHECK(defined(), "register_hook", "called on an undefined tensor");
  EMBER_CHECK(requires_grad(), "register_hook", "cannot register a hook on a tensor (shape ", sizes(),
              ") that doesn't require gradient");
  EMBER_CHECK(hook != nullptr, "register_hook", "the hook is empty");
  AutogradMeta& meta = impl_->autograd_meta();
  if (!meta.hooks) {
    meta.hooks = std::make_shared<autograd::GradHookList>();
    if (meta.grad_fn) {
      meta.grad_fn->tensor_pre_hooks.emplace_back(meta.output_nr, meta.hooks);
    } else if (auto accumulator = meta.grad_accumulator.lock()) {
      accumulator->tensor_pre_hooks.emplace_back(0, meta.hooks);
    }  // else gradient_edge attaches the list when it makes the accumulator
  }
  meta.hooks->push_back(std::move(hook));
  return static_cast<unsigned>(meta.hooks->size() - 1);
}

void Tensor::remove_hook(unsigned pos) const {
  EMBER_CHECK(defined(), "remove_hook", "called on an undefined tensor");
  const auto& hooks = impl_->autograd ? impl_->autograd->hooks : nullptr;
  EMBER_CHECK(hooks && pos < hooks->size() && (*hooks)[pos], "remove_hook", "Invalid index, no hook at position ",
              pos);
  (*hooks)[pos] = nullptr;
}

namespace autograd {

void run_tensor_pre_hooks(const Node& node, std::vector<Tensor>& grads) {
  for (const auto& [output_nr, hooks] : node.tensor_pre_hooks) {
    if (output_nr >= grads.size() || !grads[output_nr].defined()) continue;
    Tensor& grad = grads[output_nr];
    // By index, on a copy of each hook: a hook may register more hooks.
    for (size_t i = 0; i < hooks->size(); ++i) {
      const GradHook hook = (*hooks)[i];
      if (!hook) continue;
      Tensor result = hook(grad);
      if (!result.defined()) continue;
      EMBER_CHECK(result.sizes() == grad.sizes(), "register_hook", "hook ", i,
                  " changed the size of the gradient from ", grad.sizes(), " to ", result.sizes());
      EMBER_CHECK(result.scalar_type() == grad.scalar_type(), "register_hook", "hook ", i,
                  " changed the dtype of the gradient from ", dtype_name(grad.scalar_type()), " to ",
                  dtype_name(result.scalar_type()));
      grad = std::move(result);
    }
  }
}

}  // namespace autograd
}  // namespace ember
