// im2col / col2im over 1-3 spatial dims and the GEMM calls of convolution's forward and
// backward (one image at a time, all groups in one batched product); float32 convolutions
// that oneDNN's direct kernels take go there instead (Note [Convolution on oneDNN]).
#include "cpu/conv.h"

#include <algorithm>
#include <cstring>

#include "cpu/conv_onednn.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "cpu/float_dispatch.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

// Output positions o in [lo, hi) of one dim read inside the input: 0 <= o * stride + offset < in.
struct ValidRange {
  int64_t lo, hi;
};

ValidRange valid_range(int64_t offset, int64_t stride, int64_t in, int64_t out) {
  const int64_t lo = offset < 0 ? (-offset + stride - 1) / stride : 0;
  const int64_t hi = in - offset > 0 ? (in - offset + stride - 1) / stride : 0;
  return {std::min(lo, out), std::clamp(hi, std::min(lo, out), out)};
}

// Column rows per parallel chunk: about 32K elements of work each, fixed by the shape.
int64_t rows_per_chunk(int64_t row_length) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, row_length)); }

// Walks the output positions of column row (k0, k1, k2): fn(col_index, x_index) for each
// position read inside x, skip(col_index, count) for each run that falls in the padding.
template <typename Read, typename Skip>
void for_each_tap(const ConvShape& s, const int64_t k[3], Read read, Skip skip) {
  const int64_t off0 = k[0] * s.dilation[0] - s.pad[0], off1 = k[1] * s.dilation[1] - s.pad[1];
  const int64_t off2 = k[2] * s.dilation[2] - s.pad[2];
  const ValidRange r2 = valid_range(off2, s.stride[2], s.in[2], s.out[2]);
  const int64_t row = s.out[1] * s.out[2];
  for (int64_t o0 = 0; o0 < s.out[0]; ++o0) {
    const int64_t i0 = o0 * s.stride[0] + off0;
    if (i0 < 0 || i0 >= s.in[0]) {
      skip(o0 * row, row);
      continue;
    }
    for (int64_t o1 = 0; o1 < s.out[1]; ++o1) {
      const int64_t i1 = o1 * s.stride[1] + off1, base = (o0 * s.out[1] + o1) * s.out[2];
      if (i1 < 0 || i1 >= s.in[1]) {
        skip(base, s.out[2]);
        continue;
      }
      skip(base, r2.lo);
      read(base + r2.lo, (i0 * s.in[1] + i1) * s.in[2] + r2.lo * s.stride[2] + off2, r2.hi - r2.lo);
      skip(base + r2.hi, s.out[2] - r2.hi);
    }
  }
}

// The kernel offsets (k0, k1, k2) of column row r within its channel.
void kernel_offsets(const ConvShape& s, int64_t r, int64_t k[3]) {
  k[2] = r % s.kernel[2];
  k[1] = r / s.kernel[2] % s.kernel[1];
  k[0] = r / (s.kernel[2] * s.kernel[1]);
}

}  // namespace

bool ConvShape::pointwise() const {
  for (int d = 0; d < 3; ++d)
    if (kernel[d] != 1 || stride[d] != 1 || pad[d] != 0 || in[d] != out[d]) return false;
  return true;
}

namespace {

// ember-rt's copy of this file (EMBER_RT_CPU, Note [Runtime size]) links no
// oneDNN: its convolutions stay on im2col + GEMM, within float32 rounding of eager's.
bool on_onednn(ScalarType dtype, const ConvShape& s) {
#ifdef EMBER_RT_CPU
  (void)dtype;
  (void)s;
  return false;
#else
  return (dtype == kFloat32 || dtype == kBFloat16) && onednn_conv_fits(s, dtype);
#endif
}

}  // namespace

bool conv_takes(ScalarType dtype, const ConvShape& s) {
  return dtype == kFloat32 || dtype == kFloat64 || (dtype == kBFloat16 && on_onednn(dtype, s));
}

int64_t ConvShape::scratch_elements() const { return pointwise() ? 0 : groups * col_rows() * out_plane(); }

int64_t conv_scratch_elements(ScalarType dtype, const ConvShape& s) {
  if (on_onednn(dtype, s)) {  // float32 partials, counted in elements of dtype
    const int64_t item = static_cast<int64_t>(element_size(dtype));
    return (onednn_conv_scratch_elements(s, dtype) * 4 + item - 1) / item;
  }
  return s.scratch_elements();
}

int64_t conv_scratch_elements(ScalarType dtype, const ConvShape& s, bool weight_gradient) {
  return on_onednn(dtype, s) && !weight_gradient ? 0 : conv_scratch_elements(dtype, s);
}

void im2col(ScalarType dtype, const ConvShape& s, const void* x, void* col) {
  const int64_t K = s.kernel_volume(), L = s.out_plane(), rows = s.in_channels * K;
  dispatch_element_size(element_size(dtype), [&](auto tag) {
    using Bits = typename decltype(tag)::type;
    const Bits* src = static_cast<const Bits*>(x);
    Bits* dst = static_cast<Bits*>(col);
    parallel_for(0, rows, rows_per_chunk(L), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t k[3];
        kernel_offsets(s, r % K, k);
        const Bits* plane = src + r / K * s.in_plane();
        Bits* out = dst + r * L;
        const int64_t step = s.stride[2];
        for_each_tap(
            s, k,
            [&](int64_t c, int64_t i, int64_t n) {
              if (step == 1) {
                std::memcpy(out + c, plane + i, static_cast<size_t>(n) * sizeof(Bits));
              } else {
                for (int64_t j = 0; j < n; ++j) out[c + j] = plane[i + j * step];
              }
            },
            [&](int64_t c, int64_t n) { std::memset(out + c, 0, static_cast<size_t>(n) * sizeof(Bits)); });
      }
    });
  });
}

