// libFuzzer target for the safetensors header parser and validator: any input must either
// parse or throw ember::Error, never crash, read out of bounds or over-allocate.
#include <cstddef>
#include <cstdint>

#include "ember/error.h"
#include "ember/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::io::Header header = ember::io::parse_safetensors(data, size, "fuzz");
    // A valid header's tensors must lie inside the input.
    for (const auto& info : header.tensors) {
      if (header.data_start + info.data_end > size) __builtin_trap();
    }
  } catch (const ember::Error&) {
  }
  return 0;
}
