// ember::save / ember::load (ember/serialize.h) on safetensors, with the kind of object each
// file holds in its metadata.
#include "ember/serialize.h"

#include <istream>
#include <ostream>
#include <streambuf>
#include <string>

#include "ember/error.h"
#include "ember/io/safetensors.h"
#include "io/metadata_json.h"

namespace ember {
namespace {

constexpr const char* kKindKey = "ember.kind";
constexpr const char* kOptimizerKey = "ember.optimizer";  // the same key as in training checkpoints
constexpr const char* kTensorName = "tensor";

// A recorded kind in words: "a module", "an optimizer", "a vector of tensors".
std::string kind_in_words(const std::string& kind) {
  if (kind == "tensors") return "a vector of tensors";
  return (kind == "optimizer" ? "an " : "a ") + kind;
}

// What the file holds, in words, for errors: its recorded kind, else what it looks like.
std::string described_kind(const io::Metadata& metadata) {
  if (auto it = metadata.find(kKindKey); it != metadata.end()) return kind_in_words(it->second);
  if (metadata.count("ember.step")) return "a training checkpoint (io::save_checkpoint; load it with io::load_checkpoint)";
  return "no recorded kind (not written by ember::save; a plain state_dict loads with io::load)";
}

// Forwards a stream's bytes to a writer function; a short write fails the stream.
class WriterBuffer : public std::streambuf {
 public:
  explicit WriterBuffer(const SaveTarget::Writer& writer) : writer_(writer) {}

 protected:
  std::streamsize xsputn(const char* data, std::streamsize n) override {
    return static_cast<std::streamsize>(writer_(data, static_cast<size_t>(n)));
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return writer_(&ch, 1) == 1 ? c : traits_type::eof();
  }

