// The export trace hook (Note [Export trace] in src/core/trace.h).
#include "core/trace.h"

#include <exception>

namespace ember::core {

std::atomic<int> tracing_threads{0};

namespace {

struct TraceState {
  TraceListener* listener = nullptr;
  int depth = 0;
  TraceOp* frame = nullptr;  // the outermost open frame
};

thread_local TraceState state;

}  // namespace

TraceListener* trace_listener() { return state.listener; }

void set_trace_listener(TraceListener* listener) {
  if (!state.listener && listener) tracing_threads.fetch_add(1, std::memory_order_relaxed);
  if (state.listener && !listener) tracing_threads.fetch_sub(1, std::memory_order_relaxed);
  state.listener = listener;
  state.depth = 0;
  state.frame = nullptr;
}

void trace_allocation(const Storage& storage) {
  if (state.frame) state.frame->frame_->allocations.push_back(storage);
  else if (state.listener && state.depth == 0) state.listener->untraced_allocation(storage);
}

void trace_item(const Tensor& tensor) {
  if (state.listener && state.depth == 0) state.listener->item(tensor);
}

void TracePause::pause() {
  listener_ = state.listener;
  state.listener = nullptr;
  paused_ = true;
}

void TracePause::resume() { state.listener = listener_; }

void TraceOp::enter(const char* name) {
  if (!state.listener) return;
  frame_ = std::make_unique<Frame>();
  if (state.depth++ == 0) {
    frame_->active = true;
    frame_->op.name = name;
    state.frame = this;
  }
}

void TraceOp::leave() {
  --state.depth;
  if (!frame_->active) return;
  state.frame = nullptr;
  if (!frame_->recorded && state.listener && std::uncaught_exceptions() == 0)
    state.listener->unsupported(frame_->op.name.c_str(), std::move(frame_->allocations));
}

void TraceOp::set_inputs(std::vector<Tensor> inputs) {
  for (auto& t : inputs)
    if (t.defined()) frame_->op.inputs.push_back(std::move(t));
}

TraceAttribute& TraceOp::add_attribute(const char* name, TraceAttribute::Kind kind) {
  TraceAttribute& a = frame_->op.attributes.emplace_back();
  a.name = name;
  a.kind = kind;
  return a;
}

TraceOp& TraceOp::attr(const char* name, int64_t value) {
  if (active()) add_attribute(name, TraceAttribute::Kind::Int).int_value = value;
  return *this;
}

TraceOp& TraceOp::attr(const char* name, double value) {
  if (active()) add_attribute(name, TraceAttribute::Kind::Float).float_value = value;
  return *this;
}

TraceOp& TraceOp::attr(const char* name, std::vector<int64_t> values) {
  if (active()) add_attribute(name, TraceAttribute::Kind::Ints).ints = std::move(values);
  return *this;
}

TraceOp& TraceOp::attr(const char* name, std::string value) {
  if (active()) add_attribute(name, TraceAttribute::Kind::String).string_value = std::move(value);
  return *this;
}

void TraceOp::finish() {
  frame_->recorded = true;
  // The frame closes for allocations now: what the listener does is not the op's.
  state.frame = nullptr;
  state.listener->record(std::move(frame_->op));
}

const Tensor& TraceOp::result(const Tensor& out) {
  if (active() && !frame_->recorded) {
    frame_->op.outputs.push_back(out);
    finish();
  }
  return out;
}

void TraceOp::results(std::vector<Tensor> outs) {
  if (!active() || frame_->recorded) return;
  frame_->op.outputs = std::move(outs);
  finish();
}

void TraceOp::in_place() {
  if (!active() || frame_->recorded) return;
  frame_->op.in_place = true;
  finish();
}

TraceLoop::TraceLoop(int64_t trip_count) {
  if (!any_thread_traces() || !state.listener || state.depth != 0) return;
  listener_ = state.listener;
  listener_->loop_begin(trip_count);
}

void TraceLoop::iteration(const std::vector<Tensor>& carried) {
  if (listener_) listener_->loop_iteration(carried);
}

void TraceLoop::finish(const std::vector<Tensor>& carried, const std::vector<std::vector<Tensor>>& stacked) {
  if (listener_) listener_->loop_end(carried, stacked);
}

}  // namespace ember::core
