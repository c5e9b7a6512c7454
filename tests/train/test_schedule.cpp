// The learning-rate schedule of the train layer: linear warmup, then cosine decay.
#include <gtest/gtest.h>

#include "train/train_step.h"

namespace ember::train {
namespace {

TEST(LearningRate, WarmsUpLinearlyToThePeak) {
  EXPECT_DOUBLE_EQ(learning_rate(0, 10, 100, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(4, 10, 100, 1.0, 0.1), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(9, 10, 100, 1.0, 0.1), 1.0);
}

TEST(LearningRate, DecaysByCosineToTheMinimum) {
  EXPECT_DOUBLE_EQ(learning_rate(10, 10, 110, 1.0, 0.1), 1.0);
  EXPECT_NEAR(learning_rate(60, 10, 110, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(learning_rate(110, 10, 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(500, 10, 110, 1.0, 0.1), 0.1);  // past the end: stays at the minimum
}

}  // namespace
}  // namespace ember::train
