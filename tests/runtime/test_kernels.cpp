// The runtime's kernels against ember's eager ops on the same inputs: bitwise equal, since
// both run the same src/cpu kernels (strided inputs included).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "ember/detail/op_table.h"
#include "ember/ember.h"
#include "cpu/dispatch.h"
#include "ember/nn/attention/flex_attention.h"
#include "ember/quantized.h"
#include "runtime/kernel.h"
#include "runtime_test_util.h"

namespace ember::rt::testing {
namespace {

fb::ScalarType schema_dtype(ScalarType t) { return static_cast<fb::ScalarType>(t); }

std::vector<ExprSpec> shape_of(IntArrayRef sizes) {
  std::vector<ExprSpec> shape;
  for (int64_t s : sizes) shape.push_back(lit(s));
  return shape;
}

// One method whose values are the inputs, constants, views and outputs added here, with
// static shapes, and Calls in the order given.
class ProgramMaker {
 public:
  uint32_t input(const Tensor& t) {
    inputs_.push_back(t.contiguous());
    method_.inputs.push_back(add({.dtype = schema_dtype(t.scalar_type()), .shape = shape_of(t.sizes()),
                                  .location = fb::Location::Input, .slot = static_cast<uint32_t>(inputs_.size() - 1)}));
    return method_.inputs.back();
  }
  uint32_t constant(const Tensor& t) {
    Tensor c = t.contiguous();
    std::vector<unsigned char> bytes(c.numel() * c.element_size());
    std::memcpy(bytes.data(), c.data_ptr(), bytes.size());
    spec_.segments.push_back(bytes);
    return add({.dtype = schema_dtype(t.scalar_type()), .shape = shape_of(t.sizes()), .location = fb::Location::Constant,
                .max_bytes = bytes.size(), .segment = static_cast<uint32_t>(spec_.segments.size() - 1)});
  }
  uint32_t view(uint32_t base, IntArrayRef sizes, IntArrayRef strides, int64_t offset = 0) {
    return add({.dtype = method_.values[base].dtype, .shape = shape_of(sizes), .strides = shape_of(strides),
                .location = fb::Location::View, .base = base, .view_offset = lit(offset)});
  }
  uint32_t output(IntArrayRef sizes, ScalarType dtype = kFloat32) {
    outputs_.push_back(empty(sizes, dtype));
    method_.outputs.push_back(add({.dtype = schema_dtype(dtype), .shape = shape_of(sizes),
                                   .location = fb::Location::Output, .slot = static_cast<uint32_t>(outputs_.size() - 1)}));
    return method_.outputs.back();
  }
  void call(const std::string& op, std::vector<uint32_t> in, std::vector<uint32_t> out,
            std::vector<AttributeSpec> attributes = {}) {
    auto found = std::find(spec_.operators.begin(), spec_.operators.end(), op);
    if (found == spec_.operators.end()) found = spec_.operators.insert(found, op);
    method_.instructions.push_back(call_spec(static_cast<uint32_t>(found - spec_.operators.begin()), in, out, attributes));
  }

  // The load's error message ("" when the program loads).
  std::string load_error() {
    spec_.methods = {method_};
    Loaded loaded(spec_);
    return loaded.status == EMBER_RT_OK ? "" : loaded.message;
  }

  // Loads and runs the program; the outputs, or the run's status in *status.
  std::vector<Tensor> run(EmberRtStatus* status = nullptr) {
    spec_.methods = {method_};
    Loaded loaded(spec_);
    EXPECT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
    if (loaded.status != EMBER_RT_OK) return {};
    std::vector<EmberRtTensor> ins, outs;
    for (const Tensor& t : inputs_)
      ins.push_back(tensor(t.data_ptr(), static_cast<EmberRtDtype>(t.scalar_type()), t.sizes()));
    for (const Tensor& t : outputs_)
      outs.push_back(tensor(t.data_ptr(), static_cast<EmberRtDtype>(t.scalar_type()), {}, t.numel() * t.element_size()));
    const EmberRtStatus result = ember_rt_run(loaded.method(), ins.data(), ins.size(), outs.data(), outs.size());
    if (status != nullptr) *status = result;
    else EXPECT_EQ(result, EMBER_RT_OK) << ember_rt_last_error();
    return outputs_;
  }

