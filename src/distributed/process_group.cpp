// Process groups: rendezvous, Gloo contexts, worker threads, failures and aborts.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <set>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include "distributed/group_impl.h"
#include "distributed/monitor.h"
#include "distributed/flight_recorder.h"

namespace ember::distributed {
namespace {

// The process-wide state behind init_process_group.
struct World {
  std::mutex mutex;
  bool initialized = false;
  // Read without the mutex by the flight recorder (monitor and worker threads).
  std::atomic<int> rank{-1};
  std::atomic<int> world_size{0};
  int local_rank = 0;
  std::string hostname;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<Store> store;  // keys of this initialization
  std::shared_ptr<ProcessGroup> default_group;
  uint64_t groups_created = 0;
  uint64_t initializations = 0;
  std::unique_ptr<Monitor> monitor;

  // Every group alive in this process, for the heartbeat and the flight recorder.
  std::mutex registry_mutex;
  std::vector<std::weak_ptr<ProcessGroup>> registry;
};

// Call with world.mutex held.
void require_initialized(const World& world, const char* op) {
  EMBER_CHECK(world.initialized, op, "the process group is not initialized (call init_process_group)");
}

World& world_state() {
  // Leaked on purpose: worker threads may still read it while static objects are destroyed.
  static World* world = new World;
  return *world;
}

int env_int(const char* name, int fallback, const char* op) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  EMBER_CHECK(*end == '\0', op, name, " must be an integer, got '", text, "'");
  return static_cast<int>(value);
}

std::string env_string(const char* name) {
  const char* text = std::getenv(name);
  return text ? text : "";
}

std::string default_hostname(int world_size) {
  if (auto host = env_string("EMBER_HOSTNAME"); !host.empty()) return host;
  const int local_world_size = env_int("LOCAL_WORLD_SIZE", world_size, "init_process_group");
  if (local_world_size == world_size) return "127.0.0.1";
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// Gloo reports timeouts as "Timed out waiting ...".
bool is_timeout(const std::string& what) { return what.find("Timed out") != std::string::npos; }

std::shared_ptr<ProcessGroup> create_group(World& world, const std::string& name, const std::vector<int>& ranks,
                                           std::chrono::milliseconds timeout) {
  auto group = std::make_shared<ProcessGroup>(std::make_unique<ProcessGroup::Impl>(name, ranks, world.rank, timeout));
  {
    std::lock_guard<std::mutex> lock(world.registry_mutex);
    world.registry.push_back(group);
  }
  if (group->is_member()) group->impl().connect(world.store, world.hostname);
  return group;
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "sum";
    case ReduceOp::AVG: return "avg";
    case ReduceOp::PRODUCT: return "product";
    case ReduceOp::MIN: return "min";
    case ReduceOp::MAX: return "max";
  }
  return "unknown";
}

// ---- Work ------------------------------------------------------------------------------

void detail::WorkState::complete(std::exception_ptr failure) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (completed) return;
    completed = true;
    error = std::move(failure);
  }
  done.notify_all();
}

bool Work::is_completed() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->completed;
}

bool Work::is_success() const { return is_completed() && !exception(); }

std::exception_ptr Work::exception() const {
  if (!state_) return nullptr;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->error;
}

std::string Work::op() const { return state_ ? state_->op : ""; }
uint64_t Work::seq() const { return state_ ? state_->seq : 0; }

namespace {

std::mutex g_wait_stats_mutex;
std::map<std::string, CommWaitStats> g_wait_stats;

// Adds the time since `start` to the waits of `op` when it leaves scope (also by a throw).
class BlockedWait {
 public:
  explicit BlockedWait(const std::string& op) : op_(op) {}
  ~BlockedWait() {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    std::lock_guard<std::mutex> lock(g_wait_stats_mutex);
    CommWaitStats& stats = g_wait_stats[op_];
    stats.waits += 1;
    stats.wait_ms += ms;
  }

