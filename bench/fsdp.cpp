// `ember bench fsdp`: a small GPT trained with FSDP as `ember train --fsdp` trains it (every
// block, then the root, fully_shard'ed; AdamW; clipping on the global norm; the loss averaged
// over the ranks) at world sizes 1, 2 and 4 on the same global batch, each rank on its rows,
// with reduce-scatter on the all-gather's communicator (_shared_rs) or on its own
// (_separate_rs). The bench starts its ranks itself: copies of this program (a rank is
// `ember bench fsdp` with EMBER_BENCH_FSDP_RESULT set), each pinned to core rank % cores with
// a pool of one thread, meeting in a fresh rendezvous directory per row; step_ms is rank 0's
// median step. exposed_comm_ms is the time per step the compute thread blocked waiting on
// communication (distributed::comm_wait_stats: all-gather and reduce-scatter waits, the loss
// and norm all_reduces) on the rank that blocked least in that step (the one the others
// waited for), the median over the steps, with that step's rank's waits by operation in
// exposed_comm_ms_by_op; exposed_comm_ms_per_rank has each rank's median.
// As root, the _netem rows run each rank in its own network namespace behind a switch with
// 1 Gbit/s ports and 1 ms from rank to rank (bench/netns.h) instead of loopback.
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "bench.h"
#include "train/train_step.h"
#include "ember/distributed.h"
#include "ember/ember.h"
#include "netns.h"

extern char** environ;

