// embedding: out[S..., D] = weight[indices[S...], :] (ember::embedding: cpu::index_select over
// contiguous int64 indices, each checked in [0, V)).
#include "cpu/index.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 2, 2, 1, error)) return false;
  const OperandType &weight = s.inputs[0], &indices = s.inputs[1], &out = s.outputs[0];
  if (weight.dim != 2 || indices.dtype != program::ScalarType::Int64 || out.dtype != weight.dtype ||
      out.dim != indices.dim + 1)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[embedding] expects weight [V, D], int64 indices [S...] and out [S..., D] of weight's dtype");
  *s.scratch_bytes = indices.max_bytes;
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &weight = c.inputs[0], &indices = c.inputs[1], &out = c.outputs[0];
  for (int d = 0; d < indices.dim; ++d)
    if (out.sizes[d] != indices.sizes[d]) return fail(error, "embedding", "output sizes differ from the indices'");
  if (out.sizes[indices.dim] != weight.sizes[1] || !out.is_contiguous())
    return fail(error, "embedding", "output must be contiguous [S..., D]");
  if (!weight.is_contiguous()) return fail(error, "embedding", "weight must be contiguous");
  TensorView index = indices;
  if (!indices.is_contiguous() && !make_contiguous("embedding", indices, c.scratch, &index, error)) return false;
  const int64_t count = index.numel();
  if (auto bad = cpu::first_out_of_bounds(index.ptr<const int64_t>(), count, weight.sizes[0]))
    return error.fail(EMBER_RT_ERROR_KERNEL, "[embedding] index %lld is out of bounds for %lld embeddings",
                      static_cast<long long>(*bad), static_cast<long long>(weight.sizes[0]));
  cpu::SliceLayout layout;
  layout.self_size = weight.sizes[0];
  layout.index_size = count;
  layout.inner = weight.sizes[1];
  cpu::index_select(layout, static_cast<size_t>(element_size(weight.dtype)), weight.ptr<const char>(),
                    index.ptr<const int64_t>(), out.ptr<char>());
  return true;
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(embedding, check, run)
