// The train layer's optimizer set-up and step over any module and loss: frozen parameters stay
// out of AdamW and keep their values, matrices decay and vectors do not, and the step clips and
// updates what is trained.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "train/train_step.h"

namespace ember::train {
namespace {

TEST(MakeOptimizer, TrainsWhatRequiresGradDecayingOnlyMatrices) {
  nn::Linear trained(nn::LinearOptions(4, 3)), frozen(nn::LinearOptions(4, 3));
  nn::Module model;
  model.register_module("trained", trained);
  model.register_module("frozen", frozen);
  for (Tensor& parameter : frozen->parameters()) parameter.requires_grad_(false);
  optim::AdamW optimizer = make_optimizer(model, 0.1, 0.5);
  ASSERT_EQ(optimizer.param_groups().size(), 2u);
  const auto& decayed = optimizer.param_groups()[0].params();
  const auto& not_decayed = optimizer.param_groups()[1].params();
  ASSERT_EQ(decayed.size(), 1u);
  ASSERT_EQ(not_decayed.size(), 1u);
  EXPECT_TRUE(decayed[0].is_same(trained->weight));
  EXPECT_TRUE(not_decayed[0].is_same(trained->bias));

  const Tensor frozen_before = frozen->weight.clone(), trained_before = trained->weight.clone();
  const Tensor x = ones({2, 4});
  const StepResult result = train_step(
      optimizer, model, 1, [&](int64_t) { return data::Batch{x, x, {}}; },
      [&](const data::Batch& b) { return (trained(b.inputs) + frozen(b.inputs)).pow(2).mean(); }, /*clip=*/1e-3);
  EXPECT_GT(result.loss, 0);
  EXPECT_GT(result.grad_norm, 1e-3);  // before clipping
  EXPECT_TRUE(frozen->weight.eq(frozen_before).all().item<bool>());
  EXPECT_FALSE(trained->weight.eq(trained_before).all().item<bool>());
}

}  // namespace
}  // namespace ember::train