 private:
  static InstructionSpec call_spec(uint32_t op, std::vector<uint32_t> in, std::vector<uint32_t> out,
                                   std::vector<AttributeSpec> attributes) {
    return testing::call(CallSpec{op, std::move(in), std::move(out), std::move(attributes)});
  }
  uint32_t add(ValueSpec v) {
    method_.values.push_back(std::move(v));
    return static_cast<uint32_t>(method_.values.size() - 1);
  }
  ProgramSpec spec_;
  MethodSpec method_;
  std::vector<Tensor> inputs_, outputs_;
};

void expect_bitwise_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type());
  Tensor e = expected.contiguous();
  EXPECT_EQ(std::memcmp(actual.data_ptr(), e.data_ptr(), e.numel() * e.element_size()), 0)
      << "max difference " << (actual.to(kFloat64) - e.to(kFloat64)).abs().max().item<double>();
}

TEST(RuntimeKernels, LinearEqualsEagerLinear) {
  manual_seed(3);
  for (bool with_bias : {false, true}) {
    Tensor x = randn({7, 33}), w = randn({65, 33}), b = randn({65});
    ProgramMaker p;
    uint32_t xi = p.input(x), wi = p.constant(w), out = p.output({7, 65});
    std::vector<uint32_t> in{xi, wi};
    if (with_bias) in.push_back(p.constant(b));
    p.call("linear", in, {out});
    expect_bitwise_equal(p.run()[0], with_bias ? linear(x, w, b) : linear(x, w));
  }
}

TEST(RuntimeKernels, LinearOnThreeDimsAndOnStridedInputs) {
  manual_seed(4);
  Tensor x = randn({2, 5, 16}), w = randn({24, 16}), b = randn({24});
  {
    ProgramMaker p;
    uint32_t out = p.output({2, 5, 24});
    p.call("linear", {p.input(x), p.constant(w), p.constant(b)}, {out});
    expect_bitwise_equal(p.run()[0], linear(x, w, b));
  }
  {  // x^T: a transposed view of the input [16, 9]
    Tensor xt = randn({16, 9});
    ProgramMaker p;
    uint32_t base = p.input(xt), out = p.output({9, 24});
    p.call("linear", {p.view(base, {9, 16}, {1, 9}), p.constant(w), p.constant(b)}, {out});
    expect_bitwise_equal(p.run()[0], linear(xt.t(), w, b));
  }
  {  // [2, 5, 16] transposed to [5, 2, 16]: leading dims that do not merge, copied to scratch
    ProgramMaker p;
    uint32_t base = p.input(x), out = p.output({5, 2, 24});
    p.call("linear", {p.view(base, {5, 2, 16}, {16, 80, 1}), p.constant(w)}, {out});
    expect_bitwise_equal(p.run()[0], linear(x.transpose(0, 1), w));
  }
}

// quantized_linear against quantized::linear at every dispatch level this CPU has (the levels
// run different kernel builds, whose sums differ in order): decoding's few rows (activations
// quantized) and a prompt's many (weights widened), int8 and int4, float32 and bfloat16, with
// and without bias, on a strided 3-D input.
TEST(RuntimeKernels, QuantizedLinearEqualsEagerAtEveryDispatchLevel) {
  manual_seed(8);
  const cpu::Capability best = cpu::cpu_capability();
  for (cpu::Capability wanted : cpu::kAllCapabilities) {
    const cpu::Capability level = cpu::set_cpu_capability(wanted);
    if (level != wanted) continue;
    for (quantized::Format format : {quantized::Format::kInt8, quantized::Format::kInt4}) {
      const quantized::QuantizedWeight w = quantized::quantize(randn({40, 96}), format);
      const Tensor b = randn({40});
      for (ScalarType dtype : {kFloat32, kBFloat16})
        for (int64_t rows : {1, 3, 8, 9, 21})
          for (bool with_bias : {false, true}) {
            const Tensor x = randn({rows, 96}).to(dtype), bias = b.to(dtype);
            ProgramMaker p;
            uint32_t xi = p.input(x), out = p.output({rows, 40}, dtype);
            std::vector<uint32_t> in{xi, p.constant(w.values), p.constant(w.scales)};
            if (with_bias) in.push_back(p.constant(bias));
            p.call("quantized_linear", in, {out});
            SCOPED_TRACE(std::string(cpu::capability_name(level)) + " " + quantized::format_name(format) + " " +
                         dtype_name(dtype) + " rows " + std::to_string(rows) + (with_bias ? " bias" : ""));
            expect_bitwise_equal(p.run()[0], quantized::linear(x, w, with_bias ? bias : Tensor()));
          }
      // [2, 5, 96] transposed to [5, 2, 96]: leading dims that do not merge, copied to scratch.
      const Tensor x = randn({2, 5, 96});
      ProgramMaker p;
      uint32_t base = p.input(x), out = p.output({5, 2, 40});
      p.call("quantized_linear", {p.view(base, {5, 2, 96}, {96, 480, 1}), p.constant(w.values), p.constant(w.scales)},
             {out});
      expect_bitwise_equal(p.run()[0], quantized::linear(x.transpose(0, 1), w));
    }
  }
  cpu::set_cpu_capability(best);
}

