#include "ember/storage.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "core/allocator.h"
#include "core/graph_capture.h"
#include "ember/error.h"

namespace ember {

struct Storage::Impl {
  void* data = nullptr;
  size_t nbytes = 0;
  Kind kind = Kind::Owned;
  std::function<void(void*)> deleter;
  std::shared_ptr<const void> keep_alive;
  std::atomic<uint64_t> version{0};

  ~Impl() {
    if (kind == Kind::Owned) core::free_bytes(data, nbytes);
    else if (deleter) deleter(data);
  }
};

Storage Storage::allocate(size_t nbytes) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = core::allocate_bytes(nbytes);
  s.impl_->nbytes = nbytes;
  if (core::Capture* capture = core::active_capture()) core::note_storage_made(*capture, s, s.impl_->data);
  return s;
}

Storage Storage::borrow(void* data, size_t nbytes, std::function<void(void*)> deleter) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->kind = Kind::Borrowed;
  s.impl_->deleter = std::move(deleter);
  if (core::Capture* capture = core::active_capture()) core::note_storage_made(*capture, s, data);
  return s;
}

Storage Storage::mapped(const void* data, size_t nbytes, std::shared_ptr<const void> keep_alive) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = const_cast<void*>(data);
  s.impl_->nbytes = nbytes;
  s.impl_->kind = Kind::Mapped;
  s.impl_->keep_alive = std::move(keep_alive);
  if (core::Capture* capture = core::active_capture()) core::note_storage_made(*capture, s, s.impl_->data);
  return s;
}

void* Storage::data() const {
  if (!impl_) return nullptr;
  // Note [Graph capture]: during a capture, memory is reached only by recorded kernels.
  if (core::Capture* capture = core::active_capture()) core::note_storage_access(*capture, *this, impl_->data);
  return impl_->data;
}
DataPtr Storage::data_ptr() const {
  void* d = data();
  if (!impl_) return {nullptr, nullptr};
  switch (impl_->kind) {
    case Kind::Owned: return {d, d};
    case Kind::Borrowed: return {d, impl_->deleter ? static_cast<void*>(&impl_->deleter) : nullptr};
    case Kind::Mapped: return {d, const_cast<void*>(impl_->keep_alive.get())};
  }
  return {d, nullptr};
}
size_t Storage::nbytes() const { return impl_ ? impl_->nbytes : 0; }
Storage::Kind Storage::kind() const { return impl_ ? impl_->kind : Kind::Owned; }
bool Storage::read_only() const { return impl_ && impl_->kind == Kind::Mapped; }
uint64_t Storage::version() const { return impl_ ? impl_->version.load(std::memory_order_relaxed) : 0; }
void Storage::reallocate(size_t nbytes) const {
  EMBER_CHECK(impl_ != nullptr && impl_->kind == Kind::Owned, "Storage::reallocate",
              "only owned storage can be reallocated, this one is ",
              !impl_ ? "undefined" : impl_->kind == Kind::Borrowed ? "borrowed" : "memory-mapped");
  if (core::active_capture()) core::note_storage_reallocated(*this);
  // The new block is taken while the old one is held: its address differs (graph replay tells
  // a reallocated storage by its address; malloc may hand a just-freed block straight back), and
  // a failed allocation leaves the storage as it was.
  void* fresh = nbytes == 0 ? nullptr : core::allocate_bytes(nbytes);
  core::free_bytes(impl_->data, impl_->nbytes);
  impl_->data = fresh;
  impl_->nbytes = nbytes;
}

void Storage::bump_version() const {
  if (impl_) impl_->version.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ember
