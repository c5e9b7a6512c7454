// ember::Tensor: a strided view of reference-counted storage, with autograd metadata.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/detail/op_table.h"
#include "ember/dispatch_key.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/hooks.h"
#include "ember/scalar.h"
#include "ember/tensor_accessor.h"
#include "ember/tensor_options.h"

namespace ember {

struct TensorImpl;
class Storage;
namespace autograd {
struct Node;
}
namespace indexing {
class TensorIndex;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Assigning to a named tensor rebinds it; assigning to a temporary (x[0] = 1, x.index({0}) =
  // y) writes into the elements it views, as libtorch's.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& values) && { return copy_(values); }
  Tensor& operator=(Tensor&& values) && { return copy_(values); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }

  // ---- metadata ------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const;
  int64_t ndimension() const { return dim(); }
  // Views of the tensor's own metadata, valid while its shape is unchanged (as libtorch's).
  IntArrayRef sizes() const;
  IntArrayRef strides() const;
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t numel() const;
  int64_t storage_offset() const;
  ScalarType scalar_type() const;
  ScalarType dtype() const { return scalar_type(); }
  TensorOptions options() const { return TensorOptions(scalar_type()).device(device()); }
  Device device() const { return Device(kCPU); }
  Layout layout() const { return kStrided; }
  bool is_cpu() const { return true; }
  bool is_cuda() const { return false; }
  size_t element_size() const;
  size_t nbytes() const;
  bool is_contiguous() const;
  bool is_floating_point() const;
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  const Storage& storage() const;
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  void* data_ptr() const;
  template <typename T> T* data_ptr() const;
  template <typename T> T item() const;
  Scalar item() const;
  // Whether the one element is nonzero; more or fewer elements are an error (libtorch's).
  bool is_nonzero() const;

  // Strided element access without bounds checks (ember/tensor_accessor.h). T must be the
  // dtype's C++ type (const T for read-only access) and N the tensor's dim, else an error
  // naming accessor. The accessor points at this tensor's sizes and strides: never call it on
  // a temporary.
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    return {checked_accessor_data<T, N>("accessor"), sizes().data(), strides().data()};
  }
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;
  // The packed forms copy the sizes and strides (libtorch's CUDA-kernel arguments);
  // packed_accessor32 refuses tensors whose offsets do not fit in int32.
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() const& {
    static_assert(N > 0, "accessor is used for indexing tensor, for scalars use *data_ptr<T>()");
    T* data = checked_accessor_data<T, N>("packed_accessor");
    if constexpr (sizeof(index_t) < sizeof(int64_t)) {
      int64_t extent = 1;
      for (int64_t d = 0; d < dim(); ++d) extent += (size(d) - 1) * std::abs(stride(d));
      EMBER_CHECK(numel() <= std::numeric_limits<index_t>::max() && extent <= std::numeric_limits<index_t>::max(),
                  "packed_accessor32", "numel needs to be smaller than 2^31 for 32-bit indexing, got numel ",
                  numel(), " spanning ", extent, " elements");
    }
    return {data, sizes().data(), strides().data()};
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() && = delete;
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const& {
    return generic_packed_accessor<T, N, PtrTraits, int32_t>();
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() && = delete;
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const& {
    return generic_packed_accessor<T, N, PtrTraits, int64_t>();
  }
  template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() && = delete;

  std::string toString() const;

  // ---- autograd ------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true) const;
  // libtorch's spelling of requires_grad_ that returns the tensor itself.
  const Tensor& set_requires_grad(bool requires_grad) const { return requires_grad_(requires_grad); }
  const Tensor& grad() const;
  Tensor& mutable_grad();
  void set_grad(const Tensor& grad);
  bool is_leaf() const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  void retain_grad();
  bool retains_grad() const;
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // Accumulates only into the .grad of `inputs` (autograd::backward); an empty list is an
  // error (libtorch's optional<TensorList> inputs, given).
  void backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                const std::vector<Tensor>& inputs) const;
  Tensor detach() const;
  // The same data as a tensor outside autograd (libtorch's Variable::data()): shares the
  // storage, does not require grad.
  Tensor data() const { return detach(); }
  // Which output of its grad_fn this tensor is (0 for leaves).
  uint32_t output_nr() const;
  Tensor& detach_() const;
  uint64_t _version() const;
  // Runs hook(*this) each time backward has accumulated this leaf's .grad (PyTorch's
  // register_post_accumulate_grad_hook); the hook may read, replace or clear the gradient.
  RemovableHandle register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  // Registers hook(grad), run each time a gradient for this tensor is computed, before it is
  // accumulated into .grad (leaves) or passed on (non-leaves). A hook returning a Tensor
  // replaces the gradient (the next hook sees the replacement; an undefined result keeps
  // it); a void hook only observes. Hooks run in registration order and before retain_grad
  // stores .grad. Returns the position remove_hook takes (libtorch's register_hook).
  template <typename Hook>
  unsigned register_hook(Hook&& hook) const {
    using Result = std::invoke_result_t<Hook&, Tensor>;
    if constexpr (std::is_void_v<Result>) {
      return _register_hook([fn = std::forward<Hook>(hook)](const Tensor& grad) mutable {
        fn(grad);
        return Tensor();
      });
    } else {
      static_assert(std::is_convertible_v<Result, Tensor>, "a gradient hook must return void or a Tensor");
      return _register_hook([fn = std::forward<Hook>(hook)](const Tensor& grad) mutable -> Tensor { return fn(grad); });
    }
  }
  unsigned _register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // Removes the hook at `pos`; later positions stay valid.
  void remove_hook(unsigned pos) const;
  // Whether this tensor was created in InferenceMode (or is a view of such a tensor).
  bool is_inference() const;
  // Whether this tensor is a view that autograd tracks (made by a view op from a tensor that
  // is not an inference tensor; detach() makes none), and the tensor it views.
  bool is_view() const;
  Tensor _base() const;
  // The dispatch keys a libtorch tensor of this kind carries (ember/dispatch_key.h).
  DispatchKeySet key_set() const;
  // A new tensor over the same data with no autograd history (libtorch's two forms). Differs
  // from libtorch: ember keeps the version counter on the storage, so tensor_data() shares
  // it as variable_data() does (libtorch's tensor_data() gets its own).
  Tensor tensor_data() const;
  Tensor variable_data() const;
  // Points this tensor at new_data's storage, geometry and dtype while it keeps its identity
  // and autograd state: every handle to it sees the change (libtorch's set_data).
  void set_data(const Tensor& new_data) const;

  // ---- views (share storage) ----------------------------------------------------------
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.sizes()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor mT() const { return transpose(-2, -1); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  // ---- copies and conversion ------------------------------------------------------------
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  // Keeps the dtype when `options` names none; a device other than the CPU is an error.
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const {
    return to(other.scalar_type(), non_blocking, copy);
  }
  Tensor cpu() const { return *this; }
  Tensor cuda() const { return to(Device(kCUDA)); }
  Tensor toType(ScalarType dtype) const { return to(dtype); }
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  Tensor& fill_(const Scalar& value) const;
  Tensor& zero_() const;
  Tensor& normal_(double mean = 0, double std = 1) const;
  Tensor& uniform_(double from = 0, double to = 1) const;
  Tensor& bernoulli_(double p = 0.5) const;
  // Integers drawn uniformly from [from, to) (to unset: up to the dtype's largest value,
  // 2^mantissa for floating types), stored in the tensor's dtype, as libtorch's random_.
  Tensor& random_(int64_t from, std::optional<int64_t> to) const;
  Tensor& random_(int64_t to) const { return random_(0, to); }
  Tensor& random_() const { return random_(0, std::nullopt); }
  // Gives the tensor the shape `sizes`, contiguous, over its storage from its offset (grown
  // when too small; the first elements keep their values, new ones are uninitialised), as
  // libtorch's resize_. Refused on tensors that require grad.
  const Tensor& resize_(IntArrayRef sizes) const;

  // ---- elementwise ----------------------------------------------------------------
  // The op table's rows (ember/detail/op_table.def, Note [Op table]), by their api column:
  // x.exp(), x.exp_(), x.mul(y), x.mul(2), x.mul_(y), x.add(y, alpha), x.eq(0), x.isnan(), ...
#define EMBER_UNARY(name, program, Kernel, dtype, api, ...) EMBER_OP_METHODS_##api(name)
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...) EMBER_OP_METHODS_##api(name)
#define EMBER_COMPARE(name, Kernel, api) EMBER_OP_METHODS_##api(name)
#define EMBER_PREDICATE(name, Kernel) EMBER_OP_METHODS_Unary(name)
#include "ember/detail/op_table.def"

  // The ops with parameters (written by hand), and other forms.
  Tensor pow(const Scalar& exponent) const;
  Tensor& pow_(const Scalar& exponent) const;
  Tensor square() const { return mul(*this); }
  Tensor clamp(std::optional<Scalar> min = std::nullopt, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clamp_(std::optional<Scalar> min = std::nullopt, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  Tensor& clamp_min_(const Scalar& min) const { return clamp_(min, std::nullopt); }
  Tensor& clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, max); }
  // Tensor bounds broadcast against self. Differs from libtorch: `min` has no default, so
  // clamp() with no bound stays the Scalar overload's error rather than an ambiguity.
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor clamp_min(const Tensor& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Tensor& max) const { return clamp(std::nullopt, max); }
  Tensor& clamp_min_(const Tensor& min) const { return clamp_(min, std::nullopt); }
  Tensor& clamp_max_(const Tensor& max) const { return clamp_(std::nullopt, max); }
  // Rounds half to even; integer tensors come back unchanged (a copy).
  Tensor round() const { return round(0); }
  Tensor round(int64_t decimals) const;
  Tensor& round_() const { return round_(0); }
  Tensor& round_(int64_t decimals) const;
  Tensor where(const Tensor& condition, const Tensor& other) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // ---- reductions -------------------------------------------------------------------
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor max(const Tensor& other) const { return maximum(other); }
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor min(const Tensor& other) const { return minimum(other); }
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // var(), var(unbiased), std() and std(unbiased) reduce over every element. `unbiased` is a
  // template parameter without a default so that a braced list never binds to it: x.var({1})
  // reduces over dim 1, as in libtorch; x.var(0) (an int) reduces over dim 0, as libtorch's
  // own int overloads do (gh-40287), while a bool or another number converts to `unbiased`.
  Tensor var() const { return var(IntArrayRef{}); }
  template <typename Unbiased, std::enable_if_t<std::is_arithmetic_v<Unbiased>, int> = 0>
  Tensor var(Unbiased unbiased) const { return var(IntArrayRef{}, static_cast<bool>(unbiased)); }
  Tensor var(int dim) const { return var(IntArrayRef{dim}); }
  Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std() const { return std(IntArrayRef{}); }
  template <typename Unbiased, std::enable_if_t<std::is_arithmetic_v<Unbiased>, int> = 0>
  Tensor std(Unbiased unbiased) const { return std(IntArrayRef{}, static_cast<bool>(unbiased)); }
  Tensor std(int dim) const { return std(IntArrayRef{dim}); }
  Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  // As ember::allclose and ember::equal.
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // ---- sorting and indexing ---------------------------------------------------------------
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(bool stable, int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  // Python's x[...] (ember/tensor_indexing.h): Slice, None, Ellipsis, integers, bools, bool
  // masks and integer index tensors, with PyTorch's advanced-indexing rules. Without tensor
  // indices or bools the result is a view; with them (advanced indices), a copy.
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  // x[...] = rhs (broadcast to the indexed shape, cast to self's dtype).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& rhs) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& v) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& rhs) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& v) const;
  // libtorch's list form (c10::List<std::optional<Tensor>> there): indices[d] indexes dim d,
  // nullopt keeps it whole (as Slice()); a braced list without `accumulate` picks the
  // TensorIndex overload, where nullopt is None. accumulate adds repeated positions in index
  // order (deterministic); without it, which repeated value lands is unspecified, as PyTorch.
  Tensor index(const std::vector<std::optional<Tensor>>& indices) const;
  Tensor& index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                     bool accumulate = false) const;
  Tensor index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate = false) const;
  // [count, dim] int64: the multi-index of each nonzero element, in row-major order.
  Tensor nonzero() const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const;

