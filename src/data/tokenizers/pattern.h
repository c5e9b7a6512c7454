// The `pattern` of Split, Replace (normalizer and decoder): {"String": literal} or
// {"Regex": Oniguruma-style pattern}, found left to right without overlaps.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/tokenizers/json_reader.h"

namespace ember::tokenizers {
class Regex;
}

namespace ember::tokenizers::detail {

class Pattern {
 public:
  // `node` is the pattern object; an empty literal is refused (it would match everywhere).
  static Pattern from_json(const JsonNode& node);
  static Pattern literal(std::string text);
  static Pattern regex(const std::string& source);  // throws ember::Error on a bad pattern

  // The matches in `text` (valid UTF-8), as byte ranges.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // `text` with every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // null for a literal
};

}  // namespace ember::tokenizers::detail
