// The backward engine: runs the graph's nodes in reverse topological order, highest
// sequence number first (the order PyTorch uses), single-threaded.
#include <functional>
#include <map>
#include <exception>
#include <queue>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "autograd/function.h"
#include "core/record_op.h"
#include "ember/autograd/anomaly_mode.h"
#include "ember/functions.h"

namespace ember::autograd {
namespace {

struct NodeTask {
  Node* node;
  bool operator<(const NodeTask& other) const { return node->sequence_nr < other.node->sequence_nr; }
};

// The callbacks of the innermost backward pass running on this thread (a hook may run a
// backward of its own).
thread_local std::vector<std::function<void()>>* t_final_callbacks = nullptr;

class FinalCallbacksScope {
 public:
  FinalCallbacksScope() : previous_(std::exchange(t_final_callbacks, &callbacks_)) {}
  ~FinalCallbacksScope() { t_final_callbacks = previous_; }
  FinalCallbacksScope(const FinalCallbacksScope&) = delete;
  FinalCallbacksScope& operator=(const FinalCallbacksScope&) = delete;

  void run() {
    for (size_t i = 0; i < callbacks_.size(); ++i) std::exchange(callbacks_[i], nullptr)();
  }

 private:
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::function<void()>>* previous_;
};

// What anomaly mode recorded of the forward op behind `node`.
std::string anomaly_context(const Node& node) {
  if (node.anomaly_trace.empty()) return "its forward op was not recorded (run the forward under DetectAnomalyGuard)";
  return "it is the backward of the forward op " + node.anomaly_trace;
}

// node.apply(); in anomaly mode an error from it names the forward op, and a gradient with a
// NaN is an error naming the node and the forward op (PyTorch's anomaly checks).
std::vector<Tensor> apply_node(Node& node, std::vector<Tensor>&& grads) {
  if (!AnomalyMode::is_enabled()) return node.apply(std::move(grads));
  std::vector<Tensor> outputs;
  try {
    outputs = node.apply(std::move(grads));
  } catch (const Error& error) {
    throw Error(std::string(error.what()) + " (in '" + node.name() + "': " + anomaly_context(node) + ")");
  }
  if (!AnomalyMode::should_check_nan()) return outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& g = outputs[i];
    if (g.defined() && g.is_floating_point() && g.isnan().any().item<bool>()) {
      EMBER_FAIL("backward", "Function '", node.name(), "' returned nan values in its ", i, "th output; ",
                 anomaly_context(node));
    }
  }
  return outputs;
}

// Two gradients of one input summed: into `a` in place where nothing else holds it and the
// sum keeps its dtype and shape (libtorch's InputBuffer::accumulate), the same bits as a + b
// without a new tensor; out of place when the graph of the sum is recorded.
Tensor accumulate(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  const bool sole_owner = a.impl().use_count() == 1 && a.storage().use_count() == 1 && !a.requires_grad();
  if (sole_owner && !is_grad_enabled() && a.is_contiguous() && a.sizes() == b.sizes() &&
      a.scalar_type() == b.scalar_type())
    return a.add_(b);
  return a + b;
}

// What a backward pass computes when it is not a plain backward into every leaf.
struct Targets {
  // autograd::grad: the gradients arriving at these edges are returned; no AccumulateGrad runs.
  std::vector<Edge> capture;
  // backward(inputs): the AccumulateGrad nodes of the leaf inputs, which run...
  std::vector<Node*> accumulate;
  // ...and the non-leaf inputs, whose .grad gets the gradient arriving at their edge.
  std::vector<std::pair<Edge, Tensor>> non_leaf;
  bool any() const { return !capture.empty() || !accumulate.empty() || !non_leaf.empty(); }
};

// The reachable nodes from which a path of at least one edge leads to one of `targets`
// (libtorch's exec_info): with targets, only these nodes run.
std::unordered_set<Node*> nodes_leading_to(const std::vector<Node*>& starts,
                                           std::unordered_map<Node*, int> dependencies,
                                           const std::unordered_set<Node*>& targets) {
  std::vector<Node*> order;  // topological: every node before the nodes its edges point at
  std::unordered_set<Node*> seen;
  std::vector<Node*> ready;
  for (Node* n : starts)
    if (dependencies[n] == 0 && seen.insert(n).second) ready.push_back(n);
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges)
      if (e.is_valid() && --dependencies[e.function.get()] == 0) ready.push_back(e.function.get());
  }
  std::unordered_set<Node*> leading;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (const Edge& e : (*it)->next_edges) {
      if (e.is_valid() && (targets.count(e.function.get()) || leading.count(e.function.get()))) {
        leading.insert(*it);
        break;
      }
    }
  }
  return leading;
}

