// A leaf's bf16/f16 copy kept between the steps of mixed-precision training (internal).
#pragma once
#include "core/tensor_impl.h"

namespace ember::autograd {

// weight.to(dtype) without autograd: the leaf's kept copy where it still holds the leaf's
// values (Note [Low-precision copies]), else a new cast, kept for the next call and for the
// fused optimizer step to refresh. Leaves only; anything else is cast each time.
Tensor low_precision_copy(const Tensor& weight, ScalarType dtype);

// For a fused optimizer step about to update `param` in place: the memory (param's shape,
// contiguous, in *dtype) that the step writes the rounded new values into, or nullptr where
// param keeps no copy or none can be written (a graph capture runs, a saved tensor still holds
// it: then a new one is made). After the step has bumped param's version,
// low_precision_copy_written(param) marks the copy current.
void* low_precision_copy_target(const Tensor& param, ScalarType* dtype);
void low_precision_copy_written(const Tensor& param);

// Forgets `param`'s copy: its memory was rewritten without a version bump (FSDP's gather).
void drop_low_precision_copy(const Tensor& param);

}  // namespace ember::autograd
