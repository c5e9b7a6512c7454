// ember::detail::demangle: readable type names for error messages.
#include <cxxabi.h>

#include <cstdlib>
#include <string>

#include "ember/detail/demangle.h"

namespace ember::detail {

std::string demangle(const char* name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && readable ? readable : name;
  std::free(readable);
  return out;
}

}  // namespace ember::detail
