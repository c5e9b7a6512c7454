// ember-rt: runs a .ember program file (libember_rt) without the ember library.
//   ember-rt PROGRAM                          its methods with their inputs and outputs
//   ember-rt PROGRAM --method NAME --input SHAPE=FILE ... [--output PREFIX]
//       input i: FILE's raw little-endian bytes in the input's dtype, row-major, of SHAPE
//       (3x4; "scalar" for 0 dims); output o is written to PREFIX<o>.bin (default out)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ember/runtime.h"

namespace {

const char* kUsage =
    "usage: ember-rt PROGRAM [--method NAME --input SHAPE=FILE ... [--output PREFIX]]\n"
    "  PROGRAM alone lists its methods, inputs and outputs; with --method runs NAME on the\n"
    "  inputs (raw row-major bytes in each input's dtype; SHAPE like 3x4, or scalar) and writes\n"
    "  output o to PREFIX<o>.bin (default PREFIX: out).\n";

const char* const kDtypeNames[] = {"bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
                                   "float64"};
const size_t kElementSizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8};

int fail(const char* message) {
  std::fprintf(stderr, "ember-rt: %s\n", message);
  return 1;
}

void print_info(const char* what, size_t index, const EmberRtTensorInfo& info) {
  std::printf("  %s %zu '%s': %s [", what, index, info.name, kDtypeNames[info.dtype]);
  for (int32_t d = 0; d < info.ndim; ++d) {
    if (info.min_sizes[d] == info.max_sizes[d]) std::printf("%s%lld", d ? ", " : "", static_cast<long long>(info.min_sizes[d]));
    else std::printf("%s%lld..%lld", d ? ", " : "", static_cast<long long>(info.min_sizes[d]),
                     static_cast<long long>(info.max_sizes[d]));
  }
  std::printf("]\n");
}

int list_methods(EmberRtProgram* program) {
  for (size_t m = 0; m < ember_rt_num_methods(program); ++m) {
    EmberRtMethod* method = nullptr;
    ember_rt_method(program, ember_rt_method_name(program, m), &method);
    std::printf("method %s\n", ember_rt_method_name(program, m));
    EmberRtTensorInfo info;
    for (size_t i = 0; i < ember_rt_num_inputs(method); ++i)
      if (ember_rt_input_info(method, i, &info) == EMBER_RT_OK) print_info("input", i, info);
    for (size_t o = 0; o < ember_rt_num_outputs(method); ++o)
      if (ember_rt_output_info(method, o, &info) == EMBER_RT_OK) print_info("output", o, info);
  }
  return 0;
}

bool read_file(const std::string& path, std::vector<unsigned char>* bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char chunk[65536];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), f)) > 0;) bytes->insert(bytes->end(), chunk, chunk + n);
  std::fclose(f);
  return true;
}

// "3x4=x.bin" -> sizes {3, 4} and the file's bytes.
bool parse_input(const std::string& spec, EmberRtTensor* tensor, std::vector<unsigned char>* bytes) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return false;
  const std::string shape = spec.substr(0, eq);
  tensor->ndim = 0;
  if (shape != "scalar") {
    for (size_t start = 0; start <= shape.size();) {
      size_t end = shape.find('x', start);
      if (end == std::string::npos) end = shape.size();
      if (tensor->ndim == EMBER_RT_MAX_DIMS || end == start) return false;
      tensor->sizes[tensor->ndim++] = std::strtoll(shape.substr(start, end - start).c_str(), nullptr, 10);
      start = end + 1;
    }
  }
  return read_file(spec.substr(eq + 1), bytes);
}

int run_method(EmberRtProgram* program, const std::string& name, const std::vector<std::string>& input_specs,
               const std::string& prefix) {
  EmberRtMethod* method = nullptr;
  if (ember_rt_method(program, name.c_str(), &method) != EMBER_RT_OK) return fail(ember_rt_last_error());
  if (input_specs.size() != ember_rt_num_inputs(method)) return fail("the number of --input flags differs from the method's inputs");
  std::vector<EmberRtTensor> inputs(input_specs.size()), outputs(ember_rt_num_outputs(method));
  std::vector<std::vector<unsigned char>> buffers(inputs.size() + outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EmberRtTensorInfo info;
    ember_rt_input_info(method, i, &info);
    inputs[i] = EmberRtTensor{};
    inputs[i].dtype = info.dtype;
    if (!parse_input(input_specs[i], &inputs[i], &buffers[i])) return fail("cannot read an --input SHAPE=FILE");
    size_t expected = kElementSizes[info.dtype];
    for (int32_t d = 0; d < inputs[i].ndim; ++d) expected *= static_cast<size_t>(inputs[i].sizes[d]);
    if (buffers[i].size() != expected) return fail("an input file's size differs from its shape and dtype");
    buffers[i].resize(expected + 1);
    inputs[i].data = buffers[i].data();
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    EmberRtTensorInfo info;
    ember_rt_output_info(method, o, &info);
    std::vector<unsigned char>& buffer = buffers[inputs.size() + o];
    buffer.resize(info.max_bytes + 1);
    outputs[o] = EmberRtTensor{};
    outputs[o].data = buffer.data();
    outputs[o].capacity_bytes = info.max_bytes;
  }
  if (ember_rt_run(method, inputs.data(), inputs.size(), outputs.data(), outputs.size()) != EMBER_RT_OK)
    return fail(ember_rt_last_error());
  for (size_t o = 0; o < outputs.size(); ++o) {
    size_t bytes = kElementSizes[outputs[o].dtype];
    std::printf("output %zu: %s [", o, kDtypeNames[outputs[o].dtype]);
    for (int32_t d = 0; d < outputs[o].ndim; ++d) {
      bytes *= static_cast<size_t>(outputs[o].sizes[d]);
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(outputs[o].sizes[d]));
    }
    const std::string path = prefix + std::to_string(o) + ".bin";
    std::printf("] -> %s\n", path.c_str());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(outputs[o].data, 1, bytes, f) != bytes || std::fclose(f) != 0)
      return fail("cannot write an output file");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string method, prefix = "out";
  std::vector<std::string> inputs;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--method") method = value;
    else if (flag == "--input") inputs.push_back(value);
    else if (flag == "--output") prefix = value;
    else {
      std::fprintf(stderr, "ember-rt: unknown flag %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
  }
  EmberRtProgram* program = nullptr;
  if (ember_rt_load(argv[1], &program) != EMBER_RT_OK) return fail(ember_rt_last_error());
  const int status = method.empty() ? list_methods(program) : run_method(program, method, inputs, prefix);
  ember_rt_free(program);
  return status;
}