  // ---- rearranging (copies, never views of self) ---------------------------------------------
  Tensor flip(IntArrayRef dims) const;
  // Without dims, rolls the flattened tensor and restores the shape.
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(IntArrayRef repeats) const;
  // Without dim, repeats the elements of the flattened tensor.
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  // Views.
  Tensor movedim(IntArrayRef source, IntArrayRef destination) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  Tensor broadcast_to(IntArrayRef sizes) const;

  // ---- linear algebra -----------------------------------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor dot(const Tensor& other) const;
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1, const Scalar& alpha = 1) const;

  // ---- operators ------------------------------------------------------------------
  Tensor operator-() const { return neg(); }
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor operator~() const { return bitwise_not(); }
  Tensor& operator&=(const Tensor& o) { return bitwise_and_(o); }
  Tensor& operator&=(const Scalar& o) { return bitwise_and_(o); }
  Tensor& operator|=(const Tensor& o) { return bitwise_or_(o); }
  Tensor& operator|=(const Scalar& o) { return bitwise_or_(o); }
  Tensor& operator^=(const Tensor& o) { return bitwise_xor_(o); }
  Tensor& operator^=(const Scalar& o) { return bitwise_xor_(o); }

 private:
  template <typename T, size_t N>
  T* checked_accessor_data(const char* op) const {
    using Element = std::remove_const_t<T>;
    EMBER_CHECK(defined(), op, "called on an undefined tensor");
    EMBER_CHECK(dim() == static_cast<int64_t>(N), op, "expected ", N, " dims but tensor has ", dim(), " (shape ",
                sizes(), ")");
    EMBER_CHECK(CppTypeToScalarType<Element>::value == scalar_type(), op, "expected dtype ",
                dtype_name(CppTypeToScalarType<Element>::value), " but the tensor is ", dtype_name(scalar_type()));
    return static_cast<Element*>(data_ptr());
  }

