// Process groups on Gloo (torch.distributed): init_process_group, new_group, Work handles
// and the error raised when communication fails.
//
// Every process of a job calls init_process_group with its rank and the world size (from
// RANK / WORLD_SIZE / LOCAL_RANK / EMBER_RDZV, as set by `ember-run`, or from InitOptions).
// A ProcessGroup owns a Gloo context (TCP transport) and one worker thread: operations on
// one group run one after the other in the order they were issued; operations on two
// groups run at the same time. Collectives live in ember/distributed/collectives.h.
#pragma once
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/error.h"

namespace ember::distributed {

// Element-wise reduction of all_reduce / reduce_scatter_tensor (torch.distributed.ReduceOp).
enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

const char* reduce_op_name(ReduceOp op);

// Raised when a collective cannot complete: a peer died or closed its connection, the
// operation timed out, or its group was aborted. Names the group, the operation, its
// sequence number in the group and the global ranks at fault (empty when none could be
// singled out). The group is aborted; create a new one to continue.
class CommError : public Error {
 public:
  CommError(const std::string& message, std::string group, std::string op, uint64_t seq, std::vector<int> ranks)
      : Error(message), group_(std::move(group)), op_(std::move(op)), seq_(seq), ranks_(std::move(ranks)) {}

  const std::string& group() const { return group_; }
  const std::string& op() const { return op_; }
  uint64_t seq() const { return seq_; }
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  std::string group_;
  std::string op_;
  uint64_t seq_;
  std::vector<int> ranks_;
};

namespace detail {
struct WorkState;
}

// The handle of an issued operation (c10d::Work). Synchronous calls return a completed one.
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  bool is_completed() const;
  // Completed without an error.
  bool is_success() const;
  // Blocks until the operation completes and rethrows its error (CommError or Error).
  // With a timeout, throws CommError if it has not completed by then; the operation keeps
  // running under its own timeout. Returns true.
  bool wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
  // The error of a completed, failed operation; null otherwise.
  std::exception_ptr exception() const;
  // The operation ("all_reduce", ...) and its sequence number in its group (0 for a
  // default-constructed Work). Point-to-point operations count separately from collectives.
  std::string op() const;
  uint64_t seq() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// Exposed communication: the time this process's threads spent blocked in Work::wait on
// operations that had not completed yet (synchronous collectives wait through it too), i.e.
// what the caller could not overlap with its own work: FSDP's all-gather and reduce-scatter
// waits, a loss all_reduce. A wait on a completed operation adds nothing.
struct CommWaitStats {
  int64_t waits = 0;    // waits that blocked
  double wait_ms = 0;   // time blocked in them
};
// Per operation name ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", ...)
// since the start of the process or the last reset.
std::map<std::string, CommWaitStats> comm_wait_stats();
void reset_comm_wait_stats();

class ProcessGroup {
 public:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  const std::string& name() const;
  // This process's rank in the group; -1 when it is not a member.
  int rank() const;
  int size() const;
  bool is_member() const { return rank() >= 0; }
  // The global ranks of the members, in group-rank order.
  const std::vector<int>& ranks() const;
  int global_rank(int group_rank) const;
  // -1 when `global_rank` is not a member.
  int group_rank(int global_rank) const;
  // The default timeout of every operation on this group.
  std::chrono::milliseconds timeout() const;

  // Closes the group's connections (its peers' pending operations fail at once) and fails
  // every pending and future operation on it with CommError. Create a new group to go on.
  void abort(const std::string& reason = "aborted by the user");
  bool is_aborted() const;

  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Overrides of the environment for init_process_group.
struct InitOptions {
  int rank = -1;        // -1: RANK
  int world_size = -1;  // -1: WORLD_SIZE
  int local_rank = -1;  // -1: LOCAL_RANK, 0 when unset
  // "file:DIR" (a directory on this machine or a shared file system) or
  // "redis://HOST:PORT[/PREFIX]"; empty: EMBER_RDZV.
  std::string rendezvous{};
  // The address this process listens on for its peers; empty: EMBER_HOSTNAME, else
  // 127.0.0.1 on a single machine (LOCAL_WORLD_SIZE unset or equal to the world size),
  // else the machine's host name.
  std::string hostname{};
  // Default timeout of every operation of every group (rendezvous included).
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

struct GroupOptions {
  // Default: the timeout given to init_process_group.
  std::optional<std::chrono::milliseconds> timeout{};
};

// Joins the job: rendezvous through the store, connects the default group of all ranks.
// Throws Error for missing or inconsistent settings and CommError when the peers do not
// all arrive within the timeout. Ignores SIGPIPE if it has its default action, so that a
// peer's closed connection fails an operation instead of killing the process.
void init_process_group(const InitOptions& options = {});
// Lets every group finish its queued work, then closes all groups (using one afterwards
// throws Error). init_process_group may then be called again, by all ranks.
void destroy_process_group();
bool is_initialized();

// The default group of all ranks.
std::shared_ptr<ProcessGroup> world();
// Global rank and world size, or the rank in / size of `group`.
int get_rank(const std::shared_ptr<ProcessGroup>& group = nullptr);
int get_world_size(const std::shared_ptr<ProcessGroup>& group = nullptr);
// LOCAL_RANK (the process's index on its machine).
int get_local_rank();

// A group of the given global ranks (distinct, in any order: group rank i is ranks[i]).
// As in PyTorch every process must call new_group for every group, in the same order, also
// when it is not a member (it then gets a group with is_member() == false).
std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, const GroupOptions& options = {});

}  // namespace ember::distributed
