// In one process: a world of one rank, argument checks, the store, the flight recorder
// and the analysis of dumps.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "autograd/function.h"
#include "core/testing.h"
#include "distributed/processes.h"
#include "distributed/store.h"
#include "ember/distributed.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"

namespace ember::distributed {
namespace {

using testutil::all_equal;
using testutil::throws_error;

class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    InitOptions options;
    options.rank = 0;
    options.world_size = 1;
    options.rendezvous = "file:" + dir_.path() + "/rdzv";
    options.timeout = std::chrono::seconds(20);
    init_process_group(options);
  }
  void TearDown() override { destroy_process_group(); }

  testing::TempDir dir_;
};

TEST_F(OneRank, CollectivesOfOneRank) {
  EXPECT_TRUE(is_initialized());
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_world_size(), 1);
  EXPECT_EQ(world()->name(), "0");
  Tensor t = tensor({1.0, 2.0, 3.0});
  all_reduce(t, ReduceOp::AVG);
  EXPECT_TRUE(all_equal(t, {1, 2, 3}));
  Tensor gathered = empty({3});
  all_gather_into_tensor(gathered, t);
  EXPECT_TRUE(all_equal(gathered, {1, 2, 3}));
  Tensor scattered = empty({3}, kBFloat16);
  reduce_scatter_tensor(scattered, tensor({1.5, 2.5, 3.5}, kBFloat16));
  EXPECT_TRUE(all_equal(scattered, {1.5, 2.5, 3.5}));
  Tensor exchanged = empty({3});
  all_to_all_single(exchanged, t);
  EXPECT_TRUE(all_equal(exchanged, {1, 2, 3}));
  broadcast(t, 0);
  Work work = barrier({.async_op = true});
  EXPECT_TRUE(work.wait());
  EXPECT_EQ(work.op(), "barrier");
  EXPECT_EQ(work.seq(), 6u);
  EXPECT_TRUE(Work().is_completed());
}

// A wait on an operation that already completed blocks nothing and counts nothing.
TEST_F(OneRank, WaitOnACompletedOperationCountsNoBlockedTime) {
  reset_comm_wait_stats();
  Tensor t = tensor({1.0, 2.0});
  Work work = all_reduce(t, ReduceOp::SUM, {.async_op = true});
  while (!work.is_completed()) std::this_thread::yield();
  EXPECT_TRUE(work.wait());
  EXPECT_TRUE(comm_wait_stats().empty());
}

TEST_F(OneRank, ProfilerRecordsCollectivesOnTheCommunicationLane) {
  Tensor t = tensor({1.0f, 2.0f, 3.0f});
  profiler::Profile p;
  all_reduce(t, ReduceOp::SUM, {.async_op = true}).wait();
  const profiler::Trace& trace = p.trace();
  std::map<uint32_t, std::string> lanes;
  for (const auto& lane : trace.threads) lanes[lane.tid] = lane.name;
  std::map<std::string, const profiler::Event*> by_name;
  for (const auto& e : trace.events) {
    EXPECT_EQ(e.category, profiler::Category::Collective) << e.name;
    EXPECT_TRUE(by_name.emplace(e.name, &e).second) << "twice: " << e.name;
  }
  ASSERT_EQ(by_name.size(), 3u);
  const profiler::Event &issue = *by_name.at("all_reduce issue"), &run = *by_name.at("all_reduce"),
                        &wait = *by_name.at("all_reduce wait");
  EXPECT_EQ(issue.tid, profiler::current_thread_id());
  EXPECT_EQ(wait.tid, profiler::current_thread_id());
  EXPECT_EQ(lanes.at(run.tid), "comm group 0");
  for (const profiler::Event* e : {&issue, &run, &wait}) {
    EXPECT_EQ(e->group, "0");
    EXPECT_EQ(e->sequence, issue.sequence);
    EXPECT_EQ(e->flow_id, issue.flow_id);
  }
  EXPECT_GT(issue.flow_id, 0u);
  EXPECT_EQ(issue.flow_phase, 's');
  EXPECT_EQ(run.flow_phase, 't');
  EXPECT_EQ(wait.flow_phase, 'f');
  EXPECT_EQ(issue.bytes, 12);
  EXPECT_EQ(run.bytes, 12);
  EXPECT_LE(issue.start_ns, run.start_ns);
}

