// Async operations, ordering within a group, concurrency across groups, Work::wait
// timeouts and the SIGUSR1 flight-recorder dump.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/worker/worker.h"

namespace ember::distributed::worker {
namespace {

using testutil::all_equal;

class Async : public DistributedTest {};

// Rank 0 starts an all_reduce on group a and then one on group b; rank 1 joins b's first
// and a's only after b's completed. With one thread for both groups this would deadlock
// (and time out); with a thread per group b's runs while a's waits.
TEST_F(Async, TwoGroupsRunConcurrently) {
  const int r = rank();
  auto a = new_group({0, 1}, {.timeout = std::chrono::seconds(10)});
  auto b = new_group({1, 0}, {.timeout = std::chrono::seconds(10)});
  EXPECT_EQ(b->rank(), r == 0 ? 1 : r == 1 ? 0 : -1);
  Tensor x = full({3}, r + 1.0), y = full({3}, 10.0 * (r + 1));
  if (r == 0) {
    Work on_a = all_reduce(x, ReduceOp::SUM, {.group = a, .async_op = true});
    Work on_b = all_reduce(y, ReduceOp::SUM, {.group = b, .async_op = true});
    on_b.wait();
    on_a.wait();
  } else if (r == 1) {
    all_reduce(y, ReduceOp::SUM, {.group = b});
    all_reduce(x, ReduceOp::SUM, {.group = a});
  } else {
    EXPECT_FALSE(a->is_member());
    EXPECT_TRUE(testutil::throws_error([&] { all_reduce(x, ReduceOp::SUM, {.group = a}); },
                                       {"[all_reduce]", "not a member of group"}));
  }
  if (r < 2) {
    EXPECT_TRUE(all_equal(x, {3, 3, 3}));
    EXPECT_TRUE(all_equal(y, {30, 30, 30}));
  }
}

TEST_F(Async, OneGroupKeepsIssueOrder) {
  const int W = size(), r = rank();
  Tensor t = full({4}, r + 1.0);
  Tensor gathered = empty({W});
  Tensor one = empty({1});
  // Each operation reads what the previous one wrote: only in-order execution gives these
  // values.
  Work first = all_reduce(t, ReduceOp::SUM, {.async_op = true});
  Work second = broadcast(t, W - 1, {.async_op = true});
  Work third = all_gather_into_tensor(gathered, t.narrow(0, 0, 1), {.async_op = true});
  third.wait();
  second.wait();
  first.wait();
  EXPECT_TRUE(first.is_completed() && first.is_success());
  EXPECT_EQ(second.seq(), first.seq() + 1);
  EXPECT_EQ(third.seq(), first.seq() + 2);
  EXPECT_EQ(third.op(), "all_gather_into_tensor");
  const double sum = W * (W + 1) / 2.0;
  EXPECT_TRUE(all_equal(t, {sum, sum, sum, sum}));
  EXPECT_TRUE(all_equal(gathered, std::vector<double>(static_cast<size_t>(W), sum)));
}

TEST_F(Async, WaitWithTimeoutThenComplete) {
  const int W = size(), r = rank();
  Tensor t = full({2}, 1.0);
  if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(800));
  Work work = all_reduce(t, ReduceOp::SUM, {.async_op = true});
  if (r == 0) {
    try {
      work.wait(std::chrono::milliseconds(50));
      ADD_FAILURE() << "wait(50 ms) returned while rank 1 was still sleeping";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("Work::wait timed out after 50 ms"), std::string::npos) << e.what();
      EXPECT_EQ(e.op(), "all_reduce");
    }
  }
  EXPECT_TRUE(work.wait());
  EXPECT_TRUE(all_equal(t, {static_cast<double>(W), static_cast<double>(W)}));
}

// The other ranks join rank 0's reduce-scatter 400 ms late: rank 0's wait blocks at least
// 200 ms of it (the rest is slack for scheduling), a second wait on the completed operation
// adds nothing, and the others, which joined last, waited less than the delay.
TEST_F(Async, BlockedWaitsAreCounted) {
  const int W = size(), r = rank();
  const double delay_ms = 400;
  barrier();
  reset_comm_wait_stats();
  Tensor input = full({2 * W}, 1.0), output = empty({2});
  if (r == 0) {
    Work work = reduce_scatter_tensor(output, input, ReduceOp::SUM, {.async_op = true});
    work.wait();
    const CommWaitStats blocked = comm_wait_stats()["reduce_scatter_tensor"];
    EXPECT_EQ(blocked.waits, 1);
    EXPECT_GE(blocked.wait_ms, delay_ms - 200);
    work.wait();
    EXPECT_EQ(comm_wait_stats()["reduce_scatter_tensor"].waits, 1);
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
    reduce_scatter_tensor(output, input);
    const auto stats = comm_wait_stats();
    EXPECT_LE(stats.count("reduce_scatter_tensor") ? stats.at("reduce_scatter_tensor").wait_ms : 0.0, delay_ms);
  }
  EXPECT_TRUE(all_equal(output, {static_cast<double>(W), static_cast<double>(W)}));
}

TEST_F(Async, FlightRecorderDumpOnSigusr1) {
  const int r = rank();
  Tensor t = full({5, 2}, 1.0);
  for (int i = 0; i < 3; ++i) all_reduce(t);
  const std::string path = env_or("EMBER_FR_DUMP_DIR", "") + "/rank_" + std::to_string(r) + ".json";
  if (r == 0) {
    std::raise(SIGUSR1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream in(path);
    const auto dump = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(dump.is_discarded()) << path;
    EXPECT_EQ(dump["reason"], "SIGUSR1");
    EXPECT_EQ(dump["rank"], 0);
    int completed = 0;
    for (const auto& entry : dump["entries"]) {
      if (entry["op"] != "all_reduce") continue;
      ++completed;
      EXPECT_EQ(entry["state"], "completed");
      EXPECT_EQ(entry["group"], "0");
      EXPECT_EQ(entry["seq"], completed);
      EXPECT_EQ(entry["input_sizes"], nlohmann::json({5, 2}));
      EXPECT_EQ(entry["dtype"], "float32");
      EXPECT_LE(entry["time_scheduled_us"].get<int64_t>(), entry["time_started_us"].get<int64_t>());
      EXPECT_LE(entry["time_started_us"].get<int64_t>(), entry["time_completed_us"].get<int64_t>());
    }
    EXPECT_EQ(completed, 3);
  }
  barrier();
}

}  // namespace
}  // namespace ember::distributed::worker
