// Whole files: read in one go, or replaced atomically (readers see the old file or the whole
// new one, also after a crash). Safetensors saves, checkpoint indexes, flight-recorder dumps
// and training metrics all write through here.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace ember {

// The temporary file that write_file_atomically hands to its callback.
class AtomicFileWriter {
 public:
  AtomicFileWriter(int fd, std::string temp_path, const char* op) : fd_(fd), temp_path_(std::move(temp_path)), op_(op) {}
  // Appends `size` bytes; throws ember::Error naming the op on failure.
  void write(const void* data, size_t size);

 private:
  int fd_;
  std::string temp_path_;
  const char* op_;
};

// Creates a temporary file next to `path`, lets `fill` write it, gives it the mode of the file
// it replaces (0644 for a new one), syncs it, renames it over `path` and syncs the directory.
// On failure the temporary file is removed and `path` is untouched. Errors name `op`.
void write_file_atomically(const std::string& path, const char* op, const std::function<void(AtomicFileWriter&)>& fill);
void write_file_atomically(const std::string& path, const std::string& contents, const char* op);

// The whole file; throws ember::Error naming `op` when it cannot be opened.
std::string read_file(const std::string& path, const char* op);

}  // namespace ember
