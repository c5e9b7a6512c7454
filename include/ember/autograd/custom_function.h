// Custom autograd functions, as libtorch's torch::autograd::Function<T> (custom_function.h):
//
//   struct MulConstant : public ember::autograd::Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
//       return {grad_outputs[0] * ctx->saved_data["c"].toDouble(), Tensor()};
//     }
//   };
//   Tensor y = MulConstant::apply(x, 5.5);
//
// forward runs with grad mode off and returns a Tensor or a variable_list; backward gets one
// gradient per output and returns one per forward argument (undefined for arguments that
// are not tensors or need none). Tensor, std::optional<Tensor> and std::vector<Tensor>
// arguments are the Function's inputs in the graph; the rest are passed through.
// Where ember differs: needs_input_grad takes a list of input indices (libtorch: IndexRange)
// and is true for every input that requires grad (libtorch also asks whether the running
// backward needs it, e.g. autograd::grad for other inputs); no forward-mode AD (jvp); an
// input marked dirty must not be a view of a tensor that requires grad (ember has no
// CopySlices); mark_dirty on a tensor that is not an input is an error (libtorch warns).
#pragma once
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ember/autograd.h"
#include "ember/autograd/ivalue.h"

namespace ember::autograd {

using Variable = Tensor;
using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;  // libtorch spells it both ways

struct CustomFunctionNode;

// What forward leaves for backward (torch::autograd::AutogradContext).
struct AutogradContext {
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Values other than tensors kept for backward.
  std::unordered_map<std::string, IValue> saved_data;

  // Tensors for backward (inputs or outputs of forward); call at most once, in forward. An
  // in-place change to one of them before backward is an error at get_saved_variables().
  void save_for_backward(variable_list to_save);
  // Inputs forward modified in place; they must be returned as outputs.
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient (indices, masks); they do not require grad.
  void mark_non_differentiable(const variable_list& outputs);
  // With false, backward receives undefined tensors for outputs that got no gradient
  // instead of zeros (default true).
  void set_materialize_grads(bool value);

  variable_list get_saved_variables() const;
  // Whether tensor input `index` (counting tensor inputs only) needs a gradient.
  bool needs_input_grad(size_t index) const;
  bool needs_input_grad(std::initializer_list<size_t> indices) const;

 private:
  friend struct CustomFunctionNode;
  struct SavedVariables;

  std::unordered_set<const TensorImpl*> non_differentiable_;
  std::unordered_set<const TensorImpl*> dirty_inputs_;
  variable_list to_save_;
  std::shared_ptr<SavedVariables> saved_;
  bool materialize_grads_ = true;
  bool has_freed_buffers_ = false;
  std::weak_ptr<Node> grad_fn_;
};

// The graph node of a custom Function: checks and shapes what T::backward returns.
struct CustomFunctionNode : public Node {
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override;
  bool materialize_grads() const override { return ctx_.materialize_grads_; }

  // Before forward: wires the inputs' edges when grad mode is on and an input requires
  // grad, and returns whether the call records.
  bool begin(const std::shared_ptr<CustomFunctionNode>& self, const variable_list& inputs);
  // After forward: gives the outputs their history (inputs returned as they are become
  // aliases; non-differentiable outputs are detached) and saves ctx's tensors.
  void finish(const std::shared_ptr<CustomFunctionNode>& self, const variable_list& inputs, variable_list& outputs,
              bool is_executable);

  AutogradContext ctx_;
  std::vector<bool> is_variable_input_;

 protected:
  virtual variable_list call_backward(variable_list grads) = 0;

 private:
  std::vector<OutputInfo> input_info_;
};

namespace detail {

std::string demangle(const char* name);

inline void extract_vars(std::vector<bool>& is_var, variable_list& list, const Tensor& x) {
  is_var.push_back(true);
  list.push_back(x);
}
inline void extract_vars(std::vector<bool>& is_var, variable_list& list, const std::optional<Tensor>& x) {
  const bool present = x.has_value() && x->defined();
  is_var.push_back(present);
  if (present) list.push_back(*x);
}
inline void extract_vars(std::vector<bool>& is_var, variable_list& list, const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs) extract_vars(is_var, list, x);
}
template <typename T>
void extract_vars(std::vector<bool>& is_var, variable_list&, const T&) {
  is_var.push_back(false);
}

inline variable_list to_list(const Tensor& output) { return {output}; }
inline variable_list to_list(const variable_list& outputs) { return outputs; }

}  // namespace detail

template <class T>
struct CppNode final : public CustomFunctionNode {
  std::string name() const override { return detail::demangle(typeid(T).name()); }

 protected:
  variable_list call_backward(variable_list grads) override { return T::backward(&ctx_, std::move(grads)); }
};

// The return type of T::forward for these arguments.
template <typename X, typename... Args>
using forward_t = decltype(X::forward(nullptr, std::declval<Args>()...));

template <class T>
struct Function {
  template <typename X = T, typename... Args>
  static auto apply(Args&&... args) -> std::enable_if_t<std::is_same_v<X, T>, forward_t<X, Args...>> {
    using Result = forward_t<X, Args...>;
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, variable_list>,
                  "forward must return a Tensor or a variable_list");
    auto node = std::make_shared<CppNode<T>>();
    variable_list inputs;
    (detail::extract_vars(node->is_variable_input_, inputs, args), ...);
    const bool is_executable = node->begin(node, inputs);
    Result outputs;
    {
      AutoGradMode grad_mode(false);
      outputs = T::forward(&node->ctx_, std::forward<Args>(args)...);
    }
    variable_list wrapped = detail::to_list(outputs);
    node->finish(node, inputs, wrapped, is_executable);
    if constexpr (std::is_same_v<Result, Tensor>) {
      return wrapped[0];
    } else {
      return wrapped;
    }
  }
};

}  // namespace ember::autograd
