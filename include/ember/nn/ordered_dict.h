// ember::OrderedDict: a map that keeps insertion order, as torch::OrderedDict. Modules
// return their named parameters, buffers and children in one; iteration yields items
// with key() and value().
//
// Differs from libtorch: a braced list with a repeated key is an ember::Error (libtorch keeps both
// items and finds the first); pop(key) also removes and returns a value.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/error.h"

namespace ember {

template <typename Key, typename Value>
class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key& key() const noexcept { return pair_.first; }
    Value& value() noexcept { return pair_.second; }
    const Value& value() const noexcept { return pair_.second; }
    Value& operator*() noexcept { return pair_.second; }
    const Value& operator*() const noexcept { return pair_.second; }
    Value* operator->() noexcept { return &pair_.second; }
    const Value* operator->() const noexcept { return &pair_.second; }
    const std::pair<Key, Value>& pair() const noexcept { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };

  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;
  using Iterator = iterator;
  using ConstIterator = const_iterator;

  // `key_description` names the keys in error messages ("Parameter", "Module", ...).
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}
  // The items in order: OrderedDict<std::string, int> dict = {{"a", 1}, {"b", 2}}.
  OrderedDict(std::initializer_list<Item> items) : OrderedDict() {  // NOLINT
    reserve(items.size());
    for (const Item& item : items) insert(item.key(), item.value());
  }

  const std::string& key_description() const noexcept { return key_description_; }

  // Adds a new key; throws if it is already present.
  Value& insert(Key key, Value value) {
    EMBER_CHECK(index_.count(key) == 0, "OrderedDict", key_description_, " '", key, "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().value();
  }

  // Sets the value of `key`, adding it at the end if absent.
  Value& insert_or_assign(Key key, Value value) {
    if (Value* existing = find(key)) return *existing = std::move(value);
    return insert(std::move(key), std::move(value));
  }

  // Inserts every item of `other`; a key already present is an error, as in libtorch.
  void update(const OrderedDict& other) {
    reserve(size() + other.size());
    for (const auto& item : other) insert(item.key(), item.value());
  }
  void update(OrderedDict&& other) {
    reserve(size() + other.size());
    for (auto& item : other) insert(item.key(), std::move(item.value()));
  }

  Value* find(const Key& key) noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value* find(const Key& key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key& key) const noexcept { return index_.count(key) != 0; }

  Value& operator[](const Key& key) {
    Value* value = find(key);
    EMBER_CHECK(value != nullptr, "OrderedDict", key_description_, " '", key, "' is not defined");
    return *value;
  }
  const Value& operator[](const Key& key) const {
    const Value* value = find(key);
    EMBER_CHECK(value != nullptr, "OrderedDict", key_description_, " '", key, "' is not defined");
    return *value;
  }
  Item& operator[](size_t index) {
    check_index(index);
    return items_[index];
  }
  const Item& operator[](size_t index) const {
    check_index(index);
    return items_[index];
  }

  // Removes `key`; erase(key) as libtorch, pop(key) also returns its value.
  void erase(const Key& key) { pop(key); }
  Value pop(const Key& key) {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), "OrderedDict", "Key '", key, "' doesn't exist");
    const size_t position = it->second;
    Value value = std::move(items_[position].value());
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(position));
    index_.erase(it);
    for (auto& entry : index_) {
      if (entry.second > position) --entry.second;
    }
    return value;
  }

  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.value());
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.pair());
    return out;
  }
  const std::vector<Item>& items() const noexcept { return items_; }

  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  void reserve(size_t capacity) {
    items_.reserve(capacity);
    index_.reserve(capacity);
  }
  void clear() {
    items_.clear();
    index_.clear();
  }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  Item& front() {
    check_not_empty("front");
    return items_.front();
  }
  const Item& front() const {
    check_not_empty("front");
    return items_.front();
  }
  Item& back() {
    check_not_empty("back");
    return items_.back();
  }
  const Item& back() const {
    check_not_empty("back");
    return items_.back();
  }

  // The same keys and values in the same order.
  friend bool operator==(const OrderedDict& a, const OrderedDict& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a.items_[i].key() != b.items_[i].key() || !(a.items_[i].value() == b.items_[i].value())) return false;
    return true;
  }

 private:
  void check_index(size_t index) const {
    EMBER_CHECK(index < items_.size(), "OrderedDict", "Index ", index, " is out of bounds for size ", items_.size());
  }
  void check_not_empty(const char* accessor) const {
    EMBER_CHECK(!items_.empty(), "OrderedDict", "Called ", accessor, "() on an empty OrderedDict");
  }

  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_;
};

}  // namespace ember
