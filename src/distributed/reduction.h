// Element-wise reductions for Gloo and the widening of 16-bit floats (internal).
#pragma once
#include <cstddef>
#include <functional>

#include "ember/distributed/process_group.h"
#include "ember/dtype.h"

namespace ember::distributed {

// c[i] = a[i] op b[i] for n elements (Gloo's AllreduceOptions::Func).
using ReduceFunction = std::function<void(void*, const void*, const void*, size_t)>;

// The dtype a reduction runs in: float32 for bfloat16/float16, the dtype itself otherwise.
ScalarType reduction_dtype(ScalarType dtype);

// Throws Error naming `op` for dtypes or ops that cannot reduce.
void check_reducible(ScalarType dtype, ReduceOp reduce_op, const char* op);

// For a reduction dtype; AVG reduces as SUM (divide_by_size finishes it).
ReduceFunction reduce_function(ScalarType dtype, ReduceOp reduce_op);

// data[i] /= size, for AVG.
void divide_by_size(void* data, ScalarType dtype, size_t n, int size);

// bfloat16/float16 <-> float32.
void widen(const void* src, ScalarType src_dtype, float* dst, size_t n);
void narrow(const float* src, void* dst, ScalarType dst_dtype, size_t n);

}  // namespace ember::distributed
