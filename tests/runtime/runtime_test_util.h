// Loading and running hand-written programs through the C API, for the runtime's tests.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/runtime.h"
#include "program_builder.h"

namespace ember::rt::testing {

// A loaded program (or the status and message of a failed load).
struct Loaded {
  std::unique_ptr<AlignedBuffer> bytes;
  EmberRtProgram* program = nullptr;
  EmberRtStatus status = EMBER_RT_OK;
  std::string message;

  explicit Loaded(const std::vector<unsigned char>& file) : bytes(std::make_unique<AlignedBuffer>(file)) {
    status = ember_rt_load_buffer(bytes->data(), bytes->size(), &program);
    if (status != EMBER_RT_OK) message = ember_rt_last_error();
  }
  explicit Loaded(const ProgramSpec& spec) : Loaded(build_program(spec)) {}
  ~Loaded() { ember_rt_free(program); }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;

  EmberRtMethod* method(const char* name = "forward") {
    EmberRtMethod* m = nullptr;
    return ember_rt_method(program, name, &m) == EMBER_RT_OK ? m : nullptr;
  }
};

inline EmberRtTensor tensor(void* data, EmberRtDtype dtype, std::vector<int64_t> sizes, uint64_t capacity = 0) {
  EmberRtTensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) t.sizes[d] = sizes[d];
  t.capacity_bytes = capacity;
  return t;
}

}  // namespace ember::rt::testing
