// ember::export_program on small modules: the interpreted program equals eager bitwise at
// sizes inside the bounds and refuses sizes outside them; forwards whose graph would follow
// their data are refused naming the op; the memory plan never overlaps live values; the
// .ember file verifies and reads back equal to the IR.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "ember/atomic_file.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "export_test_utils.h"

namespace ember {
namespace {

namespace F = nn::functional;

class MLPImpl : public nn::Module {
 public:
  MLPImpl() {
    fc1 = register_module("fc1", nn::Linear(8, 16));
    fc2 = register_module("fc2", nn::Linear(16, 4));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(F::gelu(fc1->forward(x)) * 0.5 + 1.0).log_softmax(-1); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
EMBER_MODULE(MLP);

ExportedProgram export_mlp(const MLP& mlp) {
  return export_program(mlp, {randn({3, 8})}, ExportOptions().dynamic_dim(0, 0, Dim("batch", 1, 32)));
}

TEST(Export, MLPEqualsEagerBitwiseInsideTheBounds) {
  manual_seed(1);
  MLP mlp;
  ExportedProgram program = export_mlp(mlp);
  const auto& method = program.method("forward");
  ASSERT_EQ(method.symbols.size(), 1u);
  EXPECT_EQ(method.symbols[0].name, "batch");
  // The input's batch dim is the symbol itself; the output's too.
  const auto& out = method.values[method.outputs[0]];
  ASSERT_EQ(out.shape.size(), 2u);
  EXPECT_EQ(out.shape[0], (export_ir::Expr{0, {{0, 1}}}));
  EXPECT_EQ(out.shape[1], (export_ir::Expr{4, {}}));
  EXPECT_EQ(program.program().operators(), (std::vector<std::string>{"add", "gelu", "linear", "log_softmax", "mul"}));
  for (int64_t batch : {1, 2, 5, 17, 32}) {
    Tensor x = randn({batch, 8});
    Tensor eager = mlp->forward(x);
    std::vector<Tensor> exported = program.run({x});
    ASSERT_EQ(exported.size(), 1u);
    EXPECT_TRUE(test::bitwise_equal(exported[0], eager)) << "batch " << batch;
  }
}

TEST(Export, ListsTheProgram) {
  manual_seed(16);
  MLP mlp;
  const std::string text = export_mlp(mlp).to_string();
  for (const char* line : {"method forward(input.0: float32[batch, 8]) batch in [1, 32], arena ",
                           "  linear.0 = linear(input.0, fc1.weight, fc1.bias)\n", "  mul.2 = mul(gelu.1, %8)\n", "  linear.4 = linear(add.3, fc2.weight, fc2.bias)\n",
                           "  log_softmax.5 = log_softmax(linear.4, dim=1)\n", "  return log_softmax.5\n"})
    EXPECT_NE(text.find(line), std::string::npos) << "'" << line << "' not in:\n" << text;
}

TEST(Export, SumSoftmaxAndConcatenation) {
  manual_seed(17);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    Tensor pooled = h.sum({1}, true);                                 // [B, 1]
    Tensor joined = cat({h.softmax(1), pooled, h.sum({0, 1}, true).expand({h.size(0), 1})}, 1);
    return std::vector<Tensor>{joined, stack({h, h * 2.0}, 2)};
  };
  ExportedProgram program =
      export_program(*mlp, forward, {randn({4, 8})}, ExportOptions().dynamic_dim(0, 0, Dim("batch", 1, 16)));
  for (int64_t batch : {1, 3, 16}) {
    Tensor x = randn({batch, 8});
    std::vector<Tensor> eager = forward({x}), exported = program.run({x});
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(test::bitwise_equal(exported[i], eager[i])) << batch << " " << i;
  }
}

TEST(Export, SizeOutsideTheBoundsIsAnError) {
  manual_seed(2);
  MLP mlp;
  ExportedProgram program = export_mlp(mlp);
  test::expect_error([&] { program.run({randn({33, 8})}); }, {"batch = 33", "[1, 32]"});
  test::expect_error([&] { program.run({randn({0, 8})}); }, {"batch = 0", "[1, 32]"});
  test::expect_error([&] { program.run({randn({4, 9})}); }, {"input 0 must be", "[4, 8]"});
}

TEST(Export, ConstantsAreTheStateDict) {
  manual_seed(3);
  MLP mlp;
  ExportedProgram program = export_mlp(mlp);
  auto state = mlp->state_dict();
  size_t named = 0;
  for (const auto& c : program.program().constants) {
    if (!state.contains(c.name)) continue;
    ++named;
    EXPECT_TRUE(test::bitwise_equal(c.data, state[c.name])) << c.name;
  }
  EXPECT_EQ(named, state.size());
}

TEST(Export, RefusesItemSteeringControlFlow) {
  manual_seed(4);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    if (h.sum().item<double>() > 0) h = h.relu();
    return std::vector<Tensor>{h};
  };
  test::expect_error([&] { export_program(*mlp, forward, {randn({3, 8})}); },
                     {"item()", "call #", "'sum'", "depend on the data"});
}

TEST(Export, RefusesASizeComputedFromValues) {
  manual_seed(5);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    const int64_t keep = static_cast<int64_t>(std::abs(h.select(0, 0).select(0, 0).item<double>()) * 4) % 4 + 1;
    return std::vector<Tensor>{h.narrow(1, 0, keep).clone()};
  };
  test::expect_error([&] { export_program(*mlp, forward, {randn({3, 8})}); },
                     {"item()", "call #1", "the result of op 'linear'", "depend on the data"});
}

TEST(Export, RefusesDifferentOpsAtDifferentSizes) {
  manual_seed(6);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    if (in[0].size(0) % 2 == 0) h = h.relu();
    return std::vector<Tensor>{mlp->fc2->forward(h)};
  };
  test::expect_error(
      [&] { export_program(*mlp, forward, {randn({3, 8})}, ExportOptions().dynamic_dim(0, 0, Dim("batch", 1, 8))); },
      {"different ops at different sizes", "call #1", "'linear'", "'relu'", "batch=3", "batch=4"});
}

