// JSON values in safetensors metadata (metadata_json.h).
#include "io/metadata_json.h"

#include <cmath>

namespace ember::io::detail {

std::string scalars_json(const std::map<std::string, double>& scalars, const char* op) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : scalars) {
    // JSON has no NaN or infinity; nlohmann would silently write null.
    EMBER_CHECK(std::isfinite(value), op, "optimizer scalar '", name, "' is ", value, ", which JSON cannot hold");
    out[name] = value;
  }
  return out.dump();
}

nlohmann::json metadata_json(const Metadata& metadata, const char* key, const std::string& path, const char* op,
                             const char* absent_means) {
  auto it = metadata.find(key);
  EMBER_CHECK(it != metadata.end(), op, "'", path, "' is not ", absent_means, ": no '", key, "' in its metadata");
  try {
    return nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(op, "'", path, "': metadata '", key, "' is not valid JSON: ", e.what());
  }
}

}  // namespace ember::io::detail
