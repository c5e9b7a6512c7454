// Module save/load through state_dict (keys, shapes, dtypes, convert_to) and training
// checkpoints: resuming from a checkpoint continues an uninterrupted run bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/checkpoint.h"
#include "ember/io/module_io.h"
#include "ember/nn.h"
#include "ember/optim.h"

namespace ember::io {
namespace {

std::string temp_path(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/ember_module_io_" + std::to_string(::getpid()) + "_" + test->name() + "_" + name;
}

// Same dtype, shape and bytes.
::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << "dtype or shape differs";
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  if (std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) != 0)
    return ::testing::AssertionFailure() << "bytes differ";
  return ::testing::AssertionSuccess();
}

void expect_same_state(const nn::Module& a, const nn::Module& b) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.keys(), sb.keys());
  for (const auto& item : sa) EXPECT_TRUE(bitwise_equal(item.value(), sb[item.key()])) << item.key();
}

// Expects `fn` to throw ember::Error with every one of `parts` in its message.
template <typename Fn>
void expect_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "did not throw; expected: " << parts.front();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

// Nested modules, a float and an int64 persistent buffer, and a non-persistent one.
struct BlockImpl : nn::Module {
  BlockImpl() {
    fc = register_module("fc", nn::Linear(3, 4));
    running = register_buffer("running", zeros({4}));
    count = register_buffer("count", tensor({0, 0}));
    register_buffer("cache", zeros({2}), /*persistent=*/false);
  }
  nn::Linear fc{nullptr};
  Tensor running, count;
};
EMBER_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() {
    block = register_module("block", Block());
    head = register_module("head", nn::Linear(nn::LinearOptions(4, 2).bias(false)));
    scale = register_buffer("scale", ones({1}));
  }
  Block block{nullptr};
  nn::Linear head{nullptr};
  Tensor scale;
};
EMBER_MODULE(Net);

Net make_net(uint64_t seed) {
  manual_seed(seed);
  Net net;
  NoGradGuard no_grad;
  net->block->running.copy_(randn({4}));
  net->block->count.copy_(tensor({7, -3}));
  net->scale.fill_(static_cast<double>(seed));
  return net;
}

// ---- save / load ---------------------------------------------------------------------

TEST(ModuleIo, RoundTripNestedModuleWithBuffers) {
  const std::string path = temp_path("net.safetensors");
  Net saved = make_net(1), loaded = make_net(2);
  save(*saved, path);
  std::vector<std::string> file_keys = SafeOpen(path).keys();
  std::sort(file_keys.begin(), file_keys.end());
  EXPECT_EQ(file_keys, (std::vector<std::string>{"block.count", "block.fc.bias", "block.fc.weight", "block.running",
                                                  "head.weight", "scale"}));  // no non-persistent "cache"

  const Tensor weight_before = loaded->head->weight;
  const nn::LoadStateDictResult result = load(*loaded, path);
  EXPECT_TRUE(result.missing_keys.empty());
  EXPECT_TRUE(result.unexpected_keys.empty());
  expect_same_state(*saved, *loaded);
  // Values are copied into the module's own tensors (not views of the file's map).
  EXPECT_EQ(loaded->head->weight.unsafeGetTensorImpl(), weight_before.unsafeGetTensorImpl());
  EXPECT_TRUE(loaded->head->weight.requires_grad());
  std::remove(path.c_str());
  expect_same_state(*saved, *loaded);
}

TEST(ModuleIo, StrictReportsMissingAndUnexpectedKeys) {
  const std::string with_bias = temp_path("with_bias.safetensors"), without_bias = temp_path("without_bias.safetensors");
  save(*nn::Linear(3, 4), with_bias);
  save(*nn::Linear(nn::LinearOptions(3, 4).bias(false)), without_bias);

  nn::Linear biased(3, 4);
  const Tensor weight_before = biased->weight.clone();
  expect_error([&] { load(*biased, without_bias); }, {without_bias, "missing keys: 'bias'"});
  EXPECT_TRUE(bitwise_equal(biased->weight, weight_before));  // nothing copied

  nn::Linear unbiased(nn::LinearOptions(3, 4).bias(false));
  expect_error([&] { load(*unbiased, with_bias); }, {with_bias, "unexpected keys: 'bias'"});

  // Non-strict loads what matches and reports the rest.
  const auto missing = load(*biased, without_bias, /*strict=*/false);
  EXPECT_EQ(missing.missing_keys, std::vector<std::string>{"bias"});
  EXPECT_TRUE(missing.unexpected_keys.empty());
  EXPECT_TRUE(bitwise_equal(biased->weight, SafeOpen(without_bias).get_tensor("weight")));
  const auto unexpected = load(*unbiased, with_bias, /*strict=*/false);
  EXPECT_EQ(unexpected.unexpected_keys, std::vector<std::string>{"bias"});
  EXPECT_TRUE(bitwise_equal(unbiased->weight, SafeOpen(with_bias).get_tensor("weight")));
  std::remove(with_bias.c_str());
  std::remove(without_bias.c_str());
}

