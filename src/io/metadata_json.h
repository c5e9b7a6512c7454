// JSON values in a safetensors file's metadata, shared by training checkpoints and
// ember::save/load (internal to src/io).
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ember/error.h"
#include "ember/io/safetensors.h"

namespace ember::io::detail {

// {"name": value, ...} with the shortest digits that read back to the same doubles; a NaN or
// infinity (which JSON cannot hold) is an error naming `op` and the scalar.
std::string scalars_json(const std::map<std::string, double>& scalars, const char* op);

// metadata[key] parsed; throws naming `op`, the file and the key when it is absent
// (`absent_means`: what the file then is not, "an ember checkpoint") or not JSON.
nlohmann::json metadata_json(const Metadata& metadata, const char* key, const std::string& path, const char* op,
                             const char* absent_means);

// The value of `json` as T; throws naming the file and key when it has another type.
template <typename T>
T json_value(const nlohmann::json& json, const char* key, const std::string& path, const char* expected,
             const char* op) {
  try {
    return json.get<T>();
  } catch (const nlohmann::json::exception&) {
    EMBER_FAIL(op, "'", path, "': metadata '", key, "' must be ", expected, ", got ", json.dump());
  }
}

}  // namespace ember::io::detail
