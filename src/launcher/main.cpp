// ember-run: starts the processes of a distributed job on this machine, like torchrun.
//
//   ember-run --nproc N [--nnodes M --node-rank R] [--rdzv file:DIR|redis://HOST:PORT[/PREFIX]]
//             [--rdzv-id ID] [--max-restarts K] [--failure-wait SECONDS] PROGRAM [ARGS...]
//
// Each of the N processes gets RANK (node_rank * N + local rank), WORLD_SIZE (M * N),
// LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, EMBER_RESTART_COUNT and EMBER_RDZV, the
// rendezvous of this attempt: a fresh directory by default, else ID.attempt_K under the
// given one, so that a restart never meets the keys of an earlier attempt. SIGINT, SIGTERM
// and SIGHUP are forwarded. When a process fails, ember-run says which rank and how, lets
// the others run on for --failure-wait seconds (default 5) so that they can end by
// themselves (a CommError naming the lost rank, a flight-recorder dump), then stops those
// left (SIGTERM, then SIGKILL after a grace period) and restarts the whole group while
// restarts remain. Exit status: 0 when every process of the last attempt succeeded,
// 128 + signal when interrupted, 1 otherwise; 2 for a bad command line.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: ember-run --nproc N [--nnodes M --node-rank R] [--rdzv file:DIR|redis://HOST:PORT[/PREFIX]]\n"
    "                 [--rdzv-id ID] [--max-restarts K] [--failure-wait SECONDS] PROGRAM [ARGS...]\n"
    "  --failure-wait SECONDS  after a rank fails, how long the others may run on to end by\n"
    "                          themselves before they are stopped (default 5)\n";

constexpr auto kGracePeriod = std::chrono::seconds(5);

struct UsageError {
  std::string message;
};

struct Options {
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string rendezvous;  // empty: a fresh directory
  std::string rendezvous_id = "job";
  int max_restarts = 0;
  int failure_wait_s = 5;
  std::vector<std::string> program;
};

int parse_count(const std::string& flag, const std::string& text, int minimum) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum || value > 1'000'000)
    throw UsageError{flag + " needs an integer >= " + std::to_string(minimum) + ", got '" + text + "'"};
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--", 0) != 0) break;
    std::string value;
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help") {
      if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
      value = argv[++i];
    }
    if (arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--nproc" || arg == "--nproc-per-node") {
      options.nproc = parse_count(arg, value, 1);
    } else if (arg == "--nnodes") {
      options.nnodes = parse_count(arg, value, 1);
    } else if (arg == "--node-rank") {
      options.node_rank = parse_count(arg, value, 0);
    } else if (arg == "--max-restarts") {
      options.max_restarts = parse_count(arg, value, 0);
    } else if (arg == "--failure-wait") {
      options.failure_wait_s = parse_count(arg, value, 0);
    } else if (arg == "--rdzv") {
      if (value.rfind("file:", 0) != 0 && value.rfind("redis://", 0) != 0)
        throw UsageError{"--rdzv must be file:DIR or redis://HOST:PORT[/PREFIX], got '" + value + "'"};
      options.rendezvous = value;
    } else if (arg == "--rdzv-id") {
      if (value.empty() || value.find('/') != std::string::npos)
        throw UsageError{"--rdzv-id needs a name without '/', got '" + value + "'"};
      options.rendezvous_id = value;
    } else {
      throw UsageError{"unknown option " + arg};
    }
  }
  for (; i < argc; ++i) options.program.push_back(argv[i]);
  if (options.program.empty()) throw UsageError{"no PROGRAM to run"};
  if (options.node_rank >= options.nnodes)
    throw UsageError{"--node-rank " + std::to_string(options.node_rank) + " must be below --nnodes " +
                     std::to_string(options.nnodes)};
  if (options.nnodes > 1 && options.rendezvous.empty())
    throw UsageError{"--nnodes > 1 needs a --rdzv that every node reaches"};
  return options;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    const char* name = sigabbrev_np(signal_number);
    return "was killed by signal " + std::to_string(signal_number) + (name ? " (SIG" + std::string(name) + ")" : "");
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

