// Atomic replacement (temporary file, fsync, rename, directory fsync) and whole-file reads.
#include "ember/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ember/error.h"

namespace ember {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The new file keeps the mode of the one it replaces (mkstemp creates 0600).
mode_t target_mode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
}

}  // namespace

void AtomicFileWriter::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, p, std::min<size_t>(size, size_t{1} << 30));
    if (written < 0 && errno == EINTR) continue;
    EMBER_CHECK(written > 0, op_, "file '", temp_path_, "': write failed: ", errno_text());
    p += written;
    size -= static_cast<size_t>(written);
  }
}

void write_file_atomically(const std::string& path, const char* op, const std::function<void(AtomicFileWriter&)>& fill) {
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  EMBER_CHECK(fd >= 0, op, "file '", path, "': cannot create a temporary file next to it: ", errno_text());
  try {
    AtomicFileWriter writer(fd, temp, op);
    fill(writer);
    EMBER_CHECK(::fchmod(fd, target_mode(path)) == 0, op, "file '", temp, "': chmod failed: ", errno_text());
    EMBER_CHECK(::fsync(fd) == 0, op, "file '", temp, "': fsync failed: ", errno_text());
    // A deferred write error surfaces at close on some filesystems.
    const int closed = ::close(std::exchange(fd, -1));
    EMBER_CHECK(closed == 0, op, "file '", temp, "': close failed: ", errno_text());
    // rename() swaps the directory entry; maps of the old file keep its (unlinked) inode.
    EMBER_CHECK(::rename(temp.c_str(), path.c_str()) == 0, op, "file '", path, "': cannot rename '", temp,
                "' over it: ", errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  const int directory = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = directory >= 0 && ::fsync(directory) == 0;
  const std::string sync_error = errno_text();
  if (directory >= 0) ::close(directory);
  EMBER_CHECK(synced, op, "file '", path, "': cannot fsync its directory: ", sync_error);
}

void write_file_atomically(const std::string& path, const std::string& contents, const char* op) {
  write_file_atomically(path, op, [&](AtomicFileWriter& file) { file.write(contents.data(), contents.size()); });
}

std::string read_file(const std::string& path, const char* op) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), op, "cannot read '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ember