TEST_F(OneRank, ArgumentsAreChecked) {
  Tensor t = ones({2, 3});
  EXPECT_TRUE(throws_error([&] { all_reduce(t.t()); }, {"[all_reduce] tensor must be contiguous", "[3, 2]"}));
  EXPECT_TRUE(throws_error([&] { all_reduce(Tensor()); }, {"[all_reduce] tensor is undefined"}));
  EXPECT_TRUE(throws_error([&] { all_reduce(ones({2}, kInt64), ReduceOp::AVG); },
                           {"[all_reduce] ReduceOp::AVG needs a floating dtype, got int64"}));
  EXPECT_TRUE(throws_error([&] { all_reduce(ones({2}, kBool)); }, {"[all_reduce] cannot reduce bool tensors"}));
  EXPECT_TRUE(throws_error([&] { all_gather_into_tensor(empty({5}), t); },
                           {"[all_gather_into_tensor] output must hold 1 x 6 elements", "[5]"}));
  EXPECT_TRUE(throws_error([&] { all_gather_into_tensor(empty({6}, kFloat64), t); },
                           {"[all_gather_into_tensor] output and input dtypes differ: float64 and float32"}));
  Tensor buffer = zeros({8});
  EXPECT_TRUE(throws_error([&] { all_gather_into_tensor(buffer.narrow(0, 0, 4), buffer.narrow(0, 2, 4)); },
                           {"[all_gather_into_tensor] input overlaps output"}));
  EXPECT_TRUE(throws_error([&] { reduce_scatter_tensor(empty({4}), t); },
                           {"[reduce_scatter_tensor] input must hold 1 x 4 elements"}));
  EXPECT_TRUE(throws_error([&] { broadcast(t, 1); }, {"[broadcast] source rank 1 is not a member of group \"0\""}));
  EXPECT_TRUE(throws_error([&] { all_to_all_single(empty({2, 3}), t, {3}, {2}); },
                           {"[all_to_all_single] output split sizes [3] must add up to dim 0 of the output (2)"}));
  EXPECT_TRUE(throws_error([&] { all_to_all_single(empty({2, 3}), t, {1, 1}, {}); },
                           {"[all_to_all_single] output split sizes [1, 1] must have 1 entries"}));
  EXPECT_TRUE(throws_error([&] { all_to_all_single(empty({3, 2}), t); },
                           {"[all_to_all_single] input and output rows differ in size"}));
  EXPECT_TRUE(throws_error([&] { send(t, 0); }, {"[send] rank 0 cannot send to itself"}));
  EXPECT_TRUE(throws_error([&] { recv(t, 3); }, {"[recv] source rank 3 is not a member"}));
  EXPECT_TRUE(throws_error([&] { all_reduce(t, ReduceOp::SUM, {.timeout = std::chrono::milliseconds(0)}); },
                           {"[all_reduce] timeout must be positive, got 0 ms"}));
  EXPECT_TRUE(throws_error([&] { functional::reduce_scatter_tensor(ones({3}), ReduceOp::SUM, 1); },
                           {"[reduce_scatter_tensor] dimension out of range", "got 1"}));
}

