// ember::OrderedDict: a map that keeps insertion order, as torch::OrderedDict. Modules
// return their named parameters, buffers and children in one; iteration yields items
// with key() and value().
#pragma once
#include <cstddef>
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
    Value* operator->() noexcept { return &pair_.second; }
    const std::pair<Key, Value>& pair() const noexcept { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };

  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;

  // `key_description` names the keys in error messages ("parameter", "module", ...).
  explicit OrderedDict(std::string key_description = "key") : key_description_(std::move(key_description)) {}

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

  void update(const OrderedDict& other) {
    for (const auto& item : other) insert_or_assign(item.key(), item.value());
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
    EMBER_CHECK(index < items_.size(), "OrderedDict", "index ", index, " out of range for size ", items_.size());
    return items_[index];
  }
  const Item& operator[](size_t index) const {
    EMBER_CHECK(index < items_.size(), "OrderedDict", "index ", index, " out of range for size ", items_.size());
    return items_[index];
  }

  // Removes `key` and returns its value.
  Value pop(const Key& key) {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), "OrderedDict", key_description_, " '", key, "' is not defined");
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
  const std::vector<Item>& items() const noexcept { return items_; }

  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  Item& front() { return items_.front(); }
  Item& back() { return items_.back(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
  std::string key_description_;
};

}  // namespace ember
