// The 32-byte header in front of a .ember file's FlatBuffer (Note [Program file layout] in
// program.fbs): written by the exporter, checked by the runtime's loader.
#pragma once
#include <cstdint>
#include <cstring>

namespace ember::program {

inline constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'P', 'R', 'G'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint64_t kHeaderBytes = 32;
inline constexpr uint64_t kSegmentAlignment = 64;

struct FileHeader {
  uint32_t version = 0;
  uint64_t flatbuffer_bytes = 0;
};

namespace detail {
inline uint64_t read_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline void write_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
}  // namespace detail

// `out` receives kHeaderBytes bytes.
inline void write_file_header(unsigned char* out, const FileHeader& header) {
  std::memset(out, 0, kHeaderBytes);
  std::memcpy(out, kMagic, sizeof(kMagic));
  detail::write_le(out + 8, header.version, 4);
  detail::write_le(out + 16, header.flatbuffer_bytes, 8);
}

// False when the magic or the reserved zero bytes are wrong; `in` holds kHeaderBytes bytes.
inline bool read_file_header(const unsigned char* in, FileHeader* header) {
  if (std::memcmp(in, kMagic, sizeof(kMagic)) != 0) return false;
  if (detail::read_le(in + 12, 4) != 0 || detail::read_le(in + 24, 8) != 0) return false;
  header->version = static_cast<uint32_t>(detail::read_le(in + 8, 4));
  header->flatbuffer_bytes = detail::read_le(in + 16, 8);
  return true;
}

}  // namespace ember::program
