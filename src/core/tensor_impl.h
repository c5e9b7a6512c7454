// The data behind ember::Tensor. Internal: only src/ includes it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/autograd.h"
#include "ember/storage.h"
#include "ember/tensor.h"

namespace ember {

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;
  HookList<std::function<void(const Tensor&)>> post_accumulate_grad_hooks;
  // Tensor::register_hook's hooks, shared with the node the gradient passes through.
  std::shared_ptr<autograd::GradHookList> hooks;
  // The leaf rounded to bf16/f16 for autocast_linear, and the storage, offset and version it
  // was rounded from (Note [Low-precision copies] in src/autograd/low_precision_copy.cpp).
  struct LowPrecisionCopy {
    Tensor value;
    Storage source;
    int64_t offset = 0;
    uint64_t version = 0;
  } low_precision;
};

struct TensorImpl {
  Storage storage;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements
  int64_t numel = 0;
  ScalarType dtype = kFloat32;
  // Made in InferenceMode, or a view of a tensor that was (InferenceMode in ember/autograd.h).
  bool is_inference = false;
  // Set for tensors made by a view op: the tensor whose storage this one views.
  std::shared_ptr<TensorImpl> view_base;
  // For views: how the view was made, and the storage version then (a later in-place change
  // of the base shows as a newer version; autograd::mark_view_of sets both).
  autograd::CreationMeta creation_meta = autograd::CreationMeta::DEFAULT;
  uint64_t view_version = 0;
  std::unique_ptr<AutogradMeta> autograd;

  AutogradMeta& autograd_meta() {
    if (!autograd) autograd = std::make_unique<AutogradMeta>();
    return *autograd;
  }
  // A view autograd tracks (Tensor::is_view): views of inference tensors are not.
  bool is_tracked_view() const { return view_base != nullptr && !is_inference; }
  char* data() const {
    return static_cast<char*>(storage.data()) + offset * static_cast<int64_t>(element_size(dtype));
  }
};

namespace core {

int64_t compute_numel(const std::vector<int64_t>& sizes);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
// Wraps `dim` into [0, ndim) the Python way; throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
void check_sizes(IntArrayRef sizes, const char* op);

// A new tensor with fresh contiguous storage.
Tensor make_tensor(IntArrayRef sizes, ScalarType dtype);
// A tensor sharing `storage` with the given geometry (no autograd).
Tensor make_view(const Storage& storage, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset, ScalarType dtype);
// Throws if `t` is read-only (memory-mapped): the op would write into it.
void check_writable(const Tensor& t, const char* op);

}  // namespace core
}  // namespace ember
