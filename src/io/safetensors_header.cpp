// Parsing and validation of a safetensors header, mirroring the reference implementation's
// rules (huggingface/safetensors, SafeTensors::read_metadata + Metadata::validate), plus
// rejection of duplicate keys, which serde and nlohmann would silently resolve.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "ember/error.h"
#include "ember/io/safetensors.h"

namespace ember::io {

namespace {

constexpr const char* kOp = "safetensors";
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeEntry {
  const char* name;
  size_t size;
};
constexpr DtypeEntry kDtypes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                  {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
                                  {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};

std::optional<FileDtype> parse_dtype(const std::string& name) {
  for (size_t i = 0; i < std::size(kDtypes); ++i) {
    if (name == kDtypes[i].name) return static_cast<FileDtype>(i);
  }
  return std::nullopt;
}

// Builds the header from SAX events. The accepted shape is fixed and shallow:
//   {"__metadata__": {str: str, ...}, name: {"dtype": str, "shape": [uint...],
//    "data_offsets": [uint, uint]}, ...}
// Unknown fields inside a tensor entry are skipped, as serde does for the reference.
class HeaderBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit HeaderBuilder(const std::string& file) : file_(file) {}

  Header header;

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t) override { return scalar("a negative integer"); }
  bool number_float(number_float_t, const string_t&) override { return scalar("a non-integer number"); }
  bool number_unsigned(number_unsigned_t value) override {
    if (skipping()) return true;
    if (depth_ == 3) {
      numbers_.push_back(value);
      return true;
    }
    return scalar("a number");
  }
  bool string(string_t& value) override {
    if (skipping()) return true;
    if (depth_ == 2 && in_metadata_) {
      header.metadata[metadata_key_] = value;
      return true;
    }
    if (depth_ == 2 && field_ == "dtype") {
      auto dtype = parse_dtype(value);
      if (!dtype) fail("unknown dtype '", value, "'");
      tensor_.dtype = *dtype;
      seen_dtype_ = true;
      return true;
    }
    return scalar("a string");
  }
  bool binary(binary_t&) override { return scalar("binary data"); }

