// The flight recorder's ring buffer (internal; see ember/distributed/flight_recorder.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/group_impl.h"

namespace ember::distributed {

class FlightRecorder {
 public:
  static FlightRecorder& instance();

  // Returns the entry's id (0 when recording is off).
  uint64_t scheduled(const std::string& group, uint64_t seq, bool point_to_point, const OpDescription& description,
                     std::chrono::milliseconds timeout);
  void started(uint64_t id);
  void completed(uint64_t id);
  void failed(uint64_t id, const std::string& error);

  // Forgets every entry: each init_process_group starts a fresh record (group names and
  // sequence numbers start over).
  void clear();

  // The dump: this process, its groups and the entries oldest first.
  std::string to_json(const std::string& reason);

 private:
  FlightRecorder();

  struct Entry {
    uint64_t id = 0;
    std::string group;
    uint64_t seq = 0;
    bool point_to_point = false;
    std::string op;
    std::vector<int64_t> input_sizes, output_sizes;
    ScalarType dtype = kFloat32;
    int64_t timeout_ms = 0;
    std::string state;  // scheduled, started, completed
    std::string error;
    int64_t time_scheduled_us = 0, time_started_us = 0, time_completed_us = 0;  // since the epoch
  };

  // The entry with `id`, or null when it has been overwritten.
  Entry* find(uint64_t id);

  std::mutex mutex_;
  std::vector<Entry> entries_;  // ring buffer
  uint64_t next_id_ = 1;
};

// Writes the flight recorder to EMBER_FR_DUMP_DIR/rank_<rank>.json when the variable is set.
void dump_flight_recorder_to_env_dir(const std::string& reason);

}  // namespace ember::distributed
