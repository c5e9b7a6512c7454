// serialize::OutputArchive / InputArchive (ember/io/archive.h) on safetensors, and
// make_tempfile.
#include "ember/io/archive.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/io/safetensors.h"
#include "ember/serialize.h"

namespace ember::serialize {
namespace {

constexpr const char* kKindKey = "ember.kind";
constexpr const char* kValuePrefix = "ember.value.";  // metadata keys of an archive's values

// A value as "kind:text"; the kinds read back by decode_value.
std::string encode_value(const std::string& key, const IValue& value) {
  if (value.isInt()) return "int:" + std::to_string(value.toInt());
  if (value.isBool()) return value.toBool() ? "bool:true" : "bool:false";
  if (value.isString()) return "string:" + value.toStringRef();
  if (value.isDouble()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value.toDouble());
    return std::string("double:") + text;
  }
  EMBER_FAIL("OutputArchive::write", "key '", key,
             "': only int, double, bool, string and tensor values can be written");
}

IValue decode_value(const std::string& key, const std::string& text) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon), body = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "int") return IValue(static_cast<int64_t>(std::stoll(body)));
  if (kind == "bool") return IValue(body == "true");
  if (kind == "string") return IValue(body);
  if (kind == "double") return IValue(std::stod(body));
  EMBER_FAIL("InputArchive::read", "key '", key, "' holds a value of unknown kind '", kind, "'");
}

}  // namespace

void OutputArchive::check_new_key(const std::string& key) const {
  EMBER_CHECK(!key.empty(), "OutputArchive::write", "a key must not be empty");
  for (const auto& [name, tensor] : tensors_)
    EMBER_CHECK(name != key, "OutputArchive::write", "key '", key, "' was already written");
  EMBER_CHECK(!values_.count(key), "OutputArchive::write", "key '", key, "' was already written");
}

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool /*is_buffer*/) {
  check_new_key(key);
  EMBER_CHECK(tensor.defined(), "OutputArchive::write", "the tensor at key '", key, "' is undefined");
  tensors_.emplace_back(key, tensor.detach());
}

void OutputArchive::write(const std::string& key, const OutputArchive& nested) {
  for (const auto& [name, tensor] : nested.tensors_) write(key + "." + name, tensor);
  for (const auto& [name, value] : nested.values_) {
    check_new_key(key + "." + name);
    values_[key + "." + name] = value;
  }
}

void OutputArchive::write(const std::string& key, const IValue& value) {
  if (value.isTensor()) return write(key, value.toTensor());
  check_new_key(key);
  values_[key] = encode_value(key, value);
}

void OutputArchive::save_to_target(const SaveTarget& to) const {
  io::Metadata metadata{{kKindKey, "archive"}};
  for (const auto& [key, value] : values_) metadata[kValuePrefix + key] = value;
  to.write(tensors_, metadata);
}

void OutputArchive::save_to(const std::string& filename) const { save_to_target(SaveTarget(filename)); }
void OutputArchive::save_to(std::ostream& stream) const { save_to_target(SaveTarget(stream)); }
void OutputArchive::save_to(const std::function<size_t(const void*, size_t)>& func) const {
  save_to_target(SaveTarget(func));
}

struct InputArchive::Contents {
  io::TensorList tensors;                     // file order
  std::map<std::string, std::string> values;  // full key -> encoded value

  const Tensor* find_tensor(const std::string& key) const {
    for (const auto& [name, tensor] : tensors)
      if (name == key) return &tensor;
    return nullptr;
  }
  bool has_prefix(const std::string& prefix) const {
    for (const auto& [name, tensor] : tensors)
      if (name.compare(0, prefix.size(), prefix) == 0) return true;
    for (const auto& [name, value] : values)
      if (name.compare(0, prefix.size(), prefix) == 0) return true;
    return false;
  }
};

InputArchive::InputArchive() : contents_(std::make_shared<Contents>()) {}

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool /*is_buffer*/) {
  const Tensor* found = contents_->find_tensor(prefix_ + key);
  if (!found) return false;
  if (tensor.defined()) {
    NoGradGuard no_grad;
    tensor.set_data(found->clone());
  } else {
    tensor = found->clone();
  }
  return true;
}

