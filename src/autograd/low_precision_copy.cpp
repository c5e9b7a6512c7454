// Note [Low-precision copies]
// Mixed-precision training computes with each float32 weight rounded to bf16 (autocast_linear).
// Cast anew in every forward, that rounding read every weight from memory a second time after
// the optimizer had just written it: 5% of the default GPT's bf16 step on an AMX Xeon, 2% at
// the AVX2 level. Instead a leaf keeps its rounded copy with the storage, offset and version it
// was rounded from; the fused Adam step writes the rounded new values as it updates the
// weight and marks the copy current, and a forward takes the copy wherever the leaf still has
// that storage and version (any in-place write bumps the version; set_data changes the
// storage). The copy holds exactly weight.to(dtype)'s bits either way. A saved tensor of the
// last forward that still holds the copy is left alone: the step writes a new copy. Writers
// that keep the version on purpose (FSDP's gather into its storage) drop the copy. Graph
// captures neither use nor write copies: a replay repeats the kernels of the capture.
#include "autograd/low_precision_copy.h"

#include <mutex>

#include "core/graph_capture.h"

namespace ember::autograd {
namespace {

// Threads that run forward on one model (or step its optimizer) share the weights' copies.
std::mutex& copies_mutex() {
  static std::mutex mutex;
  return mutex;
}

bool keeps_copies(const Tensor& weight) {
  return weight.is_leaf() && weight.is_contiguous() && core::active_capture() == nullptr;
}

bool holds_values_of(const AutogradMeta::LowPrecisionCopy& copy, const Tensor& weight) {
  return copy.value.defined() && copy.source.is_alias_of(weight.storage()) &&
         copy.offset == weight.storage_offset() && copy.version == weight.storage().version() &&
         copy.value.sizes() == weight.sizes();
}

void mark_current(AutogradMeta::LowPrecisionCopy& copy, const Tensor& weight) {
  copy.source = weight.storage();
  copy.offset = weight.storage_offset();
  copy.version = weight.storage().version();
}

}  // namespace

Tensor low_precision_copy(const Tensor& weight, ScalarType dtype) {
  NoGradGuard no_grad;
  if (!keeps_copies(weight) || weight.scalar_type() == dtype) return weight.to(dtype);
  std::lock_guard lock(copies_mutex());
  AutogradMeta::LowPrecisionCopy& copy = weight.unsafeGetTensorImpl()->autograd_meta().low_precision;
  if (holds_values_of(copy, weight) && copy.value.scalar_type() == dtype) return copy.value;
  copy.value = weight.to(dtype);
  mark_current(copy, weight);
  return copy.value;
}

void* low_precision_copy_target(const Tensor& param, ScalarType* dtype) {
  std::lock_guard lock(copies_mutex());
  TensorImpl* impl = param.unsafeGetTensorImpl();
  if (!impl->autograd) return nullptr;
  AutogradMeta::LowPrecisionCopy& copy = impl->autograd->low_precision;
  if (!copy.value.defined()) return nullptr;
  if (!keeps_copies(param)) {
    copy = {};
    return nullptr;
  }
  *dtype = copy.value.scalar_type();
  const bool writable = copy.value.impl().use_count() == 1 && copy.value.storage().use_count() == 1 &&
                        copy.value.sizes() == param.sizes();
  if (!writable) copy.value = core::make_tensor(param.sizes(), *dtype);
  copy.source = Storage();  // not current until low_precision_copy_written
  return copy.value.data_ptr();
}

void low_precision_copy_written(const Tensor& param) {
  std::lock_guard lock(copies_mutex());
  mark_current(param.unsafeGetTensorImpl()->autograd_meta().low_precision, param);
}

void drop_low_precision_copy(const Tensor& param) {
  std::lock_guard lock(copies_mutex());
  TensorImpl* impl = param.unsafeGetTensorImpl();
  if (impl->autograd) impl->autograd->low_precision = {};
}

}  // namespace ember::autograd
