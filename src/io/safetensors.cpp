// Memory-mapped loading (SafeOpen, load_safetensors) and atomic saving of safetensors files.
#include "ember/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <istream>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/tensor_impl.h"
#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/storage.h"

// Tensors are views of the file's bytes, which the format defines as little-endian.
static_assert(std::endian::native == std::endian::little, "ember's safetensors support needs a little-endian host");

namespace ember::io {

namespace {

constexpr const char* kOp = "safetensors";

std::string errno_text() { return std::strerror(errno); }

// A read-only private map of a whole file; unmapped when the last tensor viewing it dies.
struct FileMap {
  const unsigned char* data = nullptr;
  size_t size = 0;
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;
  FileMap() = default;
  ~FileMap() {
    if (data) munmap(const_cast<unsigned char*>(data), size);
  }
};

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now, reporting failure (a deferred write error surfaces at close on some filesystems).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

std::shared_ptr<const FileMap> map_file(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EMBER_CHECK(fd.get() >= 0, kOp, "file '", path, "': cannot open: ", errno_text());
  struct stat st {};
  EMBER_CHECK(fstat(fd.get(), &st) == 0, kOp, "file '", path, "': cannot stat: ", errno_text());
  EMBER_CHECK(S_ISREG(st.st_mode), kOp, "file '", path, "': not a regular file");
  auto map = std::make_shared<FileMap>();
  map->size = static_cast<size_t>(st.st_size);
  // An empty file cannot be mapped; parse_safetensors rejects it by size alone.
  if (map->size == 0) return map;
  void* data = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  EMBER_CHECK(data != MAP_FAILED, kOp, "file '", path, "': cannot mmap ", map->size, " bytes: ", errno_text());
  map->data = static_cast<const unsigned char*>(data);
  return map;
}

// float8 -> float32 lookup tables (OCP FP8: E4M3 "fn" has no infinities, S.1111.111 is NaN;
// E5M2 is IEEE-like with infinities and NaNs).
std::array<float, 256> make_f8_table(int exponent_bits, int mantissa_bits, bool ieee_specials) {
  std::array<float, 256> table{};
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int max_exponent = (1 << exponent_bits) - 1;
  const int mantissa_mask = (1 << mantissa_bits) - 1;
  for (int bits = 0; bits < 256; ++bits) {
    const int exponent = (bits >> mantissa_bits) & max_exponent;
    const int mantissa = bits & mantissa_mask;
    const float sign = (bits & 0x80) ? -1.0f : 1.0f;
    float value;
    if (ieee_specials && exponent == max_exponent) {
      value = mantissa == 0 ? INFINITY : NAN;
    } else if (!ieee_specials && exponent == max_exponent && mantissa == mantissa_mask) {
      value = NAN;
    } else if (exponent == 0) {
      value = std::ldexp(static_cast<float>(mantissa), 1 - bias - mantissa_bits);
    } else {
      value = std::ldexp(static_cast<float>(mantissa + (1 << mantissa_bits)), exponent - bias - mantissa_bits);
    }
    table[bits] = sign * value;
  }
  return table;
}

Tensor convert_f8(const unsigned char* bytes, std::vector<int64_t> shape, FileDtype dtype) {
  static const std::array<float, 256> e4m3 = make_f8_table(4, 3, false);
  static const std::array<float, 256> e5m2 = make_f8_table(5, 2, true);
  const auto& table = dtype == FileDtype::F8_E4M3 ? e4m3 : e5m2;
  Tensor out = core::make_tensor(shape, kFloat32);
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = table[bytes[i]];
  return out;
}

// A C++ bool holding anything but 0 or 1 is undefined behaviour, so BOOL bytes are checked.
void check_bool_bytes(const unsigned char* bytes, size_t n, const std::string& file, const std::string& name) {
  for (size_t i = 0; i < n; ++i) {
    EMBER_CHECK(bytes[i] <= 1, kOp, "file '", file, "': tensor '", name, "': BOOL element ", i, " has byte value ",
                static_cast<int>(bytes[i]), " (must be 0 or 1)");
  }
}

}  // namespace

SafeOpen::SafeOpen(const std::string& path) : path_(path) {
  std::shared_ptr<const FileMap> map = map_file(path);
  header_ = parse_safetensors(map->data, map->size, path);
  bytes_ = map->data;
  mapping_ = std::move(map);
}

SafeOpen::SafeOpen(std::shared_ptr<const std::vector<unsigned char>> image, std::string name)
    : path_(std::move(name)) {
  EMBER_CHECK(image != nullptr, kOp, "'", path_, "': no file image");
  header_ = parse_safetensors(image->data(), image->size(), path_);
  bytes_ = image->data();
  mapping_ = std::move(image);
}

std::vector<std::string> SafeOpen::keys() const {
  std::vector<std::string> names;
  names.reserve(header_.tensors.size());
  for (const auto& info : header_.tensors) names.push_back(info.name);
  return names;
}

bool SafeOpen::contains(const std::string& name) const {
  return std::any_of(header_.tensors.begin(), header_.tensors.end(),
                     [&](const TensorInfo& info) { return info.name == name; });
}

const TensorInfo& SafeOpen::info(const std::string& name) const {
  for (const auto& info : header_.tensors) {
    if (info.name == name) return info;
  }
  EMBER_FAIL(kOp, "file '", path_, "': no tensor named '", name, "'");
}

Tensor SafeOpen::get_tensor(const std::string& name) const {
  const TensorInfo& entry = info(name);
  return materialize(entry, 0, entry.shape.empty() ? 1 : entry.shape[0]);
}

Tensor SafeOpen::get_slice(const std::string& name, int64_t start, int64_t end) const {
  const TensorInfo& entry = info(name);
  EMBER_CHECK(!entry.shape.empty(), kOp, "file '", path_, "': tensor '", name, "': cannot slice a scalar");
  EMBER_CHECK(0 <= start && start <= end && end <= entry.shape[0], kOp, "file '", path_, "': tensor '", name,
              "': rows [", start, ", ", end, ") out of range for dim 0 of size ", entry.shape[0]);
  return materialize(entry, start, end);
}

Tensor SafeOpen::materialize(const TensorInfo& entry, int64_t row_begin, int64_t row_end) const {
  const auto dtype = loaded_scalar_type(entry.dtype);
  EMBER_CHECK(dtype.has_value(), kOp, "file '", path_, "': tensor '", entry.name, "': dtype ",
              file_dtype_name(entry.dtype),
              " has no ember equivalent (loadable: BOOL, U8, I8, F16, BF16, I32, F32, F64, I64; "
              "F8_E4M3 and F8_E5M2 as float32)");
  std::vector<int64_t> shape = entry.shape;
  if (!shape.empty()) shape[0] = row_end - row_begin;
  // Validated: rows × row_bytes ≤ the tensor's byte span, which lies inside the map.
  const uint64_t rows_total = entry.shape.empty() ? 1 : static_cast<uint64_t>(entry.shape[0]);
  const uint64_t row_bytes = rows_total == 0 ? 0 : entry.nbytes() / rows_total;
  const size_t nbytes = static_cast<size_t>(row_bytes * static_cast<uint64_t>(row_end - row_begin));
  const unsigned char* bytes =
      bytes_ + header_.data_start + entry.data_begin + row_bytes * static_cast<uint64_t>(row_begin);

  if (entry.dtype == FileDtype::F8_E4M3 || entry.dtype == FileDtype::F8_E5M2) return convert_f8(bytes, shape, entry.dtype);
  if (entry.dtype == FileDtype::BOOL) check_bool_bytes(bytes, nbytes, path_, entry.name);

  std::vector<int64_t> strides = core::contiguous_strides(shape);
  // Files from other writers may misalign a tensor; typed access needs an aligned copy.
  if (reinterpret_cast<uintptr_t>(bytes) % element_size(*dtype) != 0) {
    Tensor copy = core::make_tensor(shape, *dtype);
    if (nbytes) std::memcpy(copy.data_ptr(), bytes, nbytes);
    return copy;
  }
  Storage storage = Storage::mapped(bytes, nbytes, mapping_);
  return core::make_view(storage, std::move(shape), std::move(strides), 0, *dtype);
}

const Tensor& LoadedTensors::at(const std::string& name) const {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return tensor;
  }
  EMBER_FAIL(kOp, "no tensor named '", name, "' among ", tensors.size(), " loaded tensors");
}