TEST(ModuleIo, ShapeMismatchIsAnErrorEvenWhenNotStrict) {
  const std::string path = temp_path("linear.safetensors");
  save(*nn::Linear(3, 4), path);
  nn::Linear wider(3, 5);
  const Tensor weight_before = wider->weight.clone();
  for (bool strict : {true, false}) {
    expect_error([&] { load(*wider, path, strict); }, {path, "'weight'", "[4, 3]", "[5, 3]", "'bias'", "[4]", "[5]"});
  }
  EXPECT_TRUE(bitwise_equal(wider->weight, weight_before));
  std::remove(path.c_str());
}

TEST(ModuleIo, DtypeMismatchIsAnErrorUnlessConversionIsAsked) {
  const std::string path = temp_path("bf16.safetensors");
  Net saved = make_net(3);
  saved->to(kBFloat16);  // floating tensors only: block.count stays int64
  save(*saved, path);

  Net loaded = make_net(4);
  const Tensor weight_before = loaded->head->weight.clone();
  expect_error([&] { load(*loaded, path); }, {path, "'head.weight'", "bfloat16", "float32", "convert_to"});
  EXPECT_TRUE(bitwise_equal(loaded->head->weight, weight_before));

  load(*loaded, path, /*strict=*/true, kFloat32);
  const auto loaded_state = loaded->state_dict();
  for (const auto& item : saved->state_dict()) {
    const Tensor& target = loaded_state[item.key()];
    // bfloat16 -> float32 is exact; the int64 buffer is never cast.
    const ScalarType expected = is_floating_point(item.value().scalar_type()) ? kFloat32 : kInt64;
    EXPECT_EQ(target.scalar_type(), expected) << item.key();
    EXPECT_TRUE(bitwise_equal(target, item.value().to(expected))) << item.key();
  }

  // Converting to a dtype the module does not hold is still a mismatch, named.
  expect_error([&] { load(*loaded, path, true, kFloat64); }, {"'head.weight'", "float64", "float32"});
  std::remove(path.c_str());
}

// ---- checkpoints ---------------------------------------------------------------------

// An MLP with dropout trained with AdamW on batches drawn from the global generator, so
// resuming needs the model, the optimizer state and the generator state.
struct Trainer {
  explicit Trainer(uint64_t init_seed) {
    manual_seed(init_seed);
    model = nn::Sequential(nn::Linear(4, 16), nn::ReLU(), nn::Dropout(0.25), nn::Linear(16, 3));
    optimizer = std::make_unique<optim::AdamW>(model->parameters(),
                                               optim::AdamWOptions(1e-2 / 3).betas(std::make_tuple(0.8, 0.99)).weight_decay(0.1));
  }
  void train(int steps) {
    for (int i = 0; i < steps; ++i) {
      const Tensor x = randn({8, 4}), y = randn({8, 3});
      optimizer->zero_grad();
      nn::functional::mse_loss(model->forward(x), y).backward();
      optimizer->step();
    }
  }
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::AdamW> optimizer;
};

void expect_same_optimizer_state(const optim::Optimizer& a, const optim::Optimizer& b) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  EXPECT_EQ(sa.scalars, sb.scalars);
  ASSERT_EQ(sa.tensors.size(), sb.tensors.size());
  for (const auto& [key, t] : sa.tensors) EXPECT_TRUE(bitwise_equal(t, sb.tensors.at(key))) << key;
}

