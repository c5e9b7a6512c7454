// Writes the sample programs into a directory: the files the C API test loads, and the seeds
// of the program-loading fuzzer (fuzz/program_seeds/ holds a copy).
//   runtime_write_programs DIR
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "sample_programs.h"

namespace {

bool write(const std::string& path, const std::vector<unsigned char>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ember::rt::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "cannot create %s\n", dir.c_str());
    return 1;
  }
  // add_relu without its relu: only ops of ember-rt's GPT set (src/runtime/kernels/gpt.ops).
  ProgramSpec add = add_relu_program();
  add.operators = {"add"};
  add.methods[0].instructions = {call({.op = 0, .inputs = {0, 1}, .outputs = {3}, .attributes = {}})};
  auto bad_magic = build_program(add_relu_program());
  bad_magic[0] = 'X';
  const bool ok = write(dir + "/add_relu.ember", build_program(add_relu_program())) &&
                  write(dir + "/recurrence.ember", build_program(recurrence_program())) &&
                  write(dir + "/add.ember", build_program(add)) &&
                  write(dir + "/bad_magic.ember", bad_magic);
  if (!ok) std::fprintf(stderr, "cannot write the programs into %s\n", dir.c_str());
  return ok ? 0 : 1;
}
