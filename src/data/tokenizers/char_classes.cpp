// Character classes for the pre-tokenizers and added tokens.
#include "data/tokenizers/char_classes.h"

#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {

bool is_word_char(char32_t c) {
  const Category cat = category(c);
  return is_letter(c) || is_mark(c) || cat == Category::Nd || cat == Category::Nl || cat == Category::Pc ||
         c == 0x200C || c == 0x200D;
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

char32_t codepoint_at(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return lead;
  const size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  char32_t c = lead & (0x7F >> length);
  for (size_t i = 1; i < length && at + i < text.size(); ++i) c = (c << 6) | (byte(at + i) & 0x3F);
  return c;
}

char32_t codepoint_before(std::string_view text, size_t at) {
  size_t begin = at - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return codepoint_at(text, begin);
}

}  // namespace ember::tokenizers::detail
