// A small CNN (conv2d, batch norm in evaluation mode, relu, max and avg pooling, flatten,
// linear) exported with a dynamic batch: the interpreted program equals eager bitwise.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/export.h"
#include "export_test_utils.h"

namespace ember {
namespace {

class SmallCNNImpl : public nn::Module {
 public:
  SmallCNNImpl() {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn1 = register_module("bn1", nn::BatchNorm2d(8));
    pool1 = register_module("pool1", nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(8, 6, 3).stride(2)));
    pool2 = register_module("pool2", nn::AvgPool2d(nn::AvgPool2dOptions(2).padding(1)));
    fc = register_module("fc", nn::Linear(6 * 2 * 2, 5));
  }
  // x: [N, 3, 12, 12] -> [N, 5]
  Tensor forward(const Tensor& x) {
    Tensor h = pool1->forward(bn1->forward(conv1->forward(x)).relu());  // [N, 8, 6, 6]
    h = pool2->forward(conv2->forward(h));                               // [N, 6, 2, 2]
    return fc->forward(h.flatten(1));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::MaxPool2d pool1{nullptr};
  nn::AvgPool2d pool2{nullptr};
  nn::Linear fc{nullptr};
};
EMBER_MODULE(SmallCNN);

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