 private:
  const SaveTarget::Writer& writer_;
};

// The tensors `from` holds once its recorded kind is `kind`, for `device` (the CPU only).
io::LoadedTensors load_kind(const LoadSource& from, const char* kind, const std::optional<Device>& device) {
  if (device) check_device_available(*device, "ember::load");
  io::LoadedTensors loaded = from.read();
  auto it = loaded.metadata.find(kKindKey);
  EMBER_CHECK(it != loaded.metadata.end() && it->second == kind, "ember::load", "'", from.name(), "' holds ",
              described_kind(loaded.metadata), ", not ", kind_in_words(kind));
  return loaded;
}

void save_kind(const SaveTarget& to, const char* kind, const io::TensorList& tensors, io::Metadata metadata = {}) {
  metadata[kKindKey] = kind;
  to.write(tensors, metadata);
}

}  // namespace

std::string SaveTarget::name() const {
  if (path_) return *path_;
  return out_ ? "stream" : "writer function";
}

void SaveTarget::write(const io::TensorList& tensors, const io::Metadata& metadata) const {
  if (path_) return io::save_safetensors(*path_, tensors, metadata);
  if (out_) return io::save_safetensors(*out_, tensors, metadata, name());
  EMBER_CHECK(static_cast<bool>(writer_), "ember::save", "the writer function is empty");
  WriterBuffer buffer(writer_);
  std::ostream out(&buffer);
  io::save_safetensors(out, tensors, metadata, name());
}

std::string LoadSource::name() const {
  if (path_) return *path_;
  return in_ ? "stream" : "buffer";
}

LoadSource::LoadSource(const std::function<size_t(uint64_t, void*, size_t)>& read_func,
                       const std::function<size_t(void)>& size_func) {
  EMBER_CHECK(read_func && size_func, "ember::load", "the read function or the size function is empty");
  auto bytes = std::make_shared<std::string>(size_func(), '\0');
  size_t position = 0;
  while (position < bytes->size()) {
    const size_t got = read_func(position, bytes->data() + position, bytes->size() - position);
    EMBER_CHECK(got > 0, "ember::load", "the read function returned no bytes at position ", position, " of ",
                bytes->size());
    position += got;
  }
  data_ = bytes->data();
  size_ = bytes->size();
  owned_ = std::move(bytes);
}

io::LoadedTensors LoadSource::read() const {
  if (path_) return io::load_safetensors(*path_);
  if (in_) {
    // As libtorch, a seekable stream is read from its beginning, so one stream loads twice.
    in_->clear();
    if (in_->tellg() != std::streampos(-1)) in_->seekg(0);
    return io::load_safetensors(*in_, name());
  }
  return io::load_safetensors(data_, size_, name());
}

void save(const nn::Module& module, const SaveTarget& to) {
  io::TensorList tensors;
  for (const auto& item : module.state_dict()) tensors.emplace_back(item.key(), item.value());
  save_kind(to, "module", tensors);
}

namespace {

// libtorch's error for the first of the module's keys the file lacks: the first submodule on
// its path with no entry in the file, else the tensor itself.
void check_no_missing_key(const nn::Module& module, const io::LoadedTensors& loaded, const LoadSource& from) {
  auto file_has_prefix = [&](const std::string& prefix) {
    for (const auto& [name, tensor] : loaded.tensors)
      if (name.compare(0, prefix.size(), prefix) == 0) return true;
    return false;
  };
  for (const auto& item : module.state_dict()) {
    const std::string& key = item.key();
    bool found = false;
    for (const auto& [name, tensor] : loaded.tensors) found = found || name == key;
    if (found) continue;
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      EMBER_CHECK(file_has_prefix(key.substr(0, dot + 1)), "ember::load", "'", from.name(),
                  "': No such serialized submodule: '", key.substr(0, dot), "'");
    EMBER_FAIL("ember::load", "'", from.name(), "': No such serialized tensor '", key, "'");
  }
}

}  // namespace

void load(nn::Module& module, const LoadSource& from, std::optional<Device> device) {
  const io::LoadedTensors loaded = load_kind(from, "module", device);
  check_no_missing_key(module, loaded, from);
  OrderedDict<std::string, Tensor> dict("state_dict key");
  for (const auto& [name, tensor] : loaded.tensors) dict.insert(name, tensor);
  try {
    module.load_state_dict(dict, /*strict=*/true);
  } catch (const Error& e) {
    EMBER_FAIL("ember::load", "'", from.name(), "': ", e.what());
  }
}

void save(const optim::Optimizer& optimizer, const SaveTarget& to) {
  const optim::OptimizerStateDict state = optimizer.state_dict();
  io::TensorList tensors(state.tensors.begin(), state.tensors.end());
  save_kind(to, "optimizer", tensors, {{kOptimizerKey, io::detail::scalars_json(state.scalars, "ember::save")}});
}

void load(optim::Optimizer& optimizer, const LoadSource& from, std::optional<Device> device) {
  const io::LoadedTensors loaded = load_kind(from, "optimizer", device);
  optim::OptimizerStateDict state;
  const nlohmann::json scalars =
      io::detail::metadata_json(loaded.metadata, kOptimizerKey, from.name(), "ember::load", "an optimizer file");
  state.scalars = io::detail::json_value<std::map<std::string, double>>(scalars, kOptimizerKey, from.name(),
                                                                        "an object of numbers", "ember::load");
  for (const auto& [name, tensor] : loaded.tensors) state.tensors[name] = tensor;
  try {
    optimizer.load_state_dict(state);
  } catch (const Error& e) {
    EMBER_FAIL("ember::load", "'", from.name(), "': ", e.what());
  }
}

void save(const Tensor& tensor, const SaveTarget& to) {
  EMBER_CHECK(tensor.defined(), "ember::save", "cannot save an undefined tensor to '", to.name(), "'");
  save_kind(to, "tensor", {{kTensorName, tensor}});
}

void load(Tensor& tensor, const LoadSource& from, std::optional<Device> device) {
  const io::LoadedTensors loaded = load_kind(from, "tensor", device);
  EMBER_CHECK(loaded.tensors.size() == 1 && loaded.tensors[0].first == kTensorName, "ember::load", "'", from.name(),
              "' must hold one tensor named '", kTensorName, "', it holds ", loaded.tensors.size());
  tensor = loaded.tensors[0].second.clone();
}

void save(const std::vector<Tensor>& tensors, const SaveTarget& to) {
  io::TensorList list;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "ember::save", "tensor ", i, " of ", tensors.size(), " is undefined");
    list.emplace_back(std::to_string(i), tensors[i]);
  }
  save_kind(to, "tensors", list);
}

void load(std::vector<Tensor>& tensors, const LoadSource& from, std::optional<Device> device) {
  const io::LoadedTensors loaded = load_kind(from, "tensors", device);
  std::vector<Tensor> result(loaded.tensors.size());
  // Tensors sit in the file in layout order; "0" .. "n-1" name their places in the vector.
  for (size_t i = 0; i < result.size(); ++i) result[i] = loaded.at(std::to_string(i)).clone();
  tensors = std::move(result);
}

void load(nn::Module& module, const char* data, size_t size, std::optional<Device> device) {
  load(module, LoadSource(data, size), device);
}
void load(optim::Optimizer& optimizer, const char* data, size_t size, std::optional<Device> device) {
  load(optimizer, LoadSource(data, size), device);
}
void load(Tensor& tensor, const char* data, size_t size, std::optional<Device> device) {
  load(tensor, LoadSource(data, size), device);
}
void load(std::vector<Tensor>& tensors, const char* data, size_t size, std::optional<Device> device) {
  load(tensors, LoadSource(data, size), device);
}

}  // namespace ember
