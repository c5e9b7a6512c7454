// Running ember-rt from the tests: a method on raw input files (its --method/--input/--output
// interface), or any command line, and the raw bytes of tensors to compare with its outputs.
#pragma once
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::rt::testing {

inline std::string shape_text(const Tensor& t) {
  if (t.dim() == 0) return "scalar";
  std::string text;
  for (int64_t d = 0; d < t.dim(); ++d) text += (d ? "x" : "") + std::to_string(t.size(d));
  return text;
}

inline void write_raw(const Tensor& t, const std::string& path) {
  const Tensor c = t.contiguous();
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
}

inline std::string read_raw(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

// Runs `command` (stderr joined to stdout); what it printed, "error: " first if it failed.
inline std::string run_command(const std::string& command) {
  std::string printed;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[256];
  for (size_t n; pipe && (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) printed.append(buffer, n);
  if (pipe == nullptr || pclose(pipe) != 0) return "error: " + printed;
  return printed;
}

// Runs `method` of the program at `program_path` in ember-rt; the bytes of output 0, or
// "error: ..." with what ember-rt printed.
inline std::string run_ember_rt(const std::string& program_path, const std::string& method,
                                const std::vector<Tensor>& inputs, const std::string& dir) {
  std::string command = std::string(EMBER_RT_PATH) + " " + program_path + " --method " + method;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = dir + "/input" + std::to_string(i) + ".bin";
    write_raw(inputs[i], path);
    command += " --input " + shape_text(inputs[i]) + "=" + path;
  }
  command += " --output " + dir + "/out";
  const std::string printed = run_command(command);
  if (printed.rfind("error: ", 0) == 0) return printed;
  return read_raw(dir + "/out0.bin");
}

inline std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

}  // namespace ember::rt::testing
