// Running methods: symbols bound from the inputs and checked against their bounds and shapes,
// values laid out in the arena, Loops over a dynamic trip count with carried state; results
// against values computed by hand here.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime_test_util.h"
#include "sample_programs.h"

namespace ember::rt::testing {
namespace {

std::vector<float> sample_input(int64_t rows) {
  std::vector<float> x(static_cast<size_t>(rows * 4));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.75f;
  return x;
}

TEST(RuntimeExecutor, AddReluAtEveryLengthInsideTheBounds) {
  Loaded loaded(add_relu_program());
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  EmberRtMethod* forward = loaded.method();
  ASSERT_NE(forward, nullptr);
  for (int64_t rows : {1, 2, 5, 16}) {
    std::vector<float> x = sample_input(rows), y(static_cast<size_t>(rows * 4), -99.0f);
    EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {rows, 4});
    EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
    ASSERT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_OK) << ember_rt_last_error();
    ASSERT_EQ(output.ndim, 2);
    EXPECT_EQ(output.sizes[0], rows);
    EXPECT_EQ(output.sizes[1], 4);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], std::max(x[i] + kBias[i % 4], 0.0f)) << i;
  }
}

TEST(RuntimeExecutor, ASizeOutsideTheBoundsOrTheShapeIsAnError) {
  Loaded loaded(add_relu_program());
  EmberRtMethod* forward = loaded.method();
  std::vector<float> x = sample_input(17), y(17 * 4);
  EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
  EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {17, 4});
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_rt_last_error(),
               "[run] method 'forward': symbol 'T' (an input's size, input 0) is 17, outside its bounds [1, 16]");
  input = tensor(x.data(), EMBER_RT_FLOAT32, {0, 4});
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  input = tensor(x.data(), EMBER_RT_FLOAT32, {2, 5});
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_rt_last_error(),
               "[run] method 'forward': input 0 has size 5 at dim 1, the method's shape gives 4");
  input = tensor(x.data(), EMBER_RT_FLOAT64, {2, 4});
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  input = tensor(x.data(), EMBER_RT_FLOAT32, {2, 4, 1});
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  input = tensor(x.data(), EMBER_RT_FLOAT32, {3, 4});
  output.capacity_bytes = 2 * 4 * sizeof(float);
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_rt_last_error(), "[run] method 'forward': output 0 needs 48 bytes, its buffer holds 32");
  EXPECT_EQ(ember_rt_run(forward, &input, 0, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ember_rt_run(forward, &input, 1, &output, 0), EMBER_RT_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeExecutor, ALoopRunsItsBodyTripCountTimesWithCarriedState) {
  Loaded loaded(recurrence_program());
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  EmberRtMethod* forward = loaded.method();
  for (int64_t steps : {0, 1, 3, 16}) {
    std::vector<float> x = sample_input(steps), y(4, -99.0f);
    std::vector<float> h(4, 0.0f);
    for (int64_t t = 0; t < steps; ++t)
      for (int j = 0; j < 4; ++j) h[j] = std::max(h[j] + x[static_cast<size_t>(t * 4 + j)], 0.0f);
    if (x.empty()) x.push_back(0);  // a buffer for the empty input
    EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {steps, 4});
    EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, sizeof(float) * 4);
    ASSERT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_OK) << ember_rt_last_error();
    for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], h[j]) << "steps " << steps << " element " << j;
  }
}

TEST(RuntimeExecutor, AViewIntoAnInputIsCheckedAgainstTheBoundSizes) {
  // x_t reads row t of x; here the trip count is T + 1, so the last iteration would read
  // one row past the input: an error at that call, not a read out of bounds.
  ProgramSpec spec = recurrence_program();
  spec.methods[0].instructions[1].loop->trip_count = sym(0, 1, 1);
  spec.methods[0].symbols[1].max = 16;
  Loaded loaded(spec);
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  std::vector<float> x = sample_input(3), y(4);
  EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {3, 4});
  EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, sizeof(float) * 4);
  EXPECT_EQ(ember_rt_run(loaded.method(), &input, 1, &output, 1), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_rt_last_error(),
               "[run] method 'forward': view value 3 reaches element 15 of input 0, which has 12 at these sizes");
}

TEST(RuntimeExecutor, DescribesInputsAndOutputs) {
  Loaded loaded(add_relu_program());
  EmberRtMethod* forward = loaded.method();
  ASSERT_EQ(ember_rt_num_inputs(forward), 1u);
  ASSERT_EQ(ember_rt_num_outputs(forward), 1u);
  EmberRtTensorInfo info;
  ASSERT_EQ(ember_rt_input_info(forward, 0, &info), EMBER_RT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, EMBER_RT_FLOAT32);
  EXPECT_EQ(info.ndim, 2);
  EXPECT_EQ(info.min_sizes[0], 1);
  EXPECT_EQ(info.max_sizes[0], 16);
  EXPECT_EQ(info.min_sizes[1], 4);
  EXPECT_EQ(info.max_sizes[1], 4);
  ASSERT_EQ(ember_rt_output_info(forward, 0, &info), EMBER_RT_OK);
  EXPECT_EQ(info.max_bytes, 16u * 4 * sizeof(float));
  EXPECT_EQ(ember_rt_output_info(forward, 1, &info), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EmberRtMethod* missing = nullptr;
  EXPECT_EQ(ember_rt_method(loaded.program, "decode", &missing), EMBER_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(ember_rt_last_error(), "[method] the program has no method 'decode'");
}

TEST(RuntimeExecutor, LoadsAFileFromDisk) {
  const std::string path = ::testing::TempDir() + "/runtime_add_relu.ember";
  const auto bytes = build_program(add_relu_program());
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  EmberRtProgram* program = nullptr;
  ASSERT_EQ(ember_rt_load(path.c_str(), &program), EMBER_RT_OK) << ember_rt_last_error();
  EmberRtMethod* forward = nullptr;
  ASSERT_EQ(ember_rt_method(program, "forward", &forward), EMBER_RT_OK);
  std::vector<float> x = sample_input(2), y(8);
  EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {2, 4});
  EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, sizeof(float) * 8);
  ASSERT_EQ(ember_rt_run(forward, &input, 1, &output, 1), EMBER_RT_OK) << ember_rt_last_error();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], std::max(x[i] + kBias[i % 4], 0.0f));
  ember_rt_free(program);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ember::rt::testing
