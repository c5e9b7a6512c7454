// MNIST's IDX files and scikit-learn's digits CSV, read into tensors (image_datasets.h).
#include "ember/data/image_datasets.h"

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/functions.h"

namespace ember::data::datasets {
namespace {

constexpr uint32_t kImageMagicNumber = 2051;
constexpr uint32_t kTargetMagicNumber = 2049;

uint32_t read_big_endian_u32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string join_paths(std::string head, const std::string& tail) {
  if (!head.empty() && head.back() != '/') head.push_back('/');
  return head + tail;
}

// An IDX file: magic number, then `dims` big-endian sizes, then exactly prod(sizes) bytes.
// Returns the sizes; the data starts at 4 * (1 + dims).
std::vector<int64_t> read_idx_header(const std::string& bytes, const std::string& path, uint32_t magic, size_t dims) {
  const size_t header_bytes = 4 * (1 + dims);
  EMBER_CHECK(bytes.size() >= header_bytes, "MNIST", path, ": truncated header (", bytes.size(), " bytes, need ",
              header_bytes, ")");
  const uint32_t found = read_big_endian_u32(bytes, 0);
  EMBER_CHECK(found == magic, "MNIST", path, ": expected magic number ", magic, ", found ", found);
  std::vector<int64_t> sizes;
  uint64_t payload = 1;
  for (size_t d = 0; d < dims; ++d) {
    sizes.push_back(read_big_endian_u32(bytes, 4 * (1 + d)));
    payload *= static_cast<uint64_t>(sizes.back());
  }
  EMBER_CHECK(bytes.size() - header_bytes == payload, "MNIST", path, ": sizes ", sizes, " need ", payload,
              " bytes of data, the file has ", bytes.size() - header_bytes);
  return sizes;
}

Tensor read_idx(const std::string& path, uint32_t magic, size_t dims) {
  std::string bytes = read_file(path, "MNIST");
  std::vector<int64_t> sizes = read_idx_header(bytes, path, magic, dims);
  Tensor tensor = empty(sizes, kUInt8);
  std::memcpy(tensor.data_ptr(), bytes.data() + 4 * (1 + dims), static_cast<size_t>(tensor.numel()));
  return tensor;
}

std::string read_maybe_gzipped(const std::string& path, const char* op) {
  if (path.size() < 3 || path.compare(path.size() - 3, 3, ".gz") != 0) return read_file(path, op);
  gzFile file = gzopen(path.c_str(), "rb");
  EMBER_CHECK(file != nullptr, op, "cannot open ", path);
  std::string text;
  char buffer[1 << 16];
  int got = 0;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  int status = 0;
  const std::string message = got < 0 ? gzerror(file, &status) : "";
  gzclose(file);
  EMBER_CHECK(got == 0, op, path, ": cannot gunzip (", message, ")");
  return text;
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) : LabeledImages(mode) {
  const bool train = mode == Mode::kTrain;
  const std::string images_path = join_paths(root, train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte");
  const std::string targets_path = join_paths(root, train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte");
  Tensor images = read_idx(images_path, kImageMagicNumber, 3);
  Tensor targets = read_idx(targets_path, kTargetMagicNumber, 1);
  EMBER_CHECK(images.size(0) == targets.size(0), "MNIST", images_path, " holds ", images.size(0), " images but ",
              targets_path, " holds ", targets.size(0), " labels");
  images_ = images.unsqueeze(1).to(kFloat32).div_(255);
  targets_ = targets.to(kInt64);
}

Digits::Digits(const std::string& path, Mode mode) : LabeledImages(mode) {
  constexpr int64_t kPixels = 64;
  const std::string text = read_maybe_gzipped(path, "Digits");
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  size_t line_begin = 0;
  for (int64_t line = 1; line_begin < text.size(); ++line) {
    size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string::npos) line_end = text.size();
    const std::string row = text.substr(line_begin, line_end - line_begin);
    line_begin = line_end + 1;
    if (row.empty() || row == "\r") continue;
    size_t field_begin = 0;
    for (int64_t column = 0; column <= kPixels; ++column) {
      EMBER_CHECK(field_begin <= row.size(), "Digits", path, " line ", line, ": ", column, " values, expected ",
                  kPixels + 1);
      size_t field_end = row.find(',', field_begin);
      if (field_end == std::string::npos) field_end = row.size();
      const std::string field = row.substr(field_begin, field_end - field_begin);
      field_begin = field_end + 1;
      char* end = nullptr;
      const double value = std::strtod(field.c_str(), &end);
      const bool numeric = !field.empty() && (*end == '\0' || *end == '\r');
      const double limit = column < kPixels ? 16 : 9;
      EMBER_CHECK(numeric && value >= 0 && value <= limit && value == static_cast<int64_t>(value), "Digits", path,
                  " line ", line, " column ", column + 1, ": expected an integer in [0, ", limit, "], got '", field,
                  "'");
      if (column < kPixels) {
        pixels.push_back(static_cast<float>(value / 16));
      } else {
        labels.push_back(static_cast<int64_t>(value));
      }
    }
    EMBER_CHECK(field_begin > row.size(), "Digits", path, " line ", line, ": more than ", kPixels + 1, " values");
  }
  const int64_t rows = static_cast<int64_t>(labels.size());
  EMBER_CHECK(rows > 0, "Digits", path, " holds no rows");
  const int64_t test_rows = (rows + 4) / 5;
  const int64_t begin = mode == Mode::kTrain ? 0 : rows - test_rows;
  const int64_t end = mode == Mode::kTrain ? rows - test_rows : rows;
  images_ = tensor(pixels).view({rows, 1, 8, 8}).slice(0, begin, end).clone();
  targets_ = tensor(labels).slice(0, begin, end).clone();
}

namespace detail {

Example<> labeled_image(const Tensor& images, const Tensor& targets, size_t index, const char* op) {
  EMBER_CHECK(index < static_cast<size_t>(images.size(0)), op, "index ", index, " is out of range for ",
              images.size(0), " examples");
  return {images[static_cast<int64_t>(index)], targets[static_cast<int64_t>(index)]};
}

}  // namespace detail

}  // namespace ember::data::datasets
