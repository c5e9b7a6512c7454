// Reverse-mode automatic differentiation over a dynamic graph, as in PyTorch.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// libtorch's at::GradMode: the thread's grad mode.
struct GradMode {
  static bool is_enabled() { return is_grad_enabled(); }
  static void set_enabled(bool enabled) { set_grad_enabled(enabled); }
};

// Disables graph recording in its scope (torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Sets grad mode to `enabled` in its scope (torch::AutoGradMode).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~AutoGradMode() { set_grad_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

// Inference mode (c10::InferenceMode): while enabled, no op records autograd history (grad
// mode is off) and every tensor an op or factory creates is an inference tensor
// (Tensor::is_inference()). Outside inference mode, an inference tensor cannot be saved for
// backward by a recorded op, updated in place, or made to require grad. InferenceMode(false)
// turns grad mode back on in its scope, as in libtorch.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool previous_inference_;
  bool previous_grad_;
};

namespace autograd {

// torch::autograd spells the grad-mode guards too.
using ::ember::AutoGradMode;
using ::ember::GradMode;
using ::ember::InferenceMode;
using ::ember::NoGradGuard;

// How a view was made (libtorch's CreationMeta): in grad mode (DEFAULT), as an output of a
// custom Function, as one of several views one op returns, in no-grad mode or in inference
// mode. A view made other than by DEFAULT cannot be modified in place while autograd records
// (its history could not be rebased): the error names the reason.
enum class CreationMeta : uint8_t { DEFAULT, IN_CUSTOM_FUNCTION, MULTI_OUTPUT_NODE, NO_GRAD_MODE, INFERENCE_MODE };

namespace impl {
// The CreationMeta of `view` (libtorch: impl::get_view_autograd_meta(view)->get_creation_meta());
// throws if `view` is not a view (Tensor::is_view()).
CreationMeta creation_meta(const Tensor& view);
}  // namespace impl

struct Node;

// A gradient hook of Tensor::register_hook: returns the replacement gradient, or an undefined
// tensor to leave the gradient as it is. Removed hooks leave an empty slot so that the
// positions register_hook returned stay valid.
using GradHook = std::function<Tensor(const Tensor&)>;
using GradHookList = std::vector<GradHook>;

// Where a gradient goes: input `input_nr` of `function`.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};

// A backward function in the graph. Its inputs are the gradients of the forward op's
// outputs; its outputs are the gradients for the forward op's inputs (next_edges).
struct Node {
  struct OutputInfo {
    std::vector<int64_t> sizes;
    ScalarType dtype;
  };

  virtual ~Node() = default;
  virtual std::string name() const = 0;
  // grads has one entry per forward output (zeros where the output got no gradient).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}
  // Whether the engine replaces the gradients of outputs that got none by zeros before
  // apply() (custom Functions may ask for undefined ones: set_materialize_grads(false)).
  virtual bool materialize_grads() const { return true; }

  std::vector<Edge> next_edges;
  std::vector<OutputInfo> outputs;
  uint64_t sequence_nr = 0;
  // Non-leaf tensors that asked for retain_grad(), by output number.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;
  // Hooks of the tensors this node's outputs are (the leaf, for an AccumulateGrad), by output
  // number; they run on the gradient before retain_grad, capture and apply(), as in PyTorch.
  std::vector<std::pair<uint32_t, std::shared_ptr<GradHookList>>> tensor_pre_hooks;
  // Recorded only in anomaly mode: the forward op that made this node and the ops that made
  // its inputs ("div(sub(leaf, constant), leaf)"); named by the engine's anomaly errors.
  std::string anomaly_trace;

  bool should_compute_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].is_valid(); }
};

// A node that passes its inputs through as clones and sends undefined gradients back
// (libtorch's UndefinedGrad, basic_ops.h): UndefinedGrad().apply({x})[0] is x's value whose
// backward gives x no gradient, to exercise how nodes take missing gradients.
struct UndefinedGrad : public Node {
  std::string name() const override { return "UndefinedGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& inputs) override;
};

// A tensor sharing `data`'s values with no history, requiring grad if asked (libtorch's
// make_variable; data.variable_data() then requires_grad_).
Tensor make_variable(const Tensor& data, bool requires_grad = false);

// Computes and returns the gradients of `outputs` with respect to `inputs` without
// touching any .grad (torch.autograd.grad).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

// Accumulates gradients of `tensors` into the .grad of the leaves (torch.autograd.backward).
// With `inputs`, only into theirs (a non-leaf input's .grad gets the gradient arriving at it,
// as in libtorch 2.x); the nodes that lead to none of them do not run.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});

// Runs `callback` when the backward pass now running (backward or grad) has processed its
// whole graph, after the last gradient was accumulated (PyTorch's
// Variable._execution_engine.queue_callback). Callbacks run in the order queued and may
// queue more; a pass that throws runs none. Throws outside a backward pass.
void queue_callback(std::function<void()> callback);

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

// Compares the analytical gradients of sum(fn(inputs) * random weights) with central finite
// differences in float64 (inputs must be float64). Returns an empty string on success or a
// description of the first mismatch (input, element, analytical, numerical).
std::string gradcheck_report(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                             const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});
bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});

}  // namespace autograd
}  // namespace ember

// libtorch's torch/autograd.h brings these too.
#include "ember/autograd/anomaly_mode.h"    // IWYU pragma: export
#include "ember/autograd/custom_function.h"  // IWYU pragma: export
