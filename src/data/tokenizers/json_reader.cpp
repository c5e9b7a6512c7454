// Typed, path-naming access to tokenizer.json's fields.
#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers::detail {
namespace {

// Components nest through "Sequence"; real files nest two levels. A bound keeps a hostile file
// from exhausting the stack while the components are built.
constexpr int kMaxDepth = 32;

}  // namespace

std::string JsonNode::type_name() const { return value_->type_name(); }

JsonNode JsonNode::at(const char* key) const {
  if (!value_->is_object()) fail("expected an object, got ", type_name());
  auto it = value_->find(key);
  if (it == value_->end()) fail("missing key '", key, "'");
  if (depth_ + 1 > kMaxDepth) fail("components nest deeper than ", kMaxDepth, " levels");
  return JsonNode(*it, file_, path_.empty() ? key : path_ + "." + key, depth_ + 1);
}

std::optional<JsonNode> JsonNode::find(const char* key) const {
  if (!value_->is_object()) fail("expected an object, got ", type_name());
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return at(key);
}

JsonNode JsonNode::at(size_t index) const {
  if (!value_->is_array()) fail("expected an array, got ", type_name());
  if (index >= value_->size()) fail("index ", index, " is past the array's end");
  if (depth_ + 1 > kMaxDepth) fail("components nest deeper than ", kMaxDepth, " levels");
  return JsonNode((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]", depth_ + 1);
}

size_t JsonNode::size() const {
  if (!value_->is_array()) fail("expected an array, got ", type_name());
  return value_->size();
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got ", type_name());
  return value_->get<std::string>();
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got ", type_name());
  return value_->get<bool>();
}

int64_t JsonNode::as_int() const {
  if (value_->is_number_unsigned()) {
    const uint64_t v = value_->get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) fail("integer ", v, " is too large");
    return static_cast<int64_t>(v);
  }
  if (!value_->is_number_integer()) fail("expected an integer, got ", type_name());
  return value_->get<int64_t>();
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number, got ", type_name());
  return value_->get<double>();
}

std::string JsonNode::string_or(const char* key, const std::string& fallback) const {
  auto node = find(key);
  return node ? node->as_string() : fallback;
}

bool JsonNode::bool_or(const char* key, bool fallback) const {
  auto node = find(key);
  return node ? node->as_bool() : fallback;
}

int64_t JsonNode::int_or(const char* key, int64_t fallback) const {
  auto node = find(key);
  return node ? node->as_int() : fallback;
}

}  // namespace ember::tokenizers::detail
