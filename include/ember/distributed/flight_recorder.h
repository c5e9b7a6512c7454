// The flight recorder: a ring buffer per process of the last operations of every group
// (group, sequence number, op, sizes, dtype, state scheduled/started/completed, timings),
// sized by EMBER_FR_BUFFER_SIZE (default 2000, 0 turns it off) and emptied by each
// init_process_group. With EMBER_FR_DUMP_DIR set,
// each process writes it to DIR/rank_<global rank>.json when a CommError is raised and on
// SIGUSR1. `ember fr-trace DIR` reads the dumps of all ranks (analyze_flight_recorder_dumps).
#pragma once
#include <string>
#include <vector>

namespace ember::distributed {

// Writes this process's flight recorder as JSON to `path` (replaced atomically).
void dump_flight_recorder(const std::string& path, const std::string& reason = "requested");

struct FlightRecorderReport {
  // Global ranks that never reached the operation other ranks wait in.
  std::vector<int> culprits;
  // One paragraph per group that has ranks waiting, for people.
  std::string text;
};

// Reads DIR/rank_*.json and finds, in every group, the earliest operation some rank is
// still waiting in and the members that never started it (or left no dump). Throws Error
// when DIR holds no readable dump.
FlightRecorderReport analyze_flight_recorder_dumps(const std::string& dir);

}  // namespace ember::distributed
