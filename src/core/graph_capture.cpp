// The capture recorder behind ember::Graph, the hooks core calls into it, and Graph itself.
#include "core/graph_capture.h"

#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor_impl.h"
#include "ember/graph.h"

// Note [Graph capture]
// A capture records, in order, the kernel calls the op layer would make, each as a callable
// holding raw pointers, sizes, strides and parameters by value (cpu/ knows nothing else).
// Replay runs those callables and nothing else: no checks, no allocation, no autograd, no
// Tensor. The op code is unchanged between eager and capture: every kernel call goes through
// core::launch(op, prepare), where `prepare` reads the tensors and returns the call. Eager
// runs the call at once; a capture stores it and, like a CUDA graph capture, runs nothing.
//
// Recording cannot be forgotten because the capture also guards the only ways to reach
// tensor memory: Tensor::data_ptr and Storage::data. While a capture records on this thread,
// they are allowed only inside a launch's prepare step; anywhere else they throw, naming the
// op (EMBER_RECORD_OP names it). An op whose kernel call was not routed through launch, a
// host write into a tensor (a factory filling memory, a scalar written into a 0-dim tensor)
// outside launch, and every host read of values (item(), nonzero, index checks, anything
// whose result depends on data) therefore fail at capture, never replay stale results. New
// ops are covered by the same guard without knowing about graphs.
//
// What the guards see also makes the graph safe to replay. Every storage made or reached
// during the capture is kept alive by the graph (the pointers in the calls stay valid even
// if the user drops a static tensor). Every tensor whose data pointer a kernel took is
// remembered with its storage address, sizes, strides and offset, together with the view's
// base; replay first checks those still alive are unchanged (set_data, a reallocated
// storage, a re-pointed view would otherwise make replay write where nobody looks), and that
// every .grad assigned during the capture is still the parameter's .grad. These checks run
// once per replay over the graph's distinct tensors, not per kernel.
//
// Host state that must move on each replay moves inside the recorded calls: a random op's
// call reserves its Philox offsets from the default generator when it runs, so every replay
// draws fresh numbers, the same ones eager code would draw from the same generator state.

namespace ember::core {
namespace detail {
thread_local Capture* t_capture = nullptr;
}

namespace {

struct StorageRecord {
  Storage storage;
  void* data;
  size_t nbytes;
  const char* op;  // the op that reached it first, for messages
};

struct TensorRecord {
  std::weak_ptr<TensorImpl> impl;
  void* storage_data;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
  const char* op;
};

// A .grad assigned during the capture: replay writes its storage, so the leaf's .grad must
// still view it (zero_grad(set_to_none=false) keeps it; set_to_none or a new tensor do not).
struct GradRecord {
  std::weak_ptr<TensorImpl> leaf;
  void* storage_data;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
};

}  // namespace

class Capture {
 public:
  std::vector<Kernel> steps;
  std::unordered_map<const void*, StorageRecord> storages;  // by address: bytes the calls touch
  std::unordered_map<const TensorImpl*, TensorRecord> tensors;
  std::vector<GradRecord> grads;
  const char* launching = nullptr;  // the op inside launch's prepare step, if any
  std::vector<const char*> ops;     // EMBER_RECORD_OP names, innermost last

  const char* current_op() const {
    if (launching) return launching;
    return ops.empty() ? "an op" : ops.back();
  }

  // Tensors that died during the capture can never change again: only the live ones are
  // checked at replay.
  void finish() {
    for (auto it = tensors.begin(); it != tensors.end();) {
      it = it->second.impl.expired() ? tensors.erase(it) : std::next(it);
    }
  }

