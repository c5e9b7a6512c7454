// Analysis of flight-recorder dumps (`ember fr-trace DIR`): in every group, the earliest
// collective some rank waits in, and the members that never reached it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "distributed/monitor.h"
#include "ember/distributed/flight_recorder.h"
#include "ember/error.h"

namespace ember::distributed {
namespace {

struct RankProgress {
  uint64_t last_started = 0;           // highest seq started (or completed)
  std::optional<uint64_t> waiting_in;  // lowest seq started and never completed
  nlohmann::json waiting_entry;
};

RankProgress progress_in(const nlohmann::json& dump, const std::string& group) {
  RankProgress progress;
  for (const auto& entry : dump.value("entries", nlohmann::json::array())) {
    if (entry.value("group", "") != group || entry.value("p2p", false)) continue;
    const std::string state = entry.value("state", "");
    const uint64_t seq = entry.value("seq", uint64_t{0});
    if (state == "started" || state == "completed") progress.last_started = std::max(progress.last_started, seq);
    if (state == "started" && (!progress.waiting_in || seq < *progress.waiting_in)) {
      progress.waiting_in = seq;
      progress.waiting_entry = entry;
    }
  }
  return progress;
}

std::string describe_entry(const nlohmann::json& entry) {
  std::ostringstream out;
  out << entry.value("op", "?") << " seq " << entry.value("seq", uint64_t{0}) << " (" << entry.value("dtype", "?")
      << " " << entry.value("input_sizes", nlohmann::json::array()).dump() << ")";
  return out.str();
}

}  // namespace

FlightRecorderReport analyze_flight_recorder_dumps(const std::string& dir) {
  const char* op = "fr-trace";
  std::map<int, nlohmann::json> dumps;
  std::error_code error;
  for (const auto& file : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = file.path().filename().string();
    if (name.rfind("rank_", 0) != 0 || file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    auto dump = nlohmann::json::parse(in, nullptr, false);
    if (dump.is_discarded() || !dump.contains("rank")) continue;
    const int rank = dump["rank"].get<int>();
    dumps[rank] = std::move(dump);
  }
  EMBER_CHECK(!error, op, "cannot read directory '", dir, "': ", error.message());
  EMBER_CHECK(!dumps.empty(), op, "no flight-recorder dumps (rank_*.json) in '", dir, "'");

  // Every group any rank knows, with its members.
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [rank, dump] : dumps)
    for (const auto& group : dump.value("groups", nlohmann::json::array()))
      groups[group.value("name", "")] = group.value("ranks", std::vector<int>{});

  FlightRecorderReport report;
  std::set<int> culprits;
  for (const auto& [name, members] : groups) {
    std::map<int, RankProgress> progress;
    std::optional<uint64_t> stuck;
    nlohmann::json stuck_entry;
    for (int rank : members) {
      if (!dumps.count(rank)) continue;
      progress[rank] = progress_in(dumps[rank], name);
      const auto& waiting = progress[rank].waiting_in;
      if (waiting && (!stuck || *waiting < *stuck)) {
        stuck = waiting;
        stuck_entry = progress[rank].waiting_entry;
      }
    }
    if (!stuck) continue;
    std::vector<int> waiting_ranks;
    std::string details;
    for (int rank : members) {
      if (!dumps.count(rank)) {
        culprits.insert(rank);
        details += "  rank " + std::to_string(rank) +
                   " left no dump: its process died, or was stopped or killed before it could dump\n";
      } else if (progress[rank].waiting_in == stuck) {
        waiting_ranks.push_back(rank);
      } else if (progress[rank].last_started < *stuck) {
        culprits.insert(rank);
        details += "  rank " + std::to_string(rank) +
                   " never reached it (its last started operation in this group is seq " +
                   std::to_string(progress[rank].last_started) + ")\n";
      }
    }
    report.text += "group \"" + name + "\" (ranks " + rank_list(members) + "): ranks " + rank_list(waiting_ranks) +
                   " wait in " + describe_entry(stuck_entry) + "\n" + details;
  }
  report.culprits.assign(culprits.begin(), culprits.end());
  if (report.text.empty()) report.text = "no rank waits in a collective\n";
  return report;
}

}  // namespace ember::distributed