TEST_F(OneRank, GroupsAndInitializationAreChecked) {
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 0, .world_size = 1, .rendezvous = "file:/tmp"}); },
                           {"[init_process_group] the process group is already initialized"}));
  EXPECT_TRUE(throws_error([] { new_group({0, 0}); }, {"[new_group] rank 0 appears twice in [0, 0]"}));
  EXPECT_TRUE(throws_error([] { new_group({1}); }, {"[new_group] rank 1 is out of range for world size 1"}));
  EXPECT_TRUE(throws_error([] { new_group({}); }, {"[new_group] a group needs at least one rank"}));
  auto group = new_group({0}, {.timeout = std::chrono::seconds(3)});
  EXPECT_EQ(group->name(), "1");
  EXPECT_EQ(group->timeout(), std::chrono::seconds(3));
  EXPECT_EQ(group->global_rank(0), 0);
  EXPECT_EQ(group->group_rank(5), -1);
  Tensor t = ones({2});
  all_reduce(t, ReduceOp::SUM, {.group = group});
  group->abort("stopping early");
  try {
    all_reduce(t, ReduceOp::SUM, {.group = group});
    ADD_FAILURE() << "an aborted group ran an operation";
  } catch (const CommError& e) {
    EXPECT_EQ(e.group(), "1");
    EXPECT_EQ(e.seq(), 2u);
    EXPECT_NE(std::string(e.what()).find("the group was aborted (stopping early)"), std::string::npos) << e.what();
  }
}

TEST(Initialization, NeedsRankWorldSizeAndRendezvous) {
  EXPECT_TRUE(throws_error([] { get_rank(); }, {"[get_rank] the process group is not initialized"}));
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 0, .world_size = 0, .rendezvous = "file:/tmp/x"}); },
                           {"[init_process_group] rank and world size are not set"}));
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 2, .world_size = 2, .rendezvous = "file:/tmp/x"}); },
                           {"[init_process_group] rank 2 is out of range for world size 2"}));
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 0, .world_size = 1, .rendezvous = "tcp://x:1"}); },
                           {"[init_process_group] rendezvous 'tcp://x:1' is neither file:DIR nor redis://HOST:PORT"}));
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 0, .world_size = 1, .rendezvous = "redis://host"}); },
                           {"needs HOST:PORT"}));
  EXPECT_TRUE(throws_error([] { init_process_group({.rank = 0, .world_size = 1, .rendezvous = "redis://h:99999"}); },
                           {"has an invalid port"}));
  EXPECT_FALSE(is_initialized());
}