 private:
  const std::string& op_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

std::map<std::string, CommWaitStats> comm_wait_stats() {
  std::lock_guard<std::mutex> lock(g_wait_stats_mutex);
  return g_wait_stats;
}

void reset_comm_wait_stats() {
  std::lock_guard<std::mutex> lock(g_wait_stats_mutex);
  g_wait_stats.clear();
}

bool Work::wait(std::optional<std::chrono::milliseconds> timeout) const {
  if (!state_) return true;
  profiler::RecordFunction record;
  if (profiler::is_enabled() && state_->flow_id) begin_collective_event(record, *state_, " wait", 'f');
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->completed) {
    BlockedWait blocked(state_->op);
    if (timeout) {
      if (!state_->done.wait_for(lock, *timeout, [&] { return state_->completed; })) {
        throw CommError("[" + state_->op + "] group \"" + state_->group + "\" seq " + std::to_string(state_->seq) +
                            ": Work::wait timed out after " + std::to_string(timeout->count()) +
                            " ms (the operation keeps running under its own timeout)",
                        state_->group, state_->op, state_->seq, {});
      }
    } else {
      state_->done.wait(lock, [&] { return state_->completed; });
    }
  }
  if (state_->error) std::rethrow_exception(state_->error);
  return true;
}

// ---- OrderedWorker -----------------------------------------------------------------------

OrderedWorker::OrderedWorker(std::string lane, std::function<void(const std::shared_ptr<detail::WorkState>&)> execute)
    : execute_(std::move(execute)), thread_([this, lane = std::move(lane)] {
        profiler::set_thread_name(lane);
        loop();
      }) {}

OrderedWorker::~OrderedWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void OrderedWorker::push(std::shared_ptr<detail::WorkState> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void OrderedWorker::loop() {
  for (;;) {
    std::shared_ptr<detail::WorkState> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    execute_(work);
  }
}

// ---- ProcessGroup ------------------------------------------------------------------------

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

const std::string& ProcessGroup::name() const { return impl_->name; }
int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return static_cast<int>(impl_->ranks.size()); }
const std::vector<int>& ProcessGroup::ranks() const { return impl_->ranks; }
std::chrono::milliseconds ProcessGroup::timeout() const { return impl_->timeout; }
bool ProcessGroup::is_aborted() const { return impl_->aborted; }
void ProcessGroup::abort(const std::string& reason) { impl_->abort(reason, {}); }

int ProcessGroup::global_rank(int group_rank) const {
  EMBER_CHECK(group_rank >= 0 && group_rank < size(), "global_rank", "group rank ", group_rank,
              " is out of range for group \"", name(), "\" of size ", size());
  return impl_->ranks[static_cast<size_t>(group_rank)];
}

int ProcessGroup::group_rank(int global_rank) const {
  const auto it = std::find(impl_->ranks.begin(), impl_->ranks.end(), global_rank);
  return it == impl_->ranks.end() ? -1 : static_cast<int>(it - impl_->ranks.begin());
}

ProcessGroup::Impl::Impl(std::string name_, std::vector<int> ranks_, int global_rank_,
                         std::chrono::milliseconds timeout_)
    : name(std::move(name_)),
      ranks(std::move(ranks_)),
      rank([&] {
        const auto it = std::find(ranks.begin(), ranks.end(), global_rank_);
        return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
      }()),
      global_rank(global_rank_),
      timeout(timeout_) {}

ProcessGroup::Impl::~Impl() { shutdown(); }

void ProcessGroup::Impl::connect(const std::shared_ptr<Store>& world_store, const std::string& hostname) {
  world_store_ = world_store;
  auto group_store = prefix_store(world_store, "group/" + name);
  group_store->set("joined/" + std::to_string(rank), {'1'});
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, static_cast<int>(ranks.size()));
    context->setTimeout(timeout);
    GlooStore gloo_store(group_store, timeout);
    context->connectFullMesh(gloo_store, device);
    context_ = std::move(context);
  } catch (const std::exception& e) {
    std::vector<int> missing;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (!group_store->has("joined/" + std::to_string(i))) missing.push_back(ranks[i]);
    if (missing.empty() && dynamic_cast<const Error*>(&e)) throw;
    const std::string why = missing.empty() ? std::string("every rank joined, but connecting failed")
                                            : "rank(s) " + rank_list(missing) + " did not join";
    throw CommError("[init_process_group] group \"" + name + "\": " + why + " within " +
                        std::to_string(timeout.count()) + " ms (rendezvous " + world_store->describe() +
                        ", listening on " + hostname + "): " + e.what(),
                    name, "rendezvous", 0, missing);
  }
  collectives_ = std::make_unique<OrderedWorker>(
      "comm group " + name, [this](const std::shared_ptr<detail::WorkState>& work) { execute(work); });
  point_to_point_ = std::make_unique<OrderedWorker>(
      "p2p group " + name, [this](const std::shared_ptr<detail::WorkState>& work) { execute(work); });
}