// Runs backward from `roots` with `root_grads`; returns the gradients at targets.capture.
std::vector<Tensor> run_backward_here(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                                 bool keep_graph, bool create_graph, const Targets& targets) {
  AutoGradMode grad_mode(create_graph);
  FinalCallbacksScope final_callbacks;

  // Seed the input buffers of the root nodes.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  std::vector<Node*> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge edge = gradient_edge(roots[i]);
    EMBER_CHECK(edge.is_valid(), "backward",
                "element ", i, " of tensors does not require grad and does not have a grad_fn");
    auto& buf = buffers[edge.function.get()];
    buf.resize(edge.function->outputs.size());
    buf[edge.input_nr] = accumulate(buf[edge.input_nr], root_grads[i]);
    owners[edge.function.get()] = edge.function;
    starts.push_back(edge.function.get());
  }

  // Count dependencies: how many edges point at each reachable node.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack(starts.begin(), starts.end());
  for (Node* n : starts) seen.insert(n);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      dependencies[next] += 1;
      owners[next] = e.function;
      if (seen.insert(next).second) stack.push_back(next);
    }
  }

  std::map<std::pair<Node*, uint32_t>, size_t> capture_index;
  for (size_t i = 0; i < targets.capture.size(); ++i)
    capture_index[{targets.capture[i].function.get(), targets.capture[i].input_nr}] = i;
  std::vector<Tensor> captured(targets.capture.size());

  // With targets, only the nodes on a path to one of them run (and the leaf inputs'
  // AccumulateGrad nodes), so that a pass for some inputs runs no unrelated backward.
  std::unordered_set<Node*> to_run;
  if (targets.any()) {
    std::unordered_set<Node*> target_nodes;
    for (const Edge& e : targets.capture) target_nodes.insert(e.function.get());
    for (Node* n : targets.accumulate) target_nodes.insert(n);
    for (const auto& [e, t] : targets.non_leaf) target_nodes.insert(e.function.get());
    to_run = nodes_leading_to(starts, dependencies, target_nodes);
    to_run.insert(targets.accumulate.begin(), targets.accumulate.end());
  }

  std::priority_queue<NodeTask> ready;
  std::unordered_set<Node*> queued;
  for (Node* n : starts)
    if (dependencies[n] == 0 && queued.insert(n).second) ready.push({n});

  while (!ready.empty()) {
    Node* node = ready.top().node;
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(node->outputs.size());
    run_tensor_pre_hooks(*node, grads);

    for (const auto& [output_nr, weak] : node->retained) {
      if (auto impl = weak.lock(); impl && output_nr < grads.size() && grads[output_nr].defined()) {
        AutogradMeta& meta = impl->autograd_meta();
        meta.grad = meta.grad.defined() ? meta.grad + grads[output_nr] : grads[output_nr].clone();
      }
    }
    for (const auto& [edge, tensor] : targets.non_leaf) {
      const Tensor& g = edge.function.get() == node ? grads[edge.input_nr] : Tensor();
      if (!g.defined()) continue;
      Tensor& grad = tensor.unsafeGetTensorImpl()->autograd_meta().grad;
      grad = grad.defined() ? grad + g : (create_graph ? g : g.detach().clone());
    }
    if (!targets.capture.empty()) {
      for (uint32_t k = 0; k < grads.size(); ++k) {
        auto it = capture_index.find({node, k});
        if (it != capture_index.end()) captured[it->second] = grads[k];
      }
    }

    std::vector<Tensor> outputs;
    if (!targets.any() || to_run.count(node)) {
      bool any = false;
      for (auto& g : grads) any = any || g.defined();
      if (any) {
        for (size_t k = 0; k < grads.size(); ++k) {
          if (!grads[k].defined() && node->materialize_grads())
            grads[k] = zeros(node->outputs[k].sizes, node->outputs[k].dtype);
        }
        profiler::RecordFunction record;
        if (profiler::is_enabled()) {
          record.begin(node->name(), profiler::Category::Backward);
          if (record.record_shapes()) core::describe_inputs(*record.event(), grads);
        }
        outputs = apply_node(*node, std::move(grads));
        if (!keep_graph) node->release_variables();
      }
    }

    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      if (i < outputs.size() && outputs[i].defined()) {
        auto& buf = buffers[next];
        buf.resize(next->outputs.size());
        buf[e.input_nr] = accumulate(buf[e.input_nr], outputs[i]);
      }
      if (--dependencies[next] == 0 && queued.insert(next).second) ready.push({next});
    }
  }
  final_callbacks.run();
  return captured;
}

