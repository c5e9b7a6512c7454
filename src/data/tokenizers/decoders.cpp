// The decoders of tokenizer.json (HF tokenizers' decoders/*.rs).
#include "data/tokenizers/decoders.h"

#include "data/tokenizers/byte_level.h"
#include "data/tokenizers/pattern.h"
#include "data/tokenizers/unicode.h"

namespace ember::tokenizers::detail {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at `at`, or of its maximal invalid subpart (negated).
int utf8_sequence(std::string_view bytes, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  int length;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF)
    length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    if (at + i >= bytes.size()) return -i;
    const unsigned char b = byte(at + i);
    const bool ok = i == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -i;
  }
  return length;
}

class ByteLevel : public Decoder {
 public:
  // Tokens of stand-in characters become their bytes; a token with any other character keeps
  // its own UTF-8 (an added token); the whole is then read as lossy UTF-8.
  void decode_chain(std::vector<std::string>& tokens) const override {
    decode_chain_bytes(tokens);
    tokens.assign(1, utf8_lossy(tokens.front()));
  }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      const std::u32string codepoints = utf8_to_codepoints(token, "token");
      std::string token_bytes;
      bool all_stand_ins = true;
      for (char32_t c : codepoints) {
        const int b = unicode_to_byte(c);
        if (b < 0) {
          all_stand_ins = false;
          break;
        }
        token_bytes.push_back(static_cast<char>(b));
      }
      bytes += all_stand_ins ? token_bytes : token;
    }
    tokens.assign(1, bytes);
  }
};

class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  // As HF: every replacement character becomes a space, except in the first token where,
  // unless prepend_scheme is "never", they are all dropped.
  void decode_chain(std::vector<std::string>& tokens) const override {
    const Pattern replacement = Pattern::literal(replacement_);
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replacement.replace_all(tokens[i], i == 0 && strip_first_ ? "" : " ");
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class Replace : public Decoder {
 public:
  Replace(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) token = pattern_.replace_all(token, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class ByteFallback : public Decoder {
 public:
  // Runs of <0xNN> tokens become their bytes when these are valid UTF-8, else one U+FFFD per byte.
  void decode_chain(std::vector<std::string>& tokens) const override { decode(tokens, true); }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override { decode(tokens, false); }

 private:
  void decode(std::vector<std::string>& tokens, bool replace_invalid) const {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    size_t run_length = 0;
    auto flush = [&] {
      if (run_length == 0) return;
      if (!replace_invalid || is_valid_utf8(run)) out.push_back(run);
      else
        for (size_t i = 0; i < run_length; ++i) out.emplace_back(kReplacementCharacter);
      run.clear();
      run_length = 0;
    };
    for (std::string& token : tokens) {
      if (int byte = parse_byte_token(token); byte >= 0) {
        run.push_back(static_cast<char>(byte));
        ++run_length;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens = std::move(out);
  }

  static bool is_valid_utf8(std::string_view bytes) {
    for (size_t at = 0; at < bytes.size();) {
      const int length = utf8_sequence(bytes, at);
      if (length < 0) return false;
      at += static_cast<size_t>(length);
    }
    return true;
  }
  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // "<0xNN>" to NN; -1 for any other token (as Rust's from_str_radix, "+N" is a digit too).
  static int parse_byte_token(std::string_view token) {
    if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
    if (token[3] == '+') return hex_digit(token[4]);
    const int high = hex_digit(token[3]), low = hex_digit(token[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, joined);
  }
};

class Strip : public Decoder {
 public:
  Strip(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  // Up to `start` leading and `stop` trailing `content` characters go from each token.
  void decode_chain_bytes(std::vector<std::string>& tokens) const override {
    if (content_ >= 0x80) return decode_chain(tokens);
    // An ASCII content character is one byte: stripped byte-wise, the rest may be any bytes.
    const char content = static_cast<char>(content_);
    for (std::string& token : tokens) {
      size_t begin = 0, end = token.size();
      while (begin < std::min(start_, token.size()) && token[begin] == content) ++begin;
      for (size_t i = 0; i < stop_ && end > begin && token[end - 1] == content; ++i) --end;
      token = token.substr(begin, end - begin);
    }
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      const std::u32string codepoints = utf8_to_codepoints(token, "token");
      size_t begin = 0, end = codepoints.size();
      while (begin < std::min(start_, codepoints.size()) && codepoints[begin] == content_) ++begin;
      for (size_t i = 0; i < stop_ && end > 0 && codepoints[end - 1] == content_; ++i) --end;
      // HF panics where the two cuts cross (a token of content characters only); nothing stays.
      token = begin < end ? codepoints_to_utf8(std::u32string_view(codepoints).substr(begin, end - begin)) : "";
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain_bytes(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> make_metaspace(const JsonNode& node) {
  const JsonNode replacement_node = node.at("replacement");
  const std::string replacement = replacement_node.as_string();
  if (utf8_to_codepoints(replacement, "replacement").size() != 1) replacement_node.fail("expected one character");
  bool strip_first = true;
  if (auto scheme_node = node.find("prepend_scheme")) {
    const std::string scheme = scheme_node->as_string();
    if (scheme != "always" && scheme != "first" && scheme != "never")
      scheme_node->unsupported(scheme, "always, first, never");
    strip_first = scheme != "never";
  } else {
    strip_first = node.bool_or("add_prefix_space", true);  // files written before prepend_scheme
  }
  return std::make_unique<Metaspace>(replacement, strip_first);
}

size_t count_or(const JsonNode& node, const char* key) {
  const int64_t count = node.int_or(key, 0);
  if (count < 0) node.at(key).fail("expected a count >= 0, got ", count);
  return static_cast<size_t>(count);
}

}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    const int length = utf8_sequence(bytes, at);
    if (length > 0) {
      out.append(bytes.substr(at, static_cast<size_t>(length)));
      at += static_cast<size_t>(length);
    } else {
      out.append(kReplacementCharacter);
      at += static_cast<size_t>(-length);
    }
  }
  return out;
}

std::unique_ptr<Decoder> make_decoder(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const JsonNode type_node = node.at("type");
  const std::string type = type_node.as_string();
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Metaspace") return make_metaspace(node);
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(node.at("pattern")), node.at("content").as_string());
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    const JsonNode content_node = node.at("content");
    const std::u32string content = utf8_to_codepoints(content_node.as_string(), "content");
    if (content.size() != 1) content_node.fail("expected one character");
    return std::make_unique<Strip>(content[0], count_or(node, "start"), count_or(node, "stop"));
  }
  if (type == "Sequence") {
    const JsonNode list = node.at("decoders");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_decoder(list.at(i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  type_node.unsupported(type, "the decoders ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence");
}

}  // namespace ember::tokenizers::detail