void ProcessGroup::Impl::shutdown() {
  collectives_.reset();
  point_to_point_.reset();
}

std::shared_ptr<detail::WorkState> ProcessGroup::Impl::make_work(const OpDescription& description,
                                                                  bool point_to_point,
                                                                  std::optional<std::chrono::milliseconds> timeout) {
  EMBER_CHECK(rank >= 0, description.op, "this process (rank ", global_rank, ") is not a member of group \"", name,
              "\" (ranks ", ranks, ")");
  EMBER_CHECK(collectives_, description.op, "group \"", name, "\" was destroyed (destroy_process_group)");
  EMBER_CHECK(!timeout || timeout->count() > 0, description.op, "timeout must be positive, got ", timeout->count(),
              " ms");
  auto work = std::make_shared<detail::WorkState>();
  work->op = description.op;
  work->group = name;
  work->point_to_point = point_to_point;
  work->timeout = timeout.value_or(this->timeout);
  return work;
}

std::shared_ptr<detail::WorkState> ProcessGroup::Impl::issue(const OpDescription& description,
                                                             std::vector<Tensor> tensors,
                                                             std::optional<std::chrono::milliseconds> timeout,
                                                             std::function<void(const Execution&)> body) {
  auto work = make_work(description, false, timeout);
  work->tensors = std::move(tensors);
  profiler::RecordFunction record;
  std::lock_guard<std::mutex> lock(issue_mutex_);
  work->seq = ++next_seq_;
  if (profiler::is_enabled()) {
    work->flow_id = next_flow_id();
    begin_collective_event(record, *work, " issue", 's');
  }
  work->run = [this, body = std::move(body), timeout = work->timeout, tag = static_cast<uint32_t>(work->seq)] {
    body(Execution{context_, timeout, tag});
  };
  work->record_id = FlightRecorder::instance().scheduled(name, work->seq, false, description, work->timeout);
  collectives_->push(work);
  return work;
}

std::shared_ptr<detail::WorkState> ProcessGroup::Impl::issue_point_to_point(
    const OpDescription& description, Tensor tensor, int peer_global_rank,
    std::optional<std::chrono::milliseconds> timeout,
    std::function<std::function<void(std::chrono::milliseconds)>(const std::shared_ptr<gloo::Context>&)> post) {
  auto work = make_work(description, true, timeout);
  work->tensors = {std::move(tensor)};
  work->peer = peer_global_rank;
  std::lock_guard<std::mutex> lock(issue_mutex_);
  work->seq = ++next_point_to_point_seq_;
  work->record_id = FlightRecorder::instance().scheduled(name, work->seq, true, description, work->timeout);
  if (aborted) {
    point_to_point_->push(work);  // fails with the abort's reason
    return work;
  }
  try {
    work->run = [wait = post(context_), timeout = work->timeout] { wait(timeout); };
  } catch (const std::exception& e) {
    // Posting on a closed connection: report it the way a failed wait is reported.
    work->run = [what = std::string(e.what())] { throw std::runtime_error(what); };
  }
  point_to_point_->push(work);
  return work;
}

void ProcessGroup::Impl::execute(const std::shared_ptr<detail::WorkState>& work_ptr) {
  detail::WorkState& work = *work_ptr;
  auto& recorder = FlightRecorder::instance();
  if (aborted) {
    complete_aborted(work);
    return;
  }
  if (!work.point_to_point) last_started = work.seq;
  recorder.started(work.record_id);
  profiler::RecordFunction record;
  if (profiler::is_enabled()) begin_collective_event(record, work, "", 't');
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    running_.push_back(work_ptr);
  }
  std::optional<std::string> failure;
  try {
    work.run();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    running_.erase(std::find(running_.begin(), running_.end(), work_ptr));
  }
  {
    // The buffers are no longer in use: release them even while the Work lives on.
    std::lock_guard<std::mutex> lock(work.mutex);
    work.tensors.clear();
  }
  // Ended before the waiter wakes: a profile it stops next still holds the run.
  if (record.active()) record.end();
  if (failure) {
    fail(work, *failure);
    return;
  }
  if (!work.point_to_point) last_completed = work.seq;
  recorder.completed(work.record_id);
  work.complete(nullptr);
}