namespace {

LoadedTensors load_all(const SafeOpen& file) {
  LoadedTensors loaded;
  loaded.metadata = file.metadata();
  loaded.tensors.reserve(file.tensors().size());
  for (const auto& info : file.tensors()) loaded.tensors.emplace_back(info.name, file.get_tensor(info.name));
  return loaded;
}

}  // namespace

LoadedTensors load_safetensors(const std::string& path) { return load_all(SafeOpen(path)); }

LoadedTensors load_safetensors(std::istream& in, const std::string& name) {
  auto image = std::make_shared<std::vector<unsigned char>>();
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) image->insert(image->end(), chunk, chunk + in.gcount());
  EMBER_CHECK(!in.bad(), kOp, "'", name, "': reading the stream failed after ", image->size(), " bytes");
  return load_all(SafeOpen(std::move(image), name));
}

LoadedTensors load_safetensors(const void* data, size_t size, const std::string& name) {
  EMBER_CHECK(data != nullptr || size == 0, kOp, "'", name, "': a null buffer of ", size, " bytes");
  const auto* bytes = static_cast<const unsigned char*>(data);
  return load_all(SafeOpen(std::make_shared<const std::vector<unsigned char>>(bytes, bytes + size), name));
}

namespace {

FileDtype file_dtype_of(ScalarType dtype) {
  switch (dtype) {
    case kBool: return FileDtype::BOOL;
    case kUInt8: return FileDtype::U8;
    case kInt8: return FileDtype::I8;
    case kInt32: return FileDtype::I32;
    case kInt64: return FileDtype::I64;
    case kFloat16: return FileDtype::F16;
    case kBFloat16: return FileDtype::BF16;
    case kFloat32: return FileDtype::F32;
    case kFloat64: return FileDtype::F64;
  }
  EMBER_FAIL(kOp, "unsupported dtype ", dtype);
}

struct PendingTensor {
  std::string name;
  FileDtype dtype;
  Tensor data;  // contiguous
};

std::vector<PendingTensor> prepare_tensors(const std::string& path, const TensorList& tensors) {
  std::vector<PendingTensor> pending;
  std::set<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    EMBER_CHECK(tensor.defined(), kOp, "file '", path, "': tensor '", name, "' is undefined");
    EMBER_CHECK(names.insert(name).second, kOp, "file '", path, "': duplicate tensor name '", name, "'");
    EMBER_CHECK(name != "__metadata__", kOp, "file '", path, "': '__metadata__' is reserved and cannot name a tensor");
    pending.push_back({name, file_dtype_of(tensor.scalar_type()), tensor});
  }
  // The reference writer's order: descending dtype alignment, then name.
  std::sort(pending.begin(), pending.end(), [](const PendingTensor& a, const PendingTensor& b) {
    return a.dtype != b.dtype ? a.dtype > b.dtype : a.name < b.name;
  });
  return pending;
}

