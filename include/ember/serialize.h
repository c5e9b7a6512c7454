// ember::save / ember::load, as torch::save / torch::load in torch/serialize.h: a module (or
// its holder), an optimizer, a tensor or a vector of tensors, to and from a file, a stream or
// a buffer.
//
//   ember::save(model, "model.safetensors");      ember::load(model, "model.safetensors");
//   ember::save(optimizer, "optim.safetensors");  ember::load(optimizer, "optim.safetensors");
//
// The file is safetensors (written atomically) whose metadata "ember.kind" records what it
// holds: "module" (the state_dict under its keys), "optimizer" (its state tensors, its scalars
// as JSON under "ember.optimizer", as in training checkpoints), "tensor" (one, named "tensor")
// or "tensors" (named "0", "1", ...). Loading a file as another kind is an ember::Error that
// names both kinds; loading a module is strict (every key, shape and dtype must match) and
// changes nothing when it fails.
// Where libtorch's archives take them, ember takes a path, a std::ostream / std::istream, a
// writer function (save) or a buffer `const char* data, size_t size` (load), and a load's
// optional Device (the CPU only: another device is an error, as everywhere in ember).
// Objects that write themselves into a serialize::OutputArchive (samplers, stateful datasets:
// anything with `archive << value` and `archive >> value`) save and load through the same
// calls, as an archive file (ember/io/archive.h).
// Differences from libtorch: the bytes are safetensors, not a TorchScript zip archive (a file
// from torch::save does not load, nor the reverse); loaded tensors are copies (never views of
// the file).
#pragma once
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/io/archive.h"
#include "ember/nn/module.h"
#include "ember/nn/pimpl.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember {

namespace io {
struct LoadedTensors;
}  // namespace io

// Where ember::save writes: a path (written atomically), a stream, or a function that writes
// `n` bytes and returns how many it wrote (libtorch's OutputArchive::save_to).
class SaveTarget {
 public:
  using Writer = std::function<size_t(const void* data, size_t n)>;
  SaveTarget(std::string path) : path_(std::move(path)) {}  // NOLINT: implicit, as libtorch's overloads
  SaveTarget(const char* path) : path_(path) {}              // NOLINT
  SaveTarget(std::ostream& out) : out_(&out) {}              // NOLINT
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<size_t, F&, const void*, size_t>>>
  SaveTarget(F&& writer) : writer_(std::forward<F>(writer)) {}  // NOLINT: a lambda, as libtorch takes it

  // The path, "stream" or "writer function", for errors.
  std::string name() const;
  void write(const std::vector<std::pair<std::string, Tensor>>& tensors,
             const std::map<std::string, std::string>& metadata) const;

 private:
  std::optional<std::string> path_;
  std::ostream* out_ = nullptr;
  Writer writer_;
};

// Where ember::load reads: a path, a stream (from its beginning where it can seek, as
// libtorch, else from where it is; to its end) or a buffer (copied).
class LoadSource {
 public:
  LoadSource(std::string path) : path_(std::move(path)) {}  // NOLINT: implicit, as libtorch's overloads
  LoadSource(const char* path) : path_(path) {}              // NOLINT
  LoadSource(std::istream& in) : in_(&in) {}                 // NOLINT
  LoadSource(const char* data, size_t size) : data_(data), size_(size) {}
  // libtorch's read_func / size_func pair: the whole file is read (and kept) at once.
  LoadSource(const std::function<size_t(uint64_t pos, void* buf, size_t nbytes)>& read_func,
             const std::function<size_t(void)>& size_func);

  // The path, "stream" or "buffer", for errors.
  std::string name() const;
  io::LoadedTensors read() const;

 private:
  std::optional<std::string> path_;
  std::istream* in_ = nullptr;
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const std::string> owned_;  // the bytes a read_func gave
};

