// A loaded, verified program: the mapped file, each method's symbols, values and arena, and
// the kernel of every operator. Built by load_program (loader.cpp, verifier.cpp); run by
// run_method (executor.cpp). Everything a run needs is allocated here, at load.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/error.h"
#include "runtime/expr.h"
#include "runtime/kernel.h"

namespace ember::rt {

struct FreeDeleter {
  void operator()(void* p) const;
};

// What the loader derived about a value.
struct ValueInfo {
  program::Location location = program::Location::Arena;
  uint32_t root = 0;       // the non-view value whose memory this one uses (itself if not a view)
  int64_t max_bytes = 0;   // bytes spanned at the symbols' bounds
};

// The elements a value spans from its first one (1 + sum (size - 1) * stride; 0 when empty)
// and its element count, at most, when each symbol s ranges over ranges[s].
struct Extent {
  int64_t elements = 0;
  int64_t numel = 0;
};
// Null when the shape is valid there; otherwise what is wrong ("a negative dim", ...), with
// the dim at fault in *bad_dim.
const char* value_extent(const program::Value& value, const Interval* ranges, uint32_t num_symbols, Extent* extent,
                         int* bad_dim);

// The range of a view's first element, in elements from its root's first element.
bool view_offset_range(const program::Method& method, uint32_t index, const Interval* ranges, uint32_t num_symbols,
                       Interval* offset);

struct Method {
  const program::Method* method = nullptr;
  struct Program* program = nullptr;
  std::vector<Interval> symbol_bounds;   // [min, max] of each symbol
  std::vector<int64_t> symbols;          // per run: the bound values
  std::vector<ValueInfo> values;
  std::unique_ptr<unsigned char, FreeDeleter> arena;
  std::unique_ptr<unsigned char, FreeDeleter> scratch;  // kernels' temporary memory, one call at a time
  int64_t scratch_bytes = 0;
  std::vector<void*> input_data;         // per run: the caller's buffers and their element counts
  std::vector<void*> output_data;
  std::vector<int64_t> input_numel;
  std::vector<int64_t> output_numel;
  std::vector<TensorView> operand_views; // per call: inputs then outputs
  std::vector<OperandType> operand_types;
};

struct Program {
  const unsigned char* file = nullptr;
  size_t file_bytes = 0;
  void* mapping = nullptr;  // munmap'ed by the destructor when the file was mapped
  size_t mapping_bytes = 0;
  const program::Program* root = nullptr;
  std::vector<const Kernel*> kernels;  // per operator
  std::vector<Method> methods;

  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();
};

// Loads `size` bytes at `data` (64-byte aligned; the caller keeps them alive) and verifies
// them. Returns null after error.fail.
std::unique_ptr<Program> load_program(const unsigned char* data, size_t size, Error& error);

// Maps the file at `path` and loads it.
std::unique_ptr<Program> load_program_file(const char* path, Error& error);

// The checks of verifier.cpp, on a program whose FlatBuffer passed the FlatBuffers verifier:
// fills `program`'s kernels and methods.
bool verify_program(Program& program, Error& error);

// Binds the inputs' sizes to the symbols, runs the instructions, writes the outputs' sizes.
bool run_method(Method& method, const EmberRtTensor* inputs, size_t num_inputs, EmberRtTensor* outputs,
                size_t num_outputs, Error& error);

// The view of value `index` under the bound symbols; false (and error) for a view that
// reaches outside the caller's buffer it is a view of.
bool resolve_value(const Method& method, uint32_t index, TensorView* view, Error& error);

}  // namespace ember::rt
