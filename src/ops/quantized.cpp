// Weight-only int8 linear layers (ember/quantized.h): checks and layout here, the blocks and
// the product in cpu/quantized.cpp.
#include "ember/quantized.h"

#include "cpu/quantized.h"
#include "ops/op_utils.h"

namespace ember::quantized {
namespace {

void check_weight(const Tensor& values, const Tensor& scales, const char* op) {
  EMBER_CHECK(values.defined() && scales.defined(), op, "the weight's values or scales are undefined");
  EMBER_CHECK(values.scalar_type() == kInt8 && values.dim() == 2, op, "values must be a 2-D int8 tensor, got ",
              dtype_name(values.scalar_type()), " of shape ", values.sizes());
  const int64_t out = values.size(0), in = values.size(1);
  EMBER_CHECK(in % kBlockSize == 0 && in > 0, op, "in_features (", in, ") must be a positive multiple of ",
              kBlockSize);
  EMBER_CHECK(scales.scalar_type() == kFloat16 && scales.dim() == 2 && scales.size(0) == out &&
                  scales.size(1) == in / kBlockSize,
              op, "scales must be float16 of shape [", out, ", ", in / kBlockSize, "], got ",
              dtype_name(scales.scalar_type()), " of shape ", scales.sizes());
}

}  // namespace

Int8Weight int8_weight(Tensor values, Tensor scales) {
  check_weight(values, scales, "quantized::int8_weight");
  return {values.contiguous(), scales.contiguous()};
}

Int8Weight quantize_int8(const Tensor& weight) {
  EMBER_CHECK(weight.defined() && weight.dim() == 2 && is_floating_point(weight.scalar_type()),
              "quantized::quantize_int8", "expected a 2-D floating weight [out_features, in_features], got ",
              weight.defined() ? weight.sizes() : IntArrayRef());
  const int64_t out = weight.size(0), in = weight.size(1);
  EMBER_CHECK(in % kBlockSize == 0 && in > 0, "quantized::quantize_int8", "in_features (", in,
              ") must be a positive multiple of ", kBlockSize);
  NoGradGuard no_grad;
  const Tensor source = weight.detach().to(kFloat32).contiguous();
  Int8Weight result{empty({out, in}, TensorOptions().dtype(kInt8)), empty({out, in / kBlockSize}, TensorOptions().dtype(kFloat16))};
  cpu::quantize_int8_weight_rows(source.data_ptr<float>(), out, in, in, static_cast<int8_t*>(result.values.data_ptr()),
                                 static_cast<uint16_t*>(result.scales.data_ptr()));
  return result;
}

Tensor dequantize(const Int8Weight& weight, ScalarType dtype) {
  check_weight(weight.values, weight.scales, "quantized::dequantize");
  const Int8Weight w = int8_weight(weight.values, weight.scales);
  Tensor out = empty({w.out_features(), w.in_features()}, TensorOptions().dtype(kFloat32));
  cpu::dequantize_int8_rows(static_cast<const int8_t*>(w.values.data_ptr()),
                            static_cast<const uint16_t*>(w.scales.data_ptr()), w.out_features(), w.in_features(),
                            out.data_ptr<float>());
  return out.to(dtype);
}

Tensor linear(const Tensor& input, const Int8Weight& weight, const Tensor& bias) {
  EMBER_RECORD_OP("quantized_linear", input, weight.values, weight.scales, bias);
  check_weight(weight.values, weight.scales, "quantized::linear");
  const ScalarType dtype = input.scalar_type();
  EMBER_CHECK(dtype == kFloat32 || dtype == kBFloat16 || dtype == kFloat16, "quantized::linear",
              "input must be float32, bfloat16 or float16, got ", dtype_name(dtype));
  const int64_t in = weight.in_features(), out_features = weight.out_features();
  EMBER_CHECK(input.dim() >= 1 && input.size(-1) == in, "quantized::linear", "input shape ", input.sizes(),
              " does not match the weight's in_features ", in);
  EMBER_CHECK(!(is_grad_enabled() && input.requires_grad()), "quantized::linear",
              "no backward: run it under NoGradGuard (inference only)");
  const Tensor values = weight.values.contiguous(), scales = weight.scales.contiguous();
  const Tensor rows = input.reshape({-1, in}).to(kFloat32).contiguous();
  const int64_t m = rows.size(0);
  Tensor product = empty({m, out_features}, TensorOptions().dtype(kFloat32));
  core::launch("quantized_linear", [&] {
    return [m, n = out_features, k = in, a = rows.data_ptr<float>(), w = static_cast<const int8_t*>(values.data_ptr()),
            s = static_cast<const uint16_t*>(scales.data_ptr()), c = product.data_ptr<float>()] {
      cpu::gemm_int8_weight(m, n, k, a, k, w, s, c, n);
    };
  });
  std::vector<int64_t> shape = input.sizes();
  shape.back() = out_features;
  Tensor result = product.to(dtype).reshape(shape);
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_features, "quantized::linear", "bias shape ", bias.sizes(),
                " does not match out_features ", out_features);
    result = result + bias.to(dtype);
  }
  return ember_trace_op_.result(result);
}

}  // namespace ember::quantized