  bool start_object(std::size_t) override {
    if (enter_skipped()) return true;
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ != 1) return scalar("an object");
    depth_ = 2;
    in_metadata_ = name_ == "__metadata__";
    fields_.clear();
    tensor_ = TensorInfo{};
    tensor_.name = name_;
    seen_dtype_ = seen_shape_ = seen_offsets_ = false;
    return true;
  }
  bool end_object() override {
    if (leave_skipped()) return true;
    if (depth_ == 2 && !in_metadata_) finish_tensor();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (enter_skipped()) return true;
    if (depth_ != 2 || in_metadata_ || (field_ != "shape" && field_ != "data_offsets")) return scalar("an array");
    depth_ = 3;
    numbers_.clear();
    return true;
  }
  bool end_array() override {
    if (leave_skipped()) return true;
    depth_ = 2;
    if (field_ == "shape") {
      store_shape();
    } else {
      if (numbers_.size() != 2) fail("data_offsets must hold exactly 2 numbers, got ", numbers_.size());
      tensor_.data_begin = numbers_[0];
      tensor_.data_end = numbers_[1];
      seen_offsets_ = true;
    }
    return true;
  }
  bool key(string_t& key) override {
    if (skipping()) return true;
    if (depth_ == 1) {
      if (!names_.insert(key).second) fail_at(key, "duplicate tensor name");
      name_ = key;
    } else if (in_metadata_) {
      if (!fields_.insert(key).second) fail("duplicate metadata key '", key, "'");
      metadata_key_ = key;
    } else {
      if (!fields_.insert(key).second) fail("duplicate field '", key, "'");
      field_ = key;
      skip_next_value_ = key != "dtype" && key != "shape" && key != "data_offsets";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    EMBER_FAIL(kOp, "file '", file_, "': header is not valid JSON: ", e.what());
  }

 private:
  bool skipping() const { return skip_depth_ > 0 || skip_next_value_; }
  // Unknown fields: their value, however nested, is consumed without being stored.
  bool enter_skipped() {
    if (skip_depth_ > 0 || skip_next_value_) {
      ++skip_depth_;
      skip_next_value_ = false;
      return true;
    }
    return false;
  }
  bool leave_skipped() {
    if (skip_depth_ == 0) return false;
    --skip_depth_;
    return true;
  }
  bool scalar(const char* kind) {
    if (skip_depth_ > 0) return true;
    if (skip_next_value_) {
      skip_next_value_ = false;
      return true;
    }
    if (depth_ == 0) EMBER_FAIL(kOp, "file '", file_, "': header must be a JSON object, got ", kind);
    if (depth_ == 1) fail_at(name_, "entry must be an object, got ", kind);
    if (in_metadata_) fail("value of key '", metadata_key_, "' must be a string, got ", kind);
    if (depth_ == 3) fail("field '", field_, "' must hold non-negative integers, got ", kind);
    const char* expected = field_ == "dtype" ? "a string" : "an array";
    fail("field '", field_, "' must be ", expected, ", got ", kind);
  }
  void store_shape() {
    tensor_.shape.clear();
    for (uint64_t dim : numbers_) {
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("shape dimension ", dim, " exceeds int64");
      tensor_.shape.push_back(static_cast<int64_t>(dim));
    }
    seen_shape_ = true;
  }
  void finish_tensor() {
    if (!seen_dtype_) fail("missing field 'dtype'");
    if (!seen_shape_) fail("missing field 'shape'");
    if (!seen_offsets_) fail("missing field 'data_offsets'");
    header.tensors.push_back(std::move(tensor_));
  }
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) {
    if (in_metadata_) EMBER_FAIL(kOp, "file '", file_, "': __metadata__: ", args...);
    fail_at(name_, args...);
  }
  template <typename... Args>
  [[noreturn]] void fail_at(const std::string& name, const Args&... args) {
    EMBER_FAIL(kOp, "file '", file_, "': tensor '", name, "': ", args...);
  }

  const std::string& file_;
  int depth_ = 0;  // 1: top object, 2: an entry, 3: an array inside an entry
  int skip_depth_ = 0;
  bool skip_next_value_ = false;
  bool in_metadata_ = false;
  std::string name_, field_, metadata_key_;
  std::set<std::string> names_, fields_;
  TensorInfo tensor_;
  bool seen_dtype_ = false, seen_shape_ = false, seen_offsets_ = false;
  std::vector<uint64_t> numbers_;
};

uint64_t read_le_u64(const unsigned char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

// numel × element size with the reference's overflow checks (fold over dims in order).
uint64_t checked_nbytes(const TensorInfo& info, const std::string& file) {
  uint64_t numel = 1;
  for (int64_t dim : info.shape) {
    EMBER_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(dim), &numel), kOp, "file '", file,
                "': tensor '", info.name, "': shape ", info.shape, " overflows when multiplied out");
  }
  uint64_t nbytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(numel, file_dtype_size(info.dtype), &nbytes), kOp, "file '", file,
              "': tensor '", info.name, "': byte size of shape ", info.shape, " overflows");
  EMBER_CHECK(numel <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), kOp, "file '", file,
              "': tensor '", info.name, "': ", numel, " elements exceed int64");
  return nbytes;
}

