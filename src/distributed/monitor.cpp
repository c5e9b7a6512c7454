// The monitor thread (heartbeats, SIGUSR1 dumps) and the diagnosis of failed operations.
// See Note [Finding the rank at fault] in monitor.h.
#include "distributed/monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "distributed/group_impl.h"
#include "distributed/flight_recorder.h"

namespace ember::distributed {
namespace {

// Written by the SIGUSR1 handler; the monitor thread reads the other end.
volatile sig_atomic_t g_dump_pipe = -1;
struct sigaction g_previous_sigusr1;

constexpr char kDumpRequest = 'd';
constexpr char kStopRequest = 'q';

void on_sigusr1(int) {
  const int saved_errno = errno;
  const char request = kDumpRequest;
  if (g_dump_pipe >= 0) (void)!::write(g_dump_pipe, &request, 1);
  errno = saved_errno;
}

struct PeerStatus {
  uint64_t beat = 0;
  bool exited = false;
  std::optional<uint64_t> started;  // in the group being diagnosed
};

std::optional<PeerStatus> read_status(Store& store, int rank, const std::string& group) {
  auto bytes = store.try_get(status_key(rank));
  if (!bytes) return std::nullopt;
  const auto json = nlohmann::json::parse(bytes->begin(), bytes->end(), nullptr, false);
  if (json.is_discarded()) return std::nullopt;
  PeerStatus status;
  status.beat = json.value("beat", uint64_t{0});
  status.exited = json.value("exited", false);
  if (json.contains("started") && json["started"].contains(group))
    status.started = json["started"][group].get<uint64_t>();
  return status;
}

}  // namespace

std::string status_key(int rank) { return "status/" + std::to_string(rank); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

Monitor::Monitor(std::shared_ptr<Store> store, int rank) : store_(std::move(store)), rank_(rank) {
  EMBER_CHECK(::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) == 0, "init_process_group", "cannot create a pipe");
  publish(false);
  const char* dump_dir = std::getenv("EMBER_FR_DUMP_DIR");
  if (dump_dir && *dump_dir && g_dump_pipe < 0) {
    g_dump_pipe = wake_pipe_[1];
    struct sigaction action {};
    action.sa_handler = on_sigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    handles_sigusr1_ = ::sigaction(SIGUSR1, &action, &g_previous_sigusr1) == 0;
  }
  thread_ = std::thread([this] { loop(); });
}

Monitor::~Monitor() {
  if (handles_sigusr1_) {
    ::sigaction(SIGUSR1, &g_previous_sigusr1, nullptr);
    g_dump_pipe = -1;
  }
  const char request = kStopRequest;
  (void)!::write(wake_pipe_[1], &request, 1);
  thread_.join();
  try {
    publish(true);
  } catch (const std::exception&) {
    // The store may be gone (a stopped Redis server); the peers then see no heartbeat.
  }
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void Monitor::publish(bool exited) {
  nlohmann::json started = nlohmann::json::object();
  for (const auto& group : live_groups()) started[group.name] = group.last_started;
  const std::string text = nlohmann::json{{"beat", ++beat_}, {"exited", exited}, {"started", started}}.dump();
  store_->set(status_key(rank_), std::vector<char>(text.begin(), text.end()));
}

void Monitor::loop() {
  for (;;) {
    try {
      publish(false);
    } catch (const std::exception&) {
      // A store outage: the next beat tries again.
    }
    pollfd wake{wake_pipe_[0], POLLIN, 0};
    if (::poll(&wake, 1, static_cast<int>(kHeartbeatInterval.count())) <= 0) continue;
    char requests[64];
    const ssize_t n = ::read(wake_pipe_[0], requests, sizeof(requests));
    bool dump = false;
    for (ssize_t i = 0; i < n; ++i) {
      if (requests[i] == kStopRequest) return;
      dump = dump || requests[i] == kDumpRequest;
    }
    if (dump) dump_flight_recorder_to_env_dir("SIGUSR1");
  }
}

Diagnosis diagnose(Store& store, const std::string& group, const std::vector<int>& members, int self, uint64_t seq) {
  Diagnosis diagnosis;
  try {
    std::map<int, std::optional<PeerStatus>> first, latest;
    std::map<int, bool> alive;
    for (int rank : members) {
      if (rank == self) continue;
      first[rank] = latest[rank] = read_status(store, rank, group);
      alive[rank] = first[rank] && first[rank]->exited;
    }
    const auto deadline = std::chrono::steady_clock::now() + kLivenessWindow;
    auto everyone_alive = [&] {
      for (const auto& [rank, is_alive] : alive)
        if (!is_alive) return false;
      return true;
    };
    while (!everyone_alive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kHeartbeatInterval / 2);
      for (auto& [rank, is_alive] : alive) {
        if (is_alive) continue;
        latest[rank] = read_status(store, rank, group);
        is_alive = latest[rank] && (latest[rank]->exited || !first[rank] || latest[rank]->beat != first[rank]->beat);
      }
    }
    std::string text;
    auto add = [&](int rank, const std::string& what) {
      diagnosis.culprits.push_back(rank);
      text += (text.empty() ? "" : "; ") + ("rank " + std::to_string(rank) + " " + what);
    };
    for (const auto& [rank, is_alive] : alive) {
      const auto& status = latest[rank];
      if (!status) {
        add(rank, "never published a status (it has not called init_process_group, or died before)");
      } else if (!is_alive) {
        add(rank, "is not responding (no heartbeat for " + std::to_string(kLivenessWindow.count()) +
                      " ms: the process died or is stopped)");
      } else if (seq > 0 && status->started.value_or(0) < seq) {
        const std::string left = status->exited ? " and has left the process group" : "";
        add(rank, "has not reached seq " + std::to_string(seq) + " (its last started operation in this group is seq " +
                      std::to_string(status->started.value_or(0)) + ")" + left);
      }
    }
    if (text.empty())
      text = seq > 0 ? "every other rank is alive and has reached seq " + std::to_string(seq) : "the peer is alive";
    diagnosis.description = text;
  } catch (const std::exception& e) {
    diagnosis.description = std::string("the ranks' statuses could not be read: ") + e.what();
  }
  return diagnosis;
}

}  // namespace ember::distributed
