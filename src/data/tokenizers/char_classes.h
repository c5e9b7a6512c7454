// Character classes of the Rust regex and char functions HF tokenizers uses (\w, \s,
// is_ascii_punctuation), and UTF-8 lengths, over the Unicode tables of unicode.h.
#pragma once
#include <cstddef>
#include <string_view>

namespace ember::tokenizers::detail {

// Rust regex's \w: alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t codepoint);
// Rust's char::is_ascii_punctuation: ASCII symbols and punctuation.
bool is_ascii_punctuation(char32_t codepoint);

inline size_t utf8_length(char32_t codepoint) {
  return codepoint < 0x80 ? 1 : codepoint < 0x800 ? 2 : codepoint < 0x10000 ? 3 : 4;
}
// The code point that starts at `text[at]` (valid UTF-8), and the one that ends at `text[at]`.
char32_t codepoint_at(std::string_view text, size_t at);
char32_t codepoint_before(std::string_view text, size_t at);

}  // namespace ember::tokenizers::detail
