// float32 and bfloat16 convolution on oneDNN's direct or Winograd kernels (Note [Convolution on oneDNN]):
// the three passes of cpu/conv.h, used by it where onednn_conv_fits.
#pragma once
#include <cstdint>
#include <string>

#include "cpu/conv.h"

namespace ember::cpu {

// Whether 2-d 3x3 stride-1 convolutions run on oneDNN's Winograd kernels where it has them
// (Note [Winograd convolution]; ember::backends::set_conv_algorithm). The first call reads
// EMBER_CONV_ALGORITHM (direct or winograd; default direct).
bool conv_winograd();
void set_conv_winograd(bool on);
// Whether this convolution runs on the Winograd kernels now.
bool onednn_conv_winograd(const ConvShape& shape);

// True when oneDNN has an optimised (non-reference) kernel for all three passes of this
// convolution (batch > 0, non-empty sizes) in `dtype`: float32, or bfloat16 where the CPU has
// oneDNN's bf16 kernels (Note [bfloat16 convolution]).
bool onednn_conv_fits(const ConvShape& shape, ScalarType dtype = kFloat32);
// What each pass of this convolution runs: oneDNN's implementation and the activations'
// layout (Note [Channels-last passes]), e.g. "forward brgconv:avx512_core channels-last,
// input gradient jit:avx512_core oneDNN's layout, weight gradient jit:avx512_core channels-last";
// empty where onednn_conv_fits is false.
std::string onednn_conv_kernels(const ConvShape& shape, ScalarType dtype = kFloat32);
// Elements of float32 scratch onednn_conv_backward_weight needs (one float32 weight gradient
// per chunk of images, for either dtype); the other passes use none of the caller's scratch
// (the runtime sizes it for im2col).
int64_t onednn_conv_scratch_elements(const ConvShape& shape, ScalarType dtype = kFloat32);

// As conv_forward, conv_backward_input and conv_backward_weight of cpu/conv.h, for float32 or
// bfloat16 operands (where onednn_conv_fits for that dtype).
void onednn_conv_forward(const ConvShape& shape, ScalarType dtype, const void* x, const void* weight,
                         const void* bias, void* out);
void onednn_conv_backward_input(const ConvShape& shape, ScalarType dtype, const void* grad_out, const void* weight,
                                void* grad_x);
void onednn_conv_backward_weight(const ConvShape& shape, ScalarType dtype, const void* x, const void* grad_out,
                                 void* grad_weight, float* scratch);

}  // namespace ember::cpu