void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  EMBER_CHECK(try_read(key, tensor, is_buffer), "InputArchive::read", "No such serialized tensor '", prefix_, key,
              "'");
}

bool InputArchive::try_read(const std::string& key, InputArchive& archive) {
  const std::string prefix = prefix_ + key + ".";
  if (!contents_->has_prefix(prefix)) return false;
  archive.contents_ = contents_;
  archive.prefix_ = prefix;
  return true;
}

void InputArchive::read(const std::string& key, InputArchive& archive) {
  EMBER_CHECK(try_read(key, archive), "InputArchive::read", "No such serialized submodule: '", prefix_, key, "'");
}

bool InputArchive::try_read(const std::string& key, IValue& value) {
  if (auto it = contents_->values.find(prefix_ + key); it != contents_->values.end()) {
    value = decode_value(prefix_ + key, it->second);
    return true;
  }
  if (const Tensor* found = contents_->find_tensor(prefix_ + key)) {
    value = IValue(found->clone());
    return true;
  }
  return false;
}

void InputArchive::read(const std::string& key, IValue& value) {
  EMBER_CHECK(try_read(key, value), "InputArchive::read", "the archive does not have a field with name '", prefix_,
              key, "'");
}

namespace {

std::shared_ptr<InputArchive::Contents> contents_of(const LoadSource& from, const std::optional<Device>& device) {
  if (device) check_device_available(*device, "InputArchive::load_from");
  io::LoadedTensors loaded = from.read();
  auto contents = std::make_shared<InputArchive::Contents>();
  contents->tensors = std::move(loaded.tensors);
  const std::string prefix = kValuePrefix;
  for (const auto& [key, value] : loaded.metadata)
    if (key.compare(0, prefix.size(), prefix) == 0) contents->values[key.substr(prefix.size())] = value;
  return contents;
}

}  // namespace

void InputArchive::load_from_source(const LoadSource& from, std::optional<Device> device) {
  contents_ = contents_of(from, device);
  prefix_.clear();
}
void InputArchive::load_from(const std::string& filename, std::optional<Device> device) {
  load_from_source(LoadSource(filename), device);
}
void InputArchive::load_from(std::istream& stream, std::optional<Device> device) {
  load_from_source(LoadSource(stream), device);
}
void InputArchive::load_from(const char* data, size_t size, std::optional<Device> device) {
  load_from_source(LoadSource(data, size), device);
}
void InputArchive::load_from(const std::function<size_t(uint64_t, void*, size_t)>& read_func,
                             const std::function<size_t(void)>& size_func, std::optional<Device> device) {
  load_from_source(LoadSource(read_func, size_func), device);
}

std::vector<std::string> InputArchive::keys() const {
  std::vector<std::string> keys;
  auto add = [&](const std::string& name) {
    if (name.compare(0, prefix_.size(), prefix_) != 0) return;
    const std::string rest = name.substr(prefix_.size());
    const std::string key = rest.substr(0, rest.find('.'));
    for (const auto& known : keys)
      if (known == key) return;
    keys.push_back(key);
  };
  for (const auto& [name, tensor] : contents_->tensors) add(name);
  for (const auto& [name, value] : contents_->values) add(name);
  return keys;
}

}  // namespace ember::serialize

namespace ember {

TempFile& TempFile::operator=(TempFile&& other) noexcept {
  if (this != &other) {
    if (!name.empty()) std::remove(name.c_str());
    name = std::move(other.name);
    other.name.clear();
  }
  return *this;
}

TempFile::~TempFile() {
  if (!name.empty()) std::remove(name.c_str());
}

TempFile make_tempfile(std::string name_prefix) {
  const char* directory = std::getenv("TMPDIR");
  std::string path = std::string(directory && *directory ? directory : "/tmp") + "/" + name_prefix + "XXXXXX";
  std::vector<char> buffer(path.begin(), path.end());
  buffer.push_back('\0');
  const int fd = ::mkstemp(buffer.data());
  EMBER_CHECK(fd != -1, "make_tempfile", "could not create a temporary file '", path, "': ", std::strerror(errno));
  ::close(fd);
  return TempFile(std::string(buffer.data()));
}

}  // namespace ember
