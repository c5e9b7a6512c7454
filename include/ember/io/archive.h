// serialize::OutputArchive and serialize::InputArchive, as libtorch's torch::serialize
// archives: named tensors, values and nested archives, saved to and loaded from a file, a
// stream, a buffer or functions. ember::save / ember::load (serialize.h) write the objects
// that save themselves into an archive (samplers, stateful datasets) through these.
//
//   serialize::OutputArchive out;
//   out.write("index", tensor(int64_t{7}));
//   out.save_to("sampler.safetensors");
//   serialize::InputArchive in;
//   in.load_from("sampler.safetensors");
//   Tensor index;
//   in.read("index", index);
//
// The bytes are safetensors: a nested archive's entries sit under "key.", so a module file
// from ember::save reads as an archive whose submodules are nested archives. Values (int,
// double, bool, string) sit in the metadata. Differences from libtorch: not a TorchScript zip
// archive; a nested archive is copied when written (later writes to it are not seen);
// reading into a defined tensor gives that tensor the read data (set_data), whatever its
// device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/autograd/ivalue.h"
#include "ember/device.h"
#include "ember/tensor.h"

namespace ember {
class SaveTarget;
class LoadSource;
}  // namespace ember

namespace ember::serialize {

class OutputArchive {
 public:
  OutputArchive() = default;

  // is_buffer is accepted for libtorch's signature; buffers and parameters are stored alike.
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  // Copies every entry of `nested` under "key.".
  void write(const std::string& key, const OutputArchive& nested);
  // An int, double, bool, string or tensor; another kind is an ember::Error.
  void write(const std::string& key, const IValue& value);

  void save_to(const std::string& filename) const;
  void save_to(std::ostream& stream) const;
  void save_to(const std::function<size_t(const void*, size_t)>& func) const;
  // ember's: to any target ember::save takes (serialize.h).
  void save_to_target(const SaveTarget& to) const;

  template <typename... Ts>
  void operator()(Ts&&... ts) {
    write(std::forward<Ts>(ts)...);
  }

  // The entries, for the writers in src/io: tensors by full key, values encoded as text.
  const std::vector<std::pair<std::string, Tensor>>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  void check_new_key(const std::string& key) const;

  std::vector<std::pair<std::string, Tensor>> tensors_;
  std::map<std::string, std::string> values_;
};

class InputArchive {
 public:
  InputArchive();

  // Reads the tensor at `key`; a missing key is an ember::Error ("No such serialized tensor").
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  // The entries under "key." as an archive ("No such serialized submodule" when there are none).
  void read(const std::string& key, InputArchive& archive);
  bool try_read(const std::string& key, InputArchive& archive);
  void read(const std::string& key, IValue& value);
  bool try_read(const std::string& key, IValue& value);

  void load_from(const std::string& filename, std::optional<Device> device = std::nullopt);
  void load_from(std::istream& stream, std::optional<Device> device = std::nullopt);
  void load_from(const char* data, size_t size, std::optional<Device> device = std::nullopt);
  void load_from(const std::function<size_t(uint64_t pos, void* buf, size_t nbytes)>& read_func,
                 const std::function<size_t(void)>& size_func, std::optional<Device> device = std::nullopt);
  // ember's: from any source ember::load takes (serialize.h).
  void load_from_source(const LoadSource& from, std::optional<Device> device = std::nullopt);

  // The keys of this level: tensors, values and nested archives, in file order.
  std::vector<std::string> keys() const;

  template <typename... Ts>
  void operator()(Ts&&... ts) {
    read(std::forward<Ts>(ts)...);
  }

  struct Contents;  // what a loaded file holds, shared by an archive and its nested ones

 private:
  std::shared_ptr<const Contents> contents_;
  std::string prefix_;  // "" at the top, "a.b." for the nested archive "a" -> "b"
};

}  // namespace ember::serialize

namespace ember {

// A file in the temporary directory, deleted when the TempFile goes out of scope, as c10's
// TempFile; `name` is its path.
struct TempFile {
  explicit TempFile(std::string name) : name(std::move(name)) {}
  TempFile(TempFile&& other) noexcept : name(std::move(other.name)) { other.name.clear(); }
  TempFile& operator=(TempFile&& other) noexcept;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();

  std::string name;
};

// Creates an empty, uniquely named file from `name_prefix` + six random characters in
// $TMPDIR (else /tmp), as c10::make_tempfile.
TempFile make_tempfile(std::string name_prefix = "ember-");

}  // namespace ember
