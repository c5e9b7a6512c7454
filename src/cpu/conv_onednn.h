// float32 convolution on oneDNN's direct or Winograd kernels (Note [Convolution on oneDNN]):
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
// float32 convolution (batch > 0, non-empty sizes).
bool onednn_conv_fits(const ConvShape& shape);
// What each pass of this convolution runs: oneDNN's implementation and the activations'
// layout (Note [Channels-last passes]), e.g. "forward brgconv:avx512_core channels-last,
// input gradient jit:avx512_core oneDNN's layout, weight gradient jit:avx512_core channels-last";
// empty where onednn_conv_fits is false.
std::string onednn_conv_kernels(const ConvShape& shape);
// Elements of float32 scratch onednn_conv_backward_weight needs (one weight gradient per
// chunk of images); the other passes use none of the caller's scratch (the runtime sizes it for im2col).
int64_t onednn_conv_scratch_elements(const ConvShape& shape);

// As conv_forward, conv_backward_input and conv_backward_weight of cpu/conv.h, for float32.
void onednn_conv_forward(const ConvShape& shape, const float* x, const float* weight, const float* bias, float* out);
void onednn_conv_backward_input(const ConvShape& shape, const float* grad_out, const float* weight, float* grad_x);
void onednn_conv_backward_weight(const ConvShape& shape, const float* x, const float* grad_out, float* grad_weight,
                                 float* scratch);

}  // namespace ember::cpu
