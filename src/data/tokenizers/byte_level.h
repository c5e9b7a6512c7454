// GPT-2's byte-level alphabet: each byte stands for a printable code point ('!' for 0x21,
// 'Ġ' U+0120 for the space), so that a BPE vocabulary of strings covers any byte sequence.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::tokenizers::detail {

// The UTF-8 of the code point that stands for each byte.
const std::array<std::string, 256>& byte_to_unicode();
// The byte a code point stands for, or -1 when it stands for none.
int unicode_to_byte(char32_t codepoint);

// `text` with every byte replaced by the code point standing for it.
std::string bytes_to_unicode_text(std::string_view text);

}  // namespace ember::tokenizers::detail
