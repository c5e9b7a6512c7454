// A profile's output: the Chrome trace (Trace Event format) written and read back, and the
// key_averages()-like table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/profiler.h"

namespace ember::profiler {
namespace {

using nlohmann::json;

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }
int64_t to_ns(double us) { return static_cast<int64_t>(us * 1000.0 + (us >= 0 ? 0.5 : -0.5)); }

std::optional<Category> parse_category(const std::string& name) {
  for (Category c : {Category::Op, Category::Backward, Category::Gemm, Category::PoolTask, Category::Range,
                     Category::Collective})
    if (name == category_name(c)) return c;
  return std::nullopt;
}

json event_args(const Event& e) {
  json args = json::object();
  if (!e.input_shapes.empty()) args["Input Dims"] = e.input_shapes;
  if (!e.input_dtypes.empty()) args["Input type"] = e.input_dtypes;
  if (e.flops > 0) args["flops"] = e.flops;
  if (e.allocated_bytes != 0) args["allocated_bytes"] = e.allocated_bytes;
  if (!e.backend.empty()) args["backend"] = e.backend;
  if (!e.group.empty()) args["group"] = e.group;
  if (e.sequence >= 0) args["sequence"] = e.sequence;
  if (e.bytes > 0) args["bytes"] = e.bytes;
  if (!e.stack.empty()) args["stack"] = e.stack;
  return args;
}

struct Row {
  std::string name;
  int64_t calls = 0, self_ns = 0, total_ns = 0, allocated = 0, self_allocated = 0;
  double flops = 0;
};

// An event's self figures: its duration and bytes less those of the events nested directly in
// it on its lane.
struct SelfFigures {
  int64_t ns = 0, bytes = 0;
};

std::vector<SelfFigures> self_figures(const std::vector<Event>& events) {
  std::vector<SelfFigures> self(events.size());
  std::vector<size_t> open;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    self[i] = {e.end_ns - e.start_ns, e.allocated_bytes};
    while (!open.empty() && (events[open.back()].tid != e.tid || events[open.back()].end_ns <= e.start_ns))
      open.pop_back();
    if (!open.empty()) {
      self[open.back()].ns -= e.end_ns - e.start_ns;
      self[open.back()].bytes -= e.allocated_bytes;
    }
    open.push_back(i);
  }
  return self;
}

std::string format_bytes(int64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (std::abs(b) >= 1 << 30) std::snprintf(text, sizeof text, "%.2f GB", b / (1 << 30));
  else if (std::abs(b) >= 1 << 20) std::snprintf(text, sizeof text, "%.2f MB", b / (1 << 20));
  else if (std::abs(b) >= 1 << 10) std::snprintf(text, sizeof text, "%.2f KB", b / (1 << 10));
  else std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  return text;
}

}  // namespace

void export_chrome_trace(const Trace& trace, const std::string& path) {
  json events = json::array();
  for (const ThreadLane& lane : trace.threads)
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", trace.pid}, {"tid", lane.tid},
                      {"args", {{"name", lane.name}}}});
  for (const Event& e : trace.events) {
    events.push_back({{"ph", "X"}, {"name", e.name}, {"cat", category_name(e.category)}, {"ts", to_us(e.start_ns)},
                      {"dur", to_us(e.end_ns - e.start_ns)}, {"pid", trace.pid}, {"tid", e.tid},
                      {"args", event_args(e)}});
    if (e.flow_phase) {
      json flow = {{"ph", std::string(1, e.flow_phase)}, {"id", e.flow_id}, {"name", "collective"},
                   {"cat", "collective"}, {"ts", to_us(e.start_ns)}, {"pid", trace.pid}, {"tid", e.tid}};
      if (e.flow_phase != 's') flow["bp"] = "e";  // bind to the slice enclosing ts, not the next one
      events.push_back(std::move(flow));
    }
  }
  for (const MemorySample& m : trace.memory)
    events.push_back({{"ph", "C"}, {"name", "Memory"}, {"ts", to_us(m.ts_ns)}, {"pid", trace.pid}, {"tid", 0},
                      {"args", {{"allocated_bytes", m.allocated_bytes}}}});
  const json document = {{"traceEvents", std::move(events)},
                         {"displayTimeUnit", "ms"},
                         {"otherData", {{"profiled_us", to_us(trace.duration_ns)}}}};
  write_file_atomically(path, document.dump() + "\n", "profiler.export_chrome_trace");
}