// Operands no exporter writes: refused at load (dtypes, ranks) or at run (sizes), naming the op.
TEST(RuntimeKernels, QuantizedLinearRefusesBadOperands) {
  manual_seed(9);
  const quantized::QuantizedWeight int8 = quantized::quantize_int8(randn({8, 64}));
  const quantized::QuantizedWeight int4 = quantized::quantize_int4(randn({8, 64}));
  auto message = [](ProgramMaker& p, EmberRtStatus expected) {
    EmberRtStatus status = EMBER_RT_OK;
    p.run(&status);
    EXPECT_EQ(status, expected);
    return std::string(ember_rt_last_error());
  };
  auto load_message = [](ProgramMaker& p) {
    const std::string text = p.load_error();
    EXPECT_NE(text, "") << "loaded";
    return text;
  };
  {  // float32 values
    ProgramMaker p;
    uint32_t out = p.output({2, 8});
    p.call("quantized_linear", {p.input(randn({2, 64})), p.constant(randn({8, 64})), p.constant(int8.scales)}, {out});
    EXPECT_NE(load_message(p).find("[quantized_linear] expects int8 values (int8 blocks) or uint8 (int4 blocks) and "
                                   "float16 scales, got Float32 and Float16"),
              std::string::npos);
  }
  {  // float32 scales
    ProgramMaker p;
    uint32_t out = p.output({2, 8});
    p.call("quantized_linear", {p.input(randn({2, 64})), p.constant(int8.values), p.constant(int8.scales.to(kFloat32))},
           {out});
    EXPECT_NE(load_message(p).find("float16 scales, got Int8 and Float32"), std::string::npos);
  }
  {  // a bias of another dtype than x
    ProgramMaker p;
    uint32_t out = p.output({2, 8});
    p.call("quantized_linear",
           {p.input(randn({2, 64})), p.constant(int8.values), p.constant(int8.scales), p.constant(randn({8}).to(kBFloat16))},
           {out});
    EXPECT_NE(load_message(p).find("[quantized_linear] x, bias and out must be of one dtype"), std::string::npos);
  }
  {  // int4 values [8, 64]: int8's layout under int4's dtype
    ProgramMaker p;
    uint32_t out = p.output({2, 8});
    p.call("quantized_linear", {p.input(randn({2, 64})), p.constant(int8.values.to(kUInt8)), p.constant(int4.scales)},
           {out});
    EXPECT_EQ(message(p, EMBER_RT_ERROR_KERNEL), "[quantized_linear] int4 values [8, 64], expected [8, 32]");
  }
  {  // 40 input features: not 32 per scale
    ProgramMaker p;
    uint32_t out = p.output({2, 8});
    p.call("quantized_linear",
           {p.input(randn({2, 40})), p.constant(int8.values.narrow(1, 0, 40)), p.constant(int8.scales.narrow(1, 0, 1))},
           {out});
    EXPECT_EQ(message(p, EMBER_RT_ERROR_KERNEL),
              "[quantized_linear] input with 40 features, scales [8, 1]: the features must be 32 per scale, a positive "
              "multiple of 32");
  }
  {  // an output of the wrong width
    ProgramMaker p;
    uint32_t out = p.output({2, 9});
    p.call("quantized_linear", {p.input(randn({2, 64})), p.constant(int4.values), p.constant(int4.scales)}, {out});
    EXPECT_EQ(message(p, EMBER_RT_ERROR_KERNEL), "[quantized_linear] output must be contiguous [..., N]");
  }
}

TEST(RuntimeKernels, EmbeddingEqualsEagerAndChecksIndices) {
  manual_seed(5);
  Tensor weight = randn({11, 6}), indices = randint(11, {3, 4});
  ProgramMaker p;
  uint32_t w = p.constant(weight), i = p.input(indices), out = p.output({3, 4, 6});
  p.call("embedding", {w, i}, {out});
  expect_bitwise_equal(p.run()[0], embedding(weight, indices));

  Tensor bad = indices.clone();
  bad.data_ptr<int64_t>()[5] = 11;
  ProgramMaker q;
  uint32_t w2 = q.constant(weight), i2 = q.input(bad), out2 = q.output({3, 4, 6});
  q.call("embedding", {w2, i2}, {out2});
  EmberRtStatus status = EMBER_RT_OK;
  q.run(&status);
  EXPECT_EQ(status, EMBER_RT_ERROR_KERNEL);
  EXPECT_STREQ(ember_rt_last_error(), "[embedding] index 11 is out of bounds for 11 embeddings");
}