void ProcessGroup::Impl::complete_aborted(detail::WorkState& work) {
  std::string message;
  std::vector<int> culprits;
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    message = "[" + work.op + "] group \"" + name + "\" " + (work.point_to_point ? "p2p " : "") + "seq " +
              std::to_string(work.seq) + ": the group was aborted (" + abort_reason_ + ")";
    culprits = abort_culprits_;
  }
  FlightRecorder::instance().failed(work.record_id, message);
  work.complete(std::make_exception_ptr(CommError(message, name, work.op, work.seq, culprits)));
}

void ProcessGroup::Impl::fail(detail::WorkState& work, const std::string& what) {
  // An operation failing because the group was aborted reports the abort.
  if (aborted) {
    complete_aborted(work);
    return;
  }
  // Close the connections first so that the peers fail now instead of at their timeout,
  // then find the rank at fault (Note [Finding the rank at fault]).
  abort("seq " + std::to_string(work.seq) + " (" + work.op + ") failed", {});
  const Diagnosis diagnosis =
      work.point_to_point ? diagnose(*world_store_, name, {work.peer}, global_rank, 0)
                          : diagnose(*world_store_, name, ranks, global_rank, work.seq);
  const std::string kind = is_timeout(what) ? "timed out after " + std::to_string(work.timeout.count()) + " ms"
                                            : std::string("failed");
  const std::string message = "[" + work.op + "] group \"" + name + "\" " + (work.point_to_point ? "p2p " : "") +
                              "seq " + std::to_string(work.seq) + " " + kind + ": " + diagnosis.description +
                              " (gloo: " + what + ")";
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    abort_reason_ = message;
    abort_culprits_ = diagnosis.culprits;
  }
  FlightRecorder::instance().failed(work.record_id, message);
  dump_flight_recorder_to_env_dir(message);
  work.complete(std::make_exception_ptr(CommError(message, name, work.op, work.seq, diagnosis.culprits)));
}

void ProcessGroup::Impl::abort(const std::string& reason, std::vector<int> culprits) {
  std::vector<std::shared_ptr<detail::WorkState>> running;
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (aborted.exchange(true)) return;
    abort_reason_ = reason;
    abort_culprits_ = std::move(culprits);
    running = running_;
  }
  if (context_) context_->closeConnections();
  // Operations blocked in Gloo return at their timeout; their waiters learn of the abort now.
  for (const auto& work : running) complete_aborted(*work);
}

// ---- the process group ---------------------------------------------------------------------

std::shared_ptr<ProcessGroup> resolve_group(const std::shared_ptr<ProcessGroup>& group, const char* op) {
  if (group) return group;
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  require_initialized(world, op);
  return world.default_group;
}

std::vector<GroupProgress> live_groups() {
  World& world = world_state();
  std::vector<GroupProgress> groups;
  std::lock_guard<std::mutex> lock(world.registry_mutex);
  for (auto it = world.registry.begin(); it != world.registry.end();) {
    if (auto group = it->lock()) {
      const auto& impl = group->impl();
      if (impl.rank >= 0) groups.push_back({impl.name, impl.ranks, impl.last_started, impl.last_completed});
      ++it;
    } else {
      it = world.registry.erase(it);
    }
  }
  return groups;
}

int current_rank() { return world_state().rank; }
int current_world_size() { return world_state().world_size; }