  void validate() const {
    for (const auto& [key, record] : storages) {
      EMBER_CHECK(record.storage.data() == record.data && record.storage.nbytes() == record.nbytes, "Graph::replay",
                  "the storage of ", record.nbytes, " bytes that '", record.op,
                  "' used during capture was reallocated since (now ", record.storage.nbytes(),
                  " bytes); the graph would write freed memory. Capture again after changing it");
    }
    for (const auto& [key, record] : tensors) {
      std::shared_ptr<TensorImpl> impl = record.impl.lock();
      if (!impl) continue;
      EMBER_CHECK(impl->storage.data() == record.storage_data, "Graph::replay", "a tensor of shape ", record.sizes,
                  " that '", record.op,
                  "' used during capture now views other storage (set_data?); the graph reads and writes the "
                  "storage it had at capture. Copy new values into it with copy_ instead");
      EMBER_CHECK(impl->sizes == record.sizes && impl->strides == record.strides && impl->offset == record.offset,
                  "Graph::replay", "a tensor that '", record.op, "' used during capture with shape ", record.sizes,
                  ", strides ", record.strides, " and offset ", record.offset, " now has shape ", impl->sizes,
                  ", strides ", impl->strides, " and offset ", impl->offset, "; graph tensors keep their geometry");
    }
    for (const GradRecord& record : grads) {
      std::shared_ptr<TensorImpl> leaf = record.leaf.lock();
      if (!leaf) continue;
      const TensorImpl* grad = leaf->autograd ? leaf->autograd->grad.unsafeGetTensorImpl() : nullptr;
      const bool same = grad && grad->storage.data() == record.storage_data && grad->sizes == record.sizes &&
                        grad->strides == record.strides && grad->offset == record.offset;
      EMBER_CHECK(same, "Graph::replay", "the .grad of a tensor of shape ", record.sizes,
                  " was replaced or set to None since capture (zero_grad(set_to_none=true) between replays?); "
                  "replay writes the gradient storage it captured: keep the .grad tensors, or capture again");
    }
  }
};

void record_kernel(Capture& capture, Kernel kernel) { capture.steps.push_back(std::move(kernel)); }

LaunchScope::LaunchScope(Capture& capture, const char* op) : capture_(capture), previous_(capture.launching) {
  capture.launching = op;
}
LaunchScope::~LaunchScope() { capture_.launching = previous_; }

void CaptureOpName::push(const char* op) { capture_->ops.push_back(op); }
void CaptureOpName::pop() { capture_->ops.pop_back(); }

namespace {

[[noreturn]] void fail_host_access(const Capture& capture, const std::string& what) {
  EMBER_FAIL("Graph::capture", capture.current_op(), " reaches ", what,
             " on the host outside a recorded kernel; a graph replays kernels only, so this op cannot be "
             "captured (a value read on the host such as item() or nonzero, or a kernel call not routed "
             "through core::launch)");
}

}  // namespace

void note_storage_access(Capture& capture, const Storage& storage, void* data) {
  if (!capture.launching) fail_host_access(capture, "the data of a storage of " + std::to_string(storage.nbytes()) + " bytes");
  if (storage.nbytes() == 0) return;
  capture.storages.try_emplace(data, StorageRecord{storage, data, storage.nbytes(), capture.launching});
}

void note_storage_made(Capture& capture, const Storage& storage, void* data) {
  if (storage.nbytes() == 0) return;
  capture.storages.try_emplace(data, StorageRecord{storage, data, storage.nbytes(), capture.current_op()});
}

void note_storage_reallocated(const Storage& storage) {
  EMBER_FAIL("Storage::reallocate", "cannot reallocate a storage of ", storage.nbytes(),
             " bytes during a graph capture: the recorded kernels keep its address");
}

void note_tensor_access(Capture& capture, const std::shared_ptr<TensorImpl>& impl) {
  if (!capture.launching) {
    std::ostringstream shape;
    ember::detail::append(shape, impl->sizes);
    fail_host_access(capture, "the data of a tensor of shape " + shape.str());
  }
  auto remember = [&](const std::shared_ptr<TensorImpl>& t) {
    capture.tensors.try_emplace(t.get(), TensorRecord{t, t->storage.data(), t->sizes, t->strides, t->offset,
                                                      capture.launching});
  };
  remember(impl);
  if (impl->view_base) remember(impl->view_base);
}

void note_grad_assigned(Capture& capture, const std::shared_ptr<TensorImpl>& leaf) {
  const TensorImpl& grad = *leaf->autograd->grad.unsafeGetTensorImpl();
  LaunchScope reading_address(capture, "AccumulateGrad");  // the address only, no data
  capture.grads.push_back({leaf, grad.storage.data(), grad.sizes, grad.strides, grad.offset});
}

}  // namespace ember::core

namespace ember {

using core::Capture;

struct GraphState {
  std::unique_ptr<Capture> capture;
  bool recording() const { return capture && core::detail::t_capture == capture.get(); }
};

Graph::Graph() : state_(std::make_unique<GraphState>()) {}

Graph::~Graph() {
  if (state_->recording()) core::detail::t_capture = nullptr;
}

void Graph::capture_begin() {
  EMBER_CHECK(core::active_capture() == nullptr, "Graph::capture_begin",
              "a graph capture is already recording on this thread; captures do not nest");
  EMBER_CHECK(!state_->capture, "Graph::capture_begin", "this graph already holds a capture of ",
              state_->capture->steps.size(), " kernels; call reset() before capturing again");
  state_->capture = std::make_unique<Capture>();
  core::detail::t_capture = state_->capture.get();
}

void Graph::capture_end() {
  EMBER_CHECK(state_->recording(), "Graph::capture_end", "this graph is not capturing on this thread");
  core::detail::t_capture = nullptr;
  state_->capture->finish();
}

void Graph::capture(const std::function<void()>& body) {
  capture_begin();
  try {
    body();
  } catch (...) {
    reset();
    throw;
  }
  capture_end();
}

void Graph::replay() {
  EMBER_CHECK(core::active_capture() == nullptr, "Graph::replay", "called while a graph capture is recording");
  EMBER_CHECK(state_->capture && !state_->capture->steps.empty(), "Graph::replay",
              state_->capture ? "the capture recorded no kernels" : "the graph is empty: nothing was captured");
  const Capture& capture = *state_->capture;
  capture.validate();
  for (const core::Kernel& step : capture.steps) step();
}

void Graph::reset() {
  if (state_->recording()) core::detail::t_capture = nullptr;
  state_->capture.reset();
}

size_t Graph::num_kernels() const { return state_->capture ? state_->capture->steps.size() : 0; }

bool is_current_stream_capturing() { return core::active_capture() != nullptr; }

}  // namespace ember
