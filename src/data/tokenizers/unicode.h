// Unicode for the tokenizers: strict UTF-8 decoding and encoding, general categories, the
// White_Space property, simple case mappings and the four normalization forms.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::tokenizers {

// The Unicode version of the tables (Python's unicodedata when they were generated).
const char* unicode_version();

// Decodes UTF-8 strictly: overlong forms, surrogates, code points above U+10FFFF, truncated
// sequences and stray continuation bytes throw ember::Error "[tokenizer] invalid UTF-8 in
// <what> at byte N: ...", naming the offending bytes in hex.
std::u32string utf8_to_codepoints(std::string_view text, std::string_view what);
std::string codepoints_to_utf8(std::u32string_view codepoints);
// Appends one code point's UTF-8 bytes; a surrogate or a value above U+10FFFF throws.
void append_utf8(std::string& out, char32_t codepoint);

// The general categories, in the order of the Unicode standard; Cn for unassigned.
enum class Category : uint8_t {
  Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co, Cn
};
inline constexpr int kCategoryCount = 30;

Category category(char32_t codepoint);
// The two-letter name ("Lu") of a category.
const char* category_name(Category category);

bool is_letter(char32_t codepoint);       // L*
bool is_number(char32_t codepoint);       // N*
bool is_mark(char32_t codepoint);         // M*
bool is_punctuation(char32_t codepoint);  // P*
// The White_Space property: what `\s` means in the Oniguruma and Rust regexes of tokenizers.
bool is_whitespace(char32_t codepoint);

// The simple (one code point to one) lowercase mapping of UnicodeData.txt.
char32_t to_lower(char32_t codepoint);
// Simple case folding (CaseFolding.txt statuses C and S): what case-insensitive matching
// compares. It differs from to_lower on a few code points (U+017F long s folds to 's').
char32_t case_fold(char32_t codepoint);
// The full case folding of a code point when it is more than one code point (U+00DF -> "ss"),
// else empty.
std::u32string_view multi_character_fold(char32_t codepoint);

// The canonical combining class (0 for starters).
uint8_t combining_class(char32_t codepoint);

// The normalization forms of UAX #15.
std::u32string nfd(std::u32string_view text);
std::u32string nfc(std::u32string_view text);
std::u32string nfkd(std::u32string_view text);
std::u32string nfkc(std::u32string_view text);

}  // namespace ember::tokenizers
