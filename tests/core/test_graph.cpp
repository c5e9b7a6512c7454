// Graph capture and replay (ember/graph.h): replays equal the same code run eagerly, bit for
// bit, and every misuse is an ember::Error.
#include <gtest/gtest.h>

#include <cstring>

#include "core/graph_capture.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "ember/storage.h"

namespace ember {
namespace {

namespace F = nn::functional;

// Same dtype, shape and bytes.
::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << "dtype or shape differ";
  Tensor ca = a.contiguous(), cb = b.contiguous();
  if (std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) != 0)
    return ::testing::AssertionFailure() << "values differ: " << a << " vs " << b;
  return ::testing::AssertionSuccess();
}

// The message of the ember::Error `body` throws ("" when it throws none).
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

nn::Sequential make_mlp(uint64_t seed) {
  manual_seed(seed);
  return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
}

TEST(Graph, MlpInferenceReplayEqualsEager) {
  nn::Sequential model = make_mlp(1);
  NoGradGuard no_grad;
  Tensor static_input = randn({16, 64});
  Tensor static_output;
  Graph graph;
  graph.capture([&] { static_output = model->forward(static_input); });
  EXPECT_GT(graph.num_kernels(), 0u);
  for (int step = 0; step < 3; ++step) {
    Tensor batch = randn({16, 64});
    static_input.copy_(batch);
    graph.replay();
    EXPECT_TRUE(bitwise_equal(static_output, model->forward(batch))) << "step " << step;
  }
}

// The whole-network recipe of ember/graph.h: warm-up, zero_grad(set_to_none), capture,
// then copy + replay per step.
template <typename MakeOptimizer>
void expect_training_replay_equals_eager(MakeOptimizer make_optimizer) {
  const int kWarmup = 3, kSteps = 4;
  std::vector<Tensor> inputs, targets;
  manual_seed(42);
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    inputs.push_back(randn({16, 64}));
    targets.push_back(randint(0, 10, {16}));
  }
  nn::Sequential eager_model = make_mlp(7), graph_model = make_mlp(7);
  auto eager_opt = make_optimizer(eager_model->parameters());
  auto graph_opt = make_optimizer(graph_model->parameters());
  auto eager_step = [&](nn::Sequential& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad(true);
    Tensor loss = F::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  for (int i = 0; i < kWarmup; ++i) {
    eager_step(eager_model, *eager_opt, inputs[i], targets[i]);
    eager_step(graph_model, *graph_opt, inputs[i], targets[i]);
  }

  Tensor static_input = inputs[0].clone(), static_target = targets[0].clone(), static_loss;
  graph_opt->zero_grad(true);
  Graph graph;
  graph.capture([&] {
    static_loss = F::cross_entropy(graph_model->forward(static_input), static_target);
    static_loss.backward();
    graph_opt->step();
  });
  for (int i = kWarmup; i < kWarmup + kSteps; ++i) {
    static_input.copy_(inputs[i]);
    static_target.copy_(targets[i]);
    const int64_t allocations = memory_stats().num_allocations;
    graph.replay();
    EXPECT_EQ(memory_stats().num_allocations, allocations) << "replay allocates no tensor memory";
    Tensor eager_loss = eager_step(eager_model, *eager_opt, inputs[i], targets[i]);
    EXPECT_TRUE(bitwise_equal(static_loss, eager_loss.detach())) << "loss of step " << i;
  }
  auto eager_params = eager_model->parameters(), graph_params = graph_model->parameters();
  for (size_t p = 0; p < eager_params.size(); ++p) {
    EXPECT_TRUE(bitwise_equal(graph_params[p], eager_params[p])) << "parameter " << p;
    EXPECT_TRUE(bitwise_equal(graph_params[p].grad(), eager_params[p].grad())) << "gradient " << p;
  }
  optim::OptimizerStateDict eager_state = eager_opt->state_dict(), graph_state = graph_opt->state_dict();
  ASSERT_EQ(eager_state.tensors.size(), graph_state.tensors.size());
  for (const auto& [key, value] : eager_state.tensors)
    EXPECT_TRUE(bitwise_equal(graph_state.tensors.at(key), value)) << key;
  EXPECT_EQ(eager_state.scalars, graph_state.scalars);
}

