#include "distributed/text_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/error.h"

namespace ember::distributed {

void write_text_atomically(const std::string& path, const std::string& text, const char* op) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    EMBER_CHECK(out.good(), op, "cannot write ", tmp);
  }
  EMBER_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, op, "cannot rename ", tmp, " to ", path);
}

std::string read_text(const std::string& path, const char* op) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), op, "cannot read ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ember::distributed
