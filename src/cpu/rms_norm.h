// RMSNorm over contiguous rows: y = x * rstd * weight with rstd = 1 / sqrt(mean(x^2) + eps)
// per row. "Acc" below is float64 for float64 inputs and float32 otherwise.
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"
#include "ember/dtype.h"

namespace ember::cpu {

// x, y: [rows, width] of `dtype`; weight: [width] of `dtype` or nullptr (all ones);
// rstd: [rows] of Acc, saved for the backward.
void rms_norm_forward(ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                      int64_t width, double eps);

// From grad_y [rows, width]: grad_x (same layout, or nullptr) and grad_weight ([width]
// float64, or nullptr). grad_weight sums per-chunk partials in chunk order, where the chunks
// depend only on rows: its bits do not depend on the thread count.
void rms_norm_backward(ScalarType dtype, const void* grad_y, const void* x, const void* weight, const void* rstd,
                       void* grad_x, double* grad_weight, int64_t rows, int64_t width);

}  // namespace ember::cpu

// The forward over `rows` rows starting at x/y/rstd.
EMBER_DECLARE_KERNEL(void, rms_norm_rows,
                     (::ember::ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                      int64_t width, double eps))
// The backward over `rows` rows: writes grad_x when not null, and adds each row's
// grad_y * x * rstd to grad_weight_sum ([width] float64) in row order when not null.
EMBER_DECLARE_KERNEL(void, rms_norm_backward_rows,
                     (::ember::ScalarType dtype, const void* grad_y, const void* x, const void* weight,
                      const void* rstd, void* grad_x, double* grad_weight_sum, int64_t rows, int64_t width))
