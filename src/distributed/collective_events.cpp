// Collectives on the profiler's timeline: issue, run and wait, joined by one flow.
#include <atomic>

#include "distributed/group_impl.h"

namespace ember::distributed {

void begin_collective_event(profiler::RecordFunction& record, const detail::WorkState& work, const char* suffix,
                            char flow_phase) {
  record.begin(work.op + suffix, profiler::Category::Collective);
  if (!record.active()) return;
  profiler::Event& e = *record.event();
  e.group = work.group;
  e.sequence = static_cast<int64_t>(work.seq);
  // The worker thread clears the tensors when it is done: only the issue and the run read them.
  if (flow_phase != 'f')
    for (const Tensor& t : work.tensors) e.bytes += static_cast<int64_t>(t.nbytes());
  if (work.flow_id) {
    e.flow_id = work.flow_id;
    e.flow_phase = flow_phase;
  }
}

uint64_t next_flow_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ember::distributed
