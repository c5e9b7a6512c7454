// Writes IDX files (MNIST's format) byte by byte for the tests and the digits tool: a
// big-endian magic number, the sizes, then the bytes.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace ember::testing {

inline void append_big_endian(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

inline std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& sizes, const std::vector<uint8_t>& data) {
  std::string out;
  append_big_endian(out, magic);
  for (uint32_t size : sizes) append_big_endian(out, size);
  out.append(data.begin(), data.end());
  return out;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// train-images-idx3-ubyte (magic 2051) and train-labels-idx1-ubyte (magic 2049), or t10k-*.
inline void write_mnist(const std::string& dir, bool train, uint32_t rows, uint32_t cols,
                        const std::vector<uint8_t>& pixels, const std::vector<uint8_t>& labels) {
  const std::string prefix = dir + (train ? "/train-" : "/t10k-");
  write_bytes(prefix + "images-idx3-ubyte",
              idx_bytes(2051, {static_cast<uint32_t>(labels.size()), rows, cols}, pixels));
  write_bytes(prefix + "labels-idx1-ubyte", idx_bytes(2049, {static_cast<uint32_t>(labels.size())}, labels));
}

}  // namespace ember::testing