TEST(Graph, MlpTrainingStepWithAdamWReplayEqualsEager) {
  expect_training_replay_equals_eager([](std::vector<Tensor> params) {
    return std::make_unique<optim::AdamW>(std::move(params), optim::AdamWOptions(1e-2).capturable(true));
  });
}

TEST(Graph, MlpTrainingStepWithSgdMomentumReplayEqualsEager) {
  expect_training_replay_equals_eager([](std::vector<Tensor> params) {
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  });
}

// One decoding step captured once, replayed with each new token and position; the eager
// decode_step is the bitwise reference, forward_cached (flex attention over the growing
// cache) the independent one.
void expect_decode_replay_equals_eager(int64_t window) {
  const models::GPTConfig config{.vocab_size = 64, .dim = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                                 .hidden_dim = 96, .max_seq_len = 24, .window = window};
  manual_seed(3);
  models::GPT model(config);
  NoGradGuard no_grad;
  models::GPTCache graph_cache = model->make_cache(1), eager_cache = model->make_cache(1);
  models::GPTCache flex_cache = model->make_cache(1);
  Tensor static_token = zeros({1, 1}, kInt64), static_pos = zeros({1}, kInt64), static_logits;
  Graph graph;
  graph.capture([&] { static_logits = model->decode_step(static_token, static_pos, graph_cache); });
  const std::vector<int64_t> tokens = {5, 17, 3, 42, 8, 1, 63, 0, 29, 11};
  for (int64_t p = 0; p < static_cast<int64_t>(tokens.size()); ++p) {
    Tensor token = tensor(std::vector<int64_t>{tokens[p]}).view({1, 1}), pos = tensor(std::vector<int64_t>{p});
    static_token.copy_(token);
    static_pos.copy_(pos);
    graph.replay();
    EXPECT_TRUE(bitwise_equal(static_logits, model->decode_step(token, pos, eager_cache))) << "position " << p;
    Tensor flex = model->forward_cached(token, flex_cache);
    EXPECT_TRUE(allclose(static_logits, flex, 1e-5, 1e-5)) << "position " << p << ": " << (static_logits - flex).abs().max();
  }
  EXPECT_TRUE(bitwise_equal(graph_cache.layers[1].key_buffer(), eager_cache.layers[1].key_buffer()));
}

TEST(Graph, GptDecodeStepReplayEqualsEager) { expect_decode_replay_equals_eager(0); }
TEST(Graph, GptDecodeStepWithSlidingWindowReplayEqualsEager) { expect_decode_replay_equals_eager(4); }

TEST(Graph, ReplayDrawsFreshRandomNumbersLikeEager) {
  Tensor x = ones({1000});
  Tensor static_out;
  Graph graph;
  graph.capture([&] { static_out = F::dropout(x, F::DropoutFuncOptions().p(0.5).training(true)); });
  manual_seed(5);
  graph.replay();
  Tensor first = static_out.clone();
  graph.replay();
  Tensor second = static_out.clone();
  manual_seed(5);
  Tensor eager_first = F::dropout(x, F::DropoutFuncOptions().p(0.5).training(true));
  Tensor eager_second = F::dropout(x, F::DropoutFuncOptions().p(0.5).training(true));
  EXPECT_TRUE(bitwise_equal(first, eager_first));
  EXPECT_TRUE(bitwise_equal(second, eager_second));
  EXPECT_FALSE(bitwise_equal(first, second));  // two replays, two masks
}

TEST(Graph, CaptureLaunchesNothingAndOwnsItsMemory) {
  Tensor x = full({256, 256}, 2.0f);
  Tensor y;
  const int64_t before = memory_stats().allocated_bytes;
  Graph graph;
  graph.capture([&] { y = x * 3 + 1; });
  EXPECT_NE(y[0][0].item<float>(), 7.0f);  // not run yet: CUDA graph capture semantics
  graph.replay();
  EXPECT_EQ(y[0][0].item<float>(), 7.0f);
  y = Tensor();
  EXPECT_GE(memory_stats().allocated_bytes - before, 2 * 256 * 256 * 4) << "x * 3 and y stay with the graph";
  graph.reset();
  EXPECT_LT(memory_stats().allocated_bytes - before, 256 * 256 * 4);
}

