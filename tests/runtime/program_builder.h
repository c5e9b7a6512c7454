// A test-only writer of .ember program files by hand (FlatBuffers builder): the hostile
// programs of the loader tests, the programs of the executor and kernel tests, the fuzzer's
// seeds. Every field of the schema can be set, including the wrong ones.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/schema/file_header.h"
#include "runtime/schema/program_generated.h"

namespace ember::rt::testing {

namespace fb = ember::program;

// constant + sum coefficient * symbol
struct ExprSpec {
  int64_t constant = 0;
  std::vector<std::pair<uint32_t, int64_t>> terms;  // (symbol, coefficient)
};
inline ExprSpec lit(int64_t value) { return ExprSpec{value, {}}; }
inline ExprSpec sym(uint32_t symbol, int64_t coefficient = 1, int64_t constant = 0) {
  return ExprSpec{constant, {{symbol, coefficient}}};
}
std::vector<ExprSpec> lits(std::initializer_list<int64_t> values);

struct SymbolSpec {
  std::string name;
  fb::SymbolSource source = fb::SymbolSource::InputDim;
  uint32_t input = 0, dim = 0;
  int64_t min = 0, max = 0;
};

struct ValueSpec {
  std::string name;
  fb::ScalarType dtype = fb::ScalarType::Float32;
  std::vector<ExprSpec> shape;
  std::optional<std::vector<ExprSpec>> strides;
  fb::Location location = fb::Location::Arena;
  uint64_t arena_offset = 0, max_bytes = 0;
  uint32_t segment = 0;
  uint64_t offset = 0;
  uint32_t slot = 0;
  uint32_t base = 0;
  std::optional<ExprSpec> view_offset;
};

struct AttributeSpec {
  std::string name;
  fb::AttributeKind kind = fb::AttributeKind::Int;
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string string_value;
  std::vector<ExprSpec> exprs;
};

struct InstructionSpec;
struct CallSpec {
  uint32_t op = 0;
  std::vector<uint32_t> inputs, outputs;
  std::vector<AttributeSpec> attributes;
};
struct LoopSpec {
  ExprSpec trip_count;
  uint32_t index_symbol = 0;
  std::vector<InstructionSpec> body;
  std::vector<uint32_t> carried_inputs, carried_outputs;
};
struct InstructionSpec {
  std::optional<CallSpec> call;
  std::optional<LoopSpec> loop;
};
inline InstructionSpec call(CallSpec c) { return InstructionSpec{std::move(c), std::nullopt}; }
inline InstructionSpec loop(LoopSpec l) { return InstructionSpec{std::nullopt, std::move(l)}; }

struct MethodSpec {
  std::string name = "forward";
  std::vector<SymbolSpec> symbols;
  std::vector<ValueSpec> values;
  std::vector<uint32_t> inputs, outputs;
  std::vector<InstructionSpec> instructions;
  uint64_t arena_bytes = 0;
};

struct SegmentSpec {
  uint64_t offset = 0, size = 0;
};

struct ProgramSpec {
  uint32_t version = fb::kFormatVersion;           // Program.version and the header's
  std::optional<uint32_t> header_version;          // when the header should say otherwise
  std::vector<std::string> operators;
  std::vector<MethodSpec> methods;
  std::vector<std::vector<unsigned char>> segments;  // laid out 64-byte aligned after the program
  std::optional<std::vector<SegmentSpec>> segment_table;  // replaces the computed table
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The file's bytes: header, FlatBuffer, segments.
std::vector<unsigned char> build_program(const ProgramSpec& spec);

// Bytes as floats, for constant segments.
std::vector<unsigned char> float_bytes(const std::vector<float>& values);

// A 64-byte aligned copy, as ember_rt_load_buffer wants.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(const std::vector<unsigned char>& bytes);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ember::rt::testing
