// The funnel every kernel call passes through, and the capture that ember::Graph records
// into (internal). The design is Note [Graph capture] in graph_capture.cpp.
#pragma once
#include <functional>
#include <memory>

#include "ember/storage.h"

namespace ember {
struct TensorImpl;
}

namespace ember::core {

class Capture;

namespace detail {
extern thread_local Capture* t_capture;  // the capture recording on this thread, if any
}

// The capture recording on this thread, or nullptr (one thread-local load).
inline Capture* active_capture() { return detail::t_capture; }

// A recorded kernel call: raw pointers, sizes, strides and parameters held by value.
using Kernel = std::function<void()>;

// Stores `kernel` as the next step of the active capture; called only by launch().
void record_kernel(Capture& capture, Kernel kernel);

// While alive, the active capture lets `op` read tensor data pointers (launch's prepare step).
class LaunchScope {
 public:
  LaunchScope(Capture& capture, const char* op);
  ~LaunchScope();
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  Capture& capture_;
  const char* previous_;
};

// Every call from the op layer (ops, nn's fused ops, autograd) into a cpu/ kernel, and every
// host write into tensor memory, goes through here. `prepare` reads the tensors (data
// pointers, sizes, strides) and returns a callable that holds them by value and runs the
// kernel. Eager: the callable runs at once. Capturing: it is recorded for Graph::replay and
// does not run, as a CUDA graph capture launches nothing. `op` names the op in errors and must
// outlive the graph (a string literal).
template <typename Prepare>
void launch(const char* op, Prepare&& prepare) {
  Capture* capture = active_capture();
  if (capture == nullptr) {
    prepare()();
    return;
  }
  LaunchScope scope(*capture, op);
  record_kernel(*capture, Kernel(prepare()));
}

// Names the op running on this thread in capture errors (EMBER_RECORD_OP opens one); `op`
// must be a string literal, like launch's.
class CaptureOpName {
 public:
  explicit CaptureOpName(const char* op) : capture_(active_capture()) {
    if (capture_) push(op);
  }
  ~CaptureOpName() {
    if (capture_) pop();
  }
  CaptureOpName(const CaptureOpName&) = delete;
  CaptureOpName& operator=(const CaptureOpName&) = delete;

 private:
  void push(const char* op);
  void pop();
  Capture* capture_;
};

// Hooks for core: a tensor's data pointer taken (Tensor::data_ptr), storage bytes reached
// (Storage::data), storage made (Storage::allocate/borrow/mapped) or reallocated, and a
// gradient assigned to a leaf (AccumulateGrad). Each throws when the access cannot be replayed.
void note_tensor_access(Capture& capture, const std::shared_ptr<TensorImpl>& impl);
void note_storage_access(Capture& capture, const Storage& storage, void* data);
void note_storage_made(Capture& capture, const Storage& storage, void* data);
void note_storage_reallocated(const Storage& storage);
void note_grad_assigned(Capture& capture, const std::shared_ptr<TensorImpl>& leaf);

}  // namespace ember::core
