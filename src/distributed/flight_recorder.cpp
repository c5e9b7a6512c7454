// The flight recorder: a ring buffer of operations, dumped as JSON.
#include "distributed/flight_recorder.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "ember/distributed/flight_recorder.h"
#include "ember/atomic_file.h"

namespace ember::distributed {
namespace {

constexpr size_t kDefaultCapacity = 2000;

size_t capacity_from_env() {
  const char* text = std::getenv("EMBER_FR_BUFFER_SIZE");
  if (!text || !*text) return kDefaultCapacity;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  EMBER_CHECK(*end == '\0' && value >= 0, "flight_recorder", "EMBER_FR_BUFFER_SIZE must be a count >= 0, got '",
              text, "'");
  return static_cast<size_t>(value);
}

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FlightRecorder& FlightRecorder::instance() {
  static FlightRecorder recorder;
  return recorder;
}

FlightRecorder::FlightRecorder() { entries_.resize(capacity_from_env()); }

FlightRecorder::Entry* FlightRecorder::find(uint64_t id) {
  if (id == 0) return nullptr;
  Entry& entry = entries_[id % entries_.size()];
  return entry.id == id ? &entry : nullptr;
}

uint64_t FlightRecorder::scheduled(const std::string& group, uint64_t seq, bool point_to_point,
                                   const OpDescription& description, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.empty()) return 0;
  const uint64_t id = next_id_++;
  entries_[id % entries_.size()] = Entry{id,
                                         group,
                                         seq,
                                         point_to_point,
                                         description.op,
                                         description.input_sizes,
                                         description.output_sizes,
                                         description.dtype,
                                         timeout.count(),
                                         "scheduled",
                                         "",
                                         now_us(),
                                         0,
                                         0};
  return id;
}

void FlightRecorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& entry : entries_) entry = Entry{};
  next_id_ = 1;
}

void FlightRecorder::started(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(id)) {
    entry->state = "started";
    entry->time_started_us = now_us();
  }
}

void FlightRecorder::completed(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(id)) {
    entry->state = "completed";
    entry->time_completed_us = now_us();
  }
}

void FlightRecorder::failed(uint64_t id, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(id)) entry->error = error;
}

std::string FlightRecorder::to_json(const std::string& reason) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& group : live_groups())
    groups.push_back({{"name", group.name},
                      {"ranks", group.ranks},
                      {"last_started", group.last_started},
                      {"last_completed", group.last_completed}});
  nlohmann::json entries = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t first = next_id_ > entries_.size() ? next_id_ - entries_.size() : 1;
    for (uint64_t id = first; id < next_id_; ++id) {
      const Entry& e = entries_[id % entries_.size()];
      nlohmann::json entry = {{"id", e.id},
                              {"group", e.group},
                              {"seq", e.seq},
                              {"p2p", e.point_to_point},
                              {"op", e.op},
                              {"input_sizes", e.input_sizes},
                              {"output_sizes", e.output_sizes},
                              {"dtype", dtype_name(e.dtype)},
                              {"timeout_ms", e.timeout_ms},
                              {"state", e.state},
                              {"time_scheduled_us", e.time_scheduled_us},
                              {"time_started_us", e.time_started_us},
                              {"time_completed_us", e.time_completed_us}};
      if (!e.error.empty()) entry["error"] = e.error;
      entries.push_back(std::move(entry));
    }
  }
  return nlohmann::json{{"version", 1},
                        {"rank", current_rank()},
                        {"world_size", current_world_size()},
                        {"pid", ::getpid()},
                        {"reason", reason},
                        {"time_us", now_us()},
                        {"groups", groups},
                        {"entries", entries}}
      .dump(1);
}

void dump_flight_recorder(const std::string& path, const std::string& reason) {
  write_file_atomically(path, FlightRecorder::instance().to_json(reason), "dump_flight_recorder");
}

void dump_flight_recorder_to_env_dir(const std::string& reason) {
  const char* dir = std::getenv("EMBER_FR_DUMP_DIR");
  if (!dir || !*dir) return;
  try {
    std::filesystem::create_directories(dir);
    dump_flight_recorder(std::string(dir) + "/rank_" + std::to_string(current_rank()) + ".json", reason);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember: flight recorder dump to %s failed: %s\n", dir, e.what());
  }
}

}  // namespace ember::distributed
