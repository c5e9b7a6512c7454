// Convolution over 1-3 spatial dims by im2col + GEMM: forward, grad input (GEMM + col2im)
// and grad weight (im2col + GEMM), for float32 and float64; float32 (and bfloat16, Note
// [bfloat16 convolution]) runs on oneDNN's kernels where they take the shape (Note
// [Convolution on oneDNN], cpu/conv_onednn.cpp).
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

// Sizes of one convolution. Spatial arrays hold 3 dims; 1-d and 2-d convolutions set the
// leading ones to size 1 (kernel 1, stride 1, dilation 1, padding 0), so one loop nest
// serves every rank. pad is the zero padding before each dim; the padding after follows from
// out (asymmetric padding, as 'same' needs for even kernels, is just a larger out).
struct ConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};

  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_volume() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Rows of one group's column matrix: (in_channels / groups) * kernel volume.
  int64_t col_rows() const { return in_channels / groups * kernel_volume(); }
  // A 1x1 kernel with unit stride and no padding reads the input as its own column matrix.
  bool pointwise() const;
  // Elements of the im2col column scratch (0 when pointwise).
  int64_t scratch_elements() const;
};

// Elements of dtype the passes below need as scratch for this shape: the im2col column
// matrix, or the oneDNN path's per-image weight gradients. conv_forward never needs more
// than scratch_elements() (the runtime's sizing).
int64_t conv_scratch_elements(ScalarType dtype, const ConvShape& shape);
// The same for one pass: on oneDNN only the weight gradient uses scratch.
int64_t conv_scratch_elements(ScalarType dtype, const ConvShape& shape, bool weight_gradient);

// Whether the passes below take `dtype` for this shape: float32 and float64 always, bfloat16
// where oneDNN's bfloat16 kernels take it (Note [bfloat16 convolution]); otherwise the caller
// runs float32 copies.
bool conv_takes(ScalarType dtype, const ConvShape& shape);

// All tensors contiguous: x [batch, in_channels, in...], weight [out_channels,
// in_channels / groups, kernel...], out [batch, out_channels, out...], bias [out_channels]
// or null; scratch holds conv_scratch_elements(dtype, shape).
void conv_forward(ScalarType dtype, const ConvShape& shape, const void* x, const void* weight, const void* bias,
                  void* out, void* scratch);
// grad_x = d(out)/d(x)^T grad_out, overwriting grad_x.
void conv_backward_input(ScalarType dtype, const ConvShape& shape, const void* grad_out, const void* weight,
                         void* grad_x, void* scratch);
// grad_weight = sum over the batch of grad_out x col(x)^T, overwriting grad_weight.
void conv_backward_weight(ScalarType dtype, const ConvShape& shape, const void* x, const void* grad_out,
                          void* grad_weight, void* scratch);

// The column matrix of one image: col [in_channels * kernel volume, out plane] with row
// (c, k0, k1, k2) holding x[c, o * stride - pad + k * dilation] over the output positions
// (zero outside x). col2im adds each column entry back to where it was read from.
void im2col(ScalarType dtype, const ConvShape& shape, const void* x, void* col);
void col2im(ScalarType dtype, const ConvShape& shape, const void* col, void* x);

}  // namespace ember::cpu
