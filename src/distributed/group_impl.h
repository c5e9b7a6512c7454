// ProcessGroup internals: issued operations (WorkState), the worker thread that runs them
// in order, and the group's Gloo context (internal).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/context.h>

#include "distributed/store.h"
#include "ember/distributed/process_group.h"
#include "ember/profiler.h"
#include "ember/tensor.h"

namespace ember::distributed {

namespace detail {

// One issued operation. `run` does the communication on a worker thread (for send/recv,
// which are posted when issued, it waits for their completion).
struct WorkState {
  std::string op;
  std::string group;
  uint64_t seq = 0;
  bool point_to_point = false;
  int peer = -1;  // global rank of the other side of a send/recv
  std::chrono::milliseconds timeout{0};
  std::function<void()> run;
  std::vector<Tensor> tensors;  // kept alive until the operation completes
  uint64_t record_id = 0;       // flight-recorder entry
  uint64_t flow_id = 0;         // the profiler's flow from issue to run to wait; 0 when not profiled

  std::mutex mutex;
  std::condition_variable done;
  bool completed = false;
  std::exception_ptr error;

  // The first completion wins: an abort may complete a running operation early.
  void complete(std::exception_ptr failure);
};

}  // namespace detail

// A collective's issue (suffix " issue", flow phase 's'), run on the worker thread ("", 't') and
// wait (" wait", 'f') as profiler events with its group, sequence number and bytes, joined by
// the work's flow. Does nothing unless the profiler records.
void begin_collective_event(profiler::RecordFunction& record, const detail::WorkState& work, const char* suffix,
                            char flow_phase);
// A flow id unique in this process.
uint64_t next_flow_id();

// A thread running queued operations one at a time, in order. Stopping lets it finish
// what is queued.
class OrderedWorker {
 public:
  // `lane` names the thread's lane in profiler traces.
  OrderedWorker(std::string lane, std::function<void(const std::shared_ptr<detail::WorkState>&)> execute);
  ~OrderedWorker();
  void push(std::shared_ptr<detail::WorkState> work);

 private:
  void loop();

  std::function<void(const std::shared_ptr<detail::WorkState>&)> execute_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<detail::WorkState>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// What a collective needs to run: the context, the timeout and a tag unique among the
// group's operations in flight.
struct Execution {
  const std::shared_ptr<gloo::Context>& context;
  std::chrono::milliseconds timeout;
  uint32_t tag;
};

// What the flight recorder shows of an operation.
struct OpDescription {
  const char* op;
  std::vector<int64_t> input_sizes;
  std::vector<int64_t> output_sizes;
  ScalarType dtype = kFloat32;
};

struct ProcessGroup::Impl {
  Impl(std::string name, std::vector<int> ranks, int global_rank, std::chrono::milliseconds timeout);
  ~Impl();

  // Rendezvous and full-mesh connection of the members (members only).
  void connect(const std::shared_ptr<Store>& world_store, const std::string& hostname);

  // Queues a collective: it gets the next sequence number and runs on the worker thread.
  std::shared_ptr<detail::WorkState> issue(const OpDescription& description, std::vector<Tensor> tensors,
                                           std::optional<std::chrono::milliseconds> timeout,
                                           std::function<void(const Execution&)> body);
  // Posts a send or recv now (`post`) and waits for it on the point-to-point thread.
  std::shared_ptr<detail::WorkState> issue_point_to_point(
      const OpDescription& description, Tensor tensor, int peer_global_rank,
      std::optional<std::chrono::milliseconds> timeout,
      std::function<std::function<void(std::chrono::milliseconds)>(const std::shared_ptr<gloo::Context>&)> post);

  void abort(const std::string& reason, std::vector<int> culprits);
  // Stops the workers after the queued operations (destroy_process_group).
  void shutdown();

  const std::string name;
  const std::vector<int> ranks;  // global ranks, in group-rank order
  const int rank;                // group rank of this process, -1 when not a member
  const int global_rank;
  const std::chrono::milliseconds timeout;

  std::atomic<uint64_t> last_started{0};
  std::atomic<uint64_t> last_completed{0};
  std::atomic<bool> aborted{false};

 private:
  void execute(const std::shared_ptr<detail::WorkState>& work);
  void fail(detail::WorkState& work, const std::string& what);
  void complete_aborted(detail::WorkState& work);
  std::shared_ptr<detail::WorkState> make_work(const OpDescription& description, bool point_to_point,
                                               std::optional<std::chrono::milliseconds> timeout);

  std::shared_ptr<Store> world_store_;
  std::shared_ptr<gloo::Context> context_;

  std::mutex issue_mutex_;  // sequence numbers follow the order of issue
  uint64_t next_seq_ = 0;
  uint64_t next_point_to_point_seq_ = 0;

  std::mutex abort_mutex_;
  std::string abort_reason_;
  std::vector<int> abort_culprits_;
  std::vector<std::shared_ptr<detail::WorkState>> running_;  // at most one per worker

  std::unique_ptr<OrderedWorker> collectives_;
  std::unique_ptr<OrderedWorker> point_to_point_;
};

// The default group when `group` is null; throws Error when the process group is not
// initialized.
std::shared_ptr<ProcessGroup> resolve_group(const std::shared_ptr<ProcessGroup>& group, const char* op);

// For the flight recorder and the status heartbeat: every live group's name, members and
// progress, as JSON text fields filled by the caller.
struct GroupProgress {
  std::string name;
  std::vector<int> ranks;
  uint64_t last_started;
  uint64_t last_completed;
};
std::vector<GroupProgress> live_groups();

// This process's global rank and the world size (-1 / 0 before init_process_group).
int current_rank();
int current_world_size();

}  // namespace ember::distributed