void save(const nn::Module& module, const SaveTarget& to);
void save(const optim::Optimizer& optimizer, const SaveTarget& to);
void save(const Tensor& tensor, const SaveTarget& to);
void save(const std::vector<Tensor>& tensors, const SaveTarget& to);

void load(nn::Module& module, const LoadSource& from, std::optional<Device> device = std::nullopt);
void load(optim::Optimizer& optimizer, const LoadSource& from, std::optional<Device> device = std::nullopt);
// Replaces `tensor` (or the vector's contents) with the file's.
void load(Tensor& tensor, const LoadSource& from, std::optional<Device> device = std::nullopt);
void load(std::vector<Tensor>& tensors, const LoadSource& from, std::optional<Device> device = std::nullopt);

// libtorch's load_from(const char* data, size_t size, device).
void load(nn::Module& module, const char* data, size_t size, std::optional<Device> device = std::nullopt);
void load(optim::Optimizer& optimizer, const char* data, size_t size, std::optional<Device> device = std::nullopt);
void load(Tensor& tensor, const char* data, size_t size, std::optional<Device> device = std::nullopt);
void load(std::vector<Tensor>& tensors, const char* data, size_t size, std::optional<Device> device = std::nullopt);

// libtorch's load(value, read_func, size_func, device).
template <typename Value, typename ReadFunc, typename SizeFunc,
          typename = std::enable_if_t<std::is_invocable_r_v<size_t, ReadFunc&, uint64_t, void*, size_t> &&
                                      std::is_invocable_r_v<size_t, SizeFunc&>>>
void load(Value& value, ReadFunc&& read_func, SizeFunc&& size_func, std::optional<Device> device = std::nullopt) {
  load(value, LoadSource(std::function<size_t(uint64_t, void*, size_t)>(std::forward<ReadFunc>(read_func)),
                         std::function<size_t(void)>(std::forward<SizeFunc>(size_func))),
       device);
}

namespace detail {
template <typename T, typename = void>
struct saves_to_archive : std::false_type {};
template <typename T>
struct saves_to_archive<T, std::void_t<decltype(std::declval<serialize::OutputArchive&>() << std::declval<const T&>())>>
    : std::true_type {};
template <typename T, typename = void>
struct loads_from_archive : std::false_type {};
template <typename T>
struct loads_from_archive<T, std::void_t<decltype(std::declval<serialize::InputArchive&>() >> std::declval<T&>())>>
    : std::true_type {};
}  // namespace detail

// A value that writes itself into an archive (`archive << value`), saved as an archive file.
template <typename Value, typename = std::enable_if_t<detail::saves_to_archive<Value>::value>>
void save(const Value& value, const SaveTarget& to) {
  serialize::OutputArchive archive;
  archive << value;
  archive.save_to_target(to);
}
// A value that reads itself from an archive (`archive >> value`).
template <typename Value, typename = std::enable_if_t<detail::loads_from_archive<Value>::value>>
void load(Value& value, const LoadSource& from, std::optional<Device> device = std::nullopt) {
  serialize::InputArchive archive;
  archive.load_from_source(from, device);
  archive >> value;
}

// Module holders (nn::Linear) and shared pointers to modules, as libtorch takes them.
template <typename M, typename... Where>
void save(const nn::ModuleHolder<M>& module, Where&&... where) {
  save(static_cast<const nn::Module&>(*module), std::forward<Where>(where)...);
}
template <typename M, typename... Where, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void save(const std::shared_ptr<M>& module, Where&&... where) {
  save(static_cast<const nn::Module&>(*module), std::forward<Where>(where)...);
}
template <typename M, typename... Where>
void load(nn::ModuleHolder<M>& module, Where&&... where) {
  load(static_cast<nn::Module&>(*module), std::forward<Where>(where)...);
}
template <typename M, typename... Where, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void load(const std::shared_ptr<M>& module, Where&&... where) {
  load(static_cast<nn::Module&>(*module), std::forward<Where>(where)...);
}

}  // namespace ember