TEST(Initialization, AMissingRankIsNamedWhenTheRendezvousTimesOut) {
  testing::TempDir dir;
  try {
    init_process_group({.rank = 0,
                        .world_size = 3,
                        .rendezvous = "file:" + dir.path(),
                        .timeout = std::chrono::milliseconds(300)});
    ADD_FAILURE() << "init_process_group returned without ranks 1 and 2";
  } catch (const CommError& e) {
    EXPECT_EQ(e.ranks(), std::vector<int>({1, 2})) << e.what();
    EXPECT_EQ(e.op(), "rendezvous");
    EXPECT_NE(std::string(e.what()).find("[init_process_group] group \"0\": rank(s) 1, 2 did not join within 300 ms"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(is_initialized());
}

TEST(Store, FileStoreOverwritesAndRefusesStaleRendezvousKeys) {
  testing::TempDir dir;
  auto store = open_store("file:" + dir.path() + "/keys", "test");
  EXPECT_FALSE(store->try_get("a").has_value());
  store->set("a", {'1'});
  store->set("a", {'2', '3'});
  EXPECT_EQ(*store->try_get("a"), std::vector<char>({'2', '3'}));
  auto prefixed = prefix_store(store, "p");
  prefixed->set("a", {'x'});
  EXPECT_EQ(*store->try_get("p/a"), std::vector<char>({'x'}));
  EXPECT_TRUE(throws_error([&] { store->wait({"a", "b"}, std::chrono::milliseconds(30), "test"); },
                           {"[test] timed out after 30 ms waiting for keys [b]"}));
  GlooStore gloo_store(store, std::chrono::seconds(1));
  EXPECT_TRUE(throws_error([&] { gloo_store.set("a", {'9'}); },
                           {"rendezvous key 'a' already exists", "give each run a fresh one"}));
}

TEST_F(OneRank, FlightRecorderRecordsOperations) {
  Tensor t = ones({4, 2}, kBFloat16);
  all_reduce(t);
  all_gather_into_tensor(empty({8}, kBFloat16), t);
  const std::string path = dir_.path() + "/dump.json";
  dump_flight_recorder(path, "test");
  std::ifstream in(path);
  const auto dump = nlohmann::json::parse(in);
  EXPECT_EQ(dump["reason"], "test");
  EXPECT_EQ(dump["rank"], 0);
  EXPECT_EQ(dump["world_size"], 1);
  ASSERT_EQ(dump["groups"].size(), 1u);
  EXPECT_EQ(dump["groups"][0]["name"], "0");
  EXPECT_EQ(dump["groups"][0]["last_completed"], 2);
  const auto& entries = dump["entries"];
  ASSERT_GE(entries.size(), 2u);
  const auto& last = entries[entries.size() - 1];
  EXPECT_EQ(last["op"], "all_gather_into_tensor");
  EXPECT_EQ(last["seq"], 2);
  EXPECT_EQ(last["state"], "completed");
  EXPECT_EQ(last["input_sizes"], nlohmann::json({4, 2}));
  EXPECT_EQ(last["output_sizes"], nlohmann::json({8}));
  EXPECT_EQ(last["dtype"], "bfloat16");
  EXPECT_EQ(entries[entries.size() - 2]["op"], "all_reduce");
}

// A dump of rank `rank` in a 3-rank group "0" with entries (seq, state).
void write_dump(const std::string& dir, int rank, const std::vector<std::pair<int, std::string>>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [seq, state] : entries)
    list.push_back({{"group", "0"}, {"seq", seq}, {"p2p", false}, {"op", "all_reduce"}, {"dtype", "float32"},
                    {"input_sizes", {8}}, {"state", state}});
  const nlohmann::json dump = {{"rank", rank},
                               {"world_size", 3},
                               {"groups", {{{"name", "0"}, {"ranks", {0, 1, 2}}}}},
                               {"entries", list}};
  std::ofstream(dir + "/rank_" + std::to_string(rank) + ".json") << dump.dump();
}

TEST(FrTrace, NamesTheRankThatNeverReachedTheCollective) {
  testing::TempDir dir;
  write_dump(dir.path(), 0, {{4, "completed"}, {5, "started"}});
  write_dump(dir.path(), 1, {{4, "completed"}, {5, "started"}, {6, "scheduled"}});
  write_dump(dir.path(), 2, {{3, "completed"}, {4, "completed"}, {5, "scheduled"}});
  const auto report = analyze_flight_recorder_dumps(dir.path());
  EXPECT_EQ(report.culprits, std::vector<int>{2}) << report.text;
  EXPECT_EQ(report.text,
            "group \"0\" (ranks 0, 1, 2): ranks 0, 1 wait in all_reduce seq 5 (float32 [8])\n"
            "  rank 2 never reached it (its last started operation in this group is seq 4)\n");
}

TEST(FrTrace, NoRankWaitingAndNoDumps) {
  testing::TempDir dir;
  EXPECT_TRUE(
      throws_error([&] { analyze_flight_recorder_dumps(dir.path()); }, {"[fr-trace] no flight-recorder dumps"}));
  write_dump(dir.path(), 0, {{1, "completed"}});
  const auto report = analyze_flight_recorder_dumps(dir.path());
  EXPECT_TRUE(report.culprits.empty());
  EXPECT_EQ(report.text, "no rank waits in a collective\n");
}

// ---- fully_shard in a world of one rank --------------------------------------------------------

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct ParametersImpl : nn::Module {
  explicit ParametersImpl(const NamedTensors& parameters) {
    for (const auto& [name, value] : parameters) register_parameter(name, value, value.is_floating_point());
  }
};
EMBER_MODULE(Parameters);

TEST(FullyShard, NeedsTheProcessGroup) {
  nn::Linear fc(2, 2);
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(fc); }, {"[fully_shard]", "init_process_group"}));
}

