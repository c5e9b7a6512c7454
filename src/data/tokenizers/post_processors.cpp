// The post-processors of tokenizer.json (HF tokenizers' processors/*.rs), for single sequences.
#include "data/tokenizers/post_processors.h"

#include <string>

namespace ember::tokenizers::detail {
namespace {

// A template, flattened: the ids to emit, with kSequence standing for the sequence's own.
constexpr int64_t kSequence = -1;

class Template : public PostProcessor {
 public:
  explicit Template(std::vector<int64_t> pieces) : pieces_(std::move(pieces)) {}
  std::vector<int64_t> add_special_tokens(std::vector<int64_t> ids) const override {
    std::vector<int64_t> out;
    out.reserve(ids.size() + pieces_.size());
    for (int64_t piece : pieces_) {
      if (piece == kSequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.push_back(piece);
    }
    return out;
  }

 private:
  std::vector<int64_t> pieces_;
};

class Identity : public PostProcessor {
 public:
  std::vector<int64_t> add_special_tokens(std::vector<int64_t> ids) const override { return ids; }
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  std::vector<int64_t> add_special_tokens(std::vector<int64_t> ids) const override {
    for (const auto& step : steps_) ids = step->add_special_tokens(std::move(ids));
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

int64_t token_id(const JsonNode& node) {
  const int64_t id = node.as_int();
  if (id < 0 || id > INT32_MAX) node.fail("token id ", id, " is out of range");
  return id;
}

std::unique_ptr<PostProcessor> make_template(const JsonNode& node) {
  const JsonNode single = node.at("single");
  const JsonNode special_tokens = node.at("special_tokens");
  std::vector<int64_t> pieces;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonNode piece = single.at(i);
    if (piece.has("Sequence")) {
      const JsonNode id_node = piece.at("Sequence").at("id");
      const std::string id = id_node.as_string();
      if (id != "A") id_node.fail("sequence '", id, "' in the single template (expected A)");
      pieces.push_back(kSequence);
    } else if (piece.has("SpecialToken")) {
      const JsonNode name_node = piece.at("SpecialToken").at("id");
      const std::string name = name_node.as_string();
      if (!special_tokens.has(name.c_str())) name_node.fail("special token '", name, "' is not in special_tokens");
      const JsonNode ids = special_tokens.at(name.c_str()).at("ids");
      for (size_t k = 0; k < ids.size(); ++k) pieces.push_back(token_id(ids.at(k)));
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::make_unique<Template>(std::move(pieces));
}

// RobertaProcessing and BertProcessing: "cls": [token, id], "sep": [token, id].
std::unique_ptr<PostProcessor> make_cls_sep(const JsonNode& node) {
  const int64_t cls = token_id(node.at("cls").at(size_t{1}));
  const int64_t sep = token_id(node.at("sep").at(size_t{1}));
  return std::make_unique<Template>(std::vector<int64_t>{cls, kSequence, sep});
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node) {
  if (node.is_null()) return nullptr;
  const JsonNode type_node = node.at("type");
  const std::string type = type_node.as_string();
  if (type == "TemplateProcessing") return make_template(node);
  if (type == "RobertaProcessing" || type == "BertProcessing") return make_cls_sep(node);
  if (type == "ByteLevel") return std::make_unique<Identity>();  // it trims offsets only
  if (type == "Sequence") {
    const JsonNode list = node.at("processors");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_post_processor(list.at(i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  type_node.unsupported(type,
                        "the post-processors TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, "
                        "Sequence");
}

}  // namespace ember::tokenizers::detail
