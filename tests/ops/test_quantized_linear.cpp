// quantized::linear and its weights (ember/quantized.h), int8 and int4: a prompt-sized input
// against the float64 product with the dequantized weight, and the errors of bad weights.
#include <gtest/gtest.h>

#include "cpu/quantized.h"
#include "ember/ember.h"
#include "test_support.h"

namespace ember {
namespace {

TEST(QuantizedLinear, PromptMatchesFloat64OfDequantizedWeight) {
  NoGradGuard no_grad;
  manual_seed(3);
  const Tensor weight = randn({40, 96}) * 0.05, bias = randn({40});
  for (quantized::Format format : {quantized::Format::kInt8, quantized::Format::kInt4}) {
    const quantized::QuantizedWeight q = quantized::quantize(weight, format);
    EXPECT_EQ(q.format, format);
    EXPECT_EQ(q.out_features(), 40);
    EXPECT_EQ(q.in_features(), 96);
    EXPECT_EQ(q.values.scalar_type(), format == quantized::Format::kInt4 ? kUInt8 : kInt8);
    EXPECT_EQ(q.values.size(1), format == quantized::Format::kInt4 ? 48 : 96);
    // 2 x 6 = 12 rows: more than the 8 a decoding step has, so the activations stay float,
    // unless prompts run on AMX-INT8 tiles (Note [Quantized prompts on AMX]): then the
    // reference takes them quantized in blocks of 32 as the product does.
    const Tensor input = randn({2, 6, 96});
    Tensor activations = input.to(kFloat64);
    EXPECT_STREQ(quantized::prompt_kernel(), cpu::quantizes_activations(12) ? "amx_int8" : "widened_float32");
    if (cpu::quantizes_activations(12)) {
      std::vector<int8_t> values(12 * 96);
      std::vector<float> scales(12 * 3);
      const Tensor rows = input.reshape({12, 96}).contiguous();
      cpu::quantize_int8_activation_rows(rows.data_ptr<float>(), 12, 96, 96, values.data(), scales.data());
      std::vector<double> quantized(12 * 96);
      for (size_t i = 0; i < quantized.size(); ++i) quantized[i] = double(scales[i / 32]) * values[i];
      activations = tensor(quantized, TensorOptions().dtype(kFloat64)).reshape({2, 6, 96});
    }
    const Tensor widened = quantized::dequantize(q, kFloat64);
    EXPECT_LE((widened - weight.to(kFloat64)).abs().max().item<double>(),
              weight.abs().max().item<double>() / (format == quantized::Format::kInt4 ? 8 : 127))
        << "within one step of the largest block's scale";
    const Tensor expected = activations.matmul(widened.t()) + bias.to(kFloat64);
    const Tensor magnitude = activations.abs().matmul(widened.abs().t());
    const Tensor result = quantized::linear(input, q, bias);
    EXPECT_EQ(result.sizes(), (std::vector<int64_t>{2, 6, 40}));
    EXPECT_EQ(result.scalar_type(), kFloat32);
    EXPECT_TRUE(((result.to(kFloat64) - expected).abs() <= magnitude * 1e-5 + 1e-6).all().item<bool>())
        << quantized::format_name(format);
    EXPECT_EQ(quantized::linear(input.to(kBFloat16), q).scalar_type(), kBFloat16);
  }
}

// A decoding step's projections in one job (Note [Grouped products]): each member is bitwise
// quantized::linear's result, for decode-sized inputs (quantized activations) and prompts, with
// int8 and int4 members mixed.
TEST(QuantizedLinear, GroupEqualsSeparateLinears) {
  NoGradGuard no_grad;
  manual_seed(5);
  const std::vector<quantized::QuantizedWeight> weights = {
      quantized::quantize(randn({40, 96}) * 0.05, quantized::Format::kInt4),
      quantized::quantize(randn({8, 96}) * 0.05, quantized::Format::kInt8),
      quantized::quantize(randn({33, 96}) * 0.05, quantized::Format::kInt4)};
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{1, 1, 96}, {3, 96}, {8, 96}, {2, 6, 96}})
    for (ScalarType dtype : {kFloat32, kBFloat16}) {
      const Tensor input = randn(sizes).to(dtype);
      const std::vector<Tensor> grouped = quantized::linear_group(input, weights);
      ASSERT_EQ(grouped.size(), weights.size());
      for (size_t i = 0; i < weights.size(); ++i) {
        const Tensor expected = quantized::linear(input, weights[i]);
        EXPECT_EQ(grouped[i].sizes(), expected.sizes());
        EXPECT_TRUE(equal(grouped[i], expected)) << "member " << i << " input " << IntArrayRef(input.sizes());
      }
    }
  testutil::expect_error([&] { quantized::linear_group(zeros({1, 64}), weights); },
                         {"quantized::linear_group", "does not match the weight's in_features 96"});
}

