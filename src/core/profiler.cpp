// The profiler's recorder: per-thread event buffers, the global on/off state, and Profile's
// start/stop (export and the table are in profiler_trace.cpp).
#include "ember/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "ember/error.h"
#include "ember/memory.h"

namespace ember::profiler {
namespace detail {
std::atomic<uint32_t> g_state{0};
}  // namespace detail

namespace {

constexpr uint32_t kShapes = 4, kStack = 8;

// Note [Profiler buffers]
// Each thread appends to its own buffer, so recording threads never contend; the buffer's
// mutex is taken only against stop() collecting it. Buffers are shared with the registry so
// that events of threads that have exited (a process group's communication thread) survive.
// A session number tells an event that ends after stop() (or after a new start()) to drop itself.
struct ThreadBuffer {
  std::mutex mutex;
  uint32_t tid = 0;
  std::string name;
  std::vector<Event> events;
  std::vector<MemorySample> memory;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  uint32_t next_tid = 1;
  bool profiling = false;
  std::atomic<uint64_t> session{0};
  std::atomic<int64_t> start_ns{0};
};

Registry& registry() {
  static Registry* instance = new Registry();  // outlives threads that end at exit
  return *instance;
}

// Set once the thread's ThreadState is destroyed: tensors freed by later thread-local
// destructors must not bring it back. Trivially destructible, so it outlives the state.
thread_local bool t_exiting = false;

struct ThreadState {
  std::shared_ptr<ThreadBuffer> buffer;
  int64_t allocated = 0;            // bytes this thread allocated while memory was profiled
  std::vector<const Event*> open;   // events begun and not ended, for with_stack
  ~ThreadState() { t_exiting = true; }
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  if (!state.buffer) {
    auto buffer = std::make_shared<ThreadBuffer>();
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    buffer->tid = r.next_tid++;
    buffer->name = ::gettid() == ::getpid() ? "main" : "thread " + std::to_string(buffer->tid);
    r.buffers.push_back(buffer);
    state.buffer = std::move(buffer);
  }
  return state;
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t now_ns() { return steady_ns() - registry().start_ns.load(std::memory_order_relaxed); }

}  // namespace

namespace detail {

void record_memory(int64_t allocated_bytes, int64_t delta) {
  if (!(state() & detail::kMemory) || t_exiting) return;
  ThreadState& ts = thread_state();
  if (delta > 0) ts.allocated += delta;
  std::lock_guard lock(ts.buffer->mutex);
  ts.buffer->memory.push_back({now_ns(), allocated_bytes});
}

}  // namespace detail

const char* category_name(Category category) {
  switch (category) {
    case Category::Op: return "op";
    case Category::Backward: return "autograd";
    case Category::Gemm: return "gemm";
    case Category::PoolTask: return "pool";
    case Category::Range: return "user_annotation";
    default: return "collective";
  }
}

void set_thread_name(std::string name) {
  ThreadState& ts = thread_state();
  std::lock_guard lock(ts.buffer->mutex);
  ts.buffer->name = std::move(name);
}

uint32_t current_thread_id() { return thread_state().buffer->tid; }

void RecordFunction::begin(std::string_view name, Category category) {
  const uint32_t s = detail::state();
  if (!(s & detail::kRecording) || t_exiting) return;
  ThreadState& ts = thread_state();
  event_ = std::make_unique<Event>();
  event_->name = name;
  event_->category = category;
  event_->tid = ts.buffer->tid;
  if (s & kStack) {
    for (const Event* open : ts.open) event_->stack += (event_->stack.empty() ? "" : " > ") + open->name;
  }
  ts.open.push_back(event_.get());
  session_ = registry().session.load(std::memory_order_acquire);
  allocated_at_start_ = ts.allocated;
  event_->start_ns = now_ns();
}

bool RecordFunction::record_shapes() const { return event_ && (detail::state() & kShapes); }

void RecordFunction::cancel() {
  ThreadState& ts = thread_state();
  if (!ts.open.empty() && ts.open.back() == event_.get()) ts.open.pop_back();
  event_.reset();
}

void RecordFunction::end() {
  event_->end_ns = now_ns();
  ThreadState& ts = thread_state();
  if (!ts.open.empty() && ts.open.back() == event_.get()) ts.open.pop_back();
  if (detail::state() & detail::kMemory) event_->allocated_bytes = ts.allocated - allocated_at_start_;
  std::lock_guard lock(ts.buffer->mutex);
  if (registry().session.load(std::memory_order_acquire) == session_) ts.buffer->events.push_back(std::move(*event_));
  event_.reset();
}

Profile::Profile(ProfilerOptions options) : options_(options) { start(); }

Profile::~Profile() {
  if (running_) stop();
}

void Profile::start() {
  if (running_) stop();
  Registry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    EMBER_CHECK(!r.profiling, "profiler", "another Profile is already recording; stop it before starting this one");
    r.profiling = true;
    for (auto& buffer : r.buffers) {
      std::lock_guard buffer_lock(buffer->mutex);
      buffer->events.clear();
      buffer->memory.clear();
    }
  }
  trace_ = Trace{};
  r.start_ns.store(steady_ns(), std::memory_order_relaxed);
  r.session.fetch_add(1, std::memory_order_acq_rel);
  thread_state();  // the starting thread gets the first lane of a fresh process
  uint32_t s = detail::kRecording;
  if (options_.profile_memory) {
    s |= detail::kMemory;
    std::lock_guard lock(thread_state().buffer->mutex);
    thread_state().buffer->memory.push_back({0, memory_stats().allocated_bytes});
  }
  if (options_.record_shapes) s |= kShapes;
  if (options_.with_stack) s |= kStack;
  detail::g_state.store(s, std::memory_order_release);
  running_ = true;
}

void Profile::stop() {
  if (!running_) return;
  detail::g_state.store(0, std::memory_order_release);
  Registry& r = registry();
  const int64_t duration = now_ns();
  r.session.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(r.mutex);
  trace_.duration_ns = duration;
  trace_.pid = static_cast<int64_t>(::getpid());
  for (auto& buffer : r.buffers) {
    std::lock_guard buffer_lock(buffer->mutex);
    if (buffer->events.empty() && buffer->memory.empty()) continue;
    trace_.threads.push_back({buffer->tid, buffer->name});
    std::move(buffer->events.begin(), buffer->events.end(), std::back_inserter(trace_.events));
    std::move(buffer->memory.begin(), buffer->memory.end(), std::back_inserter(trace_.memory));
    buffer->events.clear();
    buffer->memory.clear();
  }
  // Buffers only the registry still holds belong to threads that have exited.
  std::erase_if(r.buffers, [](const std::shared_ptr<ThreadBuffer>& b) { return b.use_count() == 1; });
  std::sort(trace_.events.begin(), trace_.events.end(), [](const Event& a, const Event& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::stable_sort(trace_.memory.begin(), trace_.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; });
  r.profiling = false;
  running_ = false;
}

const Trace& Profile::trace() {
  stop();
  return trace_;
}

void Profile::export_chrome_trace(const std::string& path) { profiler::export_chrome_trace(trace(), path); }

std::string Profile::table(std::string_view sort_by, int limit) { return profiler::table(trace(), sort_by, limit); }

}  // namespace ember::profiler