  std::shared_ptr<TensorImpl> impl_;
};

inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return b.add(a); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
Tensor operator-(const Scalar& a, const Tensor& b);
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return b.mul(a); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
Tensor operator/(const Scalar& a, const Tensor& b);
inline Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
inline Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(b); }
inline Tensor operator%(const Tensor& a, const Tensor& b) { return a.remainder(b); }
inline Tensor operator%(const Tensor& a, const Scalar& b) { return a.remainder(b); }
Tensor operator%(const Scalar& a, const Tensor& b);
inline Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
inline Tensor operator&(const Tensor& a, const Scalar& b) { return a.bitwise_and(b); }
inline Tensor operator&(const Scalar& a, const Tensor& b) { return b.bitwise_and(a); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
inline Tensor operator|(const Tensor& a, const Scalar& b) { return a.bitwise_or(b); }
inline Tensor operator|(const Scalar& a, const Tensor& b) { return b.bitwise_or(a); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
inline Tensor operator^(const Tensor& a, const Scalar& b) { return a.bitwise_xor(b); }
inline Tensor operator^(const Scalar& a, const Tensor& b) { return b.bitwise_xor(a); }
inline Tensor operator&&(const Tensor& a, const Tensor& b) { return a.logical_and(b); }
inline Tensor operator||(const Tensor& a, const Tensor& b) { return a.logical_or(b); }
inline Tensor operator!(const Tensor& a) { return a.logical_not(); }

std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace ember

#include "ember/tensor_indexing.h"  // the index list of Tensor::index, complete for every caller