// The data offsets, taken in ascending order, must tile [0, data_len) with no gap or overlap.
void validate_layout(std::vector<TensorInfo>& tensors, uint64_t data_len, const std::string& file) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::pair(a.data_begin, a.data_end) < std::pair(b.data_begin, b.data_end);
  });
  uint64_t end = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& info : tensors) {
    auto where = [&] {
      return previous ? "the previous tensor '" + previous->name + "' ends at " + std::to_string(end)
                      : std::string("the data buffer starts at 0");
    };
    EMBER_CHECK(info.data_end >= info.data_begin, kOp, "file '", file, "': tensor '", info.name,
                "': data_offsets [", info.data_begin, ", ", info.data_end, "] end before they begin");
    EMBER_CHECK(info.data_begin >= end, kOp, "file '", file, "': tensor '", info.name, "': data_offsets [",
                info.data_begin, ", ", info.data_end, "] overlap: ", where());
    EMBER_CHECK(info.data_begin == end, kOp, "file '", file, "': tensor '", info.name, "': data_offsets [",
                info.data_begin, ", ", info.data_end, "] leave a gap: ", where());
    const uint64_t nbytes = checked_nbytes(info, file);
    EMBER_CHECK(info.nbytes() == nbytes, kOp, "file '", file, "': tensor '", info.name, "': data_offsets [",
                info.data_begin, ", ", info.data_end, "] span ", info.nbytes(), " bytes but shape ", info.shape,
                " of ", file_dtype_name(info.dtype), " needs ", nbytes);
    end = info.data_end;
    previous = &info;
  }
  const std::string last = previous ? "tensor '" + previous->name + "'" : std::string("the header");
  EMBER_CHECK(end <= data_len, kOp, "file '", file, "': ", last, " needs data up to byte ", end,
              " but the data buffer has only ", data_len, " bytes (truncated file?)");
  EMBER_CHECK(end == data_len, kOp, "file '", file, "': ", data_len - end, " bytes left over after ", last,
              " (data buffer is ", data_len, " bytes, tensors cover ", end, ")");
}

}  // namespace

const char* file_dtype_name(FileDtype dtype) { return kDtypes[static_cast<size_t>(dtype)].name; }
size_t file_dtype_size(FileDtype dtype) { return kDtypes[static_cast<size_t>(dtype)].size; }

std::optional<ScalarType> loaded_scalar_type(FileDtype dtype) {
  switch (dtype) {
    case FileDtype::BOOL: return kBool;
    case FileDtype::U8: return kUInt8;
    case FileDtype::I8: return kInt8;
    case FileDtype::F16: return kFloat16;
    case FileDtype::BF16: return kBFloat16;
    case FileDtype::I32: return kInt32;
    case FileDtype::F32: return kFloat32;
    case FileDtype::F64: return kFloat64;
    case FileDtype::I64: return kInt64;
    case FileDtype::F8_E4M3: case FileDtype::F8_E5M2: return kFloat32;
    default: return std::nullopt;
  }
}

int64_t TensorInfo::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

Header parse_safetensors(const void* bytes, size_t size, const std::string& file) {
  const auto* data = static_cast<const unsigned char*>(bytes);
  EMBER_CHECK(size >= 8, kOp, "file '", file, "': ", size, " bytes is fewer than the 8-byte header length");
  const uint64_t header_len = read_le_u64(data);
  EMBER_CHECK(header_len <= kMaxHeaderBytes, kOp, "file '", file, "': header length ", header_len,
              " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  EMBER_CHECK(header_len <= size - 8, kOp, "file '", file, "': header length ", header_len,
              " runs past the end of the file (", size - 8, " bytes after the length)");
  const char* text = reinterpret_cast<const char*>(data + 8);
  EMBER_CHECK(header_len > 0 && text[0] == '{', kOp, "file '", file, "': header must start with '{'");

  // nlohmann's lexer takes a NUL byte for the end of input, which would let bytes after it
  // slip past; JSON never contains a raw NUL, so reject it outright.
  const void* nul = std::memchr(text, '\0', header_len);
  EMBER_CHECK(nul == nullptr, kOp, "file '", file, "': header is not valid JSON: NUL byte at header offset ",
              static_cast<const char*>(nul) - text);
  HeaderBuilder builder(file);
  // nlohmann rejects ill-formed UTF-8 inside strings; any non-ASCII byte outside them is a
  // syntax error, so the reference's separate UTF-8 check is covered.
  nlohmann::json::sax_parse(text, text + header_len, &builder);
  Header header = std::move(builder.header);
  header.data_start = 8 + header_len;
  validate_layout(header.tensors, size - header.data_start, file);
  return header;
}

}  // namespace ember::io
