// Loading: map the file, check the header (Note [Program file layout] in schema/program.fbs),
// run the FlatBuffers verifier, then the runtime's own checks (verifier.cpp).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime/program.h"
#include "runtime/schema/file_header.h"

namespace ember::rt {

void FreeDeleter::operator()(void* p) const { std::free(p); }

Program::~Program() {
  if (mapping != nullptr) munmap(mapping, mapping_bytes);
}

std::unique_ptr<Program> load_program(const unsigned char* data, size_t size, Error& error) {
  if (reinterpret_cast<uintptr_t>(data) % program::kSegmentAlignment != 0) {
    error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[load] the program's bytes must be 64-byte aligned");
    return nullptr;
  }
  if (size < program::kHeaderBytes) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] truncated file: %zu bytes, the header alone has %llu", size,
               static_cast<unsigned long long>(program::kHeaderBytes));
    return nullptr;
  }
  program::FileHeader header;
  if (!program::read_file_header(data, &header)) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] not a program file: wrong magic or reserved header bytes");
    return nullptr;
  }
  if (header.version != program::kFormatVersion) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] format version %u, this runtime reads version %u",
               header.version, program::kFormatVersion);
    return nullptr;
  }
  if (header.flatbuffer_bytes > size - program::kHeaderBytes) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] truncated file: the header announces %llu bytes of program "
               "after byte 32, the file has %zu", static_cast<unsigned long long>(header.flatbuffer_bytes),
               size - program::kHeaderBytes);
    return nullptr;
  }
  const unsigned char* buffer = data + program::kHeaderBytes;
  flatbuffers::Verifier verifier(buffer, header.flatbuffer_bytes);
  if (header.flatbuffer_bytes > FLATBUFFERS_MAX_BUFFER_SIZE || !program::VerifyProgramBuffer(verifier)) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
               "[load] the program table fails the FlatBuffers verifier (an offset or size outside its %llu bytes, "
               "a missing required field or a wrong identifier)", static_cast<unsigned long long>(header.flatbuffer_bytes));
    return nullptr;
  }
  std::unique_ptr<Program> result(new (std::nothrow) Program);
  if (!result) {
    error.fail(EMBER_RT_ERROR_OUT_OF_MEMORY, "[load] out of memory");
    return nullptr;
  }
  result->file = data;
  result->file_bytes = size;
  result->root = program::GetProgram(buffer);
  if (result->root->version() != header.version) {
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] Program.version %u differs from the header's version %u",
               result->root->version(), header.version);
    return nullptr;
  }
  if (!verify_program(*result, error)) return nullptr;
  return result;
}

std::unique_ptr<Program> load_program_file(const char* path, Error& error) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error.fail(EMBER_RT_ERROR_IO, "[load] cannot open %s: %s", path, std::strerror(errno));
    return nullptr;
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error.fail(EMBER_RT_ERROR_IO, "[load] %s is not a regular file", path);
    close(fd);
    return nullptr;
  }
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {
    close(fd);
    error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] truncated file: %s is empty", path);
    return nullptr;
  }
  void* mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapping == MAP_FAILED) {
    error.fail(EMBER_RT_ERROR_IO, "[load] cannot map %s: %s", path, std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<Program> result = load_program(static_cast<const unsigned char*>(mapping), size, error);
  if (!result) {
    munmap(mapping, size);
    return nullptr;
  }
  result->mapping = mapping;
  result->mapping_bytes = size;
  return result;
}

}  // namespace ember::rt
