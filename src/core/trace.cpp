// The export trace hook (Note [Export trace] in src/core/trace.h).
#include "core/trace.h"

#include <exception>

namespace ember::core {
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
  state.listener = listener;
  state.depth = 0;
  state.frame = nullptr;
}

void trace_note_allocation(const Storage& storage) {
  if (state.frame) state.frame->allocations_.push_back(storage);
  else if (state.listener && state.depth == 0) state.listener->untraced_allocation(storage);
}

void trace_note_item(const Tensor& tensor) {
  if (state.listener && state.depth == 0) state.listener->item(tensor);
}

TraceOp::TraceOp(const char* name) {
  if (!state.listener) return;
  entered_ = true;
  if (state.depth++ == 0) {
    active_ = true;
    op_.name = name;
    state.frame = this;
  }
}

TraceOp::~TraceOp() {
  if (!entered_) return;
  --state.depth;
  if (!active_) return;
  state.frame = nullptr;
  if (!recorded_ && state.listener && std::uncaught_exceptions() == 0)
    state.listener->unsupported(op_.name.c_str(), std::move(allocations_));
}

void TraceOp::set_inputs(std::vector<Tensor> inputs) {
  for (auto& t : inputs)
    if (t.defined()) op_.inputs.push_back(std::move(t));
}

TraceAttribute& TraceOp::add_attribute(const char* name, TraceAttribute::Kind kind) {
  TraceAttribute& a = op_.attributes.emplace_back();
  a.name = name;
  a.kind = kind;
  return a;
}

TraceOp& TraceOp::attr(const char* name, int64_t value) {
  if (active_) add_attribute(name, TraceAttribute::Kind::Int).int_value = value;
  return *this;
}

TraceOp& TraceOp::attr(const char* name, double value) {
  if (active_) add_attribute(name, TraceAttribute::Kind::Float).float_value = value;
  return *this;
}

TraceOp& TraceOp::attr(const char* name, std::vector<int64_t> values) {
  if (active_) add_attribute(name, TraceAttribute::Kind::Ints).ints = std::move(values);
  return *this;
}

TraceOp& TraceOp::attr(const char* name, std::string value) {
  if (active_) add_attribute(name, TraceAttribute::Kind::String).string_value = std::move(value);
  return *this;
}

void TraceOp::finish() {
  recorded_ = true;
  // The frame closes for allocations now: what the listener does is not the op's.
  state.frame = nullptr;
  state.listener->record(std::move(op_));
}

const Tensor& TraceOp::result(const Tensor& out) {
  if (active_ && !recorded_) {
    op_.outputs.push_back(out);
    finish();
  }
  return out;
}

void TraceOp::results(std::vector<Tensor> outs) {
  if (!active_ || recorded_) return;
  op_.outputs = std::move(outs);
  finish();
}

void TraceOp::in_place() {
  if (!active_ || recorded_) return;
  op_.in_place = true;
  finish();
}

TraceLoop::TraceLoop(int64_t trip_count) {
  if (!state.listener || state.depth != 0) return;
  listener_ = state.listener;
  listener_->loop_begin(trip_count);
}

void TraceLoop::iteration(const std::vector<Tensor>& carried) {
  if (listener_) listener_->loop_iteration(carried);
}

void TraceLoop::finish(const std::vector<Tensor>& carried, const std::vector<std::vector<Tensor>>& stacked) {
  if (listener_) listener_->loop_end(carried, stacked);
}

TracePause::TracePause() : listener_(state.listener) { state.listener = nullptr; }

TracePause::~TracePause() { state.listener = listener_; }

}  // namespace ember::core
