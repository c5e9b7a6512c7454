// The op layer's export trace hook: while ember::export_program traces a forward, every op
// entered through EMBER_RECORD_OP (src/core/record_op.h) reports to the thread's listener
// (Note [Export trace]).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/storage.h"
#include "ember/tensor.h"

namespace ember::core {

// Note [Export trace]
// The trace shares the profiler's funnel: EMBER_RECORD_OP opens a TraceOp frame at each op's
// shared entry point. Only the outermost frame records (an op's inner ops are its kernel);
// an op with export support names its result (and attributes) through the frame before it
// returns, and the listener records it. A frame that closes without a result is an op
// without export support: the storages allocated inside it are handed to the listener,
// which refuses the export if one of them ever reaches a recorded op, naming both ops.
// Memory allocated outside any frame comes from an op without a trace hook and is refused
// the same way, except in factories (zeros, arange, scalar operands), which pause the trace:
// their results, like tensors made before the trace, are constants (checked equal at every
// traced size). Tensor::item() reports too, so a value read back into C++ control flow is
// caught.
struct TraceAttribute {
  enum class Kind { Int, Float, Ints, Floats, String };
  std::string name;
  Kind kind = Kind::Int;
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string string_value;
};

struct TracedOp {
  std::string name;
  std::vector<Tensor> inputs;  // undefined optional inputs are left out
  std::vector<Tensor> outputs;
  std::vector<TraceAttribute> attributes;
  bool in_place = false;  // writes inputs[0]; no outputs
};

class TraceListener {
 public:
  virtual ~TraceListener() = default;
  // An op with export support; may throw ember::Error to refuse the export.
  virtual void record(TracedOp op) = 0;
  // An op without export support closed; `allocations` are the storages it made.
  virtual void unsupported(const char* op, std::vector<Storage> allocations) noexcept = 0;
  // Memory allocated outside any op frame: by an op without a trace hook (factories pause
  // the trace, so their results are constants).
  virtual void untraced_allocation(const Storage& storage) noexcept = 0;
  // Tensor::item() outside any op; may throw.
  virtual void item(const Tensor& tensor) = 0;
  // A TraceLoop (below): its start, each iteration's start with the state it reads, and its
  // end with the state left and the per-iteration results stacked after it. May throw.
  virtual void loop_begin(int64_t trip_count) = 0;
  virtual void loop_iteration(const std::vector<Tensor>& carried) = 0;
  virtual void loop_end(const std::vector<Tensor>& carried, const std::vector<std::vector<Tensor>>& stacked) = 0;
};

// The number of threads with a listener. Every hook below checks it first (one relaxed load,
// as the profiler's sites) and touches thread-local state only while some thread traces.
extern std::atomic<int> tracing_threads;
inline bool any_thread_traces() { return tracing_threads.load(std::memory_order_relaxed) != 0; }

// This thread's listener (null while no export traces).
TraceListener* trace_listener();
void set_trace_listener(TraceListener* listener);
// Called by core::make_tensor: the outermost open frame keeps the storage; outside frames the
// listener hears of it.
void trace_allocation(const Storage& storage);
inline void trace_note_allocation(const Storage& storage) {
  if (any_thread_traces()) trace_allocation(storage);
}
// Called by Tensor::item(): reports to the listener outside ops.
void trace_item(const Tensor& tensor);
inline void trace_note_item(const Tensor& tensor) {
  if (any_thread_traces()) trace_item(tensor);
}

// Marks a loop over a size (an RNN's time steps) so that an export records its body once, as
// a Loop instruction, instead of the unrolled iterations. Inert while no export traces.
//   TraceLoop loop(steps);
//   for (s ...) { loop.iteration(states); states = step(...); outputs[t] = states[0]; }
//   loop.finish(states, {outputs});  // then stack(outputs) reads the loop's results
class TraceLoop {
 public:
  explicit TraceLoop(int64_t trip_count);
  // Starts the next iteration, which reads `carried` (the state the previous one left).
  void iteration(const std::vector<Tensor>& carried);
  // `carried`: the state the last iteration left; stacked[k][i]: result k of iteration i,
  // in the order a later stack() takes them.
  void finish(const std::vector<Tensor>& carried, const std::vector<std::vector<Tensor>>& stacked);

 private:
  TraceListener* listener_ = nullptr;
};

// While alive, this thread's ops are not traced (the listener's own work, e.g. a snapshot).
class TracePause {
 public:
  TracePause() {
    if (any_thread_traces()) pause();
  }
  ~TracePause() {
    if (paused_) resume();
  }
  TracePause(const TracePause&) = delete;
  TracePause& operator=(const TracePause&) = delete;

 private:
  void pause();
  void resume();
  TraceListener* listener_ = nullptr;
  bool paused_ = false;
};

class TraceOp {
 public:
  explicit TraceOp(const char* name) {
    if (any_thread_traces()) enter(name);
  }
  ~TraceOp() {
    if (frame_) leave();
  }
  TraceOp(const TraceOp&) = delete;
  TraceOp& operator=(const TraceOp&) = delete;

  // True for the outermost op while a trace runs: only then are the calls below recorded.
  bool active() const { return frame_ && frame_->active; }
  void set_inputs(std::vector<Tensor> inputs);
  TraceOp& attr(const char* name, int64_t value);
  TraceOp& attr(const char* name, double value);
  TraceOp& attr(const char* name, std::vector<int64_t> values);
  TraceOp& attr(const char* name, std::string value);
  // Records the op with its result (when active) and returns the result.
  const Tensor& result(const Tensor& out);
  void results(std::vector<Tensor> outs);
  // Records the op as writing its first input in place.
  void in_place();

 private:
  friend void trace_allocation(const Storage& storage);
  // A frame of this thread's trace (nested ops get inactive ones, to count the depth).
  struct Frame {
    bool active = false, recorded = false;
    TracedOp op;
    std::vector<Storage> allocations;
  };
  void enter(const char* name);
  void leave();
  void finish();
  TraceAttribute& add_attribute(const char* name, TraceAttribute::Kind kind);

  std::unique_ptr<Frame> frame_;  // null while this thread does not trace
};

}  // namespace ember::core
