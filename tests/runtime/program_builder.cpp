#include "program_builder.h"

#include <cstdlib>
#include <cstring>

namespace ember::rt::testing {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::Expr> write_expr(FlatBufferBuilder& b, const ExprSpec& e) {
  std::vector<fb::Term> terms;
  for (auto [symbol, coefficient] : e.terms) terms.emplace_back(symbol, coefficient);
  return fb::CreateExpr(b, e.constant, terms.empty() ? 0 : b.CreateVectorOfStructs(terms));
}

Offset<flatbuffers::Vector<Offset<fb::Expr>>> write_exprs(FlatBufferBuilder& b, const std::vector<ExprSpec>& exprs) {
  std::vector<Offset<fb::Expr>> offsets;
  for (const ExprSpec& e : exprs) offsets.push_back(write_expr(b, e));
  return b.CreateVector(offsets);
}

Offset<fb::Instruction> write_instruction(FlatBufferBuilder& b, const InstructionSpec& spec);

Offset<flatbuffers::Vector<Offset<fb::Instruction>>> write_instructions(FlatBufferBuilder& b,
                                                                         const std::vector<InstructionSpec>& list) {
  std::vector<Offset<fb::Instruction>> offsets;
  for (const InstructionSpec& i : list) offsets.push_back(write_instruction(b, i));
  return b.CreateVector(offsets);
}

Offset<fb::Instruction> write_instruction(FlatBufferBuilder& b, const InstructionSpec& spec) {
  if (spec.call) {
    const CallSpec& c = *spec.call;
    std::vector<Offset<fb::Attribute>> attributes;
    for (const AttributeSpec& a : c.attributes) {
      auto name = b.CreateString(a.name);
      auto ints = b.CreateVector(a.ints);
      auto floats = b.CreateVector(a.floats);
      auto string_value = b.CreateString(a.string_value);
      auto exprs = write_exprs(b, a.exprs);
      attributes.push_back(fb::CreateAttribute(b, name, a.kind, a.int_value, a.float_value, ints, floats, string_value,
                                               exprs));
    }
    auto inputs = b.CreateVector(c.inputs);
    auto outputs = b.CreateVector(c.outputs);
    auto call = fb::CreateCall(b, c.op, inputs, outputs, b.CreateVector(attributes));
    return fb::CreateInstruction(b, fb::Instruction_::Call, call.Union());
  }
  const LoopSpec& l = *spec.loop;
  auto trip_count = write_expr(b, l.trip_count);
  auto body = write_instructions(b, l.body);
  auto carried_inputs = b.CreateVector(l.carried_inputs);
  auto carried_outputs = b.CreateVector(l.carried_outputs);
  auto loop = fb::CreateLoop(b, trip_count, l.index_symbol, body, carried_inputs, carried_outputs);
  return fb::CreateInstruction(b, fb::Instruction_::Loop, loop.Union());
}

Offset<fb::Method> write_method(FlatBufferBuilder& b, const MethodSpec& m) {
  std::vector<Offset<fb::Symbol>> symbols;
  for (const SymbolSpec& s : m.symbols)
    symbols.push_back(fb::CreateSymbol(b, b.CreateString(s.name), s.source, s.input, s.dim, s.min, s.max));
  std::vector<Offset<fb::Value>> values;
  for (const ValueSpec& v : m.values) {
    auto name = b.CreateString(v.name);
    auto shape = write_exprs(b, v.shape);
    Offset<flatbuffers::Vector<Offset<fb::Expr>>> strides = v.strides ? write_exprs(b, *v.strides) : 0;
    Offset<fb::Expr> view_offset = v.view_offset ? write_expr(b, *v.view_offset) : 0;
    values.push_back(fb::CreateValue(b, name, v.dtype, shape, strides, v.location, v.arena_offset, v.max_bytes,
                                     v.segment, v.offset, v.slot, v.base, view_offset));
  }
  auto name = b.CreateString(m.name);
  auto symbol_vector = b.CreateVector(symbols);
  auto value_vector = b.CreateVector(values);
  auto inputs = b.CreateVector(m.inputs);
  auto outputs = b.CreateVector(m.outputs);
  auto instructions = write_instructions(b, m.instructions);
  return fb::CreateMethod(b, name, symbol_vector, value_vector, inputs, outputs, instructions, m.arena_bytes);
}

uint64_t round_up(uint64_t n) { return (n + fb::kSegmentAlignment - 1) / fb::kSegmentAlignment * fb::kSegmentAlignment; }

}  // namespace

std::vector<ExprSpec> lits(std::initializer_list<int64_t> values) {
  std::vector<ExprSpec> exprs;
  for (int64_t v : values) exprs.push_back(lit(v));
  return exprs;
}

std::vector<unsigned char> build_program(const ProgramSpec& spec) {
  // The segment table depends on the FlatBuffer's size, which depends on the table: build
  // twice, the second time with the offsets the first size gives.
  std::vector<SegmentSpec> table(spec.segments.size());
  std::vector<unsigned char> file;
  for (int pass = 0; pass < 2; ++pass) {
    FlatBufferBuilder b;
    b.ForceDefaults(true);  // every scalar written, so the second pass has the first one's size
    std::vector<Offset<fb::Operator>> operators;
    for (const std::string& op : spec.operators) operators.push_back(fb::CreateOperator(b, b.CreateString(op)));
    std::vector<Offset<fb::Method>> methods;
    for (const MethodSpec& m : spec.methods) methods.push_back(write_method(b, m));
    std::vector<Offset<fb::Segment>> segments;
    for (const SegmentSpec& s : spec.segment_table ? *spec.segment_table : table)
      segments.push_back(fb::CreateSegment(b, s.offset, s.size));
    std::vector<Offset<fb::KeyValue>> metadata;
    for (const auto& [key, value] : spec.metadata)
      metadata.push_back(fb::CreateKeyValue(b, b.CreateString(key), b.CreateString(value)));
    auto operator_vector = b.CreateVector(operators);
    auto method_vector = b.CreateVector(methods);
    auto segment_vector = b.CreateVector(segments);
    auto metadata_vector = b.CreateVector(metadata);
    b.Finish(fb::CreateProgram(b, spec.version, operator_vector, method_vector, segment_vector, metadata_vector),
             fb::ProgramIdentifier());
    uint64_t end = round_up(fb::kHeaderBytes + b.GetSize());
    uint64_t file_end = fb::kHeaderBytes + b.GetSize();
    for (size_t s = 0; s < spec.segments.size(); ++s) {
      table[s] = SegmentSpec{end, spec.segments[s].size()};
      file_end = end + spec.segments[s].size();  // no padding after the last segment
      end = round_up(file_end);
    }
    if (pass == 0) continue;
    file.assign(file_end, 0);
    fb::write_file_header(file.data(), fb::FileHeader{spec.header_version.value_or(spec.version), b.GetSize()});
    std::memcpy(file.data() + fb::kHeaderBytes, b.GetBufferPointer(), b.GetSize());
    for (size_t s = 0; s < spec.segments.size(); ++s)
      std::memcpy(file.data() + table[s].offset, spec.segments[s].data(), spec.segments[s].size());
  }
  return file;
}

std::vector<unsigned char> float_bytes(const std::vector<float>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

AlignedBuffer::AlignedBuffer(const std::vector<unsigned char>& bytes) : size_(bytes.size()) {
  data_ = std::aligned_alloc(64, round_up(std::max<size_t>(size_, 1)));
  std::memcpy(data_, bytes.data(), size_);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

}  // namespace ember::rt::testing
