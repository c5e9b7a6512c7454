// The BPE model of HF tokenizers (models/bpe/model.rs, word.rs), read from tokenizer.json.
#include "data/tokenizers/bpe.h"

#include <cstdio>
#include <queue>

namespace ember::tokenizers::detail {
namespace {

constexpr size_t kCacheCapacity = 10000;  // HF's default
constexpr size_t kCachedWordBytes = 256;  // longer words are rare: not worth a slot

size_t utf8_char_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

BpeModel::BpeModel(const JsonNode& node) {
  if (node.has("type")) {
    const JsonNode type_node = node.at("type");
    const std::string type = type_node.as_string();
    if (type != "BPE") type_node.fail("model type '", type, "' is not supported (ember implements BPE)");
  } else if (!node.has("merges")) {
    node.fail("the model has no \"type\" (ember implements BPE)");
  }
  if (auto dropout = node.find("dropout"); dropout && dropout->as_number() != 0.0)
    dropout->fail("BPE dropout ", dropout->as_number(), " is not supported (only null or 0)");

  const JsonNode vocab = node.at("vocab");
  if (!vocab.value().is_object()) vocab.fail("expected an object of token: id");
  const size_t entries = vocab.value().size();
  int64_t max_id = -1;
  for (const auto& [token, id_value] : vocab.value().items()) {
    const JsonNode id_node(id_value, vocab.file(), vocab.path() + "[\"" + token + "\"]");
    const int64_t id = id_node.as_int();
    // Vocabularies are dense; the bound keeps a hostile id from sizing the table.
    if (id < 0 || id > static_cast<int64_t>(2 * entries + 1024)) id_node.fail("id ", id, " is out of range");
    vocab_.emplace(token, static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& entry : vocab_) {
    if (!id_to_token_[entry.second]) id_to_token_[entry.second] = &entry.first;
  }

  byte_fallback_ = node.bool_or("byte_fallback", false);
  ignore_merges_ = node.bool_or("ignore_merges", false);
  fuse_unk_ = node.bool_or("fuse_unk", false);
  continuing_subword_prefix_ = node.string_or("continuing_subword_prefix", "");
  end_of_word_suffix_ = node.string_or("end_of_word_suffix", "");
  if (auto unk = node.find("unk_token")) {
    const std::string unk_token = unk->as_string();
    auto it = vocab_.find(unk_token);
    if (it == vocab_.end()) unk->fail("unk_token '", unk_token, "' is not in the vocabulary");
    unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = vocab_.find(std::string_view(name));
    byte_tokens_[b] = it == vocab_.end() ? -1 : it->second;
  }
  read_merges(node.at("merges"));
}

void BpeModel::read_merges(const JsonNode& merges) {
  const size_t count = merges.size();
  merges_.reserve(count);
  for (size_t rank = 0; rank < count; ++rank) {
    const JsonNode entry = merges.at(rank);
    std::string left, right;
    if (entry.value().is_string()) {
      // The legacy spelling "a b": exactly one space (tokens hold none, as in HF).
      const std::string text = entry.as_string();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
        entry.fail("bad merges entry '", text, "' (expected two tokens separated by one space)");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (entry.value().is_array() && entry.size() == 2) {
      left = entry.at(size_t{0}).as_string();
      right = entry.at(size_t{1}).as_string();
    } else {
      entry.fail("bad merges entry (expected \"a b\" or [\"a\", \"b\"])");
    }
    if (right.compare(0, continuing_subword_prefix_.size(), continuing_subword_prefix_) != 0)
      entry.fail("bad merges entry: '", right, "' lacks the continuing_subword_prefix");
    const std::string merged = left + right.substr(continuing_subword_prefix_.size());
    int32_t ids[3];
    const std::string* names[3] = {&left, &right, &merged};
    for (int i = 0; i < 3; ++i) {
      auto it = vocab_.find(*names[i]);
      if (it == vocab_.end()) entry.fail("bad merges entry: '", *names[i], "' is not in the vocabulary");
      ids[i] = it->second;
    }
    // A repeated pair keeps its last rank, as HF's map does.
    merges_[pair_key(ids[0], ids[1])] = Merge{static_cast<int32_t>(rank), ids[2]};
  }
}

std::optional<int64_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int64_t id) const {
  if (id < 0 || id >= id_bound()) return nullptr;
  return id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = merge_word(word);
  ids.insert(ids.end(), merged.begin(), merged.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(word), std::move(merged));
  }
}

std::vector<int32_t> BpeModel::merge_word(std::string_view word) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool removed;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false});
  };
  // A pending unknown symbol, added when the next known one comes (or fused with the next unknown).
  std::optional<int32_t> pending_unk;
  std::string piece;
  for (size_t at = 0; at < word.size();) {
    const size_t length = std::min(utf8_char_length(static_cast<unsigned char>(word[at])), word.size() - at);
    const bool is_first = at == 0, is_last = at + length == word.size();
    piece.clear();
    if (!is_first) piece += continuing_subword_prefix_;
    piece.append(word.substr(at, length));
    if (is_last) piece += end_of_word_suffix_;
    at += length;
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      if (pending_unk) add(*pending_unk);
      pending_unk.reset();
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (unsigned char b : piece) all_bytes = all_bytes && byte_tokens_[b] >= 0;
      if (all_bytes) {
        // As HF, a pending unknown symbol stays pending across byte tokens.
        for (unsigned char b : piece) add(byte_tokens_[b]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk && !fuse_unk_) add(*pending_unk);
      pending_unk = *unk_id_;
    }
    // Without an unk_token, HF drops a character it cannot represent.
  }
  if (pending_unk) add(*pending_unk);
  if (symbols.empty()) return {};
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank, position, new_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.position];
    if (left.removed || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // A stale entry: the pair at this position changed since it was queued.
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.position;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.position);
  }
  std::vector<int32_t> ids;
  ids.reserve(symbols.size());
  for (const Symbol& symbol : symbols)
    if (!symbol.removed) ids.push_back(symbol.id);
  return ids;
}

}  // namespace ember::tokenizers::detail
