// layer_norm: y = (x - mean) * rsqrt(var + eps) * weight + bias over rows of normalized_shape's
// width, as nn::functional::layer_norm computes it: its composite of eager ops, step by step on
// the same cpu kernels (x cast to float32, or float64 for float64; each mean a float64 sum in
// reduce_run's chunks divided in float64 and rounded; then sub, mul, add, rsqrt, mul, mul, add
// elementwise; the result cast back), so that the bits equal eager's. The lookups are the
// narrow ones (float_sum_run, rsqrt_loop, add_loop, mul_loop) that keep ember-rt small.
#include "cpu/reduce.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool normalized_width(const program::Call* call, int32_t input_dims, int64_t* width) {
  const program::Attribute* shape = find_attribute(call, "normalized_shape");
  if (shape == nullptr || shape->kind() != program::AttributeKind::Ints || shape->ints() == nullptr ||
      shape->ints()->size() > static_cast<uint32_t>(input_dims))
    return false;
  *width = 1;
  for (int64_t size : *shape->ints())
    if (size < 0 || __builtin_mul_overflow(*width, size, width)) return false;
  return true;
}

program::ScalarType compute_dtype(program::ScalarType dtype) {
  return dtype == program::ScalarType::Float64 ? dtype : program::ScalarType::Float32;
}

bool check(const KernelSignature& s, Error& error) {
  // x, and weight and bias together or neither (the exporter records no other form).
  if (!check_operands(s, 1, 3, 1, error) || !check_same_dtype(s, error)) return false;
  const program::ScalarType t = s.outputs[0].dtype;
  int64_t width = 0;
  double eps = 0;
  if (s.inputs.size() == 2 || !normalized_width(s.call, s.inputs[0].dim, &width) ||
      find_attribute(s.call, "eps") == nullptr || !float_attribute(s.call, "eps", 0, &eps))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[layer_norm] needs x (weight and bias: both or neither) and attributes normalized_shape (Ints, "
                      "at most the input's %d dims) and eps (Float)",
                      s.inputs[0].dim);
  if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64 && t != program::ScalarType::BFloat16 &&
      t != program::ScalarType::Float16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[layer_norm] not implemented for dtype %s", dtype_name(t));
  // In the compute dtype: x, centered and a work buffer of numel elements; the means, and the
  // variances (then the cast weight and bias), of rows (or width) <= numel elements.
  const int64_t numel = s.inputs[0].max_bytes / element_size(s.inputs[0].dtype);
  const int64_t item = element_size(compute_dtype(t));
  *s.scratch_bytes = 5 * aligned_bytes(numel * item);
  return true;
}

// A [rows, cols] contiguous view of `data` in `dtype`.
TensorView matrix(void* data, program::ScalarType dtype, int64_t rows, int64_t cols) {
  return TensorView{data, dtype, 2, {rows, cols}, {cols, 1}};
}

// column[r] = float64 mean of row r of x, rounded to x's dtype (Tensor::mean over the last dims).
void row_means(const TensorView& x, TensorView& column) {
  const int64_t rows = x.sizes[0], width = x.sizes[1], item = element_size(x.dtype);
  const auto sum = EMBER_KERNEL(float_sum_run);
  for (int64_t r = 0; r < rows; ++r) {
    const char* row = static_cast<const char*>(x.data) + r * width * item;
    double total = 0;  // reduce_row: fixed chunks, combined in chunk order
    for (int64_t begin = 0; begin < width; begin += cpu::kReduceChunk)
      total = begin == 0 ? sum(to_ember(x.dtype), row, std::min(cpu::kReduceChunk, width))
                         : total + sum(to_ember(x.dtype), row + begin * item, std::min(cpu::kReduceChunk, width - begin));
    const double mean = total / static_cast<double>(width);
    if (x.dtype == program::ScalarType::Float64) column.ptr<double>()[r] = mean;
    else column.ptr<float>()[r] = static_cast<float>(mean);
  }
}

// One out-of-line call site of run_elementwise for every step: it inlines where used, and
// ember-rt's size limit counts each copy.
[[gnu::noinline]] bool step(cpu::InnerLoop loop, const cpu::ElementwiseParams& params, const TensorView& target,
                            std::initializer_list<TensorView> operands, Error& error) {
  return run_elementwise("layer_norm", loop, params, target, std::span<const TensorView>(operands.begin(), operands.size()),
                         error);
}

