// What a kernel sees: its operands as strided views of memory, the Call's attributes, and the
// bound symbols. A kernel checks dtypes, ranks and attributes once at load (`check`, over
// shapes that may still be symbolic) and sizes on every run (`run`); either returns false
// after Error::fail, never throws, and `run` allocates nothing.
#pragma once
#include <cstdint>
#include <span>

#include "runtime/error.h"
#include "runtime/schema/program_generated.h"

namespace ember::rt {

constexpr int kMaxDims = EMBER_RT_MAX_DIMS;

struct TensorView {
  void* data = nullptr;
  program::ScalarType dtype = program::ScalarType::Float32;
  int32_t dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // elements

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < dim; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const;
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// An operand as the loader knows it: dtype, rank, its largest sizes at the symbols' bounds and
// the bytes it spans there.
struct OperandType {
  program::ScalarType dtype = program::ScalarType::Float32;
  int32_t dim = 0;
  int64_t max_bytes = 0;
  int64_t max_sizes[kMaxDims] = {};
};

// Attribute lookup by name; null when the Call has none of that name.
const program::Attribute* find_attribute(const program::Call* call, const char* name);

struct KernelSignature {
  const char* op = "";
  std::span<const OperandType> inputs;
  std::span<const OperandType> outputs;
  const program::Call* call = nullptr;
  int64_t* scratch_bytes = nullptr;  // check() sets the scratch memory run() needs (0 if none)
};

struct KernelCall {
  const char* op = "";
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  const program::Call* call = nullptr;
  const int64_t* symbols = nullptr;  // bound values, for Exprs attributes
  void* scratch = nullptr;           // 64-byte aligned, at least the size check() asked for
  int64_t scratch_bytes = 0;         // its size
};

struct Kernel {
  const char* name;
  bool (*check)(const KernelSignature& signature, Error& error);
  bool (*run)(const KernelCall& call, Error& error);
  int writes_input = -1;  // the input the kernel writes in place (copy_ into a KV cache), or -1
};

// The kernels linked into this program: defined by the registration file that CMake's
// ember_rt_kernels() generates from an op list (cmake/runtime.cmake).
std::span<const Kernel* const> registered_kernels();

const char* dtype_name(program::ScalarType dtype);
int64_t element_size(program::ScalarType dtype);

}  // namespace ember::rt
