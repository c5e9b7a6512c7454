// The BPE model of HF tokenizers (models/bpe/model.rs, word.rs), read from tokenizer.json.
#include "data/tokenizers/bpe.h"

#include <cassert>
#include <cstdio>
#include <queue>

#include "data/tokenizers/char_classes.h"

namespace ember::tokenizers::detail {
namespace {

constexpr size_t kCacheCapacity = 10000;  // HF's default
constexpr size_t kCachedWordBytes = 256;  // longer words are rare: not worth a slot

size_t utf8_char_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

uint64_t codepoint_pair(char32_t left, char32_t right) { return (static_cast<uint64_t>(left) << 32) | right; }

}  // namespace

void BpeModel::MergeTable::reserve(size_t count) {
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < 2 * count) {
    capacity *= 2;
    --shift_;
  }
  slots_.assign(capacity, Slot{});
}

void BpeModel::MergeTable::insert_or_assign(int32_t left, int32_t right, Merge merge) {
  assert(size_ < slots_.size() / 2);
  const uint64_t k = key(left, right);
  for (size_t slot = slot_of(k);; slot = (slot + 1) & (slots_.size() - 1)) {
    if (slots_[slot].key == k) {
      slots_[slot].merge = merge;
      return;
    }
    if (slots_[slot].key == ~uint64_t{0}) {
      slots_[slot] = {k, merge};
      ++size_;
      return;
    }
  }
}

const BpeModel::Merge* BpeModel::MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t k = key(left, right);
  for (size_t slot = slot_of(k);; slot = (slot + 1) & (slots_.size() - 1)) {
    if (slots_[slot].key == k) return &slots_[slot].merge;
    if (slots_[slot].key == ~uint64_t{0}) return nullptr;
  }
}

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
  for (int c = 0; c < 128; ++c) {
    auto it = vocab_.find(std::string(1, static_cast<char>(c)));
    ascii_tokens_[c] = it == vocab_.end() ? -1 : it->second;
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
    merges_.insert_or_assign(ids[0], ids[1], Merge{static_cast<int32_t>(rank), ids[2]});
    for (size_t at = 0; at < merged.size();) {
      const size_t next = at + utf8_char_length(static_cast<unsigned char>(merged[at]));
      if (next >= merged.size()) break;
      joinable_pairs_.insert(codepoint_pair(codepoint_at(merged, at), codepoint_at(merged, next)));
      at = next;
    }
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
  if (word.size() <= kCachedWordBytes) {
    tokenize_cached(word, ids);
    return;
  }
  for (std::string_view part : cut_long_word(word)) {
    if (part.size() <= kCachedWordBytes) {
      tokenize_cached(part, ids);
    } else {
      std::vector<int32_t> merged = merge_word(part);
      ids.insert(ids.end(), merged.begin(), merged.end());
    }
  }
}

void BpeModel::tokenize_cached(std::string_view word, std::vector<int64_t>& ids) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = merge_word(word);
  ids.insert(ids.end(), merged.begin(), merged.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(word), std::move(merged));
}

// Note [Long words]: without a pre-tokenizer (Llama 2, Gemma) the whole text is one word, and
// one merge queue over a million symbols spends its time in cache misses. A merge joins two
// adjacent characters only if its result holds them side by side; where two neighbouring
// characters are each a token of their own (their first symbols) and no merge result holds
// the pair, no merge ever crosses between them, so the parts left and right merge alone
// exactly as within the whole (merges in one part never touch the other's symbols or queue
// entries). Cut there, the parts are words of ordinary length that the cache serves.
std::vector<std::string_view> BpeModel::cut_long_word(std::string_view word) const {
  std::vector<std::string_view> parts;
  if (!continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty()) return {word};
  auto is_own_token = [&](size_t at, size_t length) {
    const unsigned char lead = static_cast<unsigned char>(word[at]);
    if (lead < 0x80) return ascii_tokens_[lead] >= 0;
    return vocab_.find(word.substr(at, length)) != vocab_.end();
  };
  size_t part_begin = 0;
  size_t at = 0;
  size_t length = std::min(utf8_char_length(static_cast<unsigned char>(word[0])), word.size());
  bool own_token = is_own_token(at, length);
  while (at + length < word.size()) {
    const size_t next = at + length;
    const size_t next_length = std::min(utf8_char_length(static_cast<unsigned char>(word[next])), word.size() - next);
    const bool next_own_token = is_own_token(next, next_length);
    if (own_token && next_own_token &&
        !joinable_pairs_.count(codepoint_pair(codepoint_at(word, at), codepoint_at(word, next)))) {
      parts.push_back(word.substr(part_begin, next - part_begin));
      part_begin = next;
    }
    at = next;
    length = next_length;
    own_token = next_own_token;
  }
  parts.push_back(word.substr(part_begin));
  return parts;
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
  int32_t pending_unk = -1;
  std::string piece;
  const bool plain_characters = continuing_subword_prefix_.empty() && end_of_word_suffix_.empty();
  for (size_t at = 0; at < word.size();) {
    const unsigned char lead = static_cast<unsigned char>(word[at]);
    if (plain_characters && lead < 0x80 && ascii_tokens_[lead] >= 0) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
      add(ascii_tokens_[lead]);
      ++at;
      continue;
    }
    const size_t length = std::min(utf8_char_length(static_cast<unsigned char>(word[at])), word.size() - at);
    const bool is_first = at == 0, is_last = at + length == word.size();
    piece.clear();
    if (!is_first) piece += continuing_subword_prefix_;
    piece.append(word.substr(at, length));
    if (is_last) piece += end_of_word_suffix_;
    at += length;
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
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
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = *unk_id_;
    }
    // Without an unk_token, HF drops a character it cannot represent.
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return {};
  symbols.back().next = -1;

  // The queue holds (rank, position) as one number, smallest first: HF's order. An entry is
  // stale when the pair at its position has changed since (its merge rank differs).
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> queue;
  auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const Merge* merge = merges_.find(symbols[left].id, symbols[right].id))
      queue.push((static_cast<uint64_t>(merge->rank) << 32) | static_cast<uint32_t>(left));
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    const uint64_t top = queue.top();
    queue.pop();
    const int32_t rank = static_cast<int32_t>(top >> 32), position = static_cast<int32_t>(top & 0xFFFFFFFFu);
    Symbol& left = symbols[position];
    if (left.removed || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const Merge* merge = merges_.find(left.id, right.id);
    if (!merge || merge->rank != rank) continue;
    left.id = merge->new_id;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = position;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(position);
  }
  std::vector<int32_t> ids;
  ids.reserve(symbols.size());
  for (const Symbol& symbol : symbols)
    if (!symbol.removed) ids.push_back(symbol.id);
  return ids;
}

}  // namespace ember::tokenizers::detail
