// LSTM and GRU exported with a dynamic sequence length: the time steps become one Loop
// instruction (not unrolled), and the interpreted program equals eager bitwise at several
// lengths inside the bounds, for one and two layers, one and two directions.
#include <gtest/gtest.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/export.h"
#include "export_test_utils.h"
#include "sample_models.h"

namespace ember {
namespace {

size_t count_loops(const std::vector<export_ir::Instruction>& instructions, size_t* body_calls) {
  size_t loops = 0;
  for (const auto& i : instructions)
    if (const auto* loop = std::get_if<export_ir::Loop>(&i.op)) {
      ++loops;
      *body_calls += loop->body.size();
    }
  return loops;
}

template <typename Module>
void expect_exported_rnn_equals_eager(Module rnn, int64_t layers, int64_t directions, int64_t input_size) {
  rnn->eval();
  auto forward = test::rnn_outputs(rnn);
  ExportedProgram program = export_program(*rnn, forward, {randn({5, 2, input_size})},
                                           ExportOptions().dynamic_dim(0, 0, Dim("L", 1, 40)));
  const auto& method = program.method("forward");
  size_t body_calls = 0;
  EXPECT_EQ(count_loops(method.instructions, &body_calls), static_cast<size_t>(layers * directions));
  EXPECT_GT(body_calls, 0u);
  NoGradGuard no_grad;
  for (int64_t length : {1, 2, 5, 13, 40}) {
    Tensor x = randn({length, 2, input_size});
    std::vector<Tensor> eager = forward({x});
    std::vector<Tensor> exported = program.run({x});
    ASSERT_EQ(exported.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(test::bitwise_equal(exported[i], eager[i])) << "length " << length << " output " << i;
  }
  test::expect_error([&] { program.run({randn({41, 2, input_size})}); }, {"symbol L = 41", "[1, 40]"});
  test::expect_plan_disjoint(method);
  const std::string path = test::temp_path("rnn.ember");
  program.save(path);
  test::expect_same_program(ExportedProgram::load(path).program(), program.program());
  std::filesystem::remove(path);
}

TEST(ExportRNN, LSTMIsOneLoopAndEqualsEager) {
  manual_seed(40);
  expect_exported_rnn_equals_eager(nn::LSTM(nn::LSTMOptions(6, 8)), 1, 1, 6);
}

TEST(ExportRNN, TwoLayerBidirectionalLSTM) {
  manual_seed(41);
  expect_exported_rnn_equals_eager(nn::LSTM(nn::LSTMOptions(6, 8).num_layers(2).bidirectional(true)), 2, 2, 6);
}

TEST(ExportRNN, GRUIsOneLoopAndEqualsEager) {
  manual_seed(42);
  expect_exported_rnn_equals_eager(nn::GRU(nn::GRUOptions(5, 7)), 1, 1, 5);
}

TEST(ExportRNN, TwoLayerGRU) {
  manual_seed(43);
  expect_exported_rnn_equals_eager(nn::GRU(nn::GRUOptions(5, 7).num_layers(2)), 2, 1, 5);
}

TEST(ExportRNN, ALoopTracedWithTooFewStepsIsRefused) {
  manual_seed(44);
  nn::GRU gru(nn::GRUOptions(3, 4));
  auto forward = [gru](const std::vector<Tensor>& in) mutable { return std::vector<Tensor>{std::get<0>(gru->forward(in[0]))}; };
  test::expect_error([&] { export_program(*gru, forward, {randn({2, 1, 3})}); }, {"at least 3"});
}

}  // namespace
}  // namespace ember
