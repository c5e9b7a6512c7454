#include "distributed/processes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ember::distributed::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/ember-dist-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Processes::~Processes() {
  for (const Child& child : children_)
    if (child.running) ::kill(-child.pid, SIGKILL);
  reap(true);
}

size_t Processes::spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& log_path) {
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls are allowed (the test process has threads).
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry; ++entry) {
    const std::string text = *entry;
    const auto eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : env) merged[key] = value;
  std::vector<std::string> env_text;
  for (const auto& [key, value] : merged) env_text.push_back(key + "=" + value);
  std::vector<char*> envp, args;
  for (auto& text : env_text) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& text : argv_copy) args.push_back(text.data());
  args.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error("cannot open " + log_path);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(log);
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  ::setpgid(pid, pid);  // also from the parent, so that a kill right away reaches the group
  children_.push_back({pid, true, 0, log_path});
  return children_.size() - 1;
}

void Processes::reap(bool block) {
  for (Child& child : children_) {
    if (!child.running) continue;
    int status = 0;
    if (::waitpid(child.pid, &status, block ? 0 : WNOHANG) == child.pid) {
      child.running = false;
      child.status = status;
    }
  }
}

bool Processes::wait_all(std::chrono::seconds deadline, const std::set<size_t>& may_hang) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    reap(false);
    bool others_running = false, any_running = false;
    for (size_t i = 0; i < children_.size(); ++i) {
      any_running = any_running || children_[i].running;
      others_running = others_running || (children_[i].running && !may_hang.count(i));
    }
    if (!any_running) return true;
    if (!others_running) {
      for (size_t i : may_hang)
        if (children_[i].running) ::kill(-children_[i].pid, SIGKILL);
      reap(true);
      return true;
    }
    if (std::chrono::steady_clock::now() > end) {
      for (const Child& child : children_)
        if (child.running) ::kill(-child.pid, SIGKILL);
      reap(true);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Processes::signal(size_t child, int signal_number) const { ::kill(children_[child].pid, signal_number); }

bool Processes::exited_with(size_t child, int code) const {
  const int status = children_[child].status;
  return !children_[child].running && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

bool Processes::killed_by(size_t child, int signal_number) const {
  const int status = children_[child].status;
  return !children_[child].running && WIFSIGNALED(status) && WTERMSIG(status) == signal_number;
}

std::string Processes::log(size_t child) const { return read_file(children_[child].log_path); }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string WorkerRun::report(const std::vector<bool>& ok) const {
  std::string text = finished ? "" : "the deadline passed; every rank still running was killed\n";
  bool all_ok = finished;
  for (size_t rank = 0; rank < ok.size(); ++rank) all_ok = all_ok && ok[rank];
  if (all_ok) return "";
  for (size_t rank = 0; rank < ok.size(); ++rank) {
    text += "---- rank " + std::to_string(rank) + ": " + describe_status(processes.status(rank)) + "\n";
    text += processes.log(rank);
  }
  return text;
}

void run_workers(WorkerRun& run, int nproc, const std::string& filter, const WorkerOptions& options) {
  for (int rank = 0; rank < nproc; ++rank) {
    std::map<std::string, std::string> env = {
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(nproc)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
        {"EMBER_RDZV", "file:" + run.dir.path() + "/rdzv"},
        {"EMBER_FR_DUMP_DIR", run.fr_dir()},
        {"EMBER_NUM_THREADS", "1"},
        {"OPENBLAS_NUM_THREADS", "1"},
    };
    for (const auto& [key, value] : options.env) env[key] = value;
    run.processes.spawn({EMBER_TEST_WORKER, "--gtest_filter=" + filter, "--gtest_brief=1"}, env,
                        run.dir.path() + "/rank_" + std::to_string(rank) + ".log");
  }
  run.finished = run.processes.wait_all(options.deadline, options.may_hang);
}

std::string all_ranks_passed(const WorkerRun& run, int nproc) {
  std::vector<bool> ok;
  for (int rank = 0; rank < nproc; ++rank) {
    // A filter that matches nothing also exits 0: ask for at least one passed test.
    const std::string log = run.processes.log(static_cast<size_t>(rank));
    ok.push_back(run.processes.exited_with(static_cast<size_t>(rank), 0) &&
                 log.find("[  PASSED  ]") != std::string::npos &&
                 log.find("[  PASSED  ] 0 tests") == std::string::npos);
  }
  return run.report(ok);
}

}  // namespace ember::distributed::testing
