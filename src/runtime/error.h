// The runtime's errors: a status and a message in a fixed buffer. The runtime is built
// without exceptions and allocates nothing while a method runs, so failures are returned
// as `false` after `Error::fail` wrote what went wrong.
#pragma once
#include "ember/runtime.h"

namespace ember::rt {

class Error {
 public:
  // Records the first failure (printf format) and returns false, so that checks read
  // `if (bad) return error.fail(...)`.
  bool fail(EmberRtStatus status, const char* format, ...) __attribute__((format(printf, 3, 4)));
  EmberRtStatus status() const { return status_; }
  const char* message() const { return message_; }

 private:
  EmberRtStatus status_ = EMBER_RT_OK;
  char message_[512] = {};
};

}  // namespace ember::rt
