// Unicode for the tokenizers: UTF-8, categories, case mappings and normalization, over the
// tables scripts/gen_unicode_tables.py generates from Python's unicodedata.
#include "data/tokenizers/unicode.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdio>
#include <iterator>
#include <memory>

#include "ember/error.h"

namespace ember::tokenizers {
namespace {

struct CategoryRun {
  char32_t first;
  Category category;
};
struct CombiningClassRun {
  char32_t first;
  uint8_t combining_class;
};
struct Decomposition {
  char32_t codepoint;
  uint16_t offset;
  uint8_t length;
};
struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};
struct CaseRun {
  char32_t first;
  char32_t last;
  uint8_t stride;
  int32_t delta;
};

using enum Category;
#include "data/tokenizers/unicode_tables.inc"

// The row of a run table holding `codepoint`: the last row whose first code point is <= it.
template <typename Run, size_t N>
const Run& run_holding(const Run (&runs)[N], char32_t codepoint) {
  auto after = std::upper_bound(std::begin(runs), std::end(runs), codepoint,
                                [](char32_t cp, const Run& run) { return cp < run.first; });
  assert(after != std::begin(runs));
  return *std::prev(after);
}

// The categories of the Basic Multilingual Plane in one array (64 KiB), built on first use:
// nearly all text lies there, and the regex engine asks for a category per code point.
const std::array<Category, 0x10000>& bmp_categories() {
  static const auto table = [] {
    auto result = std::make_unique<std::array<Category, 0x10000>>();
    size_t run = 0;
    for (char32_t cp = 0; cp < 0x10000; ++cp) {
      while (run + 1 < std::size(kCategoryRuns) && kCategoryRuns[run + 1].first <= cp) ++run;
      (*result)[cp] = kCategoryRuns[run].category;
    }
    return result;
  }();
  return *table;
}

template <size_t N>
const Decomposition* find_decomposition(const Decomposition (&rows)[N], char32_t codepoint) {
  auto it = std::lower_bound(std::begin(rows), std::end(rows), codepoint,
                             [](const Decomposition& row, char32_t cp) { return row.codepoint < cp; });
  return it != std::end(rows) && it->codepoint == codepoint ? it : nullptr;
}

template <size_t N>
char32_t apply_case_runs(const CaseRun (&runs)[N], char32_t codepoint) {
  auto after = std::upper_bound(std::begin(runs), std::end(runs), codepoint,
                                [](char32_t cp, const CaseRun& run) { return cp < run.first; });
  if (after == std::begin(runs)) return codepoint;
  const CaseRun& run = *std::prev(after);
  if (codepoint > run.last || (codepoint - run.first) % run.stride != 0) return codepoint;
  return static_cast<char32_t>(static_cast<int32_t>(codepoint) + run.delta);
}

// Hangul syllables (UAX #15, "Hangul"): LV and LVT syllables are sums of jamo indices.
constexpr char32_t kHangulBase = 0xAC00, kLeadBase = 0x1100, kVowelBase = 0x1161, kTrailBase = 0x11A7;
constexpr char32_t kLeadCount = 19, kVowelCount = 21, kTrailCount = 28;
constexpr char32_t kSyllablesPerLead = kVowelCount * kTrailCount;
constexpr char32_t kSyllableCount = kLeadCount * kSyllablesPerLead;

bool is_hangul_syllable(char32_t cp) { return cp >= kHangulBase && cp < kHangulBase + kSyllableCount; }

// Below U+00A0 no code point decomposes and all are starters: ASCII text skips normalization.
constexpr char32_t kFirstNormalizationCandidate = 0xA0;

std::u32string decompose(std::u32string_view text, bool compatibility) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t cp : text) {
    if (cp < kFirstNormalizationCandidate) {
      out.push_back(cp);
    } else if (is_hangul_syllable(cp)) {
      char32_t index = cp - kHangulBase;
      out.push_back(kLeadBase + index / kSyllablesPerLead);
      out.push_back(kVowelBase + index % kSyllablesPerLead / kTrailCount);
      if (index % kTrailCount != 0) out.push_back(kTrailBase + index % kTrailCount);
    } else if (const Decomposition* row = compatibility ? find_decomposition(kCompatibilityDecompositions, cp) : nullptr) {
      out.append(kCompatibilityDecompositionsData + row->offset, row->length);
    } else if (const Decomposition* row = find_decomposition(kCanonicalDecompositions, cp)) {
      out.append(kCanonicalDecompositionsData + row->offset, row->length);
    } else {
      out.push_back(cp);
    }
  }
  // Canonical ordering: each run of non-starters sorted by combining class, stably.
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < out.size() && combining_class(out[end]) != 0) ++end;
    if (end - i > 1)
      std::stable_sort(out.begin() + i, out.begin() + end,
                       [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = end;
  }
  return out;
}

// The primary composite of a pair, or 0 when there is none.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLeadBase && first < kLeadBase + kLeadCount && second >= kVowelBase && second < kVowelBase + kVowelCount)
    return kHangulBase + ((first - kLeadBase) * kVowelCount + (second - kVowelBase)) * kTrailCount;
  if (is_hangul_syllable(first) && (first - kHangulBase) % kTrailCount == 0 && second > kTrailBase &&
      second < kTrailBase + kTrailCount)
    return first + (second - kTrailBase);
  auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::pair{first, second},
                             [](const Composition& row, const std::pair<char32_t, char32_t>& key) {
                               return std::pair{row.first, row.second} < key;
                             });
  return it != std::end(kCompositions) && it->first == first && it->second == second ? it->composite : 0;
}

