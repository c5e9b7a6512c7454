#include "runtime/error.h"

#include <cstdarg>
#include <cstdio>

namespace ember::rt {

bool Error::fail(EmberRtStatus status, const char* format, ...) {
  if (status_ != EMBER_RT_OK) return false;  // the first failure explains the rest
  status_ = status;
  va_list args;
  va_start(args, format);
  std::vsnprintf(message_, sizeof(message_), format, args);
  va_end(args);
  return false;
}

}  // namespace ember::rt