// `source` into contiguous memory at `data` in `dtype` (Tensor::to(dtype), contiguous).
bool cast_into(const TensorView& source, program::ScalarType dtype, void* data, TensorView* out, Error& error) {
  *out = source;
  out->data = data;
  out->dtype = dtype;
  for (int64_t d = source.dim - 1, stride = 1; d >= 0; stride *= source.sizes[d--]) out->strides[d] = stride;
  const cpu::InnerLoop loop = dtype == source.dtype ? EMBER_KERNEL(copy_loop)(to_ember(dtype))
                                                    : EMBER_KERNEL(cast_loop)(to_ember(source.dtype), to_ember(dtype));
  return step(loop, {}, *out, {source}, error);
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &input = c.inputs[0], &out = c.outputs[0];
  int64_t width = 0;
  double eps = 0;
  normalized_width(c.call, input.dim, &width);
  float_attribute(c.call, "eps", 0, &eps);
  const program::Attribute* shape = find_attribute(c.call, "normalized_shape");
  const int dims = static_cast<int>(shape->ints()->size());
  for (int d = 0; d < dims; ++d)
    if (input.sizes[input.dim - dims + d] != shape->ints()->Get(static_cast<uint32_t>(d)))
      return fail(error, "layer_norm", "the input's last dims differ from normalized_shape");
  if (!same_sizes(input, out) || !out.is_contiguous()) return fail(error, "layer_norm", "output must be contiguous, x's shape");
  const bool affine = c.inputs.size() == 3;
  if (affine && (c.inputs[1].numel() != width || c.inputs[2].numel() != width || !c.inputs[1].is_contiguous() ||
                 !c.inputs[2].is_contiguous()))
    return fail(error, "layer_norm", "weight and bias must be contiguous with normalized_shape's elements");
  const int64_t numel = input.numel(), rows = width > 0 ? numel / width : 0;
  if (numel == 0) return true;
  const program::ScalarType t = compute_dtype(out.dtype);
  const int64_t item = element_size(t);
  char* scratch = static_cast<char*>(c.scratch);
  TensorView x = matrix(scratch, t, rows, width), a = matrix(scratch + aligned_bytes(numel * item), t, rows, width),
             b = matrix(scratch + 2 * aligned_bytes(numel * item), t, rows, width),
             mean = matrix(scratch + 3 * aligned_bytes(numel * item), t, rows, 1),
             column = matrix(scratch + 3 * aligned_bytes(numel * item) + aligned_bytes(rows * item), t, rows, 1);
  TensorView cast;
  if (!cast_into(input, t, x.data, &cast, error)) return false;
  const cpu::InnerLoop add = binary_loop<cpu::BinaryOp::Add>(t), mul = binary_loop<cpu::BinaryOp::Mul>(t);
  cpu::ElementwiseParams unit, minus;  // alpha 1, as binary_op's default; alpha -1
  minus.alpha = -1;
  row_means(x, mean);
  // eps as binary_op's 0-d operand: a scalar in the compute dtype.
  float eps_float = static_cast<float>(eps);
  TensorView eps_scalar{t == program::ScalarType::Float64 ? static_cast<void*>(&eps) : static_cast<void*>(&eps_float), t};
  // centered = x - mean -> a; variance = mean(centered * centered) -> column; rstd -> column.
  // x - mean as x + (-1) * mean: the add loop computes a + alpha * b, and -mean is exact, so the
  // bits are sub's while ember-rt links no sub kernel.
  if (!step(add, minus, a, {x, mean}, error) || !step(mul, unit, b, {a, a}, error)) return false;
  row_means(b, column);
  if (!step(add, unit, column, {column, eps_scalar}, error) ||
      !step(EMBER_KERNEL(rsqrt_loop)(to_ember(t)), {}, column, {column}, error))
    return false;
  // normed = centered * rstd -> b; * weight -> a; + bias -> b (weight and bias cast like x).
  if (!step(mul, unit, b, {a, column}, error)) return false;
  TensorView result = b;
  if (affine) {
    TensorView weight, bias;
    if (!cast_into(c.inputs[1], t, mean.data, &weight, error) || !step(mul, unit, a, {b, weight}, error) ||
        !cast_into(c.inputs[2], t, mean.data, &bias, error) || !step(add, unit, b, {a, bias}, error))
      return false;
  }
  TensorView written;
  return cast_into(result, out.dtype, out.data, &written, error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(layer_norm, check, run)
