// Tensor metadata, autograd accessors and construction helpers.
#include <algorithm>
#include <sstream>

#include "autograd/function.h"
#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "core/trace.h"

namespace ember {
namespace core {

int64_t compute_numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

bool is_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  // An empty tensor is contiguous whatever its strides, as in libtorch.
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t rank = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  EMBER_CHECK(dim >= -rank && dim < rank, op, "dimension out of range (expected to be in range of [", -rank, ", ",
              rank - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + rank : dim;
}

void check_sizes(IntArrayRef sizes, const char* op) {
  int64_t total = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, op, "negative dimension ", s, " in size ", sizes);
    EMBER_CHECK(s == 0 || total <= INT64_MAX / s, op, "size ", sizes, " has too many elements");
    total *= s;
  }
}

Tensor make_tensor(IntArrayRef sizes, ScalarType dtype) {
  check_sizes(sizes, "empty");
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const size_t item = element_size(dtype);
  EMBER_CHECK(numel == 0 || static_cast<uint64_t>(numel) <= SIZE_MAX / item, "empty", "size ", sizes, " overflows");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<size_t>(numel) * item);
  trace_note_allocation(impl->storage);
  impl->sizes = sizes.vec();
  impl->strides = contiguous_strides(impl->sizes);
  impl->numel = numel;
  impl->dtype = dtype;
  impl->is_inference = InferenceMode::is_enabled();
  return Tensor(std::move(impl));
}

Tensor make_view(const Storage& storage, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset,
                 ScalarType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage;
  impl->numel = compute_numel(sizes);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->is_inference = InferenceMode::is_enabled();
  return Tensor(std::move(impl));
}

void check_writable(const Tensor& t, const char* op) {
  EMBER_CHECK(!t.storage().read_only(), op,
              "tensor of shape ", t.sizes(), " is read-only (memory-mapped storage); clone() it before writing");
}

}  // namespace core

namespace {
void check_defined(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), what, "called on an undefined tensor");
}
const Tensor kUndefined;
const std::shared_ptr<autograd::Node> kNoNode;
}  // namespace

int64_t Tensor::dim() const { check_defined(*this, "dim"); return static_cast<int64_t>(impl_->sizes.size()); }
IntArrayRef Tensor::sizes() const { check_defined(*this, "sizes"); return impl_->sizes; }
IntArrayRef Tensor::strides() const { check_defined(*this, "strides"); return impl_->strides; }
int64_t Tensor::size(int64_t d) const {
  EMBER_CHECK(dim() > 0, "size", "dimension specified as ", d, " but tensor has no dimensions");
  return impl_->sizes[core::wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  EMBER_CHECK(dim() > 0, "stride", "dimension specified as ", d, " but tensor has no dimensions");
  return impl_->strides[core::wrap_dim(d, dim(), "stride")];
}
int64_t Tensor::numel() const { check_defined(*this, "numel"); return impl_->numel; }
int64_t Tensor::storage_offset() const { return impl_->offset; }
ScalarType Tensor::scalar_type() const { check_defined(*this, "dtype"); return impl_->dtype; }
size_t Tensor::element_size() const { return ember::element_size(scalar_type()); }
size_t Tensor::nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
bool Tensor::is_contiguous() const { return core::is_contiguous(sizes(), strides()); }
bool Tensor::is_floating_point() const { return ember::is_floating_point(scalar_type()); }
const Storage& Tensor::storage() const { check_defined(*this, "storage"); return impl_->storage; }
void* Tensor::data_ptr() const {
  check_defined(*this, "data_ptr");
  if (core::Capture* capture = core::active_capture()) core::note_tensor_access(*capture, impl_);
  return impl_->data();
}

template <typename T>
T* Tensor::data_ptr() const {
  EMBER_CHECK(CppTypeToScalarType<T>::value == scalar_type(), "data_ptr", "expected dtype ",
              dtype_name(CppTypeToScalarType<T>::value), " but the tensor is ", dtype_name(scalar_type()));
  return reinterpret_cast<T*>(data_ptr());
}

namespace {
template <typename T>
T read_as(const char* p, ScalarType dtype) {
  switch (dtype) {
    case kBool: return static_cast<T>(*reinterpret_cast<const bool*>(p));
    case kUInt8: return static_cast<T>(*reinterpret_cast<const uint8_t*>(p));
    case kInt8: return static_cast<T>(*reinterpret_cast<const int8_t*>(p));
    case kInt32: return static_cast<T>(*reinterpret_cast<const int32_t*>(p));
    case kInt64: return static_cast<T>(*reinterpret_cast<const int64_t*>(p));
    case kFloat16: return static_cast<T>(static_cast<float>(*reinterpret_cast<const Half*>(p)));
    case kBFloat16: return static_cast<T>(static_cast<float>(*reinterpret_cast<const BFloat16*>(p)));
    case kFloat32: return static_cast<T>(*reinterpret_cast<const float*>(p));
    case kFloat64: return static_cast<T>(*reinterpret_cast<const double*>(p));
  }
  return T();
}
}  // namespace

template <typename T>
T Tensor::item() const {
  EMBER_CHECK(numel() == 1, "item", "a tensor with ", numel(), " elements (shape ", sizes(),
              ") cannot be converted to a scalar");
  core::CaptureOpName name("item");
  core::trace_note_item(*this);
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(read_as<float>(static_cast<const char*>(data_ptr()), scalar_type()));
  } else {
    return read_as<T>(static_cast<const char*>(data_ptr()), scalar_type());
  }
}

