// ember's one allocator: 64-byte aligned, counting live and peak bytes.
#pragma once
#include <cstddef>

namespace ember::core {

void* allocate_bytes(size_t nbytes);
void free_bytes(void* data, size_t nbytes);

}  // namespace ember::core
