// The tokenizers' Unicode layer: strict UTF-8, categories, case mappings and normalization,
// against hand-derived values and tests/data/fixtures/unicode_reference.json (Python's
// unicodedata and Oniguruma, by scripts/gen_unicode_reference.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "data/tokenizers/unicode.h"
#include "ember/error.h"

namespace ember::tokenizers {
namespace {

nlohmann::json load_fixture(const std::string& name) {
  std::ifstream in(std::string(EMBER_DATA_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  return nlohmann::json::parse(in);
}

const nlohmann::json& unicode_reference() {
  static const nlohmann::json reference = load_fixture("unicode_reference.json");
  return reference;
}

std::u32string decode(const std::string& utf8) { return utf8_to_codepoints(utf8, "test text"); }

std::string error_of(const std::string& bytes) {
  try {
    utf8_to_codepoints(bytes, "test text");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(UnicodeUtf8, DecodesEachSequenceLength) {
  EXPECT_EQ(decode(""), U"");
  EXPECT_EQ(decode("A~\x7F"), U"A~\x7F");
  EXPECT_EQ(decode("\xC2\x80\xC3\xA9\xDF\xBF"), (std::u32string{0x80, 0xE9, 0x7FF}));
  EXPECT_EQ(decode("\xE0\xA0\x80\xE2\x82\xAC\xEF\xBF\xBF"), (std::u32string{0x800, 0x20AC, 0xFFFF}));
  EXPECT_EQ(decode("\xF0\x90\x80\x80\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"), (std::u32string{0x10000, 0x1F600, 0x10FFFF}));
  // The last code points before and after the surrogates.
  EXPECT_EQ(decode("\xED\x9F\xBF\xEE\x80\x80"), (std::u32string{0xD7FF, 0xE000}));
}

TEST(UnicodeUtf8, EncodesAndRoundTrips) {
  EXPECT_EQ(codepoints_to_utf8(std::u32string{0x41, 0xE9, 0x20AC, 0x1F600}), "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  std::string out = "x";
  append_utf8(out, 0x10FFFF);
  EXPECT_EQ(out, "x\xF4\x8F\xBF\xBF");
  std::u32string every_length = {0x0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF};
  EXPECT_EQ(decode(codepoints_to_utf8(every_length)), every_length);
  std::string unused;
  EXPECT_THROW(append_utf8(unused, 0xD800), Error);
  try {
    codepoints_to_utf8(std::u32string{U'a', 0x110000});
    ADD_FAILURE() << "encoded U+110000";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "[tokenizer] cannot encode U+110000 in UTF-8: not a Unicode scalar value");
  }
}

TEST(UnicodeUtf8, InvalidInputThrowsNamingOffsetAndBytes) {
  EXPECT_EQ(error_of("ab\xC0\xAF"), "[tokenizer] invalid UTF-8 in test text at byte 2: overlong encoding (0xC0 0xAF)");
  EXPECT_EQ(error_of("\xE0\x80\xAF"), "[tokenizer] invalid UTF-8 in test text at byte 0: overlong encoding (0xE0 0x80 0xAF)");
  EXPECT_EQ(error_of("x\xF0\x80\x80\xAF"), "[tokenizer] invalid UTF-8 in test text at byte 1: overlong encoding (0xF0 0x80 0x80 0xAF)");
  EXPECT_EQ(error_of("\xED\xA0\x80"), "[tokenizer] invalid UTF-8 in test text at byte 0: encoded surrogate (0xED 0xA0 0x80)");
  EXPECT_EQ(error_of("\xF4\x90\x80\x80"), "[tokenizer] invalid UTF-8 in test text at byte 0: code point above U+10FFFF (0xF4 0x90 0x80 0x80)");
  EXPECT_EQ(error_of("ok\xF5\x80"), "[tokenizer] invalid UTF-8 in test text at byte 2: byte that never starts a sequence (0xF5)");
  EXPECT_EQ(error_of("abc\xE2\x82"), "[tokenizer] invalid UTF-8 in test text at byte 3: truncated sequence at the end (0xE2 0x82)");
  EXPECT_EQ(error_of("\xE2\x28\xA1"), "[tokenizer] invalid UTF-8 in test text at byte 0: truncated sequence (0xE2 0x28)");
  EXPECT_EQ(error_of("\x80"), "[tokenizer] invalid UTF-8 in test text at byte 0: stray continuation byte (0x80)");
  EXPECT_EQ(error_of("\xC3\xA9\xBF"), "[tokenizer] invalid UTF-8 in test text at byte 2: stray continuation byte (0xBF)");
  EXPECT_EQ(error_of("\xFF"), "[tokenizer] invalid UTF-8 in test text at byte 0: byte that never starts a sequence (0xFF)");
}

TEST(UnicodeCategories, HandPickedCodePoints) {
  const std::pair<char32_t, Category> expected[] = {
      {U'A', Category::Lu}, {U'a', Category::Ll}, {0x1C5, Category::Lt}, {0x2B0, Category::Lm},
      {0x4E2D, Category::Lo}, {0x301, Category::Mn}, {0x903, Category::Mc}, {0x20DD, Category::Me},
      {U'7', Category::Nd}, {0x216B, Category::Nl}, {0xB2, Category::No}, {U'_', Category::Pc},
      {U'-', Category::Pd}, {U'(', Category::Ps}, {U')', Category::Pe}, {0xAB, Category::Pi},
      {0xBB, Category::Pf}, {U'!', Category::Po}, {U'+', Category::Sm}, {U'$', Category::Sc},
      {U'^', Category::Sk}, {0xA9, Category::So}, {U' ', Category::Zs}, {0x2028, Category::Zl},
      {0x2029, Category::Zp}, {U'\n', Category::Cc}, {0x200B, Category::Cf}, {0xD800, Category::Cs},
      {0xE000, Category::Co}, {0x378, Category::Cn}, {0x1F600, Category::So}, {0x1D518, Category::Lu},
      {0x10FFFF, Category::Cn}, {0x110000, Category::Cn}};
  for (auto [codepoint, category_expected] : expected)
    EXPECT_EQ(category_name(category(codepoint)), std::string(category_name(category_expected))) << std::hex << static_cast<uint32_t>(codepoint);
  EXPECT_TRUE(is_letter(0x4E2D));
  EXPECT_FALSE(is_letter(U'1'));
  EXPECT_TRUE(is_number(0x216B));
  EXPECT_TRUE(is_number(0xB2));
  EXPECT_TRUE(is_mark(0x20DD));
  EXPECT_FALSE(is_mark(U'a'));
  EXPECT_TRUE(is_punctuation(0xBB));
  EXPECT_FALSE(is_punctuation(U'+'));
}

TEST(UnicodeCategories, MatchUnicodedata) {
  const nlohmann::json& reference = unicode_reference();
  EXPECT_EQ(std::string(unicode_version()), reference["unicode_version"].get<std::string>())
      << "regenerate the tables and the fixtures with the same Python";
  for (const auto& row : reference["categories"])
    EXPECT_EQ(category_name(category(row[0].get<char32_t>())), row[1].get<std::string>()) << row[0];
  for (const auto& row : reference["combining_classes"])
    EXPECT_EQ(combining_class(row[0].get<char32_t>()), row[1].get<int>()) << row[0];
}

TEST(UnicodeWhitespace, IsTheWhiteSpaceProperty) {
  for (char32_t cp : {0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F,
                      0x205F, 0x3000})
    EXPECT_TRUE(is_whitespace(cp)) << std::hex << static_cast<uint32_t>(cp);
  // Python's str.isspace() holds for U+001C..U+001F; White_Space does not, nor U+180E, U+200B.
  for (char32_t cp : {0x8, 0x1C, 0x1F, 0x21, 0x180E, 0x200B, 0x2060, 0xFEFF}) EXPECT_FALSE(is_whitespace(cp)) << std::hex << static_cast<uint32_t>(cp);
  // Every code point against Oniguruma's \s (assigned code points of this Unicode version).
  std::set<char32_t> onig;
  for (const auto& range : unicode_reference()["oniguruma"]["whitespace"])
    for (char32_t cp = range[0].get<char32_t>(); cp <= range[1].get<char32_t>(); ++cp) onig.insert(cp);
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (category(cp) == Category::Cn || category(cp) == Category::Cs) continue;
    ASSERT_EQ(is_whitespace(cp), onig.count(cp) == 1) << std::hex << static_cast<uint32_t>(cp);
  }
}

TEST(UnicodeCase, HandPickedMappings) {
  EXPECT_EQ(to_lower(U'A'), U'a');
  EXPECT_EQ(to_lower(U'z'), U'z');
  EXPECT_EQ(to_lower(0x3A3), char32_t{0x3C3});   // Sigma
  EXPECT_EQ(to_lower(0x130), char32_t{0x69});    // I with dot above: the simple mapping
  EXPECT_EQ(to_lower(0x1E9E), char32_t{0xDF});   // capital sharp s
  EXPECT_EQ(to_lower(0x17F), char32_t{0x17F});   // long s is lowercase already
  EXPECT_EQ(to_lower(0x10400), char32_t{0x10428});
  EXPECT_EQ(to_lower(0x100), char32_t{0x101});   // Latin Extended-A alternates
  EXPECT_EQ(to_lower(0x101), char32_t{0x101});
  EXPECT_EQ(case_fold(0x17F), char32_t{U's'});
  EXPECT_EQ(case_fold(0x212A), char32_t{U'k'});  // Kelvin sign
  EXPECT_EQ(case_fold(0x3C2), char32_t{0x3C3});  // final sigma
  EXPECT_EQ(multi_character_fold(0xDF), U"ss");
  EXPECT_EQ(multi_character_fold(0xFB01), U"fi");
  EXPECT_TRUE(multi_character_fold(U's').empty());
}

TEST(UnicodeCase, MatchUnicodedata) {
  const nlohmann::json& reference = unicode_reference();
  for (const auto& row : reference["lowercase"])
    EXPECT_EQ(to_lower(row[0].get<char32_t>()), row[1].get<char32_t>()) << row[0];
  for (const auto& row : reference["case_folds"]) {
    char32_t cp = row[0].get<char32_t>();
    // A multi-code-point fold (null) leaves the simple fold at the lowercase.
    char32_t expected = row[1].is_null() ? to_lower(cp) : row[1].get<char32_t>();
    EXPECT_EQ(case_fold(cp), expected) << row[0];
    EXPECT_EQ(multi_character_fold(cp).empty(), !row[1].is_null()) << row[0];
  }
}

TEST(UnicodeNormalization, HandDerived) {
  EXPECT_EQ(nfc(U"e\u0301"), U"\u00E9");
  EXPECT_EQ(nfd(U"\u00E9"), U"e\u0301");
  EXPECT_EQ(nfc(U"\u212B"), U"\u00C5");  // the angstrom sign is a singleton decomposition
  EXPECT_EQ(nfd(U"\uD55C"), U"\u1112\u1161\u11AB");  // Hangul, algorithmically
  EXPECT_EQ(nfc(U"\u1112\u1161\u11AB"), U"\uD55C");
  EXPECT_EQ(nfc(U"\uAC00\u11A8"), U"\uAC01");  // LV + T
  EXPECT_EQ(nfc(U"\u0958"), U"\u0915\u093C");  // a composition exclusion stays decomposed
  // Combining classes 202 (ogonek), 230 (acute), 220 (dot below) are put in order.
  EXPECT_EQ(nfd(U"a\u0328\u0301\u0323"), U"a\u0328\u0323\u0301");
  EXPECT_EQ(nfc(U"a\u0328\u0301\u0323"), U"\u0105\u0323\u0301");
  EXPECT_EQ(nfkd(U"\uFB01"), U"fi");
  EXPECT_EQ(nfkc(U"\u2460\u00BD"), U"11\u20442");
  EXPECT_EQ(nfc(U"\uFB01"), U"\uFB01");
  EXPECT_EQ(nfkc(U"\uFF76\uFF9E"), U"\u30AC");  // halfwidth katakana + voiced mark compose
  EXPECT_EQ(nfc(U"\u0301a"), U"\u0301a");  // a leading non-starter composes with nothing
  EXPECT_EQ(nfc(U"plain"), U"plain");
  EXPECT_EQ(nfc(U""), U"");
}

TEST(UnicodeNormalization, MatchUnicodedata) {
  for (const auto& row : unicode_reference()["normalization"]) {
    std::u32string text = decode(row["text"].get<std::string>());
    EXPECT_EQ(codepoints_to_utf8(nfc(text)), row["nfc"].get<std::string>()) << row["text"];
    EXPECT_EQ(codepoints_to_utf8(nfd(text)), row["nfd"].get<std::string>()) << row["text"];
    EXPECT_EQ(codepoints_to_utf8(nfkc(text)), row["nfkc"].get<std::string>()) << row["text"];
    EXPECT_EQ(codepoints_to_utf8(nfkd(text)), row["nfkd"].get<std::string>()) << row["text"];
  }
}

TEST(UnicodeNormalization, LongRunOfMarksIsNotQuadratic) {
  std::u32string text = U"a";
  for (int i = 0; i < 200000; ++i) text += (i % 2 ? U'\u0301' : U'\u0323');
  std::u32string decomposed = nfd(text);
  ASSERT_EQ(decomposed.size(), text.size());
  EXPECT_EQ(decomposed[1], char32_t{0x323});  // class 220 before class 230
  EXPECT_EQ(decomposed.back(), char32_t{0x301});
  std::u32string composed = nfc(text);
  EXPECT_EQ(composed[0], char32_t{0x1EA1});  // a + dot below
}

}  // namespace
}  // namespace ember::tokenizers