bool succeeded(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// The rendezvous of attempt `attempt`.
std::string attempt_rendezvous(const Options& options, const std::string& fresh_dir, int attempt) {
  const std::string name = options.rendezvous_id + ".attempt_" + std::to_string(attempt);
  if (options.rendezvous.empty()) return "file:" + fresh_dir + "/" + name;
  std::string base = options.rendezvous;
  if (options.rendezvous.rfind("redis://", 0) == 0 && base.find('/', 8) == std::string::npos) base += "/";
  if (base.back() != '/') base += "/";
  return base + name;
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
};

class Launcher {
 public:
  Launcher(Options options, sigset_t handled) : options_(std::move(options)), handled_(handled) {}

  // Runs one attempt; returns 0 on success, else the failure (or interruption) status.
  int run_attempt(const std::string& rendezvous, int attempt) {
    children_.clear();
    const int world_size = options_.nnodes * options_.nproc;
    for (int local = 0; local < options_.nproc; ++local) {
      const int rank = options_.node_rank * options_.nproc + local;
      const pid_t pid = ::fork();
      if (pid < 0) {
        std::cerr << "ember-run: fork failed: " << std::strerror(errno) << "\n";
        stop_all(SIGKILL);
        return 1;
      }
      if (pid == 0) exec_child(rank, local, world_size, rendezvous, attempt);
      ::setpgid(pid, pid);
      children_.push_back({rank, pid, true});
    }
    constexpr auto kNever = std::chrono::steady_clock::time_point::max();
    auto stop_at = kNever;  // after a failure: when to stop the ranks still running
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    bool failed = false;
    while (running() > 0) {
      timespec tick{0, 100'000'000};
      const int signal_number = ::sigtimedwait(&handled_, nullptr, &tick);
      if (signal_number == SIGINT || signal_number == SIGTERM || signal_number == SIGHUP) {
        if (!interrupted_) std::cerr << "ember-run: got " << sigabbrev_np(signal_number) << ", passing it on\n";
        interrupted_ = signal_number;
        stop_all(signal_number);
        stop_at = kNever;
        if (!kill_at) kill_at = std::chrono::steady_clock::now() + kGracePeriod;
      }
      for (Child& child : children_) {
        int status = 0;
        if (!child.running || ::waitpid(child.pid, &status, WNOHANG) != child.pid) continue;
        child.running = false;
        if (succeeded(status) || interrupted_ || (failed && stop_at == kNever)) continue;  // or ended by our signals
        std::cerr << "ember-run: rank " << child.rank << " (pid " << child.pid << ") " << describe_exit(status)
                  << (failed ? " as well\n"
                             : "; stopping the other ranks unless they end within " +
                                   std::to_string(options_.failure_wait_s) + " s\n");
        if (failed) continue;
        failed = true;
        stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(options_.failure_wait_s);
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= stop_at) {
        stop_at = kNever;
        stop_all(SIGTERM);
        kill_at = now + kGracePeriod;
      }
      if (kill_at && now > *kill_at) stop_all(SIGKILL);
    }
    if (interrupted_) return 128 + interrupted_;
    return failed ? 1 : 0;
  }

  bool interrupted() const { return interrupted_ != 0; }

 private:
  [[noreturn]] void exec_child(int rank, int local, int world_size, const std::string& rendezvous, int attempt) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphans if ember-run itself is killed
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
    ::setenv("LOCAL_WORLD_SIZE", std::to_string(options_.nproc).c_str(), 1);
    ::setenv("NODE_RANK", std::to_string(options_.node_rank).c_str(), 1);
    ::setenv("EMBER_RDZV", rendezvous.c_str(), 1);
    ::setenv("EMBER_RESTART_COUNT", std::to_string(attempt).c_str(), 1);
    ::setenv("EMBER_MAX_RESTARTS", std::to_string(options_.max_restarts).c_str(), 1);
    std::vector<char*> args;
    for (auto& arg : options_.program) args.push_back(arg.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::cerr << "ember-run: cannot run " << options_.program[0] << ": " << std::strerror(errno) << "\n";
    ::_exit(127);
  }

  int running() const {
    int count = 0;
    for (const Child& child : children_) count += child.running;
    return count;
  }

  // Signals every running child's process group (the child and what it started).
  void stop_all(int signal_number) {
    for (const Child& child : children_)
      if (child.running) ::kill(-child.pid, signal_number);
  }

  Options options_;
  sigset_t handled_;
  std::vector<Child> children_;
  int interrupted_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "ember-run: " << e.message << " (ember-run --help)\n";
    return 2;
  }

  // Signals are taken synchronously (sigtimedwait) in the launcher; children unblock them.
  sigset_t handled;
  sigemptyset(&handled);
  for (int signal_number : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, signal_number);
  ::sigprocmask(SIG_BLOCK, &handled, nullptr);

  std::string fresh_dir;
  if (options.rendezvous.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ember-run-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::cerr << "ember-run: cannot create a rendezvous directory: " << std::strerror(errno) << "\n";
      return 1;
    }
    fresh_dir = pattern;
  }

  Launcher launcher(options, handled);
  int status = 0;
  for (int attempt = 0; attempt <= options.max_restarts; ++attempt) {
    status = launcher.run_attempt(attempt_rendezvous(options, fresh_dir, attempt), attempt);
    if (status == 0 || launcher.interrupted()) break;
    if (attempt < options.max_restarts) {
      std::cerr << "ember-run: restarting all " << options.nproc << " local ranks (restart " << attempt + 1 << " of "
                << options.max_restarts << ")\n";
    } else {
      std::cerr << "ember-run: the job failed" << (options.max_restarts ? " after every restart" : "") << "\n";
    }
  }
  if (!fresh_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(fresh_dir, ignored);
  }
  return status;
}