TEST(Checkpoint, ResumeReproducesAnUninterruptedRunBitForBit) {
  const std::string path = temp_path("ckpt.safetensors");
  Trainer straight(42);
  straight.train(20);
  const GeneratorState straight_rng = default_generator().get_state();

  Trainer first_half(42);
  first_half.train(10);
  save_checkpoint(path, *first_half.model, *first_half.optimizer, 10, {{"note", "half way"}});

  Trainer resumed(7);         // different initial weights, a fresh optimizer
  manual_seed(123456);        // and a different generator state: all must come from the file
  EXPECT_EQ(load_checkpoint(path, *resumed.model, *resumed.optimizer), 10);
  expect_same_state(*first_half.model, *resumed.model);
  expect_same_optimizer_state(*first_half.optimizer, *resumed.optimizer);
  EXPECT_EQ(resumed.optimizer->param_groups()[0].options().get_lr(), 1e-2 / 3);  // doubles survive JSON exactly
  resumed.train(10);

  const auto expected = straight.model->named_parameters(), actual = resumed.model->named_parameters();
  ASSERT_EQ(expected.keys(), actual.keys());
  for (const auto& item : expected) {
    const Tensor& got = actual[item.key()];
    ASSERT_EQ(got.nbytes(), item.value().nbytes());
    EXPECT_EQ(std::memcmp(got.contiguous().data_ptr(), item.value().contiguous().data_ptr(), got.nbytes()), 0)
        << item.key();
  }
  expect_same_optimizer_state(*straight.optimizer, *resumed.optimizer);
  const GeneratorState resumed_rng = default_generator().get_state();
  EXPECT_EQ(resumed_rng.seed, straight_rng.seed);
  EXPECT_EQ(resumed_rng.offset, straight_rng.offset);
  EXPECT_EQ(checkpoint_extra_metadata(path), (Metadata{{"note", "half way"}}));
  std::remove(path.c_str());
}

TEST(Checkpoint, LayoutIsPrefixedTensorsAndJsonMetadata) {
  const std::string path = temp_path("layout.safetensors");
  Trainer trainer(1);
  trainer.train(1);
  save_checkpoint(path, *trainer.model, *trainer.optimizer, 1);
  SafeOpen file(path);
  EXPECT_TRUE(file.contains("model.0.weight"));
  EXPECT_TRUE(file.contains("model.3.bias"));
  EXPECT_TRUE(file.contains("optim.param_groups.0.params"));
  EXPECT_TRUE(file.contains("optim.state.0.exp_avg"));
  EXPECT_EQ(file.metadata().at("ember.step"), "1");
  const GeneratorState rng = default_generator().get_state();
  EXPECT_EQ(file.metadata().at("ember.generator"),
            "{\"offset\":" + std::to_string(rng.offset) + ",\"seed\":" + std::to_string(rng.seed) + "}");
  EXPECT_NE(file.metadata().at("ember.optimizer").find("\"state.0.step\":1"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Checkpoint, FailedLoadChangesNothing) {
  const std::string path = temp_path("mismatch.safetensors");
  Trainer saved(1);
  saved.train(2);
  save_checkpoint(path, *saved.model, *saved.optimizer, 2);

  // The optimizer state fits (same parameters) but the module has a key the file lacks:
  // the module rejects it after the optimizer loaded, so the optimizer must be put back.
  Trainer wrong(9);
  wrong.model->register_buffer("extra", zeros({1}));
  wrong.train(1);
  std::vector<Tensor> params_before;
  for (const auto& p : wrong.model->parameters()) params_before.push_back(p.clone());
  const optim::OptimizerStateDict optimizer_before = wrong.optimizer->state_dict();
  const GeneratorState rng_before = default_generator().get_state();

  expect_error([&] { load_checkpoint(path, *wrong.model, *wrong.optimizer); },
               {path, "missing keys: 'extra'"});
  const auto params_after = wrong.model->parameters();
  for (size_t i = 0; i < params_before.size(); ++i) EXPECT_TRUE(bitwise_equal(params_after[i], params_before[i]));
  const optim::OptimizerStateDict optimizer_after = wrong.optimizer->state_dict();
  EXPECT_EQ(optimizer_after.scalars, optimizer_before.scalars);
  for (const auto& [key, t] : optimizer_before.tensors)
    EXPECT_TRUE(bitwise_equal(t, optimizer_after.tensors.at(key))) << key;
  EXPECT_EQ(default_generator().get_state().offset, rng_before.offset);
  std::remove(path.c_str());
}

TEST(Checkpoint, RejectsReservedMetadataAndPlainModelFiles) {
  const std::string path = temp_path("plain.safetensors");
  Trainer trainer(1);
  expect_error([&] { save_checkpoint(path, *trainer.model, *trainer.optimizer, 0, {{"ember.step", "3"}}); },
               {"'ember.step'", "reserved"});
  expect_error([&] { save_checkpoint(path, *trainer.model, *trainer.optimizer, -1); }, {"step", "-1"});
  save(*trainer.model, path);
  expect_error([&] { load_checkpoint(path, *trainer.model, *trainer.optimizer); },
               {path, "not an ember checkpoint", "ember.step"});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ember::io
