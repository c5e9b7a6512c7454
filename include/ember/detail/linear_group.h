// Several linear layers applied to one input (a decoder layer's query, key and value
// projections): the pretrained models' decoding step runs them as one product job.
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember::detail {

// linear(x, w) for every w (no bias), as separate calls would return them, values included.
// For bf16/f16 x with weights [out_i, in] stored row-major, the products run as a group (Note
// [Grouped products] in src/cpu/gemm.h: a few rows as one job on the pool; on OpenBLAS, A
// widened once for all); while autograd records, an export traces, or for other dtypes and
// layouts, each is one linear call.
std::vector<Tensor> linear_group(const Tensor& x, const std::vector<Tensor>& weights);

}  // namespace ember::detail
