// ember::detail::demangle: a type's name as written in C++, for error messages.
#pragma once
#include <string>

namespace ember::detail {

// "std::string" for typeid(std::string).name(); the name unchanged where it cannot be read.
std::string demangle(const char* name);

}  // namespace ember::detail