std::string build_header(const std::string& path, const std::vector<PendingTensor>& tensors, const Metadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t nbytes = t.data.nbytes();
    header[t.name] = {{"dtype", file_dtype_name(t.dtype)},
                      {"shape", t.data.sizes()},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(kOp, "file '", path, "': a tensor name or metadata string is not valid UTF-8: ", e.what());
  }
  // Pad with spaces so the data buffer starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// The file image in order, through write(pointer, bytes): to an atomic file or a stream.
template <typename Write>
void write_image(Write&& write, const std::string& header, const std::vector<PendingTensor>& tensors) {
  unsigned char length[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
  write(length, 8);
  write(header.data(), header.size());
  for (const auto& t : tensors) {
    const Tensor contiguous = t.data.contiguous();
    write(contiguous.data_ptr(), contiguous.nbytes());
  }
}

}  // namespace

void save_safetensors(const std::string& path, const TensorList& tensors, const Metadata& metadata) {
  const std::vector<PendingTensor> pending = prepare_tensors(path, tensors);
  const std::string header = build_header(path, pending, metadata);

  write_file_atomically(path, kOp, [&](AtomicFileWriter& file) {
    write_image([&](const void* data, size_t n) { file.write(data, n); }, header, pending);
  });
}

void save_safetensors(std::ostream& out, const TensorList& tensors, const Metadata& metadata, const std::string& name) {
  const std::vector<PendingTensor> pending = prepare_tensors(name, tensors);
  const std::string header = build_header(name, pending, metadata);
  write_image(
      [&](const void* data, size_t n) {
        out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
        EMBER_CHECK(out.good(), kOp, "'", name, "': writing ", n, " bytes to the stream failed");
      },
      header, pending);
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors, const Metadata& metadata) {
  save_safetensors(path, TensorList(tensors.begin(), tensors.end()), metadata);
}

}  // namespace ember::io