TEST(Graph, ErrorsOnEmptyNestedAndReplayDuringCapture) {
  Graph graph;
  EXPECT_NE(error_of([&] { graph.replay(); }).find("[Graph::replay] the graph is empty"), std::string::npos);
  Graph inner;
  Tensor x = ones({4});
  std::string nested = error_of([&] {
    graph.capture([&] {
      Tensor y = x + 1;
      inner.capture_begin();
    });
  });
  EXPECT_NE(nested.find("[Graph::capture_begin]"), std::string::npos) << nested;
  EXPECT_NE(nested.find("do not nest"), std::string::npos) << nested;
  EXPECT_FALSE(is_current_stream_capturing()) << "a throwing body ends the capture";
  EXPECT_EQ(graph.num_kernels(), 0u) << "and drops it";

  Graph other;
  other.capture([&] { Tensor y = x + 1; });
  std::string during = error_of([&] { graph.capture([&] { other.replay(); }); });
  EXPECT_NE(during.find("[Graph::replay] called while a graph capture is recording"), std::string::npos) << during;
  EXPECT_NE(error_of([&] { other.capture_begin(); }).find("call reset()"), std::string::npos);
  EXPECT_NE(error_of([&] { other.capture_end(); }).find("not capturing"), std::string::npos);
}

TEST(Graph, HostReadsOfValuesDuringCaptureAreErrors) {
  Tensor x = arange(6, kFloat32);
  Graph graph;
  std::string item = error_of([&] { graph.capture([&] { (void)x.sum().item<float>(); }); });
  EXPECT_NE(item.find("[Graph::capture] item reaches the data of a tensor of shape []"), std::string::npos) << item;
  // A result that steers host code: equal() reads a boolean out of the tensors' values.
  std::string steering = error_of([&] { graph.capture([&] { (void)equal(x, x + 1); }); });
  EXPECT_NE(steering.find("[Graph::capture] item reaches the data"), std::string::npos) << steering;
  EXPECT_FALSE(is_current_stream_capturing());
}

// The guard behind "recording cannot be forgotten": during a capture, tensor memory is
// reachable only inside core::launch's prepare step, whichever op asks.
TEST(Graph, KernelCallsOutsideTheRecorderAreDetected) {
  Tensor x = ones({8});
  Graph graph;
  std::string via_tensor = error_of([&] { graph.capture([&] { (void)x.data_ptr(); }); });
  EXPECT_NE(via_tensor.find("[Graph::capture] an op reaches the data of a tensor of shape [8] on the host outside "
                            "a recorded kernel"),
            std::string::npos)
      << via_tensor;
  std::string via_storage = error_of([&] { graph.capture([&] { (void)x.storage().data(); }); });
  EXPECT_NE(via_storage.find("the data of a storage of 32 bytes"), std::string::npos) << via_storage;

  // Through the recorder the same access is fine, and the call runs at replay only.
  Tensor counter = zeros({1});
  graph.capture([&] {
    core::launch("test_increment", [&] {
      return [p = counter.data_ptr<float>()] { *p += 1; };
    });
  });
  EXPECT_EQ(counter.item<float>(), 0.0f);
  graph.replay();
  graph.replay();
  EXPECT_EQ(counter.item<float>(), 2.0f);
}

TEST(Graph, ChangedStaticTensorsAreErrorsAtReplay) {
  Tensor input = randn({4, 8}), weight = randn({8, 2});
  Tensor output;
  Graph graph;
  graph.capture([&] { output = input.matmul(weight); });
  graph.replay();

  input.set_data(randn({4, 8}));
  std::string replaced = error_of([&] { graph.replay(); });
  EXPECT_NE(replaced.find("[Graph::replay] a tensor of shape [4, 8] that 'mm' used during capture now views other "
                          "storage"),
            std::string::npos)
      << replaced;

  Graph second;
  Tensor a = randn({4, 8});
  second.capture([&] { output = a.matmul(weight); });
  a.storage().reallocate(a.nbytes());
  std::string reallocated = error_of([&] { second.replay(); });
  EXPECT_NE(reallocated.find("[Graph::replay] the storage of 128 bytes that 'mm' used during capture was reallocated"),
            std::string::npos)
      << reallocated;

  EXPECT_NE(error_of([&] { Graph g; g.capture([&] { a.storage().reallocate(16); }); }).find("[Storage::reallocate]"),
            std::string::npos);
}