// Canonical composition (UAX #15, D117): each character joins the last starter when nothing
// between them blocks it (a starter, or a character of equal or higher combining class).
std::u32string compose(std::u32string decomposed) {
  if (decomposed.empty()) return decomposed;
  size_t starter = 0;
  // A string that opens with a non-starter has no starter to compose into until the next one.
  int last_class = combining_class(decomposed[0]) == 0 ? 0 : 256;
  size_t kept = 1;
  for (size_t i = 1; i < decomposed.size(); ++i) {
    char32_t cp = decomposed[i];
    int cp_class = combining_class(cp);
    char32_t composite = last_class < 256 ? compose_pair(decomposed[starter], cp) : 0;
    if (composite != 0 && (last_class < cp_class || last_class == 0)) {
      decomposed[starter] = composite;
      continue;
    }
    if (cp_class == 0) starter = kept;
    last_class = cp_class;
    decomposed[kept++] = cp;
  }
  decomposed.resize(kept);
  return decomposed;
}

bool all_below_normalization_candidates(std::u32string_view text) {
  return std::all_of(text.begin(), text.end(), [](char32_t cp) { return cp < kFirstNormalizationCandidate; });
}

std::string hex_bytes(std::string_view bytes) {
  std::string out;
  for (unsigned char byte : bytes) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "%s0x%02X", out.empty() ? "" : " ", byte);
    out += buffer;
  }
  return out;
}

std::string hex_codepoint(char32_t cp) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%04X", static_cast<unsigned>(cp));
  return buffer;
}

[[noreturn]] void invalid_utf8(std::string_view text, std::string_view what, size_t offset, size_t length,
                               const char* reason) {
  EMBER_FAIL("tokenizer", "invalid UTF-8 in ", what, " at byte ", offset, ": ", reason, " (",
             hex_bytes(text.substr(offset, length)), ")");
}

}  // namespace

const char* unicode_version() { return kUnicodeVersion; }

std::u32string utf8_to_codepoints(std::string_view text, std::string_view what) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      out.push_back(lead);
      ++i;
      continue;
    }
    if (lead < 0xC0) invalid_utf8(text, what, i, 1, "stray continuation byte");
    if (lead < 0xC2) invalid_utf8(text, what, i, std::min<size_t>(2, text.size() - i), "overlong encoding");
    if (lead > 0xF4) invalid_utf8(text, what, i, 1, "byte that never starts a sequence");
    size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t cp = lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      if (i + k >= text.size()) invalid_utf8(text, what, i, k, "truncated sequence at the end");
      auto byte = static_cast<unsigned char>(text[i + k]);
      if ((byte & 0xC0) != 0x80) invalid_utf8(text, what, i, k + 1, "truncated sequence");
      cp = (cp << 6) | (byte & 0x3F);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000))
      invalid_utf8(text, what, i, length, "overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) invalid_utf8(text, what, i, length, "encoded surrogate");
    if (cp > 0x10FFFF) invalid_utf8(text, what, i, length, "code point above U+10FFFF");
    out.push_back(cp);
    i += length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  EMBER_CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF), "tokenizer", "cannot encode U+",
              hex_codepoint(cp), " in UTF-8: not a Unicode scalar value");
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string codepoints_to_utf8(std::u32string_view codepoints) {
  std::string out;
  out.reserve(codepoints.size());
  for (char32_t cp : codepoints) append_utf8(out, cp);
  return out;
}

Category category(char32_t codepoint) {
  if (codepoint < 0x10000) return bmp_categories()[codepoint];
  if (codepoint > 0x10FFFF) return Cn;
  return run_holding(kCategoryRuns, codepoint).category;
}

const char* category_name(Category category) {
  static constexpr const char* kNames[kCategoryCount] = {
      "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
      "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
  return kNames[static_cast<int>(category)];
}

bool is_letter(char32_t cp) { return category(cp) <= Lo; }
bool is_mark(char32_t cp) { Category c = category(cp); return c >= Mn && c <= Me; }
bool is_number(char32_t cp) { Category c = category(cp); return c >= Nd && c <= No; }
bool is_punctuation(char32_t cp) { Category c = category(cp); return c >= Pc && c <= Po; }

bool is_whitespace(char32_t cp) {
  // White_Space from PropList.txt (unicodedata does not expose the property); stable since
  // Unicode 6.3, when U+180E left it.
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  return apply_case_runs(kLowercase, cp);
}

char32_t case_fold(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  return apply_case_runs(kCaseFolds, cp);
}

std::u32string_view multi_character_fold(char32_t cp) {
  if (cp < 0xDF) return {};
  const Decomposition* row = find_decomposition(kMultiCharacterFolds, cp);
  return row ? std::u32string_view(kMultiCharacterFoldsData + row->offset, row->length) : std::u32string_view();
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  return run_holding(kCombiningClassRuns, cp).combining_class;
}

std::u32string nfd(std::u32string_view text) {
  if (all_below_normalization_candidates(text)) return std::u32string(text);
  return decompose(text, false);
}

std::u32string nfkd(std::u32string_view text) {
  if (all_below_normalization_candidates(text)) return std::u32string(text);
  return decompose(text, true);
}

std::u32string nfc(std::u32string_view text) {
  if (all_below_normalization_candidates(text)) return std::u32string(text);
  return compose(decompose(text, false));
}

std::u32string nfkc(std::u32string_view text) {
  if (all_below_normalization_candidates(text)) return std::u32string(text);
  return compose(decompose(text, true));
}

}  // namespace ember::tokenizers
