// ember-run: the environment of each rank, failure reports, restarts, signal forwarding,
// bad command lines, and a real job of distributed_worker ranks.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <thread>

#include "distributed/processes.h"

namespace ember::distributed::testing {
namespace {

struct Launch {
  TempDir dir;
  Processes processes;
  size_t child = 0;
  bool finished = false;

  std::string output() const { return processes.log(child); }
  std::string file(const std::string& name) const { return read_file(dir.path() + "/" + name); }
};

// Runs ember-run ARGS with OUT set to a scratch directory, waiting up to `deadline`.
void start(Launch& launch, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {EMBER_RUN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  launch.child = launch.processes.spawn(argv, {{"OUT", launch.dir.path()}}, launch.dir.path() + "/ember-run.log");
}

void run(Launch& launch, const std::vector<std::string>& args,
         std::chrono::seconds deadline = std::chrono::seconds(60)) {
  start(launch, args);
  launch.finished = launch.processes.wait_all(deadline);
}

TEST(Launcher, SetsTheEnvironmentOfEveryRank) {
  Launch launch;
  run(launch,
      {"--nproc", "3", "sh", "-c",
       "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $EMBER_RESTART_COUNT\" > \"$OUT/env.$RANK\"; "
       "echo \"$EMBER_RDZV\" > \"$OUT/rdzv.$RANK\""});
  ASSERT_TRUE(launch.finished && launch.processes.exited_with(launch.child, 0)) << launch.output();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(launch.file("env." + std::to_string(rank)),
              std::to_string(rank) + " 3 " + std::to_string(rank) + " 3 0 0\n");
    EXPECT_EQ(launch.file("rdzv." + std::to_string(rank)), launch.file("rdzv.0"));
  }
  EXPECT_EQ(launch.file("rdzv.0").rfind("file:", 0), 0u) << launch.file("rdzv.0");
}

TEST(Launcher, NodeRankOffsetsTheRanks) {
  Launch launch;
  run(launch, {"--nproc", "2", "--nnodes", "3", "--node-rank", "2", "--rdzv", "file:" + launch.dir.path() + "/rdzv",
               "sh", "-c", "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $NODE_RANK $EMBER_RDZV\" > \"$OUT/env.$LOCAL_RANK\""});
  ASSERT_TRUE(launch.finished && launch.processes.exited_with(launch.child, 0)) << launch.output();
  const std::string rendezvous = "file:" + launch.dir.path() + "/rdzv/job.attempt_0";
  EXPECT_EQ(launch.file("env.0"), "4 6 0 2 " + rendezvous + "\n");
  EXPECT_EQ(launch.file("env.1"), "5 6 1 2 " + rendezvous + "\n");
}

TEST(Launcher, ReportsTheFailedRankAndStopsTheOthers) {
  Launch launch;
  // Without the stop, ranks 0 and 2 would sleep past the deadline.
  run(launch, {"--nproc", "3", "sh", "-c", "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 100"},
      std::chrono::seconds(30));
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 1)) << describe_status(launch.processes.status(launch.child));
  EXPECT_NE(launch.output().find("ember-run: rank 1 (pid "), std::string::npos) << launch.output();
  EXPECT_NE(launch.output().find(") exited with status 3; stopping the other ranks"), std::string::npos)
      << launch.output();
  EXPECT_NE(launch.output().find("ember-run: the job failed"), std::string::npos) << launch.output();
}

TEST(Launcher, LetsTheOtherRanksEndByThemselvesFirst) {
  Launch launch;
  // Rank 0 ends by itself once rank 1 has failed, as a rank whose collective fails does;
  // with --failure-wait 0 it would be stopped by SIGTERM before writing "ended".
  run(launch, {"--nproc", "2", "sh", "-c",
               "if [ \"$RANK\" = 1 ]; then touch \"$OUT/failed\"; exit 3; fi; "
               "while [ ! -e \"$OUT/failed\" ]; do sleep 0.02; done; sleep 0.5; echo ended > \"$OUT/ended\"; exit 4"},
      std::chrono::seconds(30));
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 1));
  EXPECT_EQ(launch.file("ended"), "ended\n");
  EXPECT_NE(launch.output().find("exited with status 3; stopping the other ranks unless they end within 5 s"),
            std::string::npos)
      << launch.output();
  EXPECT_NE(launch.output().find("ember-run: rank 0 (pid "), std::string::npos) << launch.output();
  EXPECT_NE(launch.output().find(") exited with status 4 as well"), std::string::npos) << launch.output();

  Launch stopped;
  run(stopped, {"--nproc", "2", "--failure-wait", "0", "sh", "-c",
                "if [ \"$RANK\" = 1 ]; then touch \"$OUT/failed\"; exit 3; fi; "
                "while [ ! -e \"$OUT/failed\" ]; do sleep 0.02; done; sleep 5; echo ended > \"$OUT/ended\""},
      std::chrono::seconds(30));
  ASSERT_TRUE(stopped.finished) << stopped.output();
  EXPECT_FALSE(std::filesystem::exists(stopped.dir.path() + "/ended")) << stopped.output();
  EXPECT_EQ(stopped.output().find("as well"), std::string::npos) << stopped.output();
}

