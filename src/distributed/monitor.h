// Liveness and progress of the ranks, through the store (internal).
//
// Note [Finding the rank at fault]
// A failed collective shows only its local symptom: a timeout, or a closed connection to
// some neighbour in the ring (often a rank that merely aborted after its own failure). To
// name the rank at fault, every process runs a monitor thread that writes its status to
// the store every kHeartbeatInterval: a counter that moves while the process is alive and
// the last sequence number it started in each group (as PyTorch's store-based desync
// debugging does). After a failure, the rank reads its peers' statuses for up to
// kLivenessWindow: a peer whose counter does not move is dead or stopped; a live peer whose
// last started sequence number is below the failed one never reached the collective.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/store.h"

namespace ember::distributed {

constexpr std::chrono::milliseconds kHeartbeatInterval{100};
constexpr std::chrono::milliseconds kLivenessWindow{2000};

// The monitor thread: heartbeats, and flight-recorder dumps on SIGUSR1 (its handler only
// writes to a pipe this thread reads) when EMBER_FR_DUMP_DIR is set.
class Monitor {
 public:
  Monitor(std::shared_ptr<Store> store, int rank);
  // Publishes that this process left (destroy_process_group) and stops the thread.
  ~Monitor();

 private:
  void loop();
  void publish(bool exited);

  std::shared_ptr<Store> store_;
  int rank_;
  uint64_t beat_ = 0;
  int wake_pipe_[2] = {-1, -1};
  bool handles_sigusr1_ = false;
  std::thread thread_;
};

struct Diagnosis {
  std::vector<int> culprits;  // global ranks
  std::string description;    // for people, e.g. "rank 2 is not responding (...)"
};

// Which of `members` (global ranks, `self` skipped) are dead, stopped, or have not started
// sequence number `seq` of `group` (seq 0: liveness only).
Diagnosis diagnose(Store& store, const std::string& group, const std::vector<int>& members, int self, uint64_t seq);

std::string status_key(int rank);

// "0, 2, 3", for messages.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace ember::distributed
