// Native safetensors: zero-copy memory-mapped loading, strict validation, atomic saves.
//
// Every file is treated as hostile: the header is validated as strictly as the reference
// implementation (huggingface/safetensors) before any tensor is built, and every error is
// an ember::Error naming the file, the tensor and what is wrong.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/dtype.h"
#include "ember/tensor.h"

namespace ember::io {

// The dtypes of the format, in the reference's order (ascending alignment); the writer
// lays tensors out in descending order of this enum, then by name.
enum class FileDtype : uint8_t { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

const char* file_dtype_name(FileDtype dtype);
size_t file_dtype_size(FileDtype dtype);
// The ember dtype a tensor of this file dtype loads as: F8_* load as float32; nullopt for
// dtypes ember cannot represent (I16, U16, U32, U64).
std::optional<ScalarType> loaded_scalar_type(FileDtype dtype);

using TensorList = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::map<std::string, std::string>;

// One entry of the header. data_begin/data_end are relative to the data buffer.
struct TensorInfo {
  std::string name;
  FileDtype dtype = FileDtype::F32;
  std::vector<int64_t> shape;
  uint64_t data_begin = 0;
  uint64_t data_end = 0;
  int64_t numel() const;
  uint64_t nbytes() const { return data_end - data_begin; }
};

// A validated header. Tensors are in file order (ascending data offsets).
struct Header {
  std::vector<TensorInfo> tensors;
  Metadata metadata;
  uint64_t data_start = 0;  // byte offset of the data buffer in the file: 8 + header length
};

// Validates a whole file image (`size` bytes at `bytes`); `file` only names it in errors.
// Never reads outside [bytes, bytes + size) and allocates at most in proportion to the
// (already bounded) header length.
Header parse_safetensors(const void* bytes, size_t size, const std::string& file);

// A lazy handle on a memory-mapped file, like Python's safe_open: listing names, dtypes
// and shapes reads only the header; get_tensor materialises one tensor as a read-only
// zero-copy view of the map (copied only if misaligned or F8, which converts to float32).
class SafeOpen {
 public:
  explicit SafeOpen(const std::string& path);
  // A file image already in memory (read from a stream or a buffer); `name` names it in
  // errors. Tensors are views of `image`, which they keep alive.
  SafeOpen(std::shared_ptr<const std::vector<unsigned char>> image, std::string name);

  const std::string& path() const { return path_; }
  std::vector<std::string> keys() const;
  bool contains(const std::string& name) const;
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const TensorInfo& info(const std::string& name) const;
  const Metadata& metadata() const { return header_.metadata; }

  Tensor get_tensor(const std::string& name) const;
  // Rows [start, end) along dim 0, without touching the other rows.
  Tensor get_slice(const std::string& name, int64_t start, int64_t end) const;

 private:
  Tensor materialize(const TensorInfo& info, int64_t row_begin, int64_t row_end) const;

  std::string path_;
  std::shared_ptr<const void> mapping_;  // keeps the memory map alive
  const unsigned char* bytes_ = nullptr;   // the mapped file
  Header header_;
};

inline SafeOpen safe_open(const std::string& path) { return SafeOpen(path); }

struct LoadedTensors {
  TensorList tensors;  // file order
  Metadata metadata;   // the `__metadata__` map
  const Tensor& at(const std::string& name) const;
};

LoadedTensors load_safetensors(const std::string& path);
// The whole rest of `in` (or `size` bytes at `data`, copied) as one file; `name` names it in
// errors.
LoadedTensors load_safetensors(std::istream& in, const std::string& name = "stream");
LoadedTensors load_safetensors(const void* data, size_t size, const std::string& name = "buffer");

// Writes atomically: a temporary file in the same directory, fsynced, then renamed over
// `path` (so tensors still mapped from the old file stay valid). The layout follows the
// reference writer: tensors sorted by dtype alignment (descending), then by name; header
// padded with spaces to a multiple of 8.
void save_safetensors(const std::string& path, const TensorList& tensors, const Metadata& metadata = {});
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const Metadata& metadata = {});
// The same bytes to a stream; a stream that fails is an error naming `name`.
void save_safetensors(std::ostream& out, const TensorList& tensors, const Metadata& metadata = {},
                      const std::string& name = "stream");

}  // namespace ember::io
