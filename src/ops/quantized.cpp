// Weight-only quantized linear layers (ember/quantized.h): checks and layout here, the blocks
// and the product in cpu/quantized.cpp.
#include "ember/quantized.h"

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/quantized.h"
#include "ops/op_utils.h"

namespace ember::quantized {
namespace {

cpu::QuantFormat cpu_format(Format format) {
  return format == Format::kInt4 ? cpu::QuantFormat::Int4 : cpu::QuantFormat::Int8;
}

void check_weight(Format format, const Tensor& values, const Tensor& scales, const char* op) {
  EMBER_CHECK(values.defined() && scales.defined(), op, "the weight's values or scales are undefined");
  EMBER_CHECK(scales.scalar_type() == kFloat16 && scales.dim() == 2 && scales.size(1) > 0, op,
              "scales must be a 2-D float16 tensor [out_features, in_features / ", kBlockSize, "], got ",
              dtype_name(scales.scalar_type()), " of shape ", scales.sizes());
  const int64_t out = scales.size(0), in = scales.size(1) * kBlockSize;
  const ScalarType value_dtype = format == Format::kInt4 ? kUInt8 : kInt8;
  const int64_t row_bytes = format == Format::kInt4 ? in / 2 : in;
  EMBER_CHECK(values.scalar_type() == value_dtype && values.dim() == 2 && values.size(0) == out &&
                  values.size(1) == row_bytes,
              op, format_name(format), " values must be ", dtype_name(value_dtype), " of shape [", out, ", ",
              row_bytes, "] (scales ", scales.sizes(), "), got ", dtype_name(values.scalar_type()), " of shape ",
              values.sizes());
}

}  // namespace

const char* format_name(Format format) { return cpu::quant_format_name(cpu_format(format)); }

const char* prompt_kernel() { return cpu::quantized_prompts_on_amx() ? "amx_int8" : "widened_float32"; }

Format parse_format(const std::string& name, const std::string& op) {
  if (name == "int8") return Format::kInt8;
  if (name == "int4") return Format::kInt4;
  EMBER_FAIL(op.c_str(), "unknown quantization type '", name, "' (expected int8 or int4)");
}

QuantizedWeight quantized_weight(Format format, Tensor values, Tensor scales) {
  check_weight(format, values, scales, "quantized::quantized_weight");
  return {format, values.contiguous(), scales.contiguous()};
}

QuantizedWeight quantize(const Tensor& weight, Format format) {
  const std::string op_name = std::string("quantized::quantize_") + format_name(format);
  const char* op = op_name.c_str();
  EMBER_CHECK(weight.defined() && weight.dim() == 2 && is_floating_point(weight.scalar_type()), op,
              "expected a 2-D floating weight [out_features, in_features], got ",
              weight.defined() ? weight.sizes() : IntArrayRef());
  const int64_t out = weight.size(0), in = weight.size(1);
  EMBER_CHECK(in % kBlockSize == 0 && in > 0, op, "in_features (", in, ") must be a positive multiple of ",
              kBlockSize);
  NoGradGuard no_grad;
  const Tensor source = weight.detach().to(kFloat32).contiguous();
  const cpu::QuantFormat layout = cpu_format(format);
  QuantizedWeight result{format,
                         empty({out, cpu::quantized_row_bytes(layout, in)},
                               TensorOptions().dtype(format == Format::kInt4 ? kUInt8 : kInt8)),
                         empty({out, in / kBlockSize}, TensorOptions().dtype(kFloat16))};
  cpu::quantize_weight_rows(layout, source.data_ptr<float>(), out, in, in, result.values.data_ptr(),
                            static_cast<uint16_t*>(result.scales.data_ptr()));
  return result;
}

QuantizedWeight quantize_int8(const Tensor& weight) { return quantize(weight, Format::kInt8); }
QuantizedWeight quantize_int4(const Tensor& weight) { return quantize(weight, Format::kInt4); }

Tensor dequantize(const QuantizedWeight& weight, ScalarType dtype) {
  const QuantizedWeight w = quantized_weight(weight.format, weight.values, weight.scales);
  Tensor out = empty({w.out_features(), w.in_features()}, TensorOptions().dtype(kFloat32));
  cpu::dequantize_weight_rows(cpu_format(w.format), w.values.data_ptr(),
                              static_cast<const uint16_t*>(w.scales.data_ptr()), w.out_features(), w.in_features(),
                              out.data_ptr<float>());
  return out.to(dtype);
}

namespace {

// input [..., in] times each weight's transpose: [..., out_i] in input's dtype, the products of
// the few rows of a decoding step in one job (cpu::gemm_quantized_weight_group).
std::vector<Tensor> quantized_products(const Tensor& input, const std::vector<QuantizedWeight>& weights,
                                       const char* op) {
  EMBER_CHECK(input.defined(), op, "called with an undefined input");
  const ScalarType dtype = input.scalar_type();
  EMBER_CHECK(dtype == kFloat32 || dtype == kBFloat16 || dtype == kFloat16, op,
              "input must be float32, bfloat16 or float16, got ", dtype_name(dtype));
  EMBER_CHECK(!(is_grad_enabled() && input.requires_grad()), op,
              "no backward: run it under NoGradGuard (inference only)");
  std::vector<QuantizedWeight> stored;
  for (const QuantizedWeight& weight : weights) {
    check_weight(weight.format, weight.values, weight.scales, op);
    EMBER_CHECK(input.dim() >= 1 && input.size(-1) == weight.in_features(), op, "input shape ", input.sizes(),
                " does not match the weight's in_features ", weight.in_features());
    stored.push_back({weight.format, weight.values.contiguous(), weight.scales.contiguous()});
  }
  if (stored.empty()) return {};
  const int64_t in = stored.front().in_features();
  // A decoding step's bfloat16 and float16 rows are widened and its products narrowed inside
  // the job, in scratch kept by the thread (two tensors and ops fewer per product: a step runs
  // a hundred of these); a prompt's go through float32 tensors, freed after.
  const int64_t m = input.numel() / in;
  const ScalarType job_dtype = m <= cpu::kQuantizedActivationRows ? dtype : kFloat32;
  const Tensor flat = input.reshape({-1, in});
  const Tensor rows = (job_dtype == dtype ? flat : flat.to(job_dtype)).contiguous();
  std::vector<Tensor> products;
  int64_t total = 0;
  for (const QuantizedWeight& weight : stored) {
    products.push_back(empty({m, weight.out_features()}, TensorOptions().dtype(job_dtype)));
    total += weight.out_features();
  }
  core::launch("quantized_linear", [&] {
    // The pointers are taken here, where a graph capture records them.
    std::vector<cpu::QuantizedGroupMember> members;
    std::vector<void*> outputs;
    for (size_t i = 0; i < stored.size(); ++i) {
      const QuantizedWeight& weight = stored[i];
      members.push_back({cpu_format(weight.format), weight.values.data_ptr(),
                         static_cast<const uint16_t*>(weight.scales.data_ptr()), weight.out_features(), nullptr,
                         weight.out_features()});
      outputs.push_back(products[i].data_ptr());
    }
    return [m, k = in, total, dtype = job_dtype, a = rows.data_ptr(), members, outputs]() mutable {
      if (dtype == kFloat32) {
        for (size_t i = 0; i < members.size(); ++i) members[i].c = static_cast<float*>(outputs[i]);
        cpu::gemm_quantized_weight_group(m, k, static_cast<const float*>(a), k, members);
        return;
      }
      const bool bf16 = dtype == kBFloat16;
      thread_local std::vector<float> wide_rows, wide_products;
      wide_rows.resize(static_cast<size_t>(m * k));
      wide_products.resize(static_cast<size_t>(m * total));
      const auto* narrow_rows = static_cast<const uint16_t*>(a);
      if (bf16) EMBER_KERNEL(gemm_widen_bf16)(narrow_rows, k, m, k, wide_rows.data(), k);
      else EMBER_KERNEL(gemm_widen_f16)(narrow_rows, k, m, k, wide_rows.data(), k);
      float* c = wide_products.data();
      for (cpu::QuantizedGroupMember& member : members) {
        member.c = c;
        c += m * member.n;
      }
      cpu::gemm_quantized_weight_group(m, k, wide_rows.data(), k, members);
      for (size_t i = 0; i < members.size(); ++i) {
        const int64_t n = members[i].n;
        auto* out = static_cast<uint16_t*>(outputs[i]);
        if (bf16) EMBER_KERNEL(gemm_narrow_bf16)(members[i].c, n, m, n, 0.0f, out, n);
        else EMBER_KERNEL(gemm_narrow_f16)(members[i].c, n, m, n, 0.0f, out, n);
      }
    };
  });
  std::vector<int64_t> shape = input.sizes();
  for (size_t i = 0; i < products.size(); ++i) {
    shape.back() = stored[i].out_features();
    products[i] = (job_dtype == dtype ? products[i] : products[i].to(dtype)).reshape(shape);
  }
  return products;
}

}  // namespace

Tensor linear(const Tensor& input, const QuantizedWeight& weight, const Tensor& bias) {
  EMBER_RECORD_OP("quantized_linear", input, weight.values, weight.scales, bias);
  Tensor result = quantized_products(input, {weight}, "quantized::linear").front();
  if (bias.defined()) {
    const int64_t out_features = weight.out_features();
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_features, "quantized::linear", "bias shape ", bias.sizes(),
                " does not match out_features ", out_features);
    result = result + bias.to(input.scalar_type());
  }
  return ember_trace_op_.result(result);
}

std::vector<Tensor> linear_group(const Tensor& input, const std::vector<QuantizedWeight>& weights) {
  if (core::any_thread_traces()) {  // an export records one quantized_linear each
    std::vector<Tensor> out;
    for (const QuantizedWeight& weight : weights) out.push_back(linear(input, weight));
    return out;
  }
  EMBER_RECORD_OP("quantized_linear_group", input);
  return quantized_products(input, weights, "quantized::linear_group");
}

}  // namespace ember::quantized