TEST(Export, RefusesAnOpWithoutExportSupport) {
  manual_seed(7);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    return std::vector<Tensor>{mlp->fc2->forward(h.cumsum(1))};
  };
  test::expect_error([&] { export_program(*mlp, forward, {randn({3, 8})}); },
                     {"op 'linear'", "made by op 'cumsum'", "no export support"});
}

TEST(Export, RefusesAnOpWithoutATraceHook) {
  manual_seed(12);
  MLP mlp;
  const Tensor keep = rand({16}) > 0.5;  // made before the trace: a constant
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    return std::vector<Tensor>{mlp->fc2->forward(where(keep, h, zeros({16})))};
  };
  test::expect_error([&] { export_program(*mlp, forward, {randn({3, 8})}); },
                     {"op 'linear'", "call #1", "an op without a trace hook"});
}

TEST(Export, RefusesAFactoryTensorSizedByTheInput) {
  manual_seed(13);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    const int64_t n = in[0].size(0);
    return std::vector<Tensor>{mlp->fc1->forward(in[0]) + arange(n * 16, kFloat32).view({n, 16})};
  };
  test::expect_error(
      [&] { export_program(*mlp, forward, {randn({3, 8})}, ExportOptions().dynamic_dim(0, 0, Dim("batch", 1, 8))); },
      {"made by a factory", "other values or sizes at batch=4"});
}

TEST(Export, RefusesRandomValues) {
  manual_seed(15);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mlp->fc1->forward(in[0]) + randn({16})};
  };
  test::expect_error([&] { export_program(*mlp, forward, {randn({3, 8})}); }, {"[normal_]", "random values"});
}

TEST(Export, RefusesInPlaceWrites) {
  manual_seed(14);
  MLP mlp;
  auto add_in_place = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    h.add_(1.0);
    return std::vector<Tensor>{h};
  };
  test::expect_error([&] { export_program(*mlp, add_in_place, {randn({3, 8})}); }, {"[add]", "(in place) cannot be exported"});
  auto fill = [&](const std::vector<Tensor>& in) {
    Tensor h = mlp->fc1->forward(in[0]);
    h.zero_();
    return std::vector<Tensor>{h};
  };
  test::expect_error([&] { export_program(*mlp, fill, {randn({3, 8})}); }, {"[fill_]", "(in place) cannot be exported"});
}

TEST(Export, RefusesANonAffineSize) {
  manual_seed(8);
  MLP mlp;
  auto forward = [&](const std::vector<Tensor>& in) {
    const int64_t n = in[0].size(0);
    return std::vector<Tensor>{mlp->fc1->forward(in[0]).narrow(0, 0, n / 2 + 1).clone()};
  };
  test::expect_error(
      [&] { export_program(*mlp, forward, {randn({8, 8})}, ExportOptions().dynamic_dim(0, 0, Dim("batch", 1, 16))); },
      {"not an affine function", "batch=8"});
}

TEST(ExportMemoryPlan, LiveValuesNeverOverlap) {
  manual_seed(9);
  MLP mlp;
  ExportedProgram program = export_mlp(mlp);
  const auto& method = program.method("forward");
  test::expect_plan_disjoint(method);
  EXPECT_GT(method.intermediate_bytes, 0u);
  EXPECT_LE(method.arena_bytes, method.intermediate_bytes + 64 * method.values.size());
}

TEST(ExportFile, VerifiesAndRoundTrips) {
  manual_seed(10);
  MLP mlp;
  ExportedProgram program = export_mlp(mlp);
  const std::string path = test::temp_path("mlp.ember");
  program.save(path);
  ExportedProgram loaded = ExportedProgram::load(path);
  test::expect_same_program(loaded.program(), program.program());
  Tensor x = randn({6, 8});
  EXPECT_TRUE(test::bitwise_equal(loaded.run({x})[0], mlp->forward(x)));
  std::filesystem::remove(path);
}

TEST(ExportFile, RejectsAWrongMagicVersionOrTruncation) {
  manual_seed(11);
  MLP mlp;
  const std::string path = test::temp_path("bad.ember");
  export_mlp(mlp).save(path);
  std::string bytes = read_file(path, "test");
  auto write = [&](const std::string& b) { write_file_atomically(path, b, "test"); };
  std::string wrong_magic = bytes;
  wrong_magic[0] = 'X';
  write(wrong_magic);
  test::expect_error([&] { ExportedProgram::load(path); }, {"not a program file"});
  std::string wrong_version = bytes;
  wrong_version[8] = 7;
  write(wrong_version);
  test::expect_error([&] { ExportedProgram::load(path); }, {"format version 7"});
  write(bytes.substr(0, 200));
  test::expect_error([&] { ExportedProgram::load(path); }, {"runs past the end"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