TEST_F(OneRank, FullyShardErrorsNameTheCallAndTheValues) {
  nn::Sequential twice(nn::Linear(2, 3));
  fsdp::fully_shard(twice);
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(twice); }, {"[fully_shard]", "Sequential", "already sharded"}));

  nn::Sequential outer(nn::Linear(2, 3), nn::Linear(3, 1));
  fsdp::fully_shard(outer);  // top-down: the outer group took the inner parameters
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(*outer->ptr(1)); },
                           {"[fully_shard]", "parameter 'weight' of ember::nn::LinearImpl", "group of a ember::nn::SequentialImpl", "bottom-up"}));

  Parameters scalar(NamedTensors{{"scale", ones({})}});
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(scalar); }, {"[fully_shard]", "'scale'", "0-dimensional"}));
  Parameters integer(NamedTensors{{"count", zeros({3}, kInt64)}});
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(integer); }, {"[fully_shard]", "'count'", "int64"}));
  Parameters mixed(NamedTensors{{"a", ones({2})}, {"b", ones({2}, kFloat64)}});
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(mixed); },
                           {"[fully_shard]", "'a' (float32) and 'b' (float64)", "param_dtype"}));
  fsdp::FSDPOptions integer_compute;
  integer_compute.mp_policy.param_dtype = kInt32;
  EXPECT_TRUE(throws_error([&] { fsdp::fully_shard(mixed, integer_compute); },
                           {"[fully_shard]", "mp_policy.param_dtype", "int32"}));
  fsdp::FSDPOptions float_compute;
  float_compute.mp_policy.param_dtype = kFloat32;
  fsdp::fully_shard(mixed, float_compute);  // one all-gather dtype for both
  EXPECT_TRUE(throws_error([] { fsdp::FSDPModule().reshard(); }, {"[FSDPModule::reshard]", "gone"}));
}

// With one rank the collectives copy, so training through FSDP is plain training bit for bit.
TEST_F(OneRank, FullyShardedTrainingOfOneRankIsPlainTraining) {
  const models::GPTConfig config = testutil::tiny_gpt_config();
  manual_seed(5);
  const Tensor batches = randint(config.vocab_size, {3, 4, 9});
  std::vector<std::vector<double>> parameters;
  for (bool sharded : {false, true}) {
    manual_seed(6);
    models::GPT model(config);
    if (sharded) {
      for (size_t i = 0; i < model->layers->size(); ++i) fsdp::fully_shard(*model->layers->ptr(i));
      fsdp::fully_shard(model).set_separate_reduce_scatter_group(true);
    }
    optim::AdamW optimizer(model->parameters(), optim::AdamWOptions(1e-2));
    for (int64_t step = 0; step < 3; ++step) {
      optimizer.zero_grad();
      const Tensor batch = batches[step];
      model.call(&models::GPTImpl::loss, batch.narrow(1, 0, 8), batch.narrow(1, 1, 8), Tensor(), models::LossOptions{})
          .backward();
      optimizer.step();
    }
    std::vector<double> flat;
    for (const Tensor& p : model->parameters()) {
      EXPECT_FALSE(p.grad().defined() && p.grad().sizes() != p.sizes());
      for (double v : testutil::values(p)) flat.push_back(v);
    }
    parameters.push_back(flat);
  }
  EXPECT_EQ(parameters[0], parameters[1]);
}

// Two Linear layers with a hook between them (`between`) and one layer forward never uses.
struct TwoLayersImpl : nn::Module {
  TwoLayersImpl() {
    first = register_module("first", nn::Linear(3, 4));
    second = register_module("second", nn::Linear(4, 2));
    unused = register_module("unused", nn::Linear(2, 2));
  }
  Tensor forward(const Tensor& x) { return second(between(first(x))); }

  nn::Linear first{nullptr}, second{nullptr}, unused{nullptr};
  std::function<Tensor(const Tensor&)> between = [](const Tensor& t) { return t; };
};
EMBER_MODULE(TwoLayers);

