// copy_: dst.copy_(src) in place (the KV cache append): src broadcast to dst through the cast
// loop of their one dtype (a converting copy_ is refused at load: the exporter writes `to`
// first; the one-dtype lookup keeps the other 72 dtype pairs out of ember-rt); a src that
// overlaps dst in another layout is copied first, as ops::copy_into does.
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 2, 2, 0, error) || !check_same_dtype(s, error)) return false;
  *s.scratch_bytes = s.inputs[1].max_bytes;
  return true;
}

// [first, last] bytes a view touches (numel > 0).
void byte_range(const TensorView& v, const char** first, const char** last) {
  int64_t end = 0;
  for (int d = 0; d < v.dim; ++d) end += (v.sizes[d] - 1) * v.strides[d];
  *first = static_cast<const char*>(v.data);
  *last = *first + (end + 1) * element_size(v.dtype) - 1;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &dst = c.inputs[0];
  TensorView src = c.inputs[1];
  int64_t strides[kMaxDims];
  if (!broadcast_strides(src, dst, strides)) return fail(error, "copy_", "the source does not broadcast to dst");
  if (dst.numel() == 0) return true;
  if (src.numel() > 0) {
    const char *dst_first, *dst_last, *src_first, *src_last;
    byte_range(dst, &dst_first, &dst_last);
    byte_range(src, &src_first, &src_last);
    const bool same_view = src.data == dst.data && same_sizes(src, dst) &&
                           std::memcmp(src.strides, dst.strides, sizeof(int64_t) * static_cast<size_t>(dst.dim)) == 0;
    if (src_first <= dst_last && dst_first <= src_last && !same_view &&
        !make_contiguous("copy_", c.inputs[1], c.scratch, &src, error))
      return false;
  }
  const TensorView inputs[1] = {src};
  return run_elementwise("copy_", EMBER_KERNEL(copy_loop)(to_ember(dst.dtype)), {}, dst, inputs, error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL_IN_PLACE(copy_, check, run, 0)
