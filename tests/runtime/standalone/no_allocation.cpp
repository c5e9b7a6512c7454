// ember_rt_run allocates nothing: this binary replaces malloc, calloc, realloc, the aligned
// allocators and every operator new with counting versions, and counts what any thread
// (the thread pool's workers included) allocates while a run is in progress.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <vector>

#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "ember/models/pretrained.h"
#include "../../export/sample_models.h"
#include "train/export_gpt.h"
#include "train/export_pretrained.h"
#include "runtime_test_util.h"
#include "sample_programs.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void* calloc(size_t count_, size_t size) {
  count();
  return __libc_calloc(count_, size);
}
void* realloc(void* p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  count();
  *out = __libc_memalign(alignment, size);
  return *out == nullptr ? ENOMEM : 0;
}
void free(void* p) { __libc_free(p); }
}

void* operator new(size_t size) {
  count();
  if (void* p = __libc_malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, std::align_val_t alignment) {
  count();
  if (void* p = __libc_memalign(static_cast<size_t>(alignment), size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t alignment) { return operator new(size, alignment); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  count();
  return __libc_malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return operator new(size, std::nothrow); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }

namespace ember::rt::testing {
namespace {

// Runs before counting, so that every pool thread has run a task (see the parallel test).
constexpr int kWarmRuns = 20;

// The allocations any thread made during one ember_rt_run.
long allocations_during_run(EmberRtMethod* method, const EmberRtTensor* inputs, size_t num_inputs,
                            EmberRtTensor* outputs, size_t num_outputs, EmberRtStatus* status) {
  g_allocations = 0;
  g_counting = true;
  *status = ember_rt_run(method, inputs, num_inputs, outputs, num_outputs);
  g_counting = false;
  return g_allocations.load();
}

TEST(RuntimeNoAllocation, TheCounterSeesAllocations) {
  g_allocations = 0;
  g_counting = true;
  std::vector<int>* v = new std::vector<int>(100);
  void* p = std::malloc(64);
  g_counting = false;
  delete v;
  std::free(p);
  EXPECT_EQ(g_allocations.load(), 3);  // the vector, its elements, the malloc
}

TEST(RuntimeNoAllocation, RunsAllocateNothing) {
  for (const ProgramSpec& spec : {add_relu_program(), recurrence_program()}) {
    Loaded loaded(spec);
    ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
    for (int64_t rows : {1, 9, 16, 4}) {
      std::vector<float> x(static_cast<size_t>(rows * 4), 0.25f), y(static_cast<size_t>(rows * 4));
      EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {rows, 4});
      EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
      EmberRtStatus status = EMBER_RT_OK;
      EXPECT_EQ(allocations_during_run(loaded.method(), &input, 1, &output, 1, &status), 0) << rows << " rows";
      EXPECT_EQ(status, EMBER_RT_OK) << ember_rt_last_error();
    }
  }
}

TEST(RuntimeNoAllocation, AFailedRunAllocatesNothing) {
  Loaded loaded(add_relu_program());
  std::vector<float> x(17 * 4), y(17 * 4);
  EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {17, 4});
  EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
  EmberRtStatus status = EMBER_RT_OK;
  EXPECT_EQ(allocations_during_run(loaded.method(), &input, 1, &output, 1, &status), 0);
  EXPECT_EQ(status, EMBER_RT_ERROR_INVALID_ARGUMENT);
}

// Kernels on the thread pool and the GEMM: large enough for parallel chunks. The first run of
// a product may create the pool and choose its GEMM backend (once per process, cpu/); every
// later run allocates nothing on the OpenBLAS backend and ember's own. The oneDNN backend
// allocates its primitive and memory objects per product (src/cpu/gemm_onednn.cpp): not yet
// allocation-free, so this test forces OpenBLAS.
TEST(RuntimeNoAllocation, ParallelKernelsAndTheGemmAllocateNothingOnceWarm) {
  backends::set_gemm_backend("openblas");
  const int64_t rows = 256, features = 256;
  ProgramSpec p;
  p.operators = {"linear", "relu"};
  std::vector<float> weight(static_cast<size_t>(features * features));
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 64;
  p.segments = {float_bytes(weight)};
  MethodSpec m;
  const uint64_t bytes = static_cast<uint64_t>(rows * features * 4);
  m.values = {
      ValueSpec{.name = "x", .shape = lits({rows, features}), .location = fb::Location::Input, .slot = 0},
      ValueSpec{.name = "w", .shape = lits({features, features}), .location = fb::Location::Constant,
                .max_bytes = static_cast<uint64_t>(features * features * 4)},
      ValueSpec{.name = "h", .shape = lits({features, rows}), .location = fb::Location::Arena, .max_bytes = bytes},
      ValueSpec{.name = "h_t", .shape = lits({rows, features}), .strides = lits({1, rows}),
                .location = fb::Location::View, .base = 2},
      ValueSpec{.name = "y", .shape = lits({rows, features}), .location = fb::Location::Output, .slot = 0},
  };
  m.inputs = {0};
  m.outputs = {4};
  // linear(x, w) -> h, then relu over h's transpose (a strided loop in parallel chunks).
  m.instructions = {call({.op = 0, .inputs = {0, 1}, .outputs = {2}}), call({.op = 1, .inputs = {3}, .outputs = {4}})};
  m.arena_bytes = bytes;
  p.methods = {m};
  Loaded loaded(p);
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  std::vector<float> x(static_cast<size_t>(rows * features), 0.5f), y(x.size());
  EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {rows, features});
  EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
  // A pool thread's first task sets up its thread-local state (allocations); with more
  // threads than cores one run may leave a worker idle, so warm up with several.
  for (int run = 0; run < kWarmRuns; ++run)
    ASSERT_EQ(ember_rt_run(loaded.method(), &input, 1, &output, 1), EMBER_RT_OK) << ember_rt_last_error();
  for (int run = 0; run < 3; ++run) {
    EmberRtStatus status = EMBER_RT_OK;
    EXPECT_EQ(allocations_during_run(loaded.method(), &input, 1, &output, 1, &status), 0) << "run " << run;
    EXPECT_EQ(status, EMBER_RT_OK) << ember_rt_last_error();
  }
}

// An exported decoder's prefill at several prompt lengths and decode steps after it allocate
// nothing once warm (the pool, OpenBLAS and the kernels' per-thread buffers set up by prefills of
// a few tokens and of many), and their logits equal eager's bitwise (the same kernels: OpenBLAS
// forced). Eager runs after each counted run: it shares the kernels' buffers, so it must not warm
// them first.
void expect_decoder_runs_allocate_nothing(const train::CachedDecoder& decoder, const ExportedProgram& program) {
  backends::set_gemm_backend("openblas");
  NoGradGuard no_grad;
  const std::string path = ::testing::TempDir() + "/no_allocation_decoder.ember";
  program.save(path);
  std::ifstream file(path, std::ios::binary);
  Loaded loaded(std::vector<unsigned char>(std::istreambuf_iterator<char>(file), {}));
  std::filesystem::remove(path);
  ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
  EmberRtMethod* prefill = loaded.method("prefill");
  EmberRtMethod* decode = loaded.method("decode");
  ASSERT_TRUE(prefill != nullptr && decode != nullptr);

  std::vector<Tensor> caches = train::make_cache_inputs(decoder);
  std::vector<EmberRtTensor> inputs(1 + caches.size());
  for (size_t i = 0; i < caches.size(); ++i)
    inputs[1 + i] = tensor(caches[i].data_ptr(), EMBER_RT_FLOAT32, caches[i].sizes());
  std::vector<float> logits(static_cast<size_t>(decoder.max_seq_len * decoder.vocab_size));
  EmberRtTensor output = tensor(logits.data(), EMBER_RT_FLOAT32, {}, logits.size() * sizeof(float));
  auto equals_eager = [&](const Tensor& eager) {
    const Tensor expected = eager.contiguous();
    return std::memcmp(expected.data_ptr<float>(), logits.data(), expected.nbytes()) == 0;
  };

  for (int64_t warm_length : {3, 20}) {
    const Tensor warm_tokens = zeros({1, warm_length}, TensorOptions().dtype(kInt64));
    inputs[0] = tensor(warm_tokens.data_ptr(), EMBER_RT_INT64, {1, warm_length});
    for (int run = 0; run < kWarmRuns; ++run)
      ASSERT_EQ(ember_rt_run(prefill, inputs.data(), inputs.size(), &output, 1), EMBER_RT_OK) << ember_rt_last_error();
  }
  for (int64_t prompt : {1, 7, 20}) {
    const Tensor tokens = randint(0, decoder.vocab_size, {1, prompt}, TensorOptions().dtype(kInt64));
    inputs[0] = tensor(tokens.data_ptr(), EMBER_RT_INT64, {1, prompt});
    EmberRtStatus status = EMBER_RT_OK;
    EXPECT_EQ(allocations_during_run(prefill, inputs.data(), inputs.size(), &output, 1, &status), 0)
        << "prefill of " << prompt;
    ASSERT_EQ(status, EMBER_RT_OK) << ember_rt_last_error();
    std::vector<nn::attention::KVCache> eager_caches;
    for (int64_t layer = 0; layer < decoder.layers; ++layer)
      eager_caches.emplace_back(1, decoder.kv_heads, decoder.max_seq_len, decoder.head_dim, decoder.head_dim,
                                decoder.cache_dtype);
    EXPECT_TRUE(equals_eager(decoder.forward(tokens, eager_caches, true))) << "prefill of " << prompt;
    std::vector<EmberRtTensor> decode_inputs(inputs.size() + 1);
    std::copy(inputs.begin() + 1, inputs.end(), decode_inputs.begin() + 2);
    for (int64_t pos = prompt; pos < prompt + 3; ++pos) {
      const Tensor next = randint(0, decoder.vocab_size, {1, 1}, TensorOptions().dtype(kInt64));
      int64_t position = pos;
      decode_inputs[0] = tensor(next.data_ptr(), EMBER_RT_INT64, {1, 1});
      decode_inputs[1] = tensor(&position, EMBER_RT_INT64, {});
      EXPECT_EQ(allocations_during_run(decode, decode_inputs.data(), decode_inputs.size(), &output, 1, &status), 0)
          << "decode at " << pos;
      ASSERT_EQ(status, EMBER_RT_OK) << ember_rt_last_error();
      EXPECT_TRUE(equals_eager(decoder.forward(next, eager_caches, false))) << "decode at " << pos;
    }
  }
}

// The exported GPT (f32, GQA, two layers).
TEST(RuntimeNoAllocation, GPTPrefillAndDecodeAllocateNothing) {
  manual_seed(3);
  models::GPT model(test::tiny_gpt_config());
  model->eval();
  expect_decoder_runs_allocate_nothing(train::cached_decoder(model), train::export_gpt(model));
}

// A quantized pretrained model (int4 projections, int8 head): the quantized products of few
// rows and of many.
TEST(RuntimeNoAllocation, QuantizedPrefillAndDecodeAllocateNothing) {
  manual_seed(4);
  models::PretrainedOptions options;
  options.max_seq_len = 32;
  options.quantize = "int4";
  models::CausalLM model = models::from_pretrained(std::string(EMBER_PRETRAINED_FIXTURES) + "/models/llama", options);
  model->eval();
  expect_decoder_runs_allocate_nothing(train::cached_decoder(model), train::export_pretrained(model, {}));
}

}  // namespace
}  // namespace ember::rt::testing
