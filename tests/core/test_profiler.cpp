// ember::profiler: the events of a known program (names, shapes, nesting, threads), the Trace
// Event schema of its export, the memory track against the allocator, the table and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/testing.h"
#include "core/trace_schema.h"
#include "cpu/parallel.h"
#include "ember/profiler.h"

namespace ember {
namespace {

using profiler::Category;
using profiler::Event;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_profiler_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The events nested directly in `parent` on its lane, in order.
std::vector<const Event*> children(const std::vector<Event>& events, const Event& parent) {
  std::vector<const Event*> direct;
  for (const Event& e : events) {
    if (&e == &parent || e.tid != parent.tid || e.start_ns < parent.start_ns || e.end_ns > parent.end_ns) continue;
    if (!direct.empty() && e.start_ns < direct.back()->end_ns) continue;  // inside an earlier child
    direct.push_back(&e);
  }
  return direct;
}

std::vector<std::string> names(const std::vector<const Event*>& events) {
  std::vector<std::string> out;
  for (const Event* e : events) out.push_back(e->name);
  return out;
}

const Event& only(const std::vector<Event>& events, const std::string& name) {
  const Event* found = nullptr;
  for (const Event& e : events)
    if (e.name == name) {
      EXPECT_EQ(found, nullptr) << "more than one " << name;
      found = &e;
    }
  EXPECT_NE(found, nullptr) << "no " << name;
  return *found;
}

struct KnownProgram {
  Tensor x = randn({4, 8});
  Tensor w1 = randn({16, 8}).requires_grad_(), b1 = randn({16}).requires_grad_();
  Tensor w2 = randn({3, 16}).requires_grad_(), b2 = randn({3}).requires_grad_();