TEST(Graph, ReplacedGradIsAnErrorAtReplay) {
  nn::Linear layer(4, 2);
  auto opt = optim::SGD(layer->parameters(), optim::SGDOptions(0.1));
  Tensor x = randn({3, 4});
  opt.zero_grad(true);
  Graph graph;
  graph.capture([&] {
    layer->forward(x).sum().backward();
    opt.step();
  });
  graph.replay();
  opt.zero_grad(false);  // zeroes in place: replay overwrites the same gradients
  graph.replay();
  Tensor expected_bias_grad = full({2}, 3.0f);  // d/db of the sum over 3 rows
  EXPECT_TRUE(bitwise_equal(layer->bias.grad(), expected_bias_grad));
  opt.zero_grad(true);  // the mistake the recipe warns about
  std::string message = error_of([&] { graph.replay(); });
  EXPECT_NE(message.find("[Graph::replay] the .grad of a tensor of shape ["), std::string::npos) << message;
  EXPECT_NE(message.find("was replaced or set to None since capture (zero_grad(set_to_none=true) between replays?)"),
            std::string::npos)
      << message;
}

TEST(Graph, OptimizersRefuseStepsTheyCannotReplay) {
  nn::Linear layer(4, 2);
  Tensor x = randn({3, 4});
  optim::AdamW plain(layer->parameters(), optim::AdamWOptions(1e-3));
  layer->forward(x).sum().backward();
  plain.step();  // warm: state exists, but the step count is a host integer
  Graph graph;
  std::string host_step = error_of([&] { graph.capture([&] { plain.step(); }); });
  EXPECT_NE(host_step.find("[AdamW::step]"), std::string::npos) << host_step;
  EXPECT_NE(host_step.find("capturable(true)"), std::string::npos) << host_step;

  optim::AdamW cold(layer->parameters(), optim::AdamWOptions(1e-3).capturable(true));
  std::string cold_state = error_of([&] { graph.capture([&] { cold.step(); }); });
  EXPECT_NE(cold_state.find("[AdamW::step] the optimizer state of a parameter of shape [2, 4] would be created inside "
                            "the graph capture; run warm-up steps"),
            std::string::npos)
      << cold_state;
  optim::SGD momentum(layer->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_NE(error_of([&] { graph.capture([&] { momentum.step(); }); }).find("[SGD::step] the momentum buffer"),
            std::string::npos);

  // Optimizers whose step count lives on the host refuse, even when warm.
  optim::RMSprop rmsprop(layer->parameters(), optim::RMSpropOptions(1e-3));
  optim::Adagrad adagrad(layer->parameters(), optim::AdagradOptions(1e-2).lr_decay(0.1));
  rmsprop.step();
  adagrad.step();
  EXPECT_NE(error_of([&] { graph.capture([&] { rmsprop.step(); }); }).find("[RMSprop::step] RMSprop cannot be captured"),
            std::string::npos);
  EXPECT_NE(error_of([&] { graph.capture([&] { adagrad.step(); }); }).find("[Adagrad::step] Adagrad cannot be captured"),
            std::string::npos);
  optim::LBFGS lbfgs(layer->parameters(), optim::LBFGSOptions(1));
  EXPECT_NE(error_of([&] {
              graph.capture([&] { lbfgs.step([&] { return layer->forward(x).sum(); }); });
            }).find("[LBFGS::step] LBFGS cannot be captured"),
            std::string::npos);
}

TEST(Graph, IndicesOutOfRangeAtReplayAreErrors) {
  nn::Embedding embedding(10, 4);
  Tensor tokens = tensor(std::vector<int64_t>{1, 2, 3});
  Tensor out;
  NoGradGuard no_grad;
  Graph graph;
  graph.capture([&] { out = embedding->forward(tokens); });
  tokens.copy_(tensor(std::vector<int64_t>{4, 12, 0}));
  std::string message = error_of([&] { graph.replay(); });
  EXPECT_NE(message.find("[embedding] index 12 is out of bounds for dimension 0 with size 10"), std::string::npos)
      << message;
  tokens.copy_(tensor(std::vector<int64_t>{9, 0, 5}));
  graph.replay();
  EXPECT_TRUE(bitwise_equal(out, embedding->forward(tokens)));
}

}  // namespace
}  // namespace ember
