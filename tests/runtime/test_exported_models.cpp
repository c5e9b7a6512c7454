// Models exported by ember::export_program, saved as .ember files and run through the C API:
// LSTM and GRU (1-2 layers, 1-2 directions; the steps are one Loop instruction) at several
// lengths inside the bounds, and a small CNN (conv2d, batch norm in evaluation mode, relu,
// max and avg pooling, flatten, linear) at several batch sizes. Outputs equal eager's bitwise
// (the same src/cpu kernels; eager's GEMM forced to OpenBLAS as ember-rt's); a size outside
// the bounds is an error code and a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "../export/sample_models.h"
#include "runtime_test_util.h"

namespace ember::rt::testing {
namespace {

using Forward = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The program saved to a file and loaded back through ember_rt_load_buffer.
std::unique_ptr<Loaded> load_saved(const ExportedProgram& program, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".ember";
  program.save(path);
  std::ifstream file(path, std::ios::binary);
  auto loaded = std::make_unique<Loaded>(std::vector<unsigned char>(std::istreambuf_iterator<char>(file), {}));
  std::filesystem::remove(path);
  return loaded;
}

// Runs method "forward" on x; the outputs sized by the method's output info, or the status.
EmberRtStatus run_forward(Loaded& loaded, const Tensor& x, std::vector<Tensor>* outputs) {
  EmberRtMethod* method = loaded.method();
  const Tensor input = x.contiguous();
  EmberRtTensor in = tensor(input.data_ptr(), static_cast<EmberRtDtype>(input.scalar_type()), input.sizes());
  const size_t count = ember_rt_num_outputs(method);
  std::vector<std::vector<unsigned char>> buffers(count, std::vector<unsigned char>(1 << 16));
  std::vector<EmberRtTensor> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = tensor(buffers[i].data(), EMBER_RT_FLOAT32, {}, buffers[i].size());
  const EmberRtStatus status = ember_rt_run(method, &in, 1, out.data(), count);
  if (status != EMBER_RT_OK) return status;
  outputs->clear();
  for (size_t i = 0; i < count; ++i) {
    std::vector<int64_t> sizes(out[i].sizes, out[i].sizes + out[i].ndim);
    Tensor t = empty(sizes, static_cast<ScalarType>(out[i].dtype));
    std::memcpy(t.data_ptr(), buffers[i].data(), t.nbytes());
    outputs->push_back(t);
  }
  return status;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Every size in `inside` gives eager's outputs; `outside` is refused naming the symbol's bounds.
void expect_runs_equal_eager(Loaded& loaded, const Forward& forward, const std::function<Tensor(int64_t)>& make_input,
                             std::vector<int64_t> inside, int64_t outside, const std::string& bounds) {
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  NoGradGuard no_grad;
  for (int64_t size : inside) {
    const Tensor x = make_input(size);
    const std::vector<Tensor> eager = forward({x});
    std::vector<Tensor> outputs;
    ASSERT_EQ(run_forward(loaded, x, &outputs), EMBER_RT_OK) << ember_rt_last_error();
    ASSERT_EQ(outputs.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(bitwise_equal(outputs[i], eager[i])) << "size " << size << " output " << i;
  }
  std::vector<Tensor> outputs;
  EXPECT_EQ(run_forward(loaded, make_input(outside), &outputs), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ember_rt_last_error()).find("outside its bounds " + bounds), std::string::npos)
      << ember_rt_last_error();
}

template <typename Module>
void expect_rnn_runs_equal_eager(Module rnn, int64_t input_size, const std::string& name) {
  backends::set_gemm_backend("openblas");
  rnn->eval();
  const Forward forward = test::rnn_outputs(rnn);
  const ExportedProgram program = export_program(*rnn, forward, {randn({5, 2, input_size})},
                                                 ExportOptions().dynamic_dim(0, 0, Dim("L", 1, 40)));
  const auto loaded = load_saved(program, name);
  expect_runs_equal_eager(*loaded, forward, [&](int64_t length) { return randn({length, 2, input_size}); },
                          {1, 2, 7, 13, 40}, 41, "[1, 40]");
}

TEST(RuntimeExportedModels, LSTM) {
  manual_seed(50);
  expect_rnn_runs_equal_eager(nn::LSTM(nn::LSTMOptions(6, 8)), 6, "lstm");
}

TEST(RuntimeExportedModels, TwoLayerBidirectionalLSTM) {
  manual_seed(51);
  expect_rnn_runs_equal_eager(nn::LSTM(nn::LSTMOptions(6, 8).num_layers(2).bidirectional(true)), 6, "lstm2");
}

TEST(RuntimeExportedModels, GRU) {
  manual_seed(52);
  expect_rnn_runs_equal_eager(nn::GRU(nn::GRUOptions(5, 7)), 5, "gru");
}

TEST(RuntimeExportedModels, TwoLayerBidirectionalGRU) {
  manual_seed(53);
  expect_rnn_runs_equal_eager(nn::GRU(nn::GRUOptions(5, 7).num_layers(2).bidirectional(true)), 5, "gru2");
}

TEST(RuntimeExportedModels, SmallCNN) {
  backends::set_gemm_backend("openblas");
  manual_seed(54);
  test::SmallCNN cnn;
  {
    NoGradGuard no_grad;  // running statistics that are not the initial 0 and 1
    cnn->bn1->running_mean.copy_(randn({8}) * 0.1);
    cnn->bn1->running_var.copy_(rand({8}) + 0.5);
  }
  cnn->eval();
  const ExportedProgram program =
      export_program(cnn, {randn({4, 3, 12, 12})}, ExportOptions().dynamic_dim(0, 0, Dim("N", 1, 16)));
  const auto loaded = load_saved(program, "cnn");
  Forward forward = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{cnn->forward(in[0])}; };
  expect_runs_equal_eager(*loaded, forward, [](int64_t n) { return randn({n, 3, 12, 12}); }, {1, 3, 4, 9, 16}, 17,
                          "[1, 16]");
}

// Elementwise ops that only the op table declares (logaddexp, hypot): exported, saved and run.
TEST(RuntimeExportedModels, LogaddexpAndHypotOfALinearLayer) {
  backends::set_gemm_backend("openblas");
  manual_seed(55);
  nn::Linear linear(nn::LinearOptions(4, 4));
  const Forward forward = [&](const std::vector<Tensor>& in) {
    const Tensor y = linear->forward(in[0]);
    return std::vector<Tensor>{logaddexp(y, in[0]), y.hypot(in[0])};
  };
  const ExportedProgram program =
      export_program(*linear, forward, {randn({3, 4})}, ExportOptions().dynamic_dim(0, 0, Dim("N", 1, 16)));
  const std::vector<std::string> ops = program.program().operators();
  for (const char* op : {"logaddexp", "hypot"}) EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  const auto loaded = load_saved(program, "logaddexp");
  expect_runs_equal_eager(*loaded, forward, [](int64_t n) { return randn({n, 4}) * 30; }, {1, 2, 9, 16}, 17, "[1, 16]");
}

}  // namespace
}  // namespace ember::rt::testing
