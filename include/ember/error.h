// ember::Error, the check macro for user errors and libtorch's assertion macro.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {

// Thrown for every user error (bad shapes, dtypes, indices, files). The message starts
// with the op name in brackets: "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline void append(std::ostringstream&) {}

template <typename T>
void append_one(std::ostringstream& out, const T& value) {
  out << value;
}

// A vector prints as [a, b, c] unless its element type's namespace says how (as
// indexing::TensorIndex lists print "(a, b)").
template <typename T>
void append_one(std::ostringstream& out, const std::vector<T>& values) {
  if constexpr (requires(std::ostream& stream) { operator<<(stream, values); }) {
    operator<<(out, values);
  } else {
    out << '[';
    for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
    out << ']';
  }
}

template <typename T, typename... Rest>
void append(std::ostringstream& out, const T& first, const Rest&... rest) {
  append_one(out, first);
  append(out, rest...);
}

}  // namespace detail

// The arguments written one after another into a string, as libtorch's torch::str (c10::str):
// str("sample-", 3, ".pt") == "sample-3.pt". A std::vector prints as [a, b, c].
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  detail::append(out, args...);
  return out.str();
}

namespace detail {

template <typename... Args>
[[noreturn]] void throw_error(const char* op, const Args&... args) {
  throw Error(str('[', op, "] ", args...));
}

}  // namespace detail
}  // namespace ember

// EMBER_CHECK(cond, "op", message parts...): throws ember::Error("[op] message") when cond
// is false. Vectors print as [a, b, c]. ember's own code uses assert() for internal invariants.
#define EMBER_CHECK(cond, op, ...)                                   \
  do {                                                               \
    if (!(cond)) ::ember::detail::throw_error(op, __VA_ARGS__);      \
  } while (false)

#define EMBER_FAIL(op, ...) ::ember::detail::throw_error(op, __VA_ARGS__)

// EMBER_ASSERT(cond, message parts...): libtorch's AT_ASSERT (c10's TORCH_INTERNAL_ASSERT), so
// a libtorch program's assertion compiles by the prefix change. Where cond is false it throws
// ember::Error("[assert] `cond` failed at file:line: message parts") (no ": ..." without
// them); libtorch's text differs ("... INTERNAL ASSERT FAILED at ..."). As in libtorch, a
// comma outside parentheses splits cond: write EMBER_ASSERT((std::is_same_v<A, B>)).
#define EMBER_ASSERT(cond, ...)                                                                         \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      ::ember::detail::throw_error("assert", "`" #cond "` failed at " __FILE__ ":",                     \
                                   __LINE__ __VA_OPT__(, ": ", ) __VA_ARGS__);                          \
  } while (false)