namespace ember::bench {
namespace {

constexpr const char* kOp = "bench fsdp";
// Set for the ranks: where a rank writes its figures, and the reduce-scatter group choice.
constexpr const char* kResultVariable = "EMBER_BENCH_FSDP_RESULT";
constexpr const char* kSeparateVariable = "EMBER_BENCH_FSDP_SEPARATE_RS";
constexpr int64_t kGlobalBatch = 32, kSeqLen = 128;
constexpr int kWarmupSteps = 2;
constexpr auto kRowDeadline = std::chrono::seconds(150);

// ~3.2M parameters (12.6 MB in f32). The global batch of 32 x 128 tokens keeps one core busy
// ~2 s a step, against ~0.15 s of gathers and reduce-scatters per rank at 2 ranks on a
// 1 Gbit/s link: the per-parameter costs of a rank (copies in and out of the flat buffers,
// Gloo's threads on the same core) stay small next to its compute, so two ranks can scale
// (at 16 x 128: ~7% of a rank's core in its communication threads, ~5% in buffer copies),
// and the communication is still visible.
models::GPTConfig bench_gpt() {
  models::GPTConfig config;
  config.dim = 256;
  config.n_layers = 4;
  config.n_heads = 8;
  config.n_kv_heads = 4;
  config.hidden_dim = 768;
  config.max_seq_len = kSeqLen;
  return config;
}

int measured_steps(const Options& options) { return options.quick ? 3 : 10; }


// ---- a rank -----------------------------------------------------------------------------------

// Trains and returns this rank's figures: the median step, and each measured step's exposed
// communication, in all and by operation.
nlohmann::json train_as_rank(const Options& options, bool separate_reduce_scatter) {
  distributed::InitOptions init;
  init.timeout = kRowDeadline;
  distributed::init_process_group(init);
  const int rank = distributed::get_rank(), world = distributed::get_world_size();
  EMBER_CHECK(kGlobalBatch % world == 0, kOp, "the global batch ", kGlobalBatch, " does not split over ", world,
              " ranks");
  const models::GPTConfig config = bench_gpt();
  manual_seed(1337);
  models::GPT model(config);
  const train::ShardedTraining sharded = train::shard_for_training(model, separate_reduce_scatter);
  optim::AdamW optimizer = train::make_optimizer(model, 1e-3, 0.1);

  const int total_steps = kWarmupSteps + measured_steps(options);
  const int64_t rows = kGlobalBatch / world;
  std::vector<data::Batch> batches;
  for (int step = 0; step < total_steps; ++step) {
    manual_seed(static_cast<uint64_t>(step));
    Tensor tokens = randint(config.vocab_size, {kGlobalBatch, kSeqLen + 1}).narrow(0, rank * rows, rows);
    batches.push_back({tokens.narrow(1, 0, kSeqLen).contiguous(), tokens.narrow(1, 1, kSeqLen).contiguous(), {}});
  }

  std::vector<double> step_ms, exposed_ms;
  std::vector<nlohmann::json> exposed_by_op;
  for (int step = 0; step < total_steps; ++step) {
    distributed::reset_comm_wait_stats();
    const auto start = std::chrono::steady_clock::now();
    train::train_step(
        model, optimizer, 1, [&](int64_t) { return batches[static_cast<size_t>(step)]; }, 1.0, {}, &sharded);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step < kWarmupSteps) continue;
    double exposed = 0;
    nlohmann::json by_op = nlohmann::json::object();
    for (const auto& [op, waits] : distributed::comm_wait_stats()) {
      exposed += waits.wait_ms;
      by_op[op] = waits.wait_ms;
    }
    step_ms.push_back(ms);
    exposed_ms.push_back(exposed);
    exposed_by_op.push_back(by_op);
  }
  distributed::destroy_process_group();
  const double exposed = median(exposed_ms);
  return {{"step_ms", median(step_ms)},
          {"exposed_comm_ms", exposed},
          {"exposed_comm_ms_steps", exposed_ms},
          {"exposed_comm_ms_by_op_steps", exposed_by_op}};
}

// ---- the driver ---------------------------------------------------------------------------------

struct Row {
  std::string name;
  int world = 1;
  bool separate_reduce_scatter = false;
};

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ember-bench-fsdp-XXXXXX";
    EMBER_CHECK(::mkdtemp(pattern.data()) != nullptr, kOp, "mkdtemp failed: ", std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The cores this process may run on.
std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  if (cores.empty()) cores.push_back(0);
  return cores;
}

// This environment without the variables a rank gets from the bench, plus `extra`.
std::vector<std::string> rank_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    const std::string text = *entry;
    if (!extra.count(text.substr(0, text.find('=')))) env.push_back(text);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

// Forks a rank: pinned to `core`, in the network namespace `netns_fd` (-1: this one), its
// stdout (the rank's empty report) discarded, killed if the bench dies.
pid_t spawn_rank(const std::vector<std::string>& argv, const std::vector<std::string>& env, int core, int netns_fd) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  const pid_t pid = ::fork();
  EMBER_CHECK(pid >= 0, kOp, "fork failed: ", std::strerror(errno));
  if (pid > 0) return pid;
  // The child: only async-signal-safe calls until exec.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::sched_setaffinity(0, sizeof(set), &set) != 0) ::_exit(126);
  if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(126);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
  ::execve(args[0], args.data(), envp.data());
  ::_exit(127);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// SIGINT, SIGTERM or SIGHUP received while rank namespaces exist (0: none).
volatile std::sig_atomic_t g_stop_signal = 0;

// While alive, those signals only set g_stop_signal, which fails the running row (its
// ranks are killed), so that the namespaces are removed on the way out; then the signal is
// raised again with its own action.
class DeferredStopSignals {
 public:
  DeferredStopSignals() {
    struct sigaction action {};
    action.sa_handler = [](int signal_number) { g_stop_signal = signal_number; };
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~DeferredStopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
    if (!g_stop_signal) return;
    note("bench fsdp: stopped by signal " + std::to_string(g_stop_signal) + " (rank namespaces removed)");
    ::raise(g_stop_signal);
  }
  DeferredStopSignals(const DeferredStopSignals&) = delete;
  DeferredStopSignals& operator=(const DeferredStopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_{};
};

// Waits for every rank; once one fails, the deadline passes or a stop signal arrives, the
// others are killed. Throws Error naming the first rank that failed.
void wait_for_ranks(const std::vector<pid_t>& pids, const std::string& row) {
  const auto deadline = std::chrono::steady_clock::now() + kRowDeadline;
  std::vector<bool> running(pids.size(), true);
  std::string failure;
  for (size_t left = pids.size(); left > 0;) {
    bool reaped = false;
    for (size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (!running[r] || ::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      running[r] = false;
      reaped = true;
      --left;
      if (failure.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        failure = "rank " + std::to_string(r) + " " + describe_status(status);
    }
    if (g_stop_signal && failure.empty()) failure = "stopped by signal " + std::to_string(g_stop_signal);
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (late && failure.empty()) failure = "the ranks did not finish within " + std::to_string(kRowDeadline.count()) + " s";
    if (!failure.empty())
      for (size_t r = 0; r < pids.size(); ++r)
        if (running[r]) ::kill(pids[r], SIGKILL);
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EMBER_CHECK(failure.empty(), kOp, "row ", row, ": ", failure);
}

nlohmann::json run_row(const Row& row, const Options& options, const RankNetwork* network) {
  TempDir dir;
  const std::vector<int> cores = allowed_cores();
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "bench", "fsdp"};
  if (options.quick) argv.push_back("--quick");
  std::vector<pid_t> pids;
  for (int rank = 0; rank < row.world; ++rank) {
    const std::map<std::string, std::string> variables = {
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(row.world)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", std::to_string(row.world)},
        {"EMBER_RDZV", "file:" + dir.path() + "/rendezvous"},
        {"EMBER_HOSTNAME", network ? RankNetwork::address(rank) : "127.0.0.1"},
        {"EMBER_NUM_THREADS", "1"},
        {kResultVariable, dir.path() + "/rank_" + std::to_string(rank) + ".json"},
        {kSeparateVariable, row.separate_reduce_scatter ? "1" : "0"}};
    try {
      pids.push_back(spawn_rank(argv, rank_environment(variables), cores[static_cast<size_t>(rank) % cores.size()],
                                network ? network->namespace_fd(rank) : -1));
    } catch (...) {
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
      for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
      throw;
    }
  }
  wait_for_ranks(pids, row.name);

  std::vector<nlohmann::json> figures;
  for (int rank = 0; rank < row.world; ++rank) {
    std::ifstream in(dir.path() + "/rank_" + std::to_string(rank) + ".json");
    figures.push_back(nlohmann::json::parse(in));
  }
  const double step_ms = figures[0]["step_ms"];
  // A rank's blocked time also holds its wait for slower peers (which rank runs behind is the
  // host's noise, tens of ms a step). The rank that blocked least in a step is mostly the one
  // the others waited for: its blocked time approximates the communication the step could
  // not hide (within a step another rank may have been the late one at some collective).
  nlohmann::json exposed_per_rank = nlohmann::json::array();
  for (const auto& f : figures) exposed_per_rank.push_back(f["exposed_comm_ms"]);
  std::vector<double> least_blocked;
  std::vector<size_t> least_blocked_rank;
  for (size_t step = 0; step < figures[0]["exposed_comm_ms_steps"].size(); ++step) {
    auto blocked = [&](size_t r) { return figures[r]["exposed_comm_ms_steps"][step].get<double>(); };
    size_t least = 0;
    for (size_t r = 1; r < figures.size(); ++r)
      if (blocked(r) < blocked(least)) least = r;
    least_blocked.push_back(blocked(least));
    least_blocked_rank.push_back(least);
  }
  const double exposed = median(least_blocked);
  const size_t median_step =
      static_cast<size_t>(std::find(least_blocked.begin(), least_blocked.end(), exposed) - least_blocked.begin());
  const size_t critical_rank = least_blocked_rank[median_step];
  const int ranks_per_core = (row.world + static_cast<int>(cores.size()) - 1) / static_cast<int>(cores.size());
  nlohmann::json r = {{"name", row.name},
                      {"world_size", row.world},
                      {"separate_reduce_scatter_group", row.separate_reduce_scatter},
                      {"step_ms", step_ms},
                      {"tokens_per_s", static_cast<double>(kGlobalBatch * kSeqLen) / step_ms * 1e3},
                      {"exposed_comm_ms", exposed},
                      {"exposed_comm_ms_by_op", figures[critical_rank]["exposed_comm_ms_by_op_steps"][median_step]},
                      {"exposed_comm_ms_per_rank", exposed_per_rank},
                      {"cores", cores.size()},
                      {"ranks_per_core", ranks_per_core},
                      {"link", network ? network->link() : "loopback"}};
  if (ranks_per_core > 1)
    r["oversubscribed"] = std::to_string(row.world) + " ranks share " + std::to_string(cores.size()) + " cores";
  return r;
}

nlohmann::json run(const Options& options) {
  if (const char* result_path = std::getenv(kResultVariable)) {
    const char* separate = std::getenv(kSeparateVariable);
    const nlohmann::json figures = train_as_rank(options, separate && std::string(separate) == "1");
    std::ofstream(result_path) << figures.dump();
    return nlohmann::json::array();
  }
  const models::GPTConfig config = bench_gpt();
  note("bench fsdp: GPT d" + std::to_string(config.dim) + " l" + std::to_string(config.n_layers) + " f" +
       std::to_string(config.hidden_dim) + ", global batch " + std::to_string(kGlobalBatch) + " x " +
       std::to_string(kSeqLen) + " tokens");
  const std::vector<Row> rows = {{"w1", 1, false},
                                 {"w2_shared_rs", 2, false},
                                 {"w2_separate_rs", 2, true},
                                 {"w4_shared_rs", 4, false},
                                 {"w4_separate_rs", 4, true}};
  nlohmann::json results = nlohmann::json::array();
  double w1_tokens_per_s = 0;
  auto add = [&](nlohmann::json r) {
    if (r["name"] == "w1") w1_tokens_per_s = r["tokens_per_s"];
    if (w1_tokens_per_s > 0) r["speedup_vs_w1"] = r["tokens_per_s"].get<double>() / w1_tokens_per_s;
    note(r.dump());
    results.push_back(r);
  };
  for (const Row& row : rows) add(run_row(row, options, nullptr));

  if (const std::string missing = rank_network_unavailable(); !missing.empty()) {
    note("bench fsdp: skipping the _netem rows: " + missing);
    return results;
  }
  remove_stale_rank_networks();
  const DeferredStopSignals deferred;
  for (int world : {2, 4}) {
    std::unique_ptr<RankNetwork> network;
    try {
      network = std::make_unique<RankNetwork>(world);
    } catch (const Error& e) {
      note("bench fsdp: skipping the w" + std::to_string(world) + " _netem rows: " + e.what());
      continue;
    }
    for (const Row& row : rows)
      if (row.world == world) add(run_row({row.name + "_netem", world, row.separate_reduce_scatter}, options, network.get()));
  }
  return results;
}

Register reg("fsdp", run);

}  // namespace
}  // namespace ember::bench