// The kernels this binary registers (every one: cmake/runtime.cmake's list from the op table)
// are exactly the op table's rows marked Runtime.
TEST(RuntimeKernels, RegisteredKernelsAreTheOpTablesRuntimeRows) {
  std::set<std::string> registered, table;
  for (const Kernel* kernel : registered_kernels()) registered.insert(kernel->name);
#define EMBER_RUNTIME_ROW(name, program) \
  if (detail::OpProgram::program == detail::OpProgram::Runtime) table.insert(#name);
#define EMBER_UNARY(name, program, ...) EMBER_RUNTIME_ROW(name, program)
#define EMBER_UNARY_WITH_PARAMS(name, program, ...) EMBER_RUNTIME_ROW(name, program)
#define EMBER_BINARY(name, program, ...) EMBER_RUNTIME_ROW(name, program)
#define EMBER_PROGRAM(name, program, ...) EMBER_RUNTIME_ROW(name, program)
#include "ember/detail/op_table.def"
#undef EMBER_RUNTIME_ROW
  EXPECT_EQ(registered, table);
  for (const char* op : {"add", "exp", "gelu", "linear", "conv2d", "stack"}) EXPECT_EQ(table.count(op), 1u) << op;
}

// Every binary row marked Runtime (add and sub with alpha 0.5), broadcasting both ways.
TEST(RuntimeKernels, BinaryOpsBroadcastLikeEager) {
  manual_seed(6);
  Tensor a = randn({3, 1, 4}), b = randn({5, 1});
  std::vector<std::pair<std::string, Tensor>> cases;
#define EMBER_EAGER_BinaryScalarAlpha(name) ember::name(a, b, 0.5)
#define EMBER_EAGER_BinaryScalar(name) ember::name(a, b)
#define EMBER_EAGER_BinaryInplace(name) ember::name(a, b)
#define EMBER_EAGER_Binary(name) ember::name(a, b)
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...) \
  if (detail::OpProgram::program == detail::OpProgram::Runtime) cases.push_back({#name, EMBER_EAGER_##api(name)});
#include "ember/detail/op_table.def"
  ASSERT_GE(cases.size(), 4u);
  for (const auto& [op, expected] : cases) {
    ProgramMaker p;
    uint32_t ai = p.input(a), bi = p.constant(b), out = p.output({3, 5, 4});
    std::vector<AttributeSpec> attributes;
    if (op == "add" || op == "sub")
      attributes.push_back(AttributeSpec{.name = "alpha", .kind = fb::AttributeKind::Float, .float_value = 0.5});
    p.call(op, {ai, bi}, {out}, attributes);
    SCOPED_TRACE(op);
    expect_bitwise_equal(p.run()[0], expected);
  }
}

TEST(RuntimeKernels, ReluOnALargeStridedInputEqualsEager) {
  manual_seed(7);
  Tensor x = randn({300, 257});  // more than one parallel chunk
  ProgramMaker p;
  uint32_t base = p.input(x), out = p.output({257, 300});
  p.call("relu", {p.view(base, {257, 300}, {1, 257})}, {out});
  expect_bitwise_equal(p.run()[0], relu(x.t()));
}

TEST(RuntimeKernels, RmsNormEqualsEager) {
  manual_seed(8);
  namespace F = nn::functional;
  Tensor x = randn({3, 5, 48}), weight = randn({48});
  for (bool with_weight : {true, false}) {
    ProgramMaker p;
    uint32_t base = p.input(x), out = p.output({5, 3, 48});
    std::vector<uint32_t> in{p.view(base, {5, 3, 48}, {48, 240, 1})};  // transposed: copied first
    if (with_weight) in.push_back(p.constant(weight));
    p.call("rms_norm", in, {out},
           {AttributeSpec{.name = "normalized_shape", .kind = fb::AttributeKind::Ints, .ints = {48}},
            AttributeSpec{.name = "eps", .kind = fb::AttributeKind::Float, .float_value = 1e-5}});
    auto options = F::RMSNormFuncOptions({48}).eps(1e-5);
    if (with_weight) options.weight(weight);
    expect_bitwise_equal(p.run()[0], F::rms_norm(x.transpose(0, 1), options));
  }
}

TEST(RuntimeKernels, SwigluEqualsEager) {
  manual_seed(9);
  Tensor a = randn({4, 37}), b = randn({37, 4});
  ProgramMaker p;
  uint32_t ai = p.input(a), bi = p.input(b), out = p.output({4, 37});
  p.call("swiglu", {ai, p.view(bi, {4, 37}, {1, 4})}, {out});
  expect_bitwise_equal(p.run()[0], nn::functional::swiglu(a, b.t()));
}

TEST(RuntimeKernels, RotaryEmbeddingOnATransposedViewEqualsEager) {
  manual_seed(10);
  // The GPT's layout: q [B, T, H * hd] seen as [B, H, T, hd]; cos/sin rows from a table at an
  // offset (the cached positions).
  const int64_t B = 2, T = 5, H = 3, hd = 8, table_rows = 12, offset = 4;
  Tensor q = randn({B, T, H * hd}), cos_table = randn({table_rows, hd / 2}), sin_table = randn({table_rows, hd / 2});
  ProgramMaker p;
  uint32_t qi = p.input(q), cos_i = p.constant(cos_table), sin_i = p.constant(sin_table), out = p.output({B, H, T, hd});
  p.call("rotary_embedding",
         {p.view(qi, {B, H, T, hd}, {T * H * hd, hd, H * hd, 1}), p.view(cos_i, {T, hd / 2}, {hd / 2, 1}, offset * hd / 2),
          p.view(sin_i, {T, hd / 2}, {hd / 2, 1}, offset * hd / 2)},
         {out});
  Tensor expected = nn::functional::rotary_embedding(q.view({B, T, H, hd}).transpose(1, 2),
                                                     cos_table.narrow(0, offset, T), sin_table.narrow(0, offset, T));
  expect_bitwise_equal(p.run()[0], expected);
}

TEST(RuntimeKernels, CopyIntoAnInputInPlaceCloneAndTo) {
  manual_seed(11);
  // The KV cache append: cache [1, 2, 6, 4] (an input the program writes) gets k [1, 2, 3, 4]
  // at positions 2..4.
  Tensor cache = randn({1, 2, 6, 4}), k = randn({1, 2, 3, 4});
  Tensor expected = cache.clone();
  expected.narrow(2, 2, 3).copy_(k);
  ProgramMaker p;
  uint32_t cache_i = p.input(cache), k_i = p.input(k), out = p.output({1, 2, 6, 4});
  p.call("copy_", {p.view(cache_i, {1, 2, 3, 4}, {48, 24, 4, 1}, 8), k_i}, {});
  p.call("clone", {cache_i}, {out});
  expect_bitwise_equal(p.run()[0], expected);

  Tensor x = randn({3, 7});
  ProgramMaker q;
  uint32_t xi = q.input(x), converted = q.output({7, 3}, kBFloat16);
  q.call("to", {q.view(xi, {7, 3}, {1, 7})}, {converted},
         {AttributeSpec{.name = "dtype", .kind = fb::AttributeKind::Int, .int_value = static_cast<int64_t>(kBFloat16)}});
  expect_bitwise_equal(q.run()[0], x.t().to(kBFloat16));
}

// Prefill (L = S) and decoding over a cache (q_offset = the cached length, keys a narrowed
// view of the cache), with and without a sliding window, grouped-query heads.
TEST(RuntimeKernels, FlexAttentionWithTheCausalMaskEqualsEager) {
  namespace A = nn::attention;
  manual_seed(12);
  const int64_t B = 1, Hq = 4, Hkv = 2, E = 16, cache_len = 40;
  struct Case {
    int64_t L, offset, window;
  };
  for (const Case& c : {Case{37, 0, 0}, Case{37, 0, 6}, Case{1, 21, 0}, Case{3, 30, 8}, Case{1, 0, 0}}) {
    const int64_t S = c.offset + c.L;
    Tensor q = randn({B, Hq, c.L, E}), k_cache = randn({B, Hkv, cache_len, E}), v_cache = randn({B, Hkv, cache_len, E});
    const int32_t offset = static_cast<int32_t>(c.offset), window = static_cast<int32_t>(c.window);
    auto mask = [offset, window](auto, auto, auto qi, auto kv) {
      return qi + offset >= kv && (window == 0 || qi + offset - kv < window);
    };
    A::BlockMask block_mask = A::create_block_mask(mask, 1, 1, c.L, S, A::BlockSize(16, 16));
    Tensor expected = A::flex_attention(q, k_cache.narrow(2, 0, S), v_cache.narrow(2, 0, S), block_mask,
                                        A::FlexAttentionOptions().set_enable_gqa(true))
                          .output;
    ProgramMaker p;
    uint32_t qi = p.input(q), ki = p.input(k_cache), vi = p.input(v_cache), out = p.output({B, Hq, c.L, E});
    const std::vector<int64_t> cache_strides = {Hkv * cache_len * E, cache_len * E, E, 1};
    p.call("flex_attention", {qi, p.view(ki, {B, Hkv, S, E}, cache_strides), p.view(vi, {B, Hkv, S, E}, cache_strides)},
           {out},
           {AttributeSpec{.name = "mask", .kind = fb::AttributeKind::String, .string_value = "causal"},
            AttributeSpec{.name = "q_offset", .kind = fb::AttributeKind::Int, .int_value = c.offset},
            AttributeSpec{.name = "window", .kind = fb::AttributeKind::Int, .int_value = c.window},
            AttributeSpec{.name = "block_q", .kind = fb::AttributeKind::Int, .int_value = 16},
            AttributeSpec{.name = "block_kv", .kind = fb::AttributeKind::Int, .int_value = 16},
            AttributeSpec{.name = "enable_gqa", .kind = fb::AttributeKind::Int, .int_value = 1}});
    SCOPED_TRACE("L " + std::to_string(c.L) + " offset " + std::to_string(c.offset) + " window " +
                 std::to_string(c.window));
    expect_bitwise_equal(p.run()[0], expected);
  }
}

// Every unary row marked Runtime.
TEST(RuntimeKernels, UnaryOpsEqualEager) {
  manual_seed(13);
  Tensor x = randn({6, 50}).abs() + 0.1;  // rsqrt's domain
  std::vector<std::pair<std::string, Tensor>> cases;
#define EMBER_UNARY(name, program, ...) \
  if (detail::OpProgram::program == detail::OpProgram::Runtime) cases.push_back({#name, ember::name(x)});
#include "ember/detail/op_table.def"
  ASSERT_GE(cases.size(), 6u);
  for (const auto& [op, expected] : cases) {
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output({6, 50});
    p.call(op, {xi}, {out});
    SCOPED_TRACE(op);
    expect_bitwise_equal(p.run()[0], expected);
  }
}

// Strides, padding, dilation and groups, a bias, an input that is a view (copied first).
TEST(RuntimeKernels, ConvolutionsEqualEager) {
  manual_seed(14);
  auto ints = [](std::vector<int64_t> values, const char* name) {
    return AttributeSpec{.name = name, .kind = fb::AttributeKind::Ints, .ints = std::move(values)};
  };
  {
    Tensor x = randn({2, 4, 9, 11}), w = randn({6, 2, 3, 2}), b = randn({6});
    Tensor expected = conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}, 2);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    p.call("conv2d", {xi, p.constant(w), p.constant(b)}, {out},
           {ints({2, 1}, "stride"), ints({1, 0}, "padding"), ints({1, 2}, "dilation"),
            AttributeSpec{.name = "groups", .kind = fb::AttributeKind::Int, .int_value = 2}});
    expect_bitwise_equal(p.run()[0], expected);
  }
  {
    Tensor x = randn({3, 7, 2}), w = randn({5, 3, 3});  // x permuted [2, 3, 7] -> [2, 5, 7] with padding 1
    Tensor expected = conv1d(x.permute({2, 0, 1}), w, {}, 1, 1);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    p.call("conv1d", {p.view(xi, {2, 3, 7}, {1, 14, 2}), p.constant(w)}, {out}, {ints({1}, "padding")});
    expect_bitwise_equal(p.run()[0], expected);
  }
  {
    Tensor x = randn({1, 2, 4, 5, 6}), w = randn({3, 2, 2, 2, 3});
    Tensor expected = conv3d(x, w);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    p.call("conv3d", {xi, p.constant(w)}, {out});
    expect_bitwise_equal(p.run()[0], expected);
  }
}

AttributeSpec ints_attribute(const char* name, std::vector<int64_t> values) {
  return AttributeSpec{.name = name, .kind = fb::AttributeKind::Ints, .ints = std::move(values)};
}
AttributeSpec int_attribute(const char* name, int64_t value) {
  return AttributeSpec{.name = name, .kind = fb::AttributeKind::Int, .int_value = value};
}

// The attributes the exporter records for a pooling call (src/ops/pooling.cpp, trace_windows).
std::vector<AttributeSpec> pool_attributes(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                                           std::vector<int64_t> padding, bool ceil_mode) {
  return {ints_attribute("kernel_size", std::move(kernel)), ints_attribute("stride", std::move(stride)),
          ints_attribute("padding", std::move(padding)), int_attribute("ceil_mode", ceil_mode)};
}

TEST(RuntimeKernels, MaxPoolingEqualsEager) {
  manual_seed(21);
  {  // 2-d on a transposed view, dilation, ceil_mode, with indices
    Tensor x = randn({2, 3, 11, 9});
    const Tensor xt = x.transpose(2, 3);  // [2, 3, 9, 11]
    auto [expected, indices] = max_pool2d_with_indices(xt, {3, 2}, {2, 3}, {1, 1}, {1, 2}, true);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes()), idx = p.output(indices.sizes(), kInt64);
    auto attributes = pool_attributes({3, 2}, {2, 3}, {1, 1}, true);
    attributes.push_back(ints_attribute("dilation", {1, 2}));
    attributes.push_back(int_attribute("return_indices", 1));
    p.call("max_pool2d", {p.view(xi, {2, 3, 9, 11}, {297, 99, 1, 9})}, {out, idx}, attributes);
    const std::vector<Tensor> result = p.run();
    expect_bitwise_equal(result[0], expected);
    expect_bitwise_equal(result[1], indices);
  }
  {  // 1-d unbatched [C, L], float64, no indices
    Tensor x = randn({4, 13}, TensorOptions().dtype(kFloat64));
    Tensor expected = max_pool1d(x, {4}, {3}, {2});
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes(), kFloat64);
    p.call("max_pool1d", {xi}, {out}, pool_attributes({4}, {3}, {2}, false));
    expect_bitwise_equal(p.run()[0], expected);
  }
  {  // 3-d
    Tensor x = randn({1, 2, 5, 6, 7});
    Tensor expected = max_pool3d(x, {2, 3, 2}, {2, 2, 3});
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    p.call("max_pool3d", {xi}, {out}, pool_attributes({2, 3, 2}, {2, 2, 3}, {0}, false));
    expect_bitwise_equal(p.run()[0], expected);
  }
}

