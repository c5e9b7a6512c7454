// A small CNN (conv2d, batch norm in evaluation mode, relu, max and avg pooling, flatten,
// linear) exported with a dynamic batch: the interpreted program equals eager bitwise.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/export.h"
#include "export_test_utils.h"
#include "sample_models.h"

namespace ember {
namespace {

using test::SmallCNN;

TEST(ExportCNN, EqualsEagerBitwiseAtSeveralBatchSizes) {
  manual_seed(30);
  SmallCNN cnn;
  {
    // Running statistics that are not the initial 0 and 1.
    NoGradGuard no_grad;
    cnn->bn1->running_mean.copy_(randn({8}) * 0.1);
    cnn->bn1->running_var.copy_(rand({8}) + 0.5);
  }
  cnn->eval();
  ExportedProgram program =
      export_program(cnn, {randn({4, 3, 12, 12})}, ExportOptions().dynamic_dim(0, 0, Dim("N", 1, 16)));
  for (const char* op : {"conv2d", "max_pool2d", "avg_pool2d", "linear", "relu", "rsqrt"}) {
    const auto ops = program.program().operators();
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  NoGradGuard no_grad;
  for (int64_t n : {1, 3, 4, 9, 16}) {
    Tensor x = randn({n, 3, 12, 12});
    EXPECT_TRUE(test::bitwise_equal(program.run({x})[0], cnn->forward(x))) << "batch " << n;
  }
  test::expect_error([&] { program.run({randn({17, 3, 12, 12})}); }, {"symbol N = 17", "[1, 16]"});
  test::expect_plan_disjoint(program.method("forward"));
  const std::string path = test::temp_path("cnn.ember");
  program.save(path);
  test::expect_same_program(ExportedProgram::load(path).program(), program.program());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
