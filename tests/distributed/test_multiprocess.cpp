// Multi-process runs of distributed_worker on loopback: 2, 3 and 4 ranks, FSDP and its
// checkpoints across world sizes, failures, flight-recorder dumps and `ember fr-trace`, and a
// Redis rendezvous.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "distributed/processes.h"
#include "ember/distributed/flight_recorder.h"

namespace ember::distributed::testing {
namespace {

TEST(Distributed, CollectivesOnTwoThreeAndFourRanks) {
  for (int nproc : {2, 3, 4}) {
    WorkerRun run;
    run_workers(run, nproc, "Collectives.*");
    EXPECT_EQ(all_ranks_passed(run, nproc), "") << nproc << " ranks";
  }
}

TEST(Distributed, AsyncOperationsAndConcurrentGroups) {
  WorkerRun run;
  run_workers(run, 3, "Async.*");
  EXPECT_EQ(all_ranks_passed(run, 3), "");
}

TEST(Distributed, DifferentiableCollectives) {
  for (int nproc : {2, 3}) {
    WorkerRun run;
    run_workers(run, nproc, "Autograd.*");
    EXPECT_EQ(all_ranks_passed(run, nproc), "") << nproc << " ranks";
  }
}

TEST(Distributed, FullyShardedDataParallel) {
  for (int nproc : {2, 3, 4}) {
    WorkerRun run;
    run_workers(run, nproc, "FSDP.*:-FSDP.*ShardedCheckpoint*", {.deadline = std::chrono::seconds(300)});
    EXPECT_EQ(all_ranks_passed(run, nproc), "") << nproc << " ranks";
  }
}

TEST(Distributed, ShardedCheckpointResumesAtAnotherWorldSize) {
  for (auto [saving, resuming] : {std::pair{4, 2}, std::pair{2, 3}}) {
    TempDir checkpoint;
    const WorkerOptions options{.env = {{"EMBER_TEST_CHECKPOINT_DIR", checkpoint.path()}},
                                .deadline = std::chrono::seconds(300)};
    WorkerRun save;
    run_workers(save, saving, "FSDP.SaveShardedCheckpointAfterTenSteps", options);
    ASSERT_EQ(all_ranks_passed(save, saving), "") << saving << " ranks saving";
    for (int rank = 0; rank < saving; ++rank)
      EXPECT_TRUE(std::filesystem::exists(checkpoint.path() + "/checkpoint/rank_" + std::to_string(rank) +
                                          ".safetensors"));
    EXPECT_TRUE(std::filesystem::exists(checkpoint.path() + "/checkpoint/index.json"));
    WorkerRun resume;
    run_workers(resume, resuming, "FSDP.ResumeShardedCheckpointAtAnotherWorldSize", options);
    EXPECT_EQ(all_ranks_passed(resume, resuming), "") << saving << " ranks saving, " << resuming << " resuming";
  }
}

TEST(Distributed, PerOperationTimeoutAbortAndNewGroup) {
  WorkerRun run;
  run_workers(run, 2, "Faults.PerOperationTimeoutThenNewGroup", {.env = {{"EMBER_TEST_TIMEOUT_MS", "20000"}}});
  EXPECT_EQ(all_ranks_passed(run, 2), "");
}

// The ranks that survive must pass (their checks are in tests/distributed/worker/faults.cpp);
// the flight-recorder dumps must name the lost rank, through the library and the CLI.
void expect_lost_rank_found(const char* filter, int signal, const char* timeout_ms) {
  const int nproc = 3;
  const size_t lost = 2;
  WorkerRun run;
  WorkerOptions options{.env = {{"EMBER_TEST_TIMEOUT_MS", timeout_ms}}};
  if (signal == SIGSTOP) options.may_hang = {lost};
  run_workers(run, nproc, filter, options);
  std::vector<bool> ok = {run.processes.exited_with(0, 0), run.processes.exited_with(1, 0),
                          run.processes.killed_by(lost, SIGKILL)};
  ASSERT_EQ(run.report(ok), "");
  for (int rank : {0, 1})
    EXPECT_TRUE(std::filesystem::exists(run.fr_dir() + "/rank_" + std::to_string(rank) + ".json"));

  const FlightRecorderReport report = analyze_flight_recorder_dumps(run.fr_dir());
  EXPECT_EQ(report.culprits, std::vector<int>{2}) << report.text;
  EXPECT_NE(report.text.find("ranks 0, 1 wait in all_reduce"), std::string::npos) << report.text;
  EXPECT_NE(report.text.find("rank 2 left no dump"), std::string::npos) << report.text;

  const std::string cli = EMBER_CLI_PATH;
  if (cli.empty()) return;  // builds without the ember command (the sanitizer preset)
  Processes trace;
  const size_t child = trace.spawn({cli, "fr-trace", run.fr_dir()}, {}, run.dir.path() + "/fr-trace.log");
  ASSERT_TRUE(trace.wait_all(std::chrono::seconds(30)));
  const std::string output = trace.log(child);
  EXPECT_TRUE(trace.exited_with(child, 0)) << output;
  EXPECT_NE(output.find("rank 2 left no dump"), std::string::npos) << output;
  EXPECT_NE(output.find("ranks at fault: 2"), std::string::npos) << output;
}

TEST(Distributed, KilledRankIsNamedWithinTheTimeout) { expect_lost_rank_found("Faults.KilledRank", SIGKILL, "5000"); }

TEST(Distributed, StoppedRankIsFoundByTimeout) { expect_lost_rank_found("Faults.StoppedRank", SIGSTOP, "2000"); }

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    if (::access((dirs.substr(start, end - start) + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return ok;
}

TEST(Distributed, RedisRendezvous) {
  if (!on_path("redis-server")) GTEST_SKIP() << "redis-server is not installed (scripts/setup installs it)";
  TempDir redis_dir;
  Processes redis;
  const int port = free_port();
  redis.spawn({"redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
               "no", "--dir", redis_dir.path()},
              {}, redis_dir.path() + "/redis.log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!accepts_connections(port) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(accepts_connections(port)) << redis.log(0);

  WorkerRun run;
  const std::string rendezvous = "redis://127.0.0.1:" + std::to_string(port) + "/ember-test";
  run_workers(run, 2, "Collectives.AllReduceEveryOpAndDtype:Async.TwoGroupsRunConcurrently",
              {.env = {{"EMBER_RDZV", rendezvous}}});
  EXPECT_EQ(all_ranks_passed(run, 2), "");
}

}  // namespace
}  // namespace ember::distributed::testing