// bfloat16 and float16 inputs are widened and the products narrowed inside the product's job:
// the float32 product of the widened input, rounded to the input's dtype, bit for bit.
TEST(QuantizedLinear, LowPrecisionInputsEqualTheRoundedFloat32Product) {
  NoGradGuard no_grad;
  manual_seed(6);
  const std::vector<quantized::QuantizedWeight> weights = {
      quantized::quantize(randn({40, 96}) * 0.05, quantized::Format::kInt4),
      quantized::quantize(randn({24, 96}) * 0.05, quantized::Format::kInt8)};
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{1, 1, 96}, {5, 96}, {2, 6, 96}})
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      const Tensor input = randn(sizes).to(dtype);
      const std::vector<Tensor> grouped = quantized::linear_group(input, weights);
      for (size_t i = 0; i < weights.size(); ++i) {
        const Tensor expected = quantized::linear(input.to(kFloat32), weights[i]).to(dtype);
        const Tensor single = quantized::linear(input, weights[i]);
        EXPECT_EQ(single.scalar_type(), dtype);
        EXPECT_TRUE(equal(single, expected)) << dtype_name(dtype) << " " << IntArrayRef(input.sizes());
        EXPECT_TRUE(equal(grouped[i], expected)) << dtype_name(dtype) << " member " << i;
      }
    }
}

TEST(QuantizedLinear, BadWeightsAndInputsThrow) {
  NoGradGuard no_grad;
  const Tensor scales = zeros({4, 2}, kFloat16);
  testutil::expect_error(
      [&] { quantized::quantized_weight(quantized::Format::kInt4, zeros({4, 64}, kInt8), scales); },
      {"quantized::quantized_weight", "int4 values must be uint8 of shape [4, 32]", "int8 of shape [4, 64]"});
  testutil::expect_error(
      [&] { quantized::quantized_weight(quantized::Format::kInt8, zeros({4, 32}, kUInt8), scales); },
      {"int8 values must be int8 of shape [4, 64]"});
  testutil::expect_error(
      [&] { quantized::quantized_weight(quantized::Format::kInt4, zeros({4, 32}, kUInt8), zeros({4, 2})); },
      {"scales must be a 2-D float16 tensor"});
  testutil::expect_error([&] { quantized::quantize_int4(zeros({4, 48})); },
                         {"quantized::quantize_int4", "in_features (48) must be a positive multiple of 32"});
  testutil::expect_error([&] { quantized::quantize_int4(zeros({64})); }, {"expected a 2-D floating weight"});
  testutil::expect_error([&] { quantized::parse_format("q4_k", "op"); }, {"unknown quantization type 'q4_k'"});
  const quantized::QuantizedWeight q = quantized::quantize_int4(zeros({4, 64}));
  testutil::expect_error([&] { quantized::linear(zeros({3, 32}), q); }, {"does not match the weight's in_features 64"});
  testutil::expect_error([&] { quantized::linear(zeros({3, 64}, kFloat64), q); }, {"input must be float32"});
  AutoGradMode grad(true);
  const Tensor trained = zeros({3, 64}).requires_grad_(true);
  testutil::expect_error([&] { quantized::linear(trained, q); }, {"no backward"});
}

}  // namespace
}  // namespace ember