bool Tensor::is_nonzero() const {
  EMBER_CHECK(numel() == 1, "is_nonzero", "Boolean value of Tensor with ", numel() == 0 ? "no values" : "more than one value",
              " is ambiguous (shape ", sizes(), ")");
  return item<double>() != 0;
}

Scalar Tensor::item() const {
  if (is_floating_point()) return item<double>();
  if (scalar_type() == kBool) return item<bool>();
  return item<int64_t>();
}

#define EMBER_INSTANTIATE(T)               \
  template T* Tensor::data_ptr<T>() const; \
  template T Tensor::item<T>() const;
EMBER_INSTANTIATE(bool)
EMBER_INSTANTIATE(uint8_t)
EMBER_INSTANTIATE(int8_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(Half)
EMBER_INSTANTIATE(BFloat16)
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

// ---- autograd accessors ----------------------------------------------------------------------

bool Tensor::requires_grad() const {
  check_defined(*this, "requires_grad");
  if (impl_->autograd && (impl_->autograd->requires_grad || impl_->autograd->grad_fn)) return true;
  // A view requires grad when its base does, also one made in no-grad or inference mode
  // (libtorch's DifferentiableViewMeta::requires_grad).
  return impl_->is_tracked_view() && impl_->view_base->autograd && impl_->view_base->autograd->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) const {
  check_defined(*this, "requires_grad_");
  EMBER_CHECK(is_leaf() || requires_grad, "requires_grad_",
              "you can only change requires_grad flags of leaf variables");
  EMBER_CHECK(!requires_grad || is_floating_point(), "requires_grad_",
              "only tensors of floating point dtype can require gradients, got ", dtype_name(scalar_type()));
  EMBER_CHECK(!requires_grad || !impl_->is_inference || InferenceMode::is_enabled(), "requires_grad_",
              "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed. Shape ",
              sizes(), "; clone() it first");
  impl_->autograd_meta().requires_grad = requires_grad;
  return const_cast<Tensor&>(*this);  // a handle: const like libtorch, data mutable
}

const Tensor& Tensor::grad() const {
  check_defined(*this, "grad");
  return impl_->autograd ? impl_->autograd->grad : kUndefined;
}

Tensor& Tensor::mutable_grad() {
  check_defined(*this, "mutable_grad");
  return impl_->autograd_meta().grad;
}

void Tensor::set_grad(const Tensor& grad) {
  check_defined(*this, "set_grad");
  EMBER_CHECK(!grad.defined() || grad.sizes() == sizes(), "set_grad", "gradient shape ",
              grad.defined() ? grad.sizes() : IntArrayRef(), " does not match tensor shape ", sizes());
  impl_->autograd_meta().grad = grad;
}

bool Tensor::is_leaf() const {
  check_defined(*this, "is_leaf");
  return !impl_->autograd || !impl_->autograd->grad_fn;
}

uint32_t Tensor::output_nr() const {
  check_defined(*this, "output_nr");
  return impl_->autograd ? impl_->autograd->output_nr : 0;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  check_defined(*this, "grad_fn");
  autograd::check_view_not_rebased(*this);
  return impl_->autograd ? impl_->autograd->grad_fn : kNoNode;
}

void Tensor::retain_grad() {
  EMBER_CHECK(requires_grad(), "retain_grad", "can't retain_grad on a tensor that doesn't require gradients");
  if (is_leaf()) return;  // leaves keep .grad anyway
  AutogradMeta& meta = impl_->autograd_meta();
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  meta.grad_fn->retained.emplace_back(meta.output_nr, impl_);
}

bool Tensor::is_inference() const { return impl_ && impl_->is_inference; }

bool Tensor::is_view() const {
  check_defined(*this, "is_view");
  return impl_->is_tracked_view();
}

Tensor Tensor::_base() const {
  check_defined(*this, "_base");
  return is_view() ? Tensor(impl_->view_base) : Tensor();
}

DispatchKeySet Tensor::key_set() const {
  check_defined(*this, "key_set");
  if (impl_->is_inference) return DispatchKeySet(DispatchKey::CPU);
  return {DispatchKey::CPU, DispatchKey::ADInplaceOrView, DispatchKey::AutogradCPU};
}

Tensor Tensor::variable_data() const {
  check_defined(*this, "variable_data");
  Tensor out = core::make_view(impl_->storage, impl_->sizes, impl_->strides, impl_->offset, impl_->dtype);
  out.impl_->is_inference = impl_->is_inference;
  return out;
}

Tensor Tensor::tensor_data() const { return variable_data(); }

bool Tensor::retains_grad() const { return impl_->autograd && impl_->autograd->retains_grad; }

RemovableHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  check_defined(*this, "register_post_accumulate_grad_hook");
  EMBER_CHECK(requires_grad() && is_leaf(), "register_post_accumulate_grad_hook",
              "the tensor (shape ", sizes(), ") must be a leaf that requires grad; post accumulate grad hooks ",
              "cannot be registered on ", requires_grad() ? "non-leaf tensors" : "tensors that do not require grad");
  return impl_->autograd_meta().post_accumulate_grad_hooks.add(std::move(hook));
}

