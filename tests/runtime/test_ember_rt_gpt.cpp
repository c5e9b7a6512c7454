// The exported GPT run by ember-rt (its own -Os copy of src/cpu with OpenBLAS as the one GEMM
// backend, Note [Runtime size] in cmake/runtime.cmake): prefill and decode logits equal eager
// forward_cached bitwise, eager's GEMM forced to OpenBLAS as well, in float32 and bfloat16,
// with and without a sliding window.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "../export/sample_models.h"
#include "ember_rt_process.h"
#include "train/export_gpt.h"

namespace ember::rt::testing {
namespace {

class EmberRtGPT : public ::testing::TestWithParam<std::tuple<int64_t, ScalarType>> {};

TEST_P(EmberRtGPT, PrefillAndDecodeEqualEagerBitwise) {
  backends::set_gemm_backend("openblas");
  manual_seed(11);
  const models::GPTConfig config = test::tiny_gpt_config(std::get<0>(GetParam()));
  models::GPT model(config);
  model->set_compute_dtype(std::get<1>(GetParam()));
  model->eval();
  NoGradGuard no_grad;
  const std::string dir = ::testing::TempDir() + "/ember_rt_gpt_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string program_path = dir + "/gpt.ember";
  const ExportedProgram program = train::export_gpt(model);
  program.save(program_path);
  for (int64_t prompt : {1, 7, 20}) {
    const Tensor tokens = randint(0, config.vocab_size, {1, prompt}, TensorOptions().dtype(kInt64));
    models::GPTCache eager_cache = model->make_cache(1);
    const Tensor eager = model->forward_cached(tokens, eager_cache);
    std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
    std::vector<Tensor> inputs = {tokens};
    inputs.insert(inputs.end(), caches.begin(), caches.end());
    EXPECT_EQ(run_ember_rt(program_path, "prefill", inputs, dir), bytes_of(eager)) << "prefill of " << prompt;
    program.run(inputs, "prefill");  // the caches as prefill leaves them (the interpreter equals eager)
    const Tensor next = randint(0, config.vocab_size, {1, 1}, TensorOptions().dtype(kInt64));
    const Tensor eager_step = model->forward_cached(next, eager_cache);
    std::vector<Tensor> decode_inputs = {next, full({}, prompt, TensorOptions().dtype(kInt64))};
    decode_inputs.insert(decode_inputs.end(), caches.begin(), caches.end());
    EXPECT_EQ(run_ember_rt(program_path, "decode", decode_inputs, dir), bytes_of(eager_step)) << "decode at " << prompt;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(WindowAndDtype, EmberRtGPT,
                         ::testing::Values(std::make_tuple(int64_t{0}, kFloat32), std::make_tuple(int64_t{16}, kFloat32),
                                           std::make_tuple(int64_t{0}, kBFloat16)));

}  // namespace
}  // namespace ember::rt::testing
