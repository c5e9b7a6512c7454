// Reference-counted bytes behind tensors: owned (from ember's allocator), borrowed
// (from_blob) or memory-mapped (read-only, e.g. a safetensors file).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace ember {

// The data pointer of a storage with its deleter's context, as libtorch's at::DataPtr (read
// only): get() is the memory, get_context() what the deleter receives (nullptr for memory
// borrowed without a deleter).
class DataPtr {
 public:
  DataPtr(void* data, void* context) : data_(data), context_(context) {}
  void* get() const { return data_; }
  void* get_context() const { return context_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void* data_;
  void* context_;
};

class Storage {
 public:
  enum class Kind { Owned, Borrowed, Mapped };

  Storage() = default;
  // Owned memory from ember's allocator (64-byte aligned, counted by memory_stats()).
  static Storage allocate(size_t nbytes);
  // Borrowed memory: `deleter` (may be empty) runs when the last reference goes.
  static Storage borrow(void* data, size_t nbytes, std::function<void(void*)> deleter = {});
  // Read-only bytes kept alive by `keep_alive` (a memory map, for instance).
  static Storage mapped(const void* data, size_t nbytes, std::shared_ptr<const void> keep_alive);

  bool defined() const { return impl_ != nullptr; }
  void* data() const;
  DataPtr data_ptr() const;
  size_t nbytes() const;
  Kind kind() const;
  bool read_only() const;
  // Shared by all views of this storage; bumped by every in-place write (autograd checks it).
  uint64_t version() const;
  void bump_version() const;
  long use_count() const { return impl_.use_count(); }
  bool is_alias_of(const Storage& other) const { return impl_ == other.impl_; }
  // Owned storage only: replaces its memory, for every tensor viewing it, with `nbytes` new
  // uninitialised bytes (0 frees it) and keeps its version. FSDP frees and refills gathered
  // parameters this way (PyTorch's storage resize_).
  void reallocate(size_t nbytes) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ember
