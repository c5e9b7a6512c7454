// `ember inspect FILE`: the tensors, metadata and parameter count of a safetensors file,
// read from the validated header only (no tensor data is touched).
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/io/safetensors.h"

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

int run_inspect(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "usage: ember inspect FILE\n";
    return 2;
  }
  try {
    ember::io::SafeOpen file(args[0]);
    size_t name_width = 4;
    for (const auto& info : file.tensors()) name_width = std::max(name_width, info.name.size());
    std::cout << std::left << std::setw(static_cast<int>(name_width)) << "name" << "  " << std::setw(8) << "dtype"
              << "  " << std::setw(20) << "shape" << "  bytes\n";
    int64_t parameters = 0;
    uint64_t bytes = 0;
    for (const auto& info : file.tensors()) {
      std::cout << std::setw(static_cast<int>(name_width)) << info.name << "  " << std::setw(8)
                << ember::io::file_dtype_name(info.dtype) << "  " << std::setw(20) << shape_text(info.shape) << "  "
                << info.nbytes() << "\n";
      parameters += info.numel();
      bytes += info.nbytes();
    }
    if (!file.metadata().empty()) {
      std::cout << "\nmetadata:\n";
      for (const auto& [key, value] : file.metadata()) std::cout << "  " << key << ": " << value << "\n";
    }
    std::cout << "\n" << file.tensors().size() << " tensors, " << parameters << " parameters, " << bytes
              << " bytes of data\n";
    return 0;
  } catch (const ember::Error& e) {
    std::cerr << "ember inspect: " << e.what() << "\n";
    return 1;
  }
}
