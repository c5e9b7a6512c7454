// String and regex patterns over UTF-8 text (the regex engine works on code points).
#include "data/tokenizers/pattern.h"

#include "data/tokenizers/char_classes.h"
#include "data/tokenizers/regex.h"
#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {
Pattern Pattern::from_json(const JsonNode& node) {
  Pattern pattern;
  if (node.has("String")) {
    pattern.literal_ = node.at("String").as_string();
    if (pattern.literal_.empty()) node.at("String").fail("an empty pattern is not supported");
  } else if (node.has("Regex")) {
    const std::string source = node.at("Regex").as_string();
    try {
      pattern = regex(source);
    } catch (const Error& e) {
      node.at("Regex").fail("cannot compile the regex: ", e.what());
    }
  } else {
    node.fail("expected {\"String\": ...} or {\"Regex\": ...}");
  }
  return pattern;
}

Pattern Pattern::regex(const std::string& source) {
  Pattern pattern;
  pattern.regex_ = std::make_shared<const Regex>(Regex::compile(source));
  return pattern;
}

Pattern Pattern::literal(std::string text) {
  Pattern pattern;
  pattern.literal_ = std::move(text);
  return pattern;
}

std::vector<std::pair<size_t, size_t>> Pattern::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  if (!regex_) {
    // On valid UTF-8 a byte search finds exactly the code point matches.
    for (size_t at = text.find(literal_); at != std::string_view::npos; at = text.find(literal_, at + literal_.size()))
      matches.emplace_back(at, at + literal_.size());
    return matches;
  }
  const std::u32string codepoints = utf8_to_codepoints(text, "text");
  std::vector<size_t> byte_offset(codepoints.size() + 1, 0);
  for (size_t i = 0; i < codepoints.size(); ++i) byte_offset[i + 1] = byte_offset[i] + utf8_length(codepoints[i]);
  for (const auto& [begin, end] : regex_->find_all(codepoints))
    matches.emplace_back(byte_offset[begin], byte_offset[end]);
  return matches;
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
  std::string out;
  size_t previous = 0;
  for (const auto& [begin, end] : find_all(text)) {
    out.append(text.substr(previous, begin - previous));
    out.append(content);
    previous = end;
  }
  out.append(text.substr(previous));
  return out;
}

}  // namespace ember::tokenizers::detail
