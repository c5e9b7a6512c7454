// Typed access to tokenizer.json's fields: every missing key, wrong type or unsupported value
// becomes an ember::Error naming the file and the key path ("pre_tokenizer.pretokenizers[1].type").
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ember/error.h"

namespace ember::tokenizers::detail {

using nlohmann::json;

// A node of the file and where it sits, for error messages.
class JsonNode {
 public:
  JsonNode(const json& value, std::string file, std::string path, int depth = 0)
      : value_(&value), file_(std::move(file)), path_(std::move(path)), depth_(depth) {}

  const json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_->is_null(); }

  bool has(const char* key) const { return value_->is_object() && value_->contains(key); }
  // The member `key`; missing (or not an object) is an error.
  JsonNode at(const char* key) const;
  // The member `key`, or nullopt when absent or null.
  std::optional<JsonNode> find(const char* key) const;
  JsonNode at(size_t index) const;  // an array element
  size_t size() const;              // an array's length (an error for other types)

  std::string as_string() const;
  bool as_bool() const;
  int64_t as_int() const;
  double as_number() const;

  // Convenience for optional scalar members with a default.
  std::string string_or(const char* key, const std::string& fallback) const;
  bool bool_or(const char* key, bool fallback) const;
  int64_t int_or(const char* key, int64_t fallback) const;

  // "[tokenizer] FILE: PATH: message" (the path left out at the root).
  template <typename... Args>
  [[noreturn]] void fail(const Args&... message) const {
    EMBER_FAIL("tokenizer", file_, ": ", path_.empty() ? std::string("(top level)") : path_, ": ", message...);
  }
  // A value ember does not implement: "PATH: 'VALUE' is not supported (what is)".
  [[noreturn]] void unsupported(const std::string& value, const std::string& supported) const {
    fail("'", value, "' is not supported (ember implements ", supported, ")");
  }

 private:
  std::string type_name() const;
  const json* value_;
  std::string file_;
  std::string path_;
  int depth_;  // nesting of components (Sequence in Sequence), bounded against hostile files
};

}  // namespace ember::tokenizers::detail