// The gradients of every parameter of `model` for the loss sum(model(x)^2), undefined where none flowed.
std::vector<Tensor> two_layer_gradients(TwoLayers& model, const Tensor& x) {
  for (Tensor p : model->parameters()) p.mutable_grad() = Tensor();
  model(x).square().sum().backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : model->parameters()) grads.push_back(p.grad());
  return grads;
}

TEST_F(OneRank, UnusedParametersKeepNoGradientAndAFailedBackwardLeavesTheNextCorrect) {
  manual_seed(11);
  TwoLayers plain;
  const Tensor x = randn({5, 3});
  const std::vector<Tensor> expected = two_layer_gradients(plain, x);
  ASSERT_FALSE(expected.back().defined());  // unused.bias

  manual_seed(11);
  TwoLayers model;
  fsdp::fully_shard(model->first);
  fsdp::fully_shard(model->second);
  fsdp::fully_shard(model);
  // Backward throws between the layers: the second group has already reduced its gradients
  // and the end-of-backward callback is queued when it does.
  bool fail = true;
  model->between = [&](const Tensor& t) {
    Tensor out = t.detach();
    autograd::record("FailingBackward", {t}, {out}, [&](std::vector<Tensor>& g, const std::vector<bool>&) {
      EMBER_CHECK(!fail, "FailingBackward", "failed on purpose");
      return std::vector<Tensor>{g[0]};
    });
    return out;
  };
  EXPECT_TRUE(throws_error([&] { two_layer_gradients(model, x); }, {"[FailingBackward] failed on purpose"}));
  fail = false;
  const std::vector<Tensor> actual = two_layer_gradients(model, x);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_EQ(actual[i].defined(), expected[i].defined()) << "parameter " << i;
    if (expected[i].defined()) {
      EXPECT_TRUE(all_equal(actual[i], testutil::values(expected[i]))) << "parameter " << i;
    }
  }
}

TEST_F(OneRank, ParametersChangedAfterFullyShardAreErrors) {
  TwoLayers replaced;
  fsdp::fully_shard(replaced);
  replaced->first->weight.set_data(zeros({4, 3}));
  EXPECT_TRUE(throws_error([&] { replaced(ones({1, 3})); },
                           {"[fully_shard] parameter 'first.weight' of ", "TwoLayersImpl was replaced after fully_shard"}));
  TwoLayers frozen;
  fsdp::fully_shard(frozen);
  frozen->second->bias.requires_grad_(false);
  EXPECT_TRUE(throws_error([&] { frozen(ones({1, 3})); },
                           {"[fully_shard] parameter 'second.bias' of ", "TwoLayersImpl changed requires_grad to false"}));
}

TEST_F(OneRank, ShardedCheckpointErrorsNameTheDirectoryAndTheTensor) {
  nn::Linear saved(nn::LinearOptions(2, 3).bias(false));
  fsdp::fully_shard(saved);
  optim::AdamW saved_optimizer(saved->parameters());
  const std::string directory = dir_.path() + "/checkpoint";
  fsdp::save_sharded_checkpoint(directory, *saved, saved_optimizer, 3);

  nn::Linear other(nn::LinearOptions(2, 4).bias(false));
  fsdp::fully_shard(other);
  optim::AdamW optimizer(other->parameters());
  EXPECT_TRUE(throws_error([&] { fsdp::load_sharded_checkpoint(dir_.path() + "/none", *other, optimizer); },
                           {"[load_sharded_checkpoint]", "none/index.json"}));
  EXPECT_TRUE(throws_error([&] { fsdp::load_sharded_checkpoint(directory, *other, optimizer); },
                           {"[load_sharded_checkpoint]", "'model.weight' has shape [3, 2], the module's is [4, 2]"}));
  nn::Linear same(nn::LinearOptions(2, 3).bias(false));
  fsdp::fully_shard(same);
  optim::AdamW same_optimizer(same->parameters());
  EXPECT_EQ(fsdp::load_sharded_checkpoint(directory, *same, same_optimizer).step, 3);
  EXPECT_EQ(testutil::values(same->weight), testutil::values(saved->weight));
}

}  // namespace
}  // namespace ember::distributed
