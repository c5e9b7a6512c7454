// The static memory plan of an exported method (Note [Static memory plan]).
#pragma once
#include <cstdint>
#include <vector>

#include "ember/export.h"

namespace ember::export_detail {

// The top-level instructions [first, last] during which an Arena value's memory is in use.
struct Lifetime {
  uint32_t value;
  size_t first, last;
  uint64_t bytes;  // max_bytes rounded up to the 64-byte alignment
};

std::vector<Lifetime> arena_lifetimes(const export_ir::Method& method);

// Sets arena_offset of every Arena value, arena_bytes and intermediate_bytes.
void plan_memory(export_ir::Method& method);

}  // namespace ember::export_detail
