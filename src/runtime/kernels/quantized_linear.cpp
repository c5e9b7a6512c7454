// quantized_linear: out[..., N] = x[..., K] @ w^T (+ bias[N]) for a weight w held as blocks
// (values, scales), as quantized::linear (src/ops/quantized.cpp): x's rows in float32 and
// contiguous, one cpu::gemm_quantized_weight (Note [Block-quantized weights] in
// src/cpu/quantized.h), the product cast to x's dtype, then the bias added by the binary add
// kernel. The format is the values' dtype: int8 blocks as int8 [N, K], int4 as uint8 [N, K / 2].
#include "cpu/quantized.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

using program::ScalarType;

bool is_compute_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::BFloat16 || t == ScalarType::Float16;
}

int64_t max_numel(const OperandType& t) {
  int64_t n = 1;
  for (int d = 0; d < t.dim; ++d) n *= t.max_sizes[d];
  return n;
}

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 3, 4, 1, error)) return false;
  const OperandType &x = s.inputs[0], &values = s.inputs[1], &scales = s.inputs[2], &out = s.outputs[0];
  const bool has_bias = s.inputs.size() == 4;
  if (!is_compute_dtype(x.dtype) || out.dtype != x.dtype || (has_bias && s.inputs[3].dtype != x.dtype))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[quantized_linear] x, bias and out must be of one dtype, float32, bfloat16 or float16; got x "
                      "%s, out %s",
                      dtype_name(x.dtype), dtype_name(out.dtype));
  if ((values.dtype != ScalarType::Int8 && values.dtype != ScalarType::UInt8) || scales.dtype != ScalarType::Float16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[quantized_linear] expects int8 values (int8 blocks) or uint8 (int4 blocks) and float16 "
                      "scales, got %s and %s",
                      dtype_name(values.dtype), dtype_name(scales.dtype));
  if (x.dim < 1 || values.dim != 2 || scales.dim != 2 || (has_bias && s.inputs[3].dim != 1) || out.dim != x.dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[quantized_linear] expects x [..., K], values and scales [N, ...], bias [N], out [..., N]; got "
                      "%d, %d, %d and %d dims",
                      x.dim, values.dim, scales.dim, out.dim);
  // x in float32 and contiguous, and the float32 product when out is narrower.
  *s.scratch_bytes = aligned_bytes(4 * max_numel(x)) + aligned_bytes(4 * max_numel(out));
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &x = c.inputs[0], &values = c.inputs[1], &scales = c.inputs[2], &out = c.outputs[0];
  const int last = x.dim - 1;
  const int64_t k = x.sizes[last], n = scales.sizes[0], blocks = scales.sizes[1];
  const cpu::QuantFormat format = values.dtype == ScalarType::UInt8 ? cpu::QuantFormat::Int4 : cpu::QuantFormat::Int8;
  if (blocks < 1 || k != blocks * cpu::kQuantBlock)
    return error.fail(EMBER_RT_ERROR_KERNEL,
                      "[quantized_linear] input with %lld features, scales [%lld, %lld]: the features must be %lld "
                      "per scale, a positive multiple of %lld",
                      static_cast<long long>(k), static_cast<long long>(n), static_cast<long long>(blocks),
                      static_cast<long long>(cpu::kQuantBlock), static_cast<long long>(cpu::kQuantBlock));
  if (values.sizes[0] != n || values.sizes[1] != cpu::quantized_row_bytes(format, k))
    return error.fail(EMBER_RT_ERROR_KERNEL, "[quantized_linear] %s values [%lld, %lld], expected [%lld, %lld]",
                      cpu::quant_format_name(format), static_cast<long long>(values.sizes[0]),
                      static_cast<long long>(values.sizes[1]), static_cast<long long>(n),
                      static_cast<long long>(cpu::quantized_row_bytes(format, k)));
  if (!values.is_contiguous() || !scales.is_contiguous())
    return fail(error, "quantized_linear", "values and scales must be contiguous");
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) {
    rows *= x.sizes[d];
    if (out.sizes[d] != x.sizes[d]) return fail(error, "quantized_linear", "output and input leading sizes differ");
  }
  if (out.sizes[last] != n || !out.is_contiguous())
    return fail(error, "quantized_linear", "output must be contiguous [..., N]");
  if (c.inputs.size() == 4 && c.inputs[3].sizes[0] != n) return fail(error, "quantized_linear", "bias size differs from N");
  if (rows == 0 || n == 0) return true;
  char* scratch = static_cast<char*>(c.scratch);
  TensorView a = x;
  if (x.dtype != ScalarType::Float32 || !x.is_contiguous())
    if (!make_contiguous_as("quantized_linear", x, ScalarType::Float32, scratch, &a, error)) return false;
  const bool narrow = out.dtype != ScalarType::Float32;
  float* product = narrow ? reinterpret_cast<float*>(scratch + aligned_bytes(4 * rows * k)) : out.ptr<float>();
  cpu::gemm_quantized_weight(format, rows, n, k, a.ptr<float>(), k, values.data, scales.ptr<const uint16_t>(), product,
                             n);
  if (narrow) {
    TensorView product_view = out;
    product_view.data = product;
    product_view.dtype = ScalarType::Float32;
    TensorView cast;
    if (!make_contiguous_as("quantized_linear", product_view, out.dtype, out.data, &cast, error)) return false;
  }
  return c.inputs.size() < 4 || add_bias("quantized_linear", out, c.inputs[3], error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(quantized_linear, check, run)