TEST(RuntimeKernels, AveragePoolingEqualsEager) {
  manual_seed(22);
  {  // padding left out of the divisor, ceil_mode
    Tensor x = randn({2, 3, 10, 7});
    Tensor expected = avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    auto attributes = pool_attributes({3, 3}, {2, 2}, {1, 1}, true);
    attributes.push_back(int_attribute("count_include_pad", 0));
    attributes.push_back(int_attribute("divisor_override", 0));
    p.call("avg_pool2d", {xi}, {out}, attributes);
    expect_bitwise_equal(p.run()[0], expected);
  }
  {  // 3-d with divisor_override, float64
    Tensor x = randn({2, 1, 4, 5, 6}, TensorOptions().dtype(kFloat64));
    Tensor expected = avg_pool3d(x, {2, 2, 3}, {1, 2, 2}, {1, 0, 1}, false, true, 5);
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes(), kFloat64);
    auto attributes = pool_attributes({2, 2, 3}, {1, 2, 2}, {1, 0, 1}, false);
    attributes.push_back(int_attribute("divisor_override", 5));
    p.call("avg_pool3d", {xi}, {out}, attributes);
    expect_bitwise_equal(p.run()[0], expected);
  }
  {  // 1-d
    Tensor x = randn({3, 2, 9});
    Tensor expected = avg_pool1d(x, {3}, {2}, {1});
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(expected.sizes());
    p.call("avg_pool1d", {xi}, {out}, pool_attributes({3}, {2}, {1}, false));
    expect_bitwise_equal(p.run()[0], expected);
  }
}

