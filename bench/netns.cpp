#include "netns.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ember/error.h"

extern char** environ;

namespace ember::bench {
namespace {

constexpr const char* kOp = "bench fsdp";
constexpr const char* kPrefix = "ember-bench-";
constexpr const char* kNetnsDir = "/run/netns";
constexpr uint32_t kFirstAddress = (10u << 24) | (78u << 16) | 1u;  // 10.78.0.1, rank 0

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr together
  bool ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

CommandResult run_command(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  EMBER_CHECK(::pipe2(pipe_fds, O_CLOEXEC) == 0, kOp, "pipe failed: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  CommandResult result;
  if (spawned == 0) {
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) != 0;) {
      if (n > 0) result.output.append(buffer, static_cast<size_t>(n));
      else if (errno != EINTR) break;
    }
    while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
    }
  } else {
    result.output = std::string("cannot start: ") + std::strerror(spawned);
  }
  ::close(pipe_fds[0]);
  return result;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& a : argv) text += (text.empty() ? "" : " ") + a;
  return text;
}

void check_command(const std::vector<std::string>& argv) {
  const CommandResult result = run_command(argv);
  EMBER_CHECK(result.ok(), kOp, "`", joined(argv), "` failed: ", result.output);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    if (::access((dirs.substr(start, end - start) + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Cleanup that must not throw (destructors, error paths): a namespace left behind is removed
// by the next run's remove_stale_rank_networks.
void delete_namespace(const std::string& name) noexcept {
  try {
    run_command({"ip", "netns", "delete", name});
  } catch (...) {
  }
}

}  // namespace

std::string rank_network_unavailable() {
  if (::geteuid() != 0) return "not running as root";
  if (!on_path("ip")) return "`ip` is not installed (Debian iproute2)";
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "/dev/net/tun is not available";
  return "";
}

void remove_stale_rank_networks() {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsDir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
    delete_namespace(name);
  }
}

std::string RankNetwork::address(int rank) { return "10.78.0." + std::to_string(rank + 1); }

RankNetwork::RankNetwork(int ranks) {
  const std::string prefix = kPrefix + std::to_string(::getpid()) + "-";
  try {
    for (int rank = 0; rank < ranks; ++rank) {
      const std::string ns = prefix + "rank" + std::to_string(rank);
      add_namespace(ns);
      open_rank_namespace(ns);
    }
    const LinkSpec spec;
    emulator_ = std::make_unique<LinkEmulator>(namespace_fds_, "eth0", kFirstAddress, spec);
    for (int rank = 0; rank < ranks; ++rank) {
      const std::string& ns = namespaces_[static_cast<size_t>(rank)];
      check_command({"ip", "-n", ns, "addr", "add", address(rank) + "/24", "dev", "eth0"});
      check_command({"ip", "-n", ns, "link", "set", "eth0", "mtu", std::to_string(spec.mtu), "up"});
      check_command({"ip", "-n", ns, "link", "set", "lo", "up"});
    }
  } catch (...) {
    emulator_.reset();
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) delete_namespace(*it);
    for (int fd : namespace_fds_) ::close(fd);
    throw;
  }
}

RankNetwork::~RankNetwork() {
  emulator_.reset();
  for (int fd : namespace_fds_) ::close(fd);
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) delete_namespace(*it);
}

std::string RankNetwork::link() const { return emulator_->describe(); }

void RankNetwork::add_namespace(const std::string& name) {
  check_command({"ip", "netns", "add", name});
  namespaces_.push_back(name);
}

void RankNetwork::open_rank_namespace(const std::string& name) {
  const std::string path = std::string(kNetnsDir) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, kOp, "cannot open ", path, ": ", std::strerror(errno));
  namespace_fds_.push_back(fd);
}

}  // namespace ember::bench