Trace load_chrome_trace(const std::string& path) {
  const char* op = "profiler.load_chrome_trace";
  const json document = json::parse(read_file(path, op), nullptr, false);
  EMBER_CHECK(!document.is_discarded() && document.is_object() && document.contains("traceEvents"), op, "'", path,
              "' is not a Chrome trace (a JSON object with traceEvents)");
  Trace trace;
  std::map<uint64_t, char> flows;
  for (const json& j : document["traceEvents"]) {
    const std::string ph = j.value("ph", "");
    trace.pid = j.value("pid", trace.pid);
    if (ph == "M" && j.value("name", "") == "thread_name") {
      trace.threads.push_back({j.value("tid", 0u), j["args"].value("name", "")});
    } else if (ph == "C") {
      trace.memory.push_back({to_ns(j.value("ts", 0.0)), j["args"].value("allocated_bytes", int64_t{0})});
    } else if (ph == "X") {
      Event e;
      e.name = j.value("name", "");
      e.category = parse_category(j.value("cat", "")).value_or(Category::Op);
      e.start_ns = to_ns(j.value("ts", 0.0));
      e.end_ns = e.start_ns + to_ns(j.value("dur", 0.0));
      e.tid = j.value("tid", 0u);
      const json args = j.value("args", json::object());
      e.input_shapes = args.value("Input Dims", "");
      e.input_dtypes = args.value("Input type", "");
      e.flops = args.value("flops", 0.0);
      e.allocated_bytes = args.value("allocated_bytes", int64_t{0});
      e.backend = args.value("backend", "");
      e.group = args.value("group", "");
      e.sequence = args.value("sequence", int64_t{-1});
      e.bytes = args.value("bytes", int64_t{0});
      e.stack = args.value("stack", "");
      trace.events.push_back(std::move(e));
    }
  }
  std::sort(trace.events.begin(), trace.events.end(), [](const Event& a, const Event& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  trace.duration_ns = to_ns(document.value("otherData", json::object()).value("profiled_us", 0.0));
  if (trace.duration_ns == 0 && !trace.events.empty()) {
    int64_t first = trace.events.front().start_ns, last = 0;
    for (const Event& e : trace.events) first = std::min(first, e.start_ns), last = std::max(last, e.end_ns);
    trace.duration_ns = last - first;
  }
  return trace;
}

std::string table(const Trace& trace, std::string_view sort_by, int limit) {
  EMBER_CHECK(sort_by == "self" || sort_by == "total" || sort_by == "calls" || sort_by == "flops" ||
                  sort_by == "memory",
              "profiler.table", "sort_by '", sort_by, "': expected self, total, calls, flops or memory");
  const std::vector<SelfFigures> self = self_figures(trace.events);
  std::map<std::string, Row> by_name;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    Row& row = by_name[e.name];
    row.name = e.name;
    row.calls += 1;
    row.self_ns += self[i].ns;
    row.self_allocated += self[i].bytes;
    row.total_ns += e.end_ns - e.start_ns;
    row.allocated += e.allocated_bytes;
    row.flops += e.flops;
  }
  std::vector<Row> rows;
  for (auto& [name, row] : by_name) rows.push_back(std::move(row));
  auto key = [&](const Row& r) -> double {
    if (sort_by == "total") return static_cast<double>(r.total_ns);
    if (sort_by == "calls") return static_cast<double>(r.calls);
    if (sort_by == "flops") return r.flops;
    if (sort_by == "memory") return static_cast<double>(r.self_allocated);
    return static_cast<double>(r.self_ns);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return key(a) > key(b); });
  const size_t shown = limit > 0 ? std::min<size_t>(rows.size(), static_cast<size_t>(limit)) : rows.size();
  const double profiled = static_cast<double>(std::max<int64_t>(trace.duration_ns, 1));
  size_t width = 4;
  for (size_t i = 0; i < shown; ++i) width = std::max(width, std::min<size_t>(rows[i].name.size(), 60));
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-*s %8s %11s %7s %11s %7s %10s %11s %11s\n", static_cast<int>(width), "Name",
                "Calls", "Self ms", "Self %", "Total ms", "Total %", "GFLOP/s", "Self alloc", "Total alloc");
  out << line << std::string(width + 92, '-') << "\n";
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = rows[i];
    char flops[32] = "";
    if (r.flops > 0 && r.total_ns > 0)
      std::snprintf(flops, sizeof flops, "%.1f", r.flops / static_cast<double>(r.total_ns));
    std::snprintf(line, sizeof line, "%-*.*s %8lld %11.3f %6.1f%% %11.3f %6.1f%% %10s %11s %11s\n",
                  static_cast<int>(width), static_cast<int>(width), r.name.c_str(), static_cast<long long>(r.calls),
                  r.self_ns / 1e6, 100.0 * r.self_ns / profiled, r.total_ns / 1e6, 100.0 * r.total_ns / profiled, flops,
                  r.self_allocated ? format_bytes(r.self_allocated).c_str() : "",
                  r.allocated ? format_bytes(r.allocated).c_str() : "");
    out << line;
  }
  // Rows add up across threads (pool tasks run beside the ops that wait for them), so the
  // footer also says how much of the first lane's time, the profiling thread's, the rows explain.
  std::set<std::string> shown_names;
  for (size_t i = 0; i < shown; ++i) shown_names.insert(rows[i].name);
  const Event* first = nullptr;
  for (const Event& e : trace.events)
    if (!first || e.start_ns < first->start_ns) first = &e;
  int64_t covered = 0;
  for (size_t i = 0; i < trace.events.size(); ++i)
    if (first && trace.events[i].tid == first->tid && shown_names.count(trace.events[i].name)) covered += self[i].ns;
  int64_t peak = 0;
  for (const MemorySample& m : trace.memory) peak = std::max(peak, m.allocated_bytes);
  out << "Profiled time: " << trace.duration_ns / 1e6 << " ms; " << trace.events.size() << " events on "
      << trace.threads.size() << " threads";
  if (!trace.memory.empty()) out << "; peak allocated " << format_bytes(peak);
  out << "\n";
  if (first) {
    std::string lane = "thread " + std::to_string(first->tid);
    for (const ThreadLane& t : trace.threads)
      if (t.tid == first->tid) lane = t.name;
    char summary[160];
    std::snprintf(summary, sizeof summary, "The rows shown account for %.1f%% of the profiled time on lane '%s'.\n",
                  100.0 * static_cast<double>(covered) / profiled, lane.c_str());
    out << summary;
  }
  return out.str();
}

}  // namespace ember::profiler
