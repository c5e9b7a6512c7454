// The normalizers of tokenizer.json (HF tokenizers' normalizers/*.rs).
#include "data/tokenizers/normalizers.h"

#include <vector>

#include "data/tokenizers/pattern.h"
#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {
namespace {

class UnicodeForm : public Normalizer {
 public:
  using Form = std::u32string (*)(std::u32string_view);
  explicit UnicodeForm(Form form) : form_(form) {}
  std::string normalize(std::string text) const override {
    return codepoints_to_utf8(form_(utf8_to_codepoints(text, "text")));
  }

 private:
  Form form_;
};

class Lowercase : public Normalizer {
 public:
  // HF lowercases char by char with Rust's full mapping, which differs from the simple one on
  // U+0130 alone (SpecialCasing's one unconditional lowercase entry): "İ" becomes "i̇".
  std::string normalize(std::string text) const override {
    std::u32string lowered;
    for (char32_t c : utf8_to_codepoints(text, "text")) {
      if (c == 0x130)
        lowered += U"i\u0307";
      else
        lowered += to_lower(c);
    }
    return codepoints_to_utf8(lowered);
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string text) const override {
    const std::u32string codepoints = utf8_to_codepoints(text, "text");
    size_t begin = 0, end = codepoints.size();
    while (left_ && begin < end && is_whitespace(codepoints[begin])) ++begin;
    while (right_ && end > begin && is_whitespace(codepoints[end - 1])) --end;
    return codepoints_to_utf8(std::u32string_view(codepoints).substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class Replace : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string text) const override { return pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string text) const override {
    for (const auto& step : steps_) text = step->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const JsonNode type_node = node.at("type");
  const std::string type = type_node.as_string();
  if (type == "NFC") return std::make_unique<UnicodeForm>(&nfc);
  if (type == "NFD") return std::make_unique<UnicodeForm>(&nfd);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(&nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(&nfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(node.bool_or("strip_left", false), node.bool_or("strip_right", false));
  if (type == "Prepend") return std::make_unique<Prepend>(node.at("prepend").as_string());
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(node.at("pattern")), node.at("content").as_string());
  if (type == "Sequence") {
    const JsonNode list = node.at("normalizers");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_normalizer(list.at(i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  type_node.unsupported(type, "the normalizers NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace, Sequence");
}

}  // namespace ember::tokenizers::detail
