// linear: out[..., N] = x[..., K] @ weight[N, K]^T (+ bias[N]), as ember::linear: the leading
// dims of x folded into rows (a copy only when they cannot be), one cpu::gemm, then the bias
// added by the binary add kernel.
#include <algorithm>

#include "cpu/gemm.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

// A [rows, cols] matrix as the BLAS sees it (as_matrix in src/ops/linalg.cpp): row-major with
// leading dimension ld, or transposed; copied into `scratch` when neither layout fits.
struct Matrix {
  const void* data = nullptr;
  bool trans = false;
  int64_t ld = 1;
};

bool as_matrix(const char* op, const TensorView& t, void* scratch, Matrix* m, Error& error) {
  const int64_t rows = t.sizes[0], cols = t.sizes[1], rs = t.strides[0], cs = t.strides[1];
  if (cs == 1 && (rs >= std::max<int64_t>(cols, 1) || rows == 1)) {
    *m = Matrix{t.data, false, std::max(rs, std::max<int64_t>(cols, 1))};
    return true;
  }
  if (rs == 1 && (cs >= std::max<int64_t>(rows, 1) || cols == 1)) {
    *m = Matrix{t.data, true, std::max(cs, std::max<int64_t>(rows, 1))};
    return true;
  }
  TensorView copy;
  if (!make_contiguous(op, t, scratch, &copy, error)) return false;
  *m = Matrix{scratch, false, std::max<int64_t>(cols, 1)};
  return true;
}

// x as [rows, K]: a view when its leading dims merge into one (Tensor::reshape), else a copy.
bool rows_view(const char* op, const TensorView& x, int64_t rows, void* scratch, TensorView* out, Error& error) {
  const int last = x.dim - 1;
  *out = TensorView{x.data, x.dtype, 2, {rows, x.sizes[last]}, {x.sizes[last], x.strides[last]}};
  if (x.dim == 1) {  // unsqueeze(0)
    out->strides[0] = x.sizes[0] * x.strides[0];
    return true;
  }
  if (x.dim == 2) {
    out->strides[0] = x.strides[0];
    return true;
  }
  int innermost = -1, previous = -1;  // leading dims of size != 1
  bool mergeable = true;
  for (int d = last - 1; d >= 0; --d) {
    if (x.sizes[d] == 1) continue;
    if (previous >= 0 && x.strides[d] != x.strides[previous] * x.sizes[previous]) mergeable = false;
    if (innermost < 0) innermost = d;
    previous = d;
  }
  if (mergeable) {
    if (innermost >= 0) out->strides[0] = x.strides[innermost];
    return true;
  }
  TensorView copy;
  if (!make_contiguous(op, x, scratch, &copy, error)) return false;
  out->data = scratch;
  out->strides[0] = x.sizes[last];
  out->strides[1] = 1;
  return true;
}

int64_t aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 2, 3, 1, error) || !check_same_dtype(s, error)) return false;
  const program::ScalarType t = s.outputs[0].dtype;
  if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64 && t != program::ScalarType::Float16 &&
      t != program::ScalarType::BFloat16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[linear] not implemented for dtype %s", dtype_name(t));
  if (s.inputs[0].dim < 1 || s.inputs[1].dim != 2 || (s.inputs.size() == 3 && s.inputs[2].dim != 1) ||
      s.outputs[0].dim != s.inputs[0].dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[linear] expects x [..., K], weight [N, K], bias [N], out [..., N]; got %d, %d and %d dims",
                      s.inputs[0].dim, s.inputs[1].dim, s.outputs[0].dim);
  *s.scratch_bytes = aligned(s.inputs[0].max_bytes) + aligned(s.inputs[1].max_bytes);
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &x = c.inputs[0], &w = c.inputs[1], &out = c.outputs[0];
  const int last = x.dim - 1;
  const int64_t k = x.sizes[last], n = w.sizes[0];
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) {
    rows *= x.sizes[d];
    if (out.sizes[d] != x.sizes[d]) return fail(error, "linear", "output and input leading sizes differ");
  }
  if (w.sizes[1] != k)
    return error.fail(EMBER_RT_ERROR_KERNEL, "[linear] input with %lld features, weight [%lld, %lld]",
                      static_cast<long long>(k), static_cast<long long>(w.sizes[0]), static_cast<long long>(w.sizes[1]));
  if (out.sizes[last] != n || !out.is_contiguous()) return fail(error, "linear", "output must be contiguous [..., N]");
  if (c.inputs.size() == 3 && c.inputs[2].sizes[0] != n) return fail(error, "linear", "bias size differs from N");
  if (rows == 0 || n == 0) return true;
  char* scratch = static_cast<char*>(c.scratch);
  TensorView a_view;
  Matrix a, b;
  if (!rows_view("linear", x, rows, scratch, &a_view, error) || !as_matrix("linear", a_view, scratch, &a, error))
    return false;
  const TensorView b_view{w.data, w.dtype, 2, {k, n}, {w.strides[1], w.strides[0]}};  // weight.t()
  if (!as_matrix("linear", b_view, scratch + aligned(element_size(x.dtype) * x.numel()), &b, error)) return false;
  cpu::gemm(to_ember(out.dtype), a.trans, b.trans, rows, n, k, 1.0, a.data, a.ld, b.data, b.ld, 0.0, out.data,
            std::max<int64_t>(n, 1));
  return c.inputs.size() < 3 || add_bias("linear", out, c.inputs[2], error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(linear, check, run)
