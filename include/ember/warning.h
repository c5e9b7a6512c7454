// EMBER_WARN and EMBER_WARN_ONCE, as libtorch's TORCH_WARN and TORCH_WARN_ONCE: a warning that
// does not stop the program, its message made of the arguments as EMBER_CHECK makes one, written
// to std::cerr as "Warning: <message> (<file>:<line>)". EMBER_WARN_ONCE writes at its first
// execution only (per call site, for the life of the process).
#pragma once
#include <iostream>
#include <string>

#include "ember/error.h"

namespace ember::detail {
inline void write_warning(const std::string& message, const char* file, int line) {
  std::cerr << "Warning: " << message << " (" << file << ':' << line << ")\n";
}
}  // namespace ember::detail

#define EMBER_WARN(...) ::ember::detail::write_warning(::ember::str(__VA_ARGS__), __FILE__, __LINE__)

#define EMBER_WARN_ONCE(...)                                                          \
  do {                                                                                \
    [[maybe_unused]] static const bool ember_warned_once = (EMBER_WARN(__VA_ARGS__), true); \
  } while (false)