TEST(RuntimeKernels, PoolingRefusesBadAttributesAtLoadAndWrongSizesAtRun) {
  const Tensor x = randn({1, 2, 8, 8});
  auto run_message = [&](const char* op, std::vector<AttributeSpec> attributes, IntArrayRef out_sizes) {
    ProgramMaker p;
    uint32_t xi = p.input(x), out = p.output(out_sizes);
    p.call(op, {xi}, {out}, std::move(attributes));
    EmberRtStatus status = EMBER_RT_OK;
    p.run(&status);
    return std::make_pair(status, std::string(ember_rt_last_error()));
  };
  // Refused at load: padding beyond half the kernel, a zero kernel, a Float where Ints belong.
  {
    ProgramSpec spec;
    spec.operators = {"max_pool2d"};
    MethodSpec m;
    m.values = {ValueSpec{.name = "x", .shape = lits({1, 2, 8, 8}), .location = fb::Location::Input, .slot = 0},
                ValueSpec{.name = "y", .shape = lits({1, 2, 4, 4}), .location = fb::Location::Output, .slot = 0}};
    m.inputs = {0};
    m.outputs = {1};
    auto load = [&](std::vector<AttributeSpec> attributes) {
      m.instructions = {call({.op = 0, .inputs = {0}, .outputs = {1}, .attributes = std::move(attributes)})};
      spec.methods = {m};
      return std::make_unique<Loaded>(spec);
    };
    for (auto attributes : {pool_attributes({2, 2}, {2, 2}, {2, 0}, false), pool_attributes({0, 2}, {1, 1}, {0}, false),
                            std::vector<AttributeSpec>{AttributeSpec{.name = "kernel_size",
                                                                     .kind = fb::AttributeKind::Float, .float_value = 2}}}) {
      const auto loaded = load(attributes);
      EXPECT_EQ(loaded->status, EMBER_RT_ERROR_INVALID_PROGRAM);
      EXPECT_NE(loaded->message.find("[max_pool2d]"), std::string::npos) << loaded->message;
    }
    EXPECT_EQ(load(pool_attributes({2, 2}, {2, 2}, {0}, true))->status, EMBER_RT_OK);
  }
  // An output whose size the windows do not give: an error at run naming both sizes.
  const auto [status, message] = run_message("avg_pool2d", pool_attributes({3, 3}, {3, 3}, {0}, false), {1, 2, 4, 4});
  EXPECT_EQ(status, EMBER_RT_ERROR_KERNEL);
  EXPECT_NE(message.find("[avg_pool2d] spatial dim 0: input 8 gives 2 outputs, the output has 4"), std::string::npos)
      << message;
}

