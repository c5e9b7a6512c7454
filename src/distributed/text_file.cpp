#include "distributed/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/error.h"

namespace ember::distributed {

void write_text_atomically(const std::string& path, const std::string& text, const char* op) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  // Synced before the rename (and the directory after it), so that after a crash the path
  // holds the old text or the whole new one, never an empty file.
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  EMBER_CHECK(file, op, "cannot write ", tmp, ": ", std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size() && std::fflush(file) == 0 &&
                       ::fsync(::fileno(file)) == 0;
  const int write_error = errno;
  if (std::fclose(file) != 0 || !written) {
    ::unlink(tmp.c_str());
    EMBER_FAIL(op, "cannot write ", tmp, ": ", std::strerror(written ? errno : write_error));
  }
  EMBER_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, op, "cannot rename ", tmp, " to ", path);
  const std::string parent = std::filesystem::path(path).parent_path().string();
  const int directory = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = directory >= 0 && ::fsync(directory) == 0;
  const int sync_error = errno;
  if (directory >= 0) ::close(directory);
  EMBER_CHECK(synced, op, "cannot sync the directory of ", path, ": ", std::strerror(sync_error));
}

std::string read_text(const std::string& path, const char* op) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), op, "cannot read ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ember::distributed
