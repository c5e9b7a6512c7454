// Whole text files for the distributed layer (flight-recorder dumps, checkpoint indexes).
#pragma once
#include <string>

namespace ember::distributed {

// Writes `text` to a temporary file next to `path`, then renames it over `path`: readers see
// the old file or the whole new one. Errors name `op`.
void write_text_atomically(const std::string& path, const std::string& text, const char* op);

// The whole file; throws ember::Error naming `op` when it cannot be read.
std::string read_text(const std::string& path, const char* op);

}  // namespace ember::distributed