void col2im(ScalarType dtype, const ConvShape& s, const void* col, void* x) {
  const int64_t K = s.kernel_volume(), L = s.out_plane(), plane_size = s.in_plane();
  dispatch_float32_or_64(dtype, "conv", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(col);
    T* dst = static_cast<T*>(x);
    // One channel per task: its rows add into its own plane only, in a fixed order.
    parallel_for(0, s.in_channels, rows_per_chunk(K * L), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        T* plane = dst + c * plane_size;
        std::fill(plane, plane + plane_size, T(0));
        for (int64_t r = 0; r < K; ++r) {
          int64_t k[3];
          kernel_offsets(s, r, k);
          const T* in = src + (c * K + r) * L;
          const int64_t step = s.stride[2];
          for_each_tap(
              s, k,
              [&](int64_t o, int64_t i, int64_t n) {
                for (int64_t j = 0; j < n; ++j) plane[i + j * step] += in[o + j];
              },
              [](int64_t, int64_t) {});
        }
      }
    });
  });
}

void conv_forward(ScalarType dtype, const ConvShape& s, const void* x, const void* weight, const void* bias,
                  void* out, void* scratch) {
  const int64_t G = s.groups, cout_g = s.out_channels / G, Kg = s.col_rows(), L = s.out_plane();
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  if (s.batch == 0 || L == 0 || s.out_channels == 0) return;
  if (on_onednn(dtype, s))
    return onednn_conv_forward(s, dtype, x, weight, bias, out);
  for (int64_t n = 0; n < s.batch; ++n) {
    const char* xn = static_cast<const char*>(x) + n * s.in_channels * s.in_plane() * item;
    char* on = static_cast<char*>(out) + n * s.out_channels * L * item;
    const void* col = xn;
    if (!s.pointwise()) {
      im2col(dtype, s, xn, scratch);
      col = scratch;
    }
    // The bias goes in first and the product adds to it (beta = 1): one pass over out.
    if (bias) {
      dispatch_float32_or_64(dtype, "conv", [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (int64_t c = 0; c < s.out_channels; ++c)
          std::fill_n(reinterpret_cast<T*>(on) + c * L, L, static_cast<const T*>(bias)[c]);
      });
    }
    gemm_batched(dtype, false, false, G, cout_g, L, Kg, 1.0, weight, Kg, cout_g * Kg, col, L, Kg * L,
                 bias ? 1.0 : 0.0, on, L, cout_g * L);
  }
}

void conv_backward_input(ScalarType dtype, const ConvShape& s, const void* grad_out, const void* weight,
                         void* grad_x, void* scratch) {
  const int64_t G = s.groups, cout_g = s.out_channels / G, Kg = s.col_rows(), L = s.out_plane();
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  if (on_onednn(dtype, s))
    return onednn_conv_backward_input(s, dtype, grad_out, weight, grad_x);
  for (int64_t n = 0; n < s.batch; ++n) {
    const char* gn = static_cast<const char*>(grad_out) + n * s.out_channels * L * item;
    char* xn = static_cast<char*>(grad_x) + n * s.in_channels * s.in_plane() * item;
    // col [Kg, L] of group g = weight_g^T [Kg, cout_g] x grad_out_g [cout_g, L].
    void* col = s.pointwise() ? static_cast<void*>(xn) : scratch;
    gemm_batched(dtype, true, false, G, Kg, L, cout_g, 1.0, weight, Kg, cout_g * Kg, gn, L, cout_g * L, 0.0, col, L,
                 Kg * L);
    if (!s.pointwise()) col2im(dtype, s, scratch, xn);
  }
}

void conv_backward_weight(ScalarType dtype, const ConvShape& s, const void* x, const void* grad_out,
                          void* grad_weight, void* scratch) {
  const int64_t G = s.groups, cout_g = s.out_channels / G, Kg = s.col_rows(), L = s.out_plane();
  const int64_t item = static_cast<int64_t>(element_size(dtype));
  if (s.batch == 0) std::memset(grad_weight, 0, static_cast<size_t>(s.out_channels * Kg * item));
  if (on_onednn(dtype, s))
    return onednn_conv_backward_weight(s, dtype, x, grad_out, grad_weight, static_cast<float*>(scratch));
  for (int64_t n = 0; n < s.batch; ++n) {
    const char* xn = static_cast<const char*>(x) + n * s.in_channels * s.in_plane() * item;
    const char* gn = static_cast<const char*>(grad_out) + n * s.out_channels * L * item;
    const void* col = xn;
    if (!s.pointwise()) {
      im2col(dtype, s, xn, scratch);
      col = scratch;
    }
    // grad_weight_g [cout_g, Kg] += grad_out_g [cout_g, L] x col_g^T [L, Kg], summed over images.
    gemm_batched(dtype, false, true, G, cout_g, Kg, L, 1.0, gn, L, cout_g * L, col, L, Kg * L, n > 0 ? 1.0 : 0.0,
                 grad_weight, Kg, cout_g * Kg);
  }
}

}  // namespace ember::cpu
