// Child processes for the multi-process tests: start them with their own environment and
// log file, wait with a deadline, and never leave one behind (each runs in its own process
// group, dies with the test process, and is killed when its Processes object goes away).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ember::distributed::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Processes {
 public:
  Processes() = default;
  ~Processes();
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;

  // Starts argv[0] (searched in PATH) with the test's environment plus `env`; stdout and
  // stderr go to `log_path`. Returns the index of the child.
  size_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               const std::string& log_path);

  // Waits until every child has exited. Children in `may_hang` are killed once all the
  // others have exited; after `deadline` every child still running is killed and false
  // is returned.
  bool wait_all(std::chrono::seconds deadline, const std::set<size_t>& may_hang = {});

  void signal(size_t child, int signal_number) const;
  pid_t pid(size_t child) const { return children_[child].pid; }
  // The raw wait status (valid once the child has exited).
  int status(size_t child) const { return children_[child].status; }
  bool exited_with(size_t child, int code) const;
  bool killed_by(size_t child, int signal_number) const;
  std::string log(size_t child) const;

 private:
  struct Child {
    pid_t pid = -1;
    bool running = false;
    int status = 0;
    std::string log_path;
  };
  void reap(bool block);
  std::vector<Child> children_;
};

// "exit 3", "signal 9 (Killed)".
std::string describe_status(int status);

std::string read_file(const std::string& path);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// The result of running every rank of distributed_worker.
struct WorkerRun {
  TempDir dir;  // rendezvous, logs, flight-recorder dumps (dir/fr)
  Processes processes;
  bool finished = false;  // false: the deadline passed

  std::string fr_dir() const { return dir.path() + "/fr"; }
  // A failure message with every rank's status and log, or "" when `ok(rank)` holds for all.
  std::string report(const std::vector<bool>& ok) const;
};

struct WorkerOptions {
  std::map<std::string, std::string> env{};  // added to every rank's environment
  std::set<size_t> may_hang{};               // ranks killed once the others have exited
  std::chrono::seconds deadline{90};
};

// Starts `nproc` ranks of distributed_worker with --gtest_filter=`filter`, a fresh
// file rendezvous (unless env sets EMBER_RDZV) and EMBER_FR_DUMP_DIR=dir/fr, and waits.
void run_workers(WorkerRun& run, int nproc, const std::string& filter, const WorkerOptions& options = {});

// Every rank exited with status 0, else the report.
std::string all_ranks_passed(const WorkerRun& run, int nproc);

}  // namespace ember::distributed::testing