TEST(RuntimeKernels, CatAndStackEqualEager) {
  manual_seed(23);
  Tensor a = randn({2, 3, 4}), b = randn({2, 5, 4}), c = randn({4, 3, 2});
  {
    Tensor expected = cat({a, b, c.permute({2, 1, 0})}, 1);  // a strided third part
    ProgramMaker p;
    uint32_t ai = p.input(a), bi = p.input(b), ci = p.input(c), out = p.output(expected.sizes());
    p.call("cat", {ai, bi, p.view(ci, {2, 3, 4}, {1, 2, 6})}, {out}, {int_attribute("dim", 1)});
    expect_bitwise_equal(p.run()[0], expected);
  }
  for (int64_t dim : {0, 1, 3}) {
    Tensor d = randn({2, 3, 4});
    Tensor expected = stack({a, d}, dim);
    ProgramMaker p;
    uint32_t ai = p.input(a), di = p.input(d), out = p.output(expected.sizes());
    p.call("stack", {ai, di}, {out}, {int_attribute("dim", dim)});
    expect_bitwise_equal(p.run()[0], expected);
  }
  {  // refused at load: dim past the output's dims, an input of another rank
    ProgramSpec spec;
    spec.operators = {"cat", "stack"};
    MethodSpec m;
    m.values = {ValueSpec{.name = "a", .shape = lits({2, 3}), .location = fb::Location::Input, .slot = 0},
                ValueSpec{.name = "b", .shape = lits({2}), .location = fb::Location::Input, .slot = 1},
                ValueSpec{.name = "y", .shape = lits({4, 3}), .location = fb::Location::Output, .slot = 0}};
    m.inputs = {0, 1};
    m.outputs = {2};
    for (const auto& [op, inputs, dim, fragment] :
         {std::tuple<uint32_t, std::vector<uint32_t>, int64_t, std::string>{0, {0, 0}, 2, "[cat] dim 2 outside"},
          {0, {0, 1}, 0, "[cat] inputs of 1 dims for an output of 2"},
          {1, {0, 0}, 0, "[stack] inputs of 2 dims for an output of 2"}}) {
      m.instructions = {call({.op = op, .inputs = inputs, .outputs = {2}, .attributes = {int_attribute("dim", dim)}})};
      spec.methods = {m};
      Loaded loaded(spec);
      EXPECT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM);
      EXPECT_NE(loaded.message.find(fragment), std::string::npos) << loaded.message;
    }
  }
  {  // inputs that do not fill the output: an error, not a partial write
    ProgramMaker p;
    uint32_t ai = p.input(a), out = p.output({2, 4, 4});
    p.call("cat", {ai}, {out}, {int_attribute("dim", 1)});
    EmberRtStatus status = EMBER_RT_OK;
    p.run(&status);
    EXPECT_EQ(status, EMBER_RT_ERROR_KERNEL);
    EXPECT_NE(std::string(ember_rt_last_error()).find("[cat]"), std::string::npos);
  }
}

TEST(RuntimeKernels, CopyIntoAConstantIsRefusedAtLoad) {
  ProgramSpec spec;
  spec.operators = {"copy_"};
  spec.segments = {float_bytes({1, 2, 3, 4})};
  MethodSpec m;
  m.values = {ValueSpec{.name = "w", .shape = lits({4}), .location = fb::Location::Constant, .max_bytes = 16},
              ValueSpec{.name = "x", .shape = lits({4}), .location = fb::Location::Input, .slot = 0},
              ValueSpec{.name = "y", .shape = lits({4}), .location = fb::Location::Output, .slot = 0}};
  m.inputs = {1};
  m.outputs = {2};
  m.instructions = {call({.op = 0, .inputs = {0, 1}, .outputs = {}}), call({.op = 0, .inputs = {2, 1}, .outputs = {}})};
  spec.methods = {m};
  Loaded loaded(spec);
  EXPECT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM);
  EXPECT_NE(loaded.message.find("call of copy_ writes its input 0 in place, which is missing or a constant"),
            std::string::npos)
      << loaded.message;
}

}  // namespace
}  // namespace ember::rt::testing
