// GPT-2's bytes_to_unicode table.
#include "data/tokenizers/byte_level.h"

#include <vector>

#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {
namespace {

// Printable Latin-1 bytes stand for themselves; the others, in order, for U+0100 onwards.
std::array<char32_t, 256> make_byte_codepoints() {
  std::array<char32_t, 256> codepoints{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    codepoints[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return codepoints;
}

const std::array<char32_t, 256>& byte_codepoints() {
  static const std::array<char32_t, 256> table = make_byte_codepoints();
  return table;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> utf8;
    for (int b = 0; b < 256; ++b) append_utf8(utf8[b], byte_codepoints()[b]);
    return utf8;
  }();
  return table;
}

int unicode_to_byte(char32_t codepoint) {
  // Every stand-in lies below U+0144 (256 + the 68 non-printable bytes).
  static const std::vector<int> inverse = [] {
    std::vector<int> table(512, -1);
    for (int b = 0; b < 256; ++b) table[byte_codepoints()[b]] = b;
    return table;
  }();
  return codepoint < inverse.size() ? inverse[codepoint] : -1;
}

std::string bytes_to_unicode_text(std::string_view text) {
  const auto& table = byte_to_unicode();
  std::string out;
  out.reserve(text.size() * 2);
  for (unsigned char b : text) out += table[b];
  return out;
}

}  // namespace ember::tokenizers::detail
