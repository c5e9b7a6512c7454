// ember::profiler: records ops, autograd nodes, GEMM products, pool tasks, memory, collectives and
// user ranges on per-thread timelines; exports a Chrome trace and a key_averages()-like table.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ember::profiler {

struct ProfilerOptions {
  bool record_shapes = false;   // input shapes and dtypes of ops and autograd nodes
  bool profile_memory = false;  // allocations and frees: a memory counter track, per-event bytes
  bool with_stack = false;      // the names of the enclosing events, outermost first
};

// The lane an event belongs to in the trace (Chrome trace "cat").
enum class Category : uint8_t { Op, Backward, Gemm, PoolTask, Range, Collective };
const char* category_name(Category category);

// A complete event: [start_ns, end_ns) on thread lane `tid`, times from the profile's start.
struct Event {
  std::string name;
  Category category = Category::Op;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t tid = 0;
  std::string input_shapes;  // "[2, 3], [3]" with record_shapes
  std::string input_dtypes;  // "float32, float32"
  double flops = 0;          // floating-point operations, where known (GEMM)
  int64_t allocated_bytes = 0;  // bytes allocated on this thread while it ran, with profile_memory
  std::string backend;       // the GEMM backend that ran a product
  std::string group;         // collectives: the process group, sequence number and payload
  int64_t sequence = -1;
  int64_t bytes = 0;
  // A flow ties a collective's issue, its run on the communication thread and its wait:
  // 's' starts flow `flow_id`, 't' continues it, 'f' ends it; 0 when none.
  uint64_t flow_id = 0;
  char flow_phase = 0;
  std::string stack;  // with_stack: enclosing event names joined by " > "
};

// One point of the memory counter track: live allocator bytes right after an allocation or free.
struct MemorySample {
  int64_t ts_ns = 0;
  int64_t allocated_bytes = 0;
};

struct ThreadLane {
  uint32_t tid = 0;
  std::string name;
};

// What a profile recorded: events sorted by (tid, start, longest first), so that on each lane a
// parent precedes the events nested in it.
struct Trace {
  std::vector<Event> events;
  std::vector<MemorySample> memory;
  std::vector<ThreadLane> threads;
  int64_t duration_ns = 0;
  int64_t pid = 0;
};

namespace detail {
// Bit 0: recording; bit 1: memory too. One relaxed load keeps the cost of an off profiler to a
// load and a branch at every instrumented site (Note [Profiler buffers] in src/core/profiler.cpp).
inline constexpr uint32_t kRecording = 1, kMemory = 2;
extern std::atomic<uint32_t> g_state;
#ifdef EMBER_RT_CPU
// ember-rt's copy of the layers below the runtime (Note [Runtime size] in cmake/runtime.cmake)
// cannot start a profile: every hook folds away.
inline uint32_t state() { return 0; }
#else
inline uint32_t state() { return g_state.load(std::memory_order_relaxed); }
#endif
// The allocator's hook: `allocated_bytes` live after a change of `delta` bytes.
void record_memory(int64_t allocated_bytes, int64_t delta);
}  // namespace detail

inline bool is_enabled() { return detail::state() != 0; }

// Names the calling thread's lane in traces ("pool worker 1", "gloo comm").
void set_thread_name(std::string name);
// The calling thread's lane id, as events record it.
uint32_t current_thread_id();

// An event covering the object's lifetime (libtorch's RecordFunction). Does nothing unless
// the profiler was recording when it began; the setters apply only while active().
class RecordFunction {
 public:
  RecordFunction() = default;
  RecordFunction(std::string_view name, Category category) {
    if (is_enabled()) begin(name, category);
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;
  ~RecordFunction() {
    if (event_) end();
  }

  void begin(std::string_view name, Category category);
  void end();
  // Drops the event (a pool task that found no chunk left).
  void cancel();
  bool active() const { return event_ != nullptr; }
  bool record_shapes() const;
  Event* event() { return event_.get(); }

 private:
  std::unique_ptr<Event> event_;
  uint64_t session_ = 0;
  int64_t allocated_at_start_ = 0;
};

// A user range on the calling thread's lane (torch.profiler.record_function).
class Range {
 public:
  explicit Range(std::string_view name) : record_(name, Category::Range) {}

 private:
  RecordFunction record_;
};

// Records while it lives (or between start() and stop()); one profile at a time per process.
class Profile {
 public:
  explicit Profile(ProfilerOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // start() discards what an earlier start() recorded.
  void start();
  void stop();
  bool running() const { return running_; }
  // What was recorded; stops the profile first if it is running.
  const Trace& trace();

  // The Trace Event format (JSON) that Perfetto and chrome://tracing open.
  void export_chrome_trace(const std::string& path);
  // key_averages().table(): one row per event name; see profiler::table.
  std::string table(std::string_view sort_by = "self", int limit = 20);

 private:
  ProfilerOptions options_;
  bool running_ = false;
  Trace trace_;
};

void export_chrome_trace(const Trace& trace, const std::string& path);
// Reads a trace written by export_chrome_trace (for `ember profile TRACE.json`).
Trace load_chrome_trace(const std::string& path);
// Rows: name, calls, self and total time, their % of the profiled time, FLOP/s where known,
// bytes allocated (self: less the nested events'; not net of frees). sort_by: "self", "total",
// "calls", "flops" or "memory" (self bytes); limit <= 0: all rows.
std::string table(const Trace& trace, std::string_view sort_by = "self", int limit = 20);

}  // namespace ember::profiler
