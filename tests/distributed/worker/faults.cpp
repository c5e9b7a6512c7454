// Timeouts, dead and stopped peers, aborting and re-creating groups. The test driving
// these (tests/distributed/test_faults.cpp) checks the exit status of every rank, the
// flight-recorder dumps and `ember fr-trace`.
#include <csignal>
#include <filesystem>
#include <thread>

#include "distributed/worker/worker.h"

namespace ember::distributed::worker {
namespace {

using testutil::all_equal;

class Faults : public DistributedTest {};

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

// Rank 0 gives up on an all_reduce after 500 ms (the group default is much longer) while
// rank 1 sleeps; both then build a new group and carry on.
TEST_F(Faults, PerOperationTimeoutThenNewGroup) {
  const int r = rank();
  Tensor t = full({3}, 1.0);
  if (r == 0) {
    try {
      all_reduce(t, ReduceOp::SUM, {.timeout = std::chrono::milliseconds(500)});
      ADD_FAILURE() << "all_reduce did not time out";
    } catch (const CommError& e) {
      EXPECT_EQ(e.ranks(), std::vector<int>{1}) << e.what();
      EXPECT_EQ(e.group(), "0");
      EXPECT_EQ(e.op(), "all_reduce");
      EXPECT_EQ(e.seq(), 1u);
      EXPECT_TRUE(contains(e.what(), "timed out after 500 ms")) << e.what();
      EXPECT_TRUE(contains(e.what(), "rank 1 has not reached seq 1")) << e.what();
    }
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    // Rank 0 has closed its connections: this fails at once instead of at the timeout.
    EXPECT_THROW(all_reduce(t), CommError);
  }
  EXPECT_TRUE(world()->is_aborted());
  EXPECT_THROW(barrier(), CommError);

  auto again = new_group({0, 1});
  Tensor u = full({3}, r + 1.0);
  all_reduce(u, ReduceOp::SUM, {.group = again});
  EXPECT_TRUE(all_equal(u, {3, 3, 3}));

  again->abort();
  try {
    all_reduce(u, ReduceOp::SUM, {.group = again});
    ADD_FAILURE() << "all_reduce on an aborted group succeeded";
  } catch (const CommError& e) {
    EXPECT_TRUE(contains(e.what(), "the group was aborted (aborted by the user)")) << e.what();
  }
}

// Rank W-1 dies (SIGKILL) between steps, or stops (SIGSTOP): the others get a CommError
// naming it, by a closed connection within the timeout or by the timeout.
void lose_last_rank(int signal) {
  const int W = get_world_size(), r = get_rank();
  const int lost = W - 1;
  Tensor t = full({1000}, 1.0);
  for (int step = 0; step < 100; ++step) {
    if (r == lost && step == 3) std::raise(signal);
    const auto start = std::chrono::steady_clock::now();
    try {
      all_reduce(t);
    } catch (const CommError& e) {
      const auto elapsed = std::chrono::steady_clock::now() - start;
      EXPECT_EQ(e.ranks(), std::vector<int>{lost}) << e.what();
      EXPECT_TRUE(contains(e.what(), "rank " + std::to_string(lost) + " is not responding")) << e.what();
      if (signal == SIGKILL) {
        EXPECT_LT(elapsed, world()->timeout()) << e.what();
      }
      const std::string dump = env_or("EMBER_FR_DUMP_DIR", "") + "/rank_" + std::to_string(r) + ".json";
      EXPECT_TRUE(std::filesystem::exists(dump)) << dump;
      return;
    }
  }
  ADD_FAILURE() << "no CommError after rank " << lost << " was lost";
}

TEST_F(Faults, KilledRank) { lose_last_rank(SIGKILL); }
TEST_F(Faults, StoppedRank) { lose_last_rank(SIGSTOP); }

}  // namespace
}  // namespace ember::distributed::worker
