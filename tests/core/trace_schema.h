// A checker of the Trace Event format (the JSON chrome://tracing and Perfetto open), for the
// phases ember writes: complete (X), counter (C), metadata (M) and flow (s, t, f) events.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ember::testutil {

// Every way `document` breaks the format, one line each; empty when it conforms.
inline std::vector<std::string> trace_event_schema_errors(const nlohmann::json& document) {
  std::vector<std::string> errors;
  if (!document.is_object() || !document.contains("traceEvents") || !document["traceEvents"].is_array())
    return {"the document is not an object with a traceEvents array"};
  const nlohmann::json unit = document.value("displayTimeUnit", nlohmann::json("ms"));
  if (unit != "ms" && unit != "ns")
    errors.push_back("displayTimeUnit is neither ms nor ns");
  struct Slice {
    double begin, end;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> slices;  // (pid, tid) -> complete events
  std::map<std::string, double> flow_starts;                           // id -> ts of its 's'
  std::vector<std::pair<std::string, double>> flow_ends;
  const std::set<std::string> phases = {"X", "C", "M", "s", "t", "f"};
  size_t index = 0;
  for (const nlohmann::json& e : document["traceEvents"]) {
    const std::string at = "event " + std::to_string(index++) + ": ";
    if (!e.is_object()) {
      errors.push_back(at + "not an object");
      continue;
    }
    if (!e.contains("ph") || !e["ph"].is_string() || !phases.count(e["ph"].get<std::string>())) {
      errors.push_back(at + "ph missing or not one of X, C, M, s, t, f");
      continue;
    }
    const std::string ph = e["ph"];
    if (!e.contains("name") || !e["name"].is_string()) errors.push_back(at + "name missing or not a string");
    if (!e.contains("pid") || !e["pid"].is_number_integer()) errors.push_back(at + "pid missing or not an integer");
    if (ph != "C" && (!e.contains("tid") || !e["tid"].is_number_integer()))
      errors.push_back(at + "tid missing or not an integer");
    if (ph != "M" && (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0))
      errors.push_back(at + "ts missing, not a number or negative");
    if (e.contains("cat") && !e["cat"].is_string()) errors.push_back(at + "cat is not a string");
    if (e.contains("args") && !e["args"].is_object()) errors.push_back(at + "args is not an object");
    if (!errors.empty() && errors.back().rfind(at, 0) == 0) continue;
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        errors.push_back(at + "a complete event needs a non-negative dur");
        continue;
      }
      const double ts = e["ts"];
      slices[{e["pid"], e["tid"]}].push_back({ts, ts + e["dur"].get<double>()});
    } else if (ph == "C") {
      if (!e.contains("args") || e["args"].empty()) errors.push_back(at + "a counter event needs args");
      else
        for (const auto& [key, value] : e["args"].items())
          if (!value.is_number()) errors.push_back(at + "counter value '" + key + "' is not a number");
    } else if (ph == "M") {
      if (e["name"] != "thread_name" && e["name"] != "process_name")
        errors.push_back(at + "metadata name is neither thread_name nor process_name");
      if (!e.contains("args") || !e["args"].contains("name") || !e["args"]["name"].is_string())
        errors.push_back(at + "metadata needs args.name");
    } else {
      if (!e.contains("id") || !(e["id"].is_number_integer() || e["id"].is_string())) {
        errors.push_back(at + "a flow event needs an id");
        continue;
      }
      if (e.contains("bp") && e["bp"] != "e") errors.push_back(at + "bp other than e");
      const std::string id = e["id"].dump();
      if (ph == "s" && !flow_starts.emplace(id, e["ts"].get<double>()).second)
        errors.push_back(at + "flow " + id + " starts twice");
      if (ph == "f") flow_ends.emplace_back(id, e["ts"].get<double>());
    }
  }
  for (const auto& [id, ts] : flow_ends) {
    auto start = flow_starts.find(id);
    if (start == flow_starts.end()) errors.push_back("flow " + id + " ends without a start");
    else if (start->second > ts) errors.push_back("flow " + id + " ends before it starts");
  }
  // Complete events on one thread must nest: a slice ends inside its parent or starts after it.
  for (auto& [lane, list] : slices) {
    std::sort(list.begin(), list.end(),
              [](const Slice& a, const Slice& b) { return std::tie(a.begin, b.end) < std::tie(b.begin, a.end); });
    std::vector<double> open;
    for (const Slice& s : list) {
      while (!open.empty() && open.back() <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back() + 1e-3)
        errors.push_back("thread " + std::to_string(lane.second) + ": slices overlap without nesting");
      open.push_back(s.end);
    }
  }
  return errors;
}

}  // namespace ember::testutil