void init_process_group(const InitOptions& options) {
  const char* op = "init_process_group";
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  EMBER_CHECK(!world.initialized, op, "the process group is already initialized (call destroy_process_group first)");
  const int rank = options.rank >= 0 ? options.rank : env_int("RANK", -1, op);
  const int world_size = options.world_size >= 0 ? options.world_size : env_int("WORLD_SIZE", -1, op);
  EMBER_CHECK(rank >= 0 && world_size > 0, op, "rank and world size are not set: got rank ", rank, " and world size ",
              world_size, " (set RANK and WORLD_SIZE, as ember-run does, or InitOptions)");
  EMBER_CHECK(rank < world_size, op, "rank ", rank, " is out of range for world size ", world_size);
  const std::string rendezvous = options.rendezvous.empty() ? env_string("EMBER_RDZV") : options.rendezvous;
  EMBER_CHECK(!rendezvous.empty(), op,
              "no rendezvous: set EMBER_RDZV to file:DIR or redis://HOST:PORT (ember-run does) or "
              "InitOptions::rendezvous");
  EMBER_CHECK(options.timeout.count() > 0, op, "timeout must be positive, got ", options.timeout.count(), " ms");

  world.rank = rank;
  world.world_size = world_size;
  world.local_rank = options.local_rank >= 0 ? options.local_rank : env_int("LOCAL_RANK", 0, op);
  world.hostname = options.hostname.empty() ? default_hostname(world_size) : options.hostname;
  world.timeout = options.timeout;
  world.groups_created = 0;
  FlightRecorder::instance().clear();
  // Gloo writes to sockets without MSG_NOSIGNAL: a peer that closed its connection would
  // kill this process with SIGPIPE instead of failing the operation (Python, and so
  // PyTorch, ignores SIGPIPE from the start).
  struct sigaction pipe_action {};
  if (::sigaction(SIGPIPE, nullptr, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL) {
    pipe_action.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &pipe_action, nullptr);
  }
  try {
    // Each initialization of this process uses fresh keys (init, destroy, init again).
    world.store = prefix_store(open_store(rendezvous, op), "init" + std::to_string(world.initializations++));
    world.monitor = std::make_unique<Monitor>(world.store, rank);
    std::vector<int> all(static_cast<size_t>(world_size));
    for (int r = 0; r < world_size; ++r) all[static_cast<size_t>(r)] = r;
    world.default_group = create_group(world, std::to_string(world.groups_created++), all, world.timeout);
  } catch (...) {
    world.monitor.reset();
    world.store.reset();
    world.rank = -1;
    world.world_size = 0;
    throw;
  }
  world.initialized = true;
}

void destroy_process_group() {
  World& world = world_state();
  std::unique_ptr<Monitor> monitor;
  std::vector<std::shared_ptr<ProcessGroup>> groups;
  {
    std::lock_guard<std::mutex> lock(world.mutex);
    if (!world.initialized) return;
    world.initialized = false;
    world.default_group.reset();
    monitor = std::move(world.monitor);
    std::lock_guard<std::mutex> registry_lock(world.registry_mutex);
    for (auto& weak : world.registry)
      if (auto group = weak.lock()) groups.push_back(group);
    world.registry.clear();
  }
  for (auto& group : groups) group->impl().shutdown();
  monitor.reset();
  std::lock_guard<std::mutex> lock(world.mutex);
  world.store.reset();
  world.rank = -1;
  world.world_size = 0;
}

bool is_initialized() {
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  return world.initialized;
}

std::shared_ptr<ProcessGroup> world() {
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  require_initialized(world, "world");
  return world.default_group;
}

int get_rank(const std::shared_ptr<ProcessGroup>& group) {
  return group ? group->rank() : resolve_group(nullptr, "get_rank")->rank();
}

int get_world_size(const std::shared_ptr<ProcessGroup>& group) {
  return group ? group->size() : resolve_group(nullptr, "get_world_size")->size();
}

int get_local_rank() {
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  require_initialized(world, "get_local_rank");
  return world.local_rank;
}

std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, const GroupOptions& options) {
  const char* op = "new_group";
  World& world = world_state();
  std::lock_guard<std::mutex> lock(world.mutex);
  require_initialized(world, op);
  EMBER_CHECK(!ranks.empty(), op, "a group needs at least one rank");
  std::set<int> distinct;
  for (int r : ranks) {
    EMBER_CHECK(r >= 0 && r < world.world_size, op, "rank ", r, " is out of range for world size ", world.world_size,
                " (ranks ", ranks, ")");
    EMBER_CHECK(distinct.insert(r).second, op, "rank ", r, " appears twice in ", ranks);
  }
  const auto timeout = options.timeout.value_or(world.timeout);
  EMBER_CHECK(timeout.count() > 0, op, "timeout must be positive, got ", timeout.count(), " ms");
  return create_group(world, std::to_string(world.groups_created++), ranks, timeout);
}

}  // namespace ember::distributed