  void run() {
    profiler::Range range("model");
    Tensor y = softmax(linear(linear(x, w1, b1), w2, b2), -1);
    Tensor loss = (y * y).sum();
    loss.backward();
  }
};

TEST(Profiler, KnownProgramEventsShapesAndNesting) {
  manual_seed(0);
  KnownProgram program;
  profiler::Profile p({.record_shapes = true});
  program.run();
  const profiler::Trace& trace = p.trace();
  const std::vector<Event>& events = trace.events;
  const uint32_t main = profiler::current_thread_id();

  const Event& model = only(events, "model");
  EXPECT_EQ(model.category, Category::Range);
  EXPECT_EQ(model.tid, main);
  // Forward: the two linears, the softmax, the loss; then the backward nodes in the engine's
  // order, with the engine's own "add" of y's two gradients (y * y uses y twice). Each linear
  // records AddBackward (bias), MmBackward and PermuteBackward (weight.t()), and an
  // AccumulateGrad per parameter.
  EXPECT_EQ(names(children(events, model)),
            (std::vector<std::string>{"linear", "linear", "softmax", "mul", "sum", "SumBackward", "MulBackward", "add",
                                      "SoftmaxBackward", "AddBackward", "AccumulateGrad", "MmBackward",
                                      "PermuteBackward", "AccumulateGrad", "AddBackward", "AccumulateGrad",
                                      "MmBackward", "PermuteBackward", "AccumulateGrad"}));
  std::vector<const Event*> linears;
  for (const Event& e : events)
    if (e.name == "linear") linears.push_back(&e);
  ASSERT_EQ(linears.size(), 2u);
  EXPECT_EQ(linears[0]->input_shapes, "[4, 8], [16, 8], [16]");
  EXPECT_EQ(linears[0]->input_dtypes, "float32, float32, float32");
  EXPECT_EQ(linears[1]->input_shapes, "[4, 16], [3, 16], [3]");
  for (const Event* linear : linears) {
    EXPECT_EQ(linear->category, Category::Op);
    // weight.t() is a permute view.
    EXPECT_EQ(names(children(events, *linear)), (std::vector<std::string>{"permute", "matmul", "add"}));
    const Event& matmul = *children(events, *linear)[1];
    ASSERT_EQ(names(children(events, matmul)), std::vector<std::string>{"mm"});
    const Event& mm = *children(events, matmul)[0];
    ASSERT_EQ(names(children(events, mm)), std::vector<std::string>{"gemm"});
    const Event& gemm = *children(events, mm)[0];
    EXPECT_EQ(gemm.category, Category::Gemm);
    EXPECT_FALSE(gemm.backend.empty());
  }
  const Event& first_gemm = *children(events, *children(events, *children(events, *linears[0])[1])[0])[0];
  EXPECT_EQ(first_gemm.input_shapes, "[4, 8] x [8, 16]");
  EXPECT_EQ(first_gemm.flops, 2.0 * 4 * 8 * 16);
  EXPECT_EQ(only(events, "softmax").input_shapes, "[4, 3]");
  const Event& softmax_backward = only(events, "SoftmaxBackward");
  EXPECT_EQ(softmax_backward.category, Category::Backward);
  EXPECT_EQ(softmax_backward.input_shapes, "[4, 3]");
  // The weight gradients' products: the second linear's MmBackward needs both operands'
  // gradients, the first only the weight's (x needs none). The weight's comes in its own
  // layout, (gᵀ x)ᵀ: a permute, the product, a permute.
  std::vector<const Event*> mm_backward;
  for (const Event& e : events)
    if (e.name == "MmBackward") mm_backward.push_back(&e);
  ASSERT_EQ(mm_backward.size(), 2u);
  EXPECT_EQ(names(children(events, *mm_backward[0])),
            (std::vector<std::string>{"permute", "matmul", "permute", "matmul", "permute"}));
  EXPECT_EQ(names(children(events, *mm_backward[1])), (std::vector<std::string>{"permute", "matmul", "permute"}));
  // Everything but pool tasks runs on the calling thread.
  for (const Event& e : events) {
    if (e.category == Category::PoolTask) continue;
    EXPECT_EQ(e.tid, main) << e.name;
  }
}

TEST(Profiler, PoolTasksOnWorkerLanes) {
  const int threads = get_num_threads();
  set_num_threads(3);
  profiler::Profile p;
  {
    profiler::Range range("parallel");
    // Chunks that wait until every worker holds one, so that each worker runs a task.
    std::atomic<int> arrived{0};
    cpu::parallel_for(0, 3, 1, [&](int64_t, int64_t) {
      arrived.fetch_add(1);
      while (arrived.load() < 3) std::this_thread::yield();
    });
  }
  const profiler::Trace& trace = p.trace();
  set_num_threads(threads);
  std::map<uint32_t, std::string> lane_names;
  for (const auto& lane : trace.threads) lane_names[lane.tid] = lane.name;
  std::set<uint32_t> task_lanes;
  const Event& range = only(trace.events, "parallel");
  for (const Event& e : trace.events) {
    if (e.category != Category::PoolTask) continue;
    EXPECT_EQ(e.name, "pool_task");
    EXPECT_NE(e.tid, profiler::current_thread_id());
    EXPECT_EQ(lane_names[e.tid].rfind("pool worker ", 0), 0u) << lane_names[e.tid];
    EXPECT_GE(e.start_ns, range.start_ns);
    EXPECT_LE(e.end_ns, range.end_ns);
    task_lanes.insert(e.tid);
  }
  EXPECT_EQ(task_lanes.size(), 2u);  // two workers beside the caller, one task each
}

TEST(Profiler, ChromeTracePassesTheSchemaAndReadsBack) {
  manual_seed(0);
  KnownProgram program;
  profiler::Profile p({.record_shapes = true, .profile_memory = true, .with_stack = true});
  program.run();
  const std::string path = temp_path("trace.json");
  p.export_chrome_trace(path);
  std::ifstream in(path);
  const nlohmann::json document = nlohmann::json::parse(in);
  const std::vector<std::string> errors = testutil::trace_event_schema_errors(document);
  EXPECT_TRUE(errors.empty()) << errors.front();
  size_t complete = 0, counters = 0;
  for (const auto& e : document["traceEvents"]) {
    complete += e["ph"] == "X";
    counters += e["ph"] == "C";
  }
  EXPECT_EQ(complete, p.trace().events.size());
  EXPECT_EQ(counters, p.trace().memory.size());
  EXPECT_EQ(only(p.trace().events, "softmax").stack, "model");

  const profiler::Trace loaded = profiler::load_chrome_trace(path);
  ASSERT_EQ(loaded.events.size(), p.trace().events.size());
  for (size_t i = 0; i < loaded.events.size(); ++i) {
    EXPECT_EQ(loaded.events[i].name, p.trace().events[i].name);
    EXPECT_EQ(loaded.events[i].input_shapes, p.trace().events[i].input_shapes);
    EXPECT_EQ(loaded.events[i].tid, p.trace().events[i].tid);
  }
  EXPECT_EQ(profiler::table(loaded, "calls", 3), profiler::table(p.trace(), "calls", 3));
  std::filesystem::remove(path);
}

TEST(Profiler, SchemaCheckerCatchesBrokenTraces) {
  using nlohmann::json;
  EXPECT_FALSE(testutil::trace_event_schema_errors(json::array()).empty());
  auto with = [](json event) { return json{{"traceEvents", json::array({std::move(event)})}}; };
  EXPECT_TRUE(testutil::trace_event_schema_errors(
                  with({{"ph", "X"}, {"name", "a"}, {"ts", 1.0}, {"dur", 2.0}, {"pid", 1}, {"tid", 1}}))
                  .empty());
  EXPECT_FALSE(
      testutil::trace_event_schema_errors(with({{"ph", "X"}, {"name", "a"}, {"ts", 1.0}, {"pid", 1}, {"tid", 1}}))
          .empty());  // no dur
  EXPECT_FALSE(testutil::trace_event_schema_errors(
                   with({{"ph", "C"}, {"name", "m"}, {"ts", 1.0}, {"pid", 1}, {"args", {{"bytes", "many"}}}}))
                   .empty());
  EXPECT_FALSE(testutil::trace_event_schema_errors(
                   with({{"ph", "f"}, {"id", 3}, {"name", "c"}, {"ts", 1.0}, {"pid", 1}, {"tid", 1}, {"bp", "e"}}))
                   .empty());
  json crossing = {{"traceEvents",
                    {{{"ph", "X"}, {"name", "a"}, {"ts", 0.0}, {"dur", 2.0}, {"pid", 1}, {"tid", 1}},
                     {{"ph", "X"}, {"name", "b"}, {"ts", 1.0}, {"dur", 2.0}, {"pid", 1}, {"tid", 1}}}}};
  EXPECT_FALSE(testutil::trace_event_schema_errors(crossing).empty());
}

TEST(Profiler, MemoryTrackPeakEqualsTheAllocatorsPeak) {
  manual_seed(0);
  KnownProgram program;
  reset_peak_memory_stats();
  profiler::Profile p({.profile_memory = true});
  program.run();
  const profiler::Trace& trace = p.trace();
  int64_t peak = 0;
  for (const auto& sample : trace.memory) peak = std::max(peak, sample.allocated_bytes);
  EXPECT_EQ(peak, memory_stats().peak_allocated_bytes);
  // mm allocates exactly its [4, 16] float32 output.
  const Event& first_mm = *std::find_if(trace.events.begin(), trace.events.end(),
                                        [](const Event& e) { return e.name == "mm"; });
  EXPECT_EQ(first_mm.allocated_bytes, 4 * 16 * 4);
  // The first linear: mm's output and the bias add's, both [4, 16] float32, and none of its own.
  const Event& first_linear = *std::find_if(trace.events.begin(), trace.events.end(),
                                            [](const Event& e) { return e.name == "linear"; });
  EXPECT_EQ(first_linear.allocated_bytes, 2 * 4 * 16 * 4);
  const std::string table = profiler::table(trace, "memory", 0);
  const size_t row = table.find("\nlinear ");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string linear_row = table.substr(row + 1, table.find('\n', row + 1) - row - 1);
  // Self alloc empty (all in mm and add); total 512 B and the second linear's 2 x [4, 3] float32.
  const std::string columns = std::string(11, ' ') + " " + std::string(6, ' ') + "608 B";
  EXPECT_EQ(linear_row.substr(linear_row.size() - columns.size()), columns) << linear_row;
}

TEST(Profiler, OffRecordsNothingAndTableSortsRows) {
  manual_seed(0);
  KnownProgram program;
  {
    profiler::Profile p;
    p.stop();
    program.run();  // after stop: nothing recorded
    EXPECT_TRUE(p.trace().events.empty());
    EXPECT_FALSE(profiler::is_enabled());
    p.start();
    program.run();
    p.stop();
    const std::string table = p.table("calls", 2);
    // Header, rule, two rows, the two summary lines. Nine permutes (two weight.t(), five
    // transposes in MmBackward, two PermuteBackward) are the most calls; then five products
    // each (two forward, three in backward) tie gemm, matmul and mm; ties keep name order.
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 6);
    std::istringstream lines(table);
    std::string line, first, second;
    std::getline(lines, line), std::getline(lines, line), std::getline(lines, first), std::getline(lines, second);
    EXPECT_EQ(first.substr(0, first.find(' ')), "permute");
    EXPECT_EQ(second.substr(0, second.find(' ')), "gemm");
    EXPECT_NE(first.find(" 9 "), std::string::npos) << first;
    EXPECT_NE(second.find(" 5 "), std::string::npos) << second;
  }
  EXPECT_FALSE(profiler::is_enabled());
}

TEST(Profiler, BadInputNamesTheOp) {
  profiler::Profile p;
  try {
    profiler::Profile second;
    FAIL() << "a second profile started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[profiler] another Profile is already recording"), std::string::npos);
  }
  p.stop();
  EXPECT_THROW(p.table("speed"), Error);
  EXPECT_THROW(p.export_chrome_trace("/nonexistent-dir/trace.json"), Error);
  EXPECT_THROW(profiler::load_chrome_trace("/nonexistent-dir/trace.json"), Error);
}

}  // namespace
}  // namespace ember