void Tensor::set_data(const Tensor& new_data) const {
  check_defined(*this, "set_data");
  EMBER_CHECK(new_data.defined(), "set_data", "new_data is undefined");
  const TensorImpl* source = new_data.unsafeGetTensorImpl();
  impl_->storage = source->storage;
  impl_->sizes = source->sizes;
  impl_->strides = source->strides;
  impl_->offset = source->offset;
  impl_->numel = source->numel;
  impl_->dtype = source->dtype;
  impl_->view_base = nullptr;
}

const Tensor& Tensor::resize_(IntArrayRef sizes) const {
  const char* op = "resize_";
  check_defined(*this, op);
  EMBER_CHECK(!requires_grad(), op, "cannot resize a tensor that requires grad");
  core::check_sizes(sizes, op);
  std::vector<int64_t> new_sizes = sizes.vec();
  const int64_t numel = core::compute_numel(new_sizes);
  const size_t item = element_size();
  const size_t needed = static_cast<size_t>(impl_->offset + numel) * item;
  const Storage& storage = impl_->storage;
  if (numel > 0 && needed > storage.nbytes()) {
    core::check_writable(*this, op);
    // Grow in place, for every view of the storage, keeping the bytes it had.
    std::vector<char> kept(static_cast<const char*>(storage.data()),
                           static_cast<const char*>(storage.data()) + storage.nbytes());
    storage.reallocate(needed);
    std::copy(kept.begin(), kept.end(), static_cast<char*>(storage.data()));
  }
  impl_->strides = core::contiguous_strides(new_sizes);
  impl_->sizes = std::move(new_sizes);
  impl_->numel = numel;
  return *this;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{}, retain_graph,
                     create_graph);
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  EMBER_CHECK(!inputs.empty(), "backward", "'inputs' argument to backward() cannot be empty");
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{}, retain_graph,
                     create_graph, inputs);
}

Tensor Tensor::detach() const {
  check_defined(*this, "detach");
  return variable_data();
}

Tensor& Tensor::detach_() const {
  check_defined(*this, "detach_");
  if (impl_->autograd) {
    impl_->autograd->grad_fn = nullptr;
    impl_->autograd->requires_grad = false;
  }
  return const_cast<Tensor&>(*this);
}

uint64_t Tensor::_version() const { return storage().version(); }

// ---- printing -------------------------------------------------------------------------------

namespace {

void print_elements(std::ostream& out, const Tensor& t, int64_t dim, std::vector<int64_t>& index, int indent) {
  const int64_t n = t.size(dim);
  const int64_t edge = 3;
  const bool summarize = t.numel() > 1000 && n > 2 * edge;
  out << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && i == edge) {
      out << (dim + 1 == t.dim() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - edge;
    }
    index[dim] = i;
    if (dim + 1 == t.dim()) {
      int64_t off = t.storage_offset();
      for (int64_t d = 0; d < t.dim(); ++d) off += index[d] * t.stride(d);
      const char* p = static_cast<const char*>(t.storage().data()) + off * static_cast<int64_t>(t.element_size());
      if (t.is_floating_point()) out << read_as<double>(p, t.scalar_type());
      else if (t.scalar_type() == kBool) out << (read_as<bool>(p, kBool) ? "true" : "false");
      else out << read_as<int64_t>(p, t.scalar_type());
      if (i + 1 < n) out << ", ";
    } else {
      print_elements(out, t, dim + 1, index, indent + 1);
      if (i + 1 < n) out << ",\n" << std::string(indent + 1, ' ');
    }
  }
  out << ']';
}

}  // namespace

std::string Tensor::toString() const {
  std::ostringstream out;
  out << *this;
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "[ Tensor (undefined) ]";
  std::ostringstream body;
  body.precision(4);
  if (t.dim() == 0) {
    const char* p = static_cast<const char*>(t.data_ptr());
    if (t.is_floating_point()) body << read_as<double>(p, t.scalar_type());
    else body << read_as<int64_t>(p, t.scalar_type());
  } else {
    std::vector<int64_t> index(t.dim(), 0);
    print_elements(body, t, 0, index, 0);
  }
  out << "tensor(" << body.str() << ", dtype=" << dtype_name(t.scalar_type());
  if (t.requires_grad()) out << ", requires_grad=true";
  return out << ")";
}

}  // namespace ember