// How many backward passes run nested on this thread (a backward function that calls
// backward: reentrant backward).
thread_local int t_reentrant_depth = 0;
// Deeper than this, a nested pass runs on a thread of its own, whose stack starts empty, so
// that deep reentrant backward does not overflow the stack (libtorch hands such passes to
// another thread past a depth of 60 as well). The calling thread waits for it.
constexpr int kMaxReentrantDepth = 60;

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& root_grads,
                                 bool keep_graph, bool create_graph, const Targets& targets) {
  if (t_reentrant_depth < kMaxReentrantDepth) {
    ++t_reentrant_depth;
    struct DepthGuard {
      ~DepthGuard() { --t_reentrant_depth; }
    } depth_guard;
    return run_backward_here(roots, root_grads, keep_graph, create_graph, targets);
  }
  const bool inference_mode = InferenceMode::is_enabled();
  const bool grad_mode = is_grad_enabled();
  std::vector<Tensor> result;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      InferenceMode inference(inference_mode);
      AutoGradMode grad(grad_mode);
      result = run_backward(roots, root_grads, keep_graph, create_graph, targets);
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) std::rethrow_exception(error);
  return result;
}

std::vector<Tensor> default_root_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& given,
                                       const char* op) {
  EMBER_CHECK(given.empty() || given.size() == roots.size(), op, "got ", given.size(), " gradients for ",
              roots.size(), " tensors");
  std::vector<Tensor> grads(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!given.empty() && given[i].defined()) {
      EMBER_CHECK(given[i].sizes() == roots[i].sizes(), op, "gradient shape ", given[i].sizes(),
                  " does not match tensor shape ", roots[i].sizes());
      grads[i] = given[i].to(roots[i].scalar_type());
    } else {
      EMBER_CHECK(roots[i].numel() == 1, op, "grad can be implicitly created only for scalar outputs, got shape ",
                  roots[i].sizes());
      grads[i] = ones_like(roots[i]);
    }
  }
  return grads;
}

}  // namespace

void queue_callback(std::function<void()> callback) {
  EMBER_CHECK(t_final_callbacks != nullptr, "queue_callback", "called outside a backward pass");
  EMBER_CHECK(callback != nullptr, "queue_callback", "the callback is empty");
  t_final_callbacks->push_back(std::move(callback));
}

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  auto grads = default_root_grads(tensors, grad_tensors, "backward");
  Targets targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    EMBER_CHECK(e.is_valid(), "backward", "input ", i, " does not require grad");
    if (inputs[i].is_leaf()) {
      targets.accumulate.push_back(e.function.get());
    } else {
      targets.non_leaf.emplace_back(e, inputs[i]);
    }
  }
  run_backward(tensors, grads, retain_graph.value_or(create_graph), create_graph, targets);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  auto grads = default_root_grads(outputs, grad_outputs, "autograd::grad");
  Targets targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    EMBER_CHECK(e.is_valid(), "autograd::grad", "input ", i, " does not require grad");
    targets.capture.push_back(e);
  }
  auto result = run_backward(outputs, grads, retain_graph.value_or(create_graph), create_graph, targets);
  for (size_t i = 0; i < result.size(); ++i) {
    EMBER_CHECK(result[i].defined() || allow_unused, "autograd::grad", "input ", i,
                " was not used in the graph. Set allow_unused=True if this is the desired behavior");
  }
  return result;
}

std::vector<Tensor> UndefinedGrad::apply(std::vector<Tensor>&& inputs) {
  // The outputs are new tensors whose backward node returns no gradient for any input.
  std::vector<Tensor> outputs;
  outputs.reserve(inputs.size());
  for (const Tensor& t : inputs) outputs.push_back(t.defined() ? t.clone().detach() : Tensor());
  record("UndefinedGradBackward", inputs, outputs,
         [](std::vector<Tensor>& grads, const std::vector<bool>&) { return std::vector<Tensor>(grads.size()); });
  return outputs;
}

Tensor make_variable(const Tensor& data, bool requires_grad) {
  Tensor out = data.variable_data();
  if (requires_grad) out.requires_grad_(true);
  return out;
}

}  // namespace ember::autograd