TEST(Launcher, ReportsARankKilledByASignal) {
  Launch launch;
  run(launch,
      {"--nproc", "2", "--failure-wait", "0", "sh", "-c", "if [ \"$RANK\" = 0 ]; then kill -9 $$; fi; exec sleep 100"},
      std::chrono::seconds(30));
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 1));
  EXPECT_NE(launch.output().find("rank 0"), std::string::npos) << launch.output();
  EXPECT_NE(launch.output().find("was killed by signal 9 (SIGKILL)"), std::string::npos) << launch.output();
}

TEST(Launcher, RestartsTheWholeGroupWithAFreshRendezvous) {
  Launch launch;
  // Rank 1 records every attempt and fails until the third (restart 2); rank 0 succeeds
  // at once (a rank still running when another fails could be stopped before it writes).
  run(launch, {"--max-restarts", "3", "--nproc", "2", "sh", "-c",
               "[ \"$RANK\" = 0 ] && exit 0; echo \"$EMBER_RESTART_COUNT $EMBER_RDZV\" >> \"$OUT/attempts.$RANK\"; "
               "[ \"$EMBER_RESTART_COUNT\" = 2 ] || exit 5"});
  ASSERT_TRUE(launch.finished && launch.processes.exited_with(launch.child, 0)) << launch.output();
  const std::string attempts = launch.file("attempts.1");
  EXPECT_NE(attempts.find("0 file:"), std::string::npos) << attempts;
  EXPECT_NE(attempts.find("2 file:"), std::string::npos) << attempts;
  EXPECT_EQ(attempts.find("3 file:"), std::string::npos) << attempts;
  EXPECT_NE(attempts.find("job.attempt_0"), std::string::npos) << attempts;
  EXPECT_NE(attempts.find("job.attempt_2"), std::string::npos) << attempts;
  EXPECT_NE(launch.output().find("restarting all 2 local ranks (restart 2 of 3)"), std::string::npos)
      << launch.output();
}

TEST(Launcher, FailsAfterTheLastRestart) {
  Launch launch;
  run(launch, {"--max-restarts", "1", "--nproc", "2", "sh", "-c",
               "[ \"$RANK\" = 1 ] && exit 0; echo x >> \"$OUT/runs.$RANK\"; exit 4"});
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 1));
  EXPECT_EQ(launch.file("runs.0"), "x\nx\n");
  EXPECT_NE(launch.output().find("the job failed after every restart"), std::string::npos) << launch.output();
}

TEST(Launcher, ForwardsSigterm) {
  Launch launch;
  start(launch, {"--nproc", "2", "sh", "-c",
                 "trap 'echo term > \"$OUT/term.$RANK\"; exit 0' TERM; touch \"$OUT/ready.$RANK\"; "
                 "while :; do sleep 0.05; done"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!(std::filesystem::exists(launch.dir.path() + "/ready.0") &&
           std::filesystem::exists(launch.dir.path() + "/ready.1")) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  launch.processes.signal(launch.child, SIGTERM);
  launch.finished = launch.processes.wait_all(std::chrono::seconds(30));
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 128 + SIGTERM))
      << describe_status(launch.processes.status(launch.child));
  EXPECT_EQ(launch.file("term.0"), "term\n");
  EXPECT_EQ(launch.file("term.1"), "term\n");
}

TEST(Launcher, BadCommandLinesExitWithStatusTwo) {
  const std::vector<std::vector<std::string>> bad = {{"--bogus", "1", "true"},
                                                     {"--nproc", "0", "true"},
                                                     {"--nproc", "x", "true"},
                                                     {"--nproc", "2"},
                                                     {"--nnodes", "2", "--node-rank", "1", "true"},
                                                     {"--nnodes", "2", "--node-rank", "2", "--rdzv", "file:/x", "true"},
                                                     {"--rdzv", "tcp://h:1", "true"},
                                                     {"--max-restarts"},
                                                     {"--failure-wait", "-1", "true"}};
  for (const auto& args : bad) {
    Launch launch;
    run(launch, args, std::chrono::seconds(30));
    const std::string output = launch.output();
    EXPECT_TRUE(launch.processes.exited_with(launch.child, 2)) << args[0] << ": " << output;
    EXPECT_EQ(output.rfind("ember-run: ", 0), 0u) << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  }
}

TEST(Launcher, RunsADistributedJob) {
  Launch launch;
  run(launch, {"--nproc", "2", EMBER_TEST_WORKER, "--gtest_filter=Collectives.Broadcast:Autograd.AllReduce*"});
  ASSERT_TRUE(launch.finished) << launch.output();
  EXPECT_TRUE(launch.processes.exited_with(launch.child, 0)) << launch.output();
  EXPECT_NE(launch.output().find("[  PASSED  ] 2 tests."), std::string::npos) << launch.output();
}

}  // namespace
}  // namespace ember::distributed::testing
