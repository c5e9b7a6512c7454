// The .ember file: ExportedProgram::save writes it, ExportedProgram::load reads it back
// (Note [Program file layout] in src/runtime/schema/program.fbs).
#include <cstring>

#include "ember/atomic_file.h"
#include "ember/error.h"
#include "ember/export.h"
#include "ember/functions.h"
#include "runtime/schema/file_header.h"
#include "runtime/schema/program_generated.h"

namespace ember {
namespace {

namespace fb = ember::program;

using fb::kFormatVersion;
using fb::kHeaderBytes;
using fb::kSegmentAlignment;

uint64_t align_up(uint64_t n) { return (n + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment; }

// ---- writing ----------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(flatbuffers::FlatBufferBuilder& b) : b_(b) {}

  flatbuffers::Offset<fb::Expr> expr(const export_ir::Expr& e) {
    std::vector<fb::Term> terms;
    for (const auto& t : e.terms) terms.emplace_back(t.symbol, t.coefficient);
    return fb::CreateExpr(b_, e.constant, b_.CreateVectorOfStructs(terms));
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Expr>>> exprs(const std::vector<export_ir::Expr>& es) {
    std::vector<flatbuffers::Offset<fb::Expr>> out;
    for (const auto& e : es) out.push_back(expr(e));
    return b_.CreateVector(out);
  }

  flatbuffers::Offset<fb::Value> value(const export_ir::Value& v) {
    auto name = b_.CreateString(v.name);
    auto shape = exprs(v.shape);
    auto strides = v.strides.empty() ? 0 : exprs(v.strides);
    auto view_offset = expr(v.view_offset);
    return fb::CreateValue(b_, name, static_cast<fb::ScalarType>(v.dtype), shape, strides,
                           static_cast<fb::Location>(v.location), v.arena_offset, v.max_bytes, v.constant, 0, v.slot,
                           v.base, view_offset);
  }

  flatbuffers::Offset<fb::Attribute> attribute(const export_ir::Attribute& a) {
    auto name = b_.CreateString(a.name);
    auto ints = b_.CreateVector(a.ints);
    auto floats = b_.CreateVector(a.floats);
    auto string = b_.CreateString(a.string_value);
    auto es = exprs(a.exprs);
    return fb::CreateAttribute(b_, name, static_cast<fb::AttributeKind>(a.kind), a.int_value, a.float_value, ints,
                               floats, string, es);
  }

  flatbuffers::Offset<fb::Method> method(const export_ir::Method& m, const std::vector<std::string>& operators) {
    std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
    for (const auto& s : m.symbols)
      symbols.push_back(fb::CreateSymbol(b_, b_.CreateString(s.name), static_cast<fb::SymbolSource>(s.source), s.input,
                                         s.dim, s.min, s.max));
    std::vector<flatbuffers::Offset<fb::Value>> values;
    for (const auto& v : m.values) values.push_back(value(v));
    auto instructions = instruction_list(m.instructions, operators);
    return fb::CreateMethod(b_, b_.CreateString(m.name), b_.CreateVector(symbols), b_.CreateVector(values),
                            b_.CreateVector(m.inputs), b_.CreateVector(m.outputs), instructions, m.arena_bytes);
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Instruction>>> instruction_list(
      const std::vector<export_ir::Instruction>& list, const std::vector<std::string>& operators) {
    std::vector<flatbuffers::Offset<fb::Instruction>> out;
    for (const auto& instruction : list) {
      if (const auto* c = std::get_if<export_ir::Call>(&instruction.op)) {
        const auto op = static_cast<uint32_t>(std::find(operators.begin(), operators.end(), c->op) - operators.begin());
        std::vector<flatbuffers::Offset<fb::Attribute>> attributes;
        for (const auto& a : c->attributes) attributes.push_back(attribute(a));
        auto call = fb::CreateCall(b_, op, b_.CreateVector(c->inputs), b_.CreateVector(c->outputs),
                                   b_.CreateVector(attributes));
        out.push_back(fb::CreateInstruction(b_, fb::Instruction_::Call, call.Union()));
        continue;
      }
      const auto& l = std::get<export_ir::Loop>(instruction.op);
      auto trip = expr(l.trip_count);
      auto body = instruction_list(l.body, operators);
      auto loop = fb::CreateLoop(b_, trip, l.index_symbol, body, b_.CreateVector(l.carried_inputs),
                                 b_.CreateVector(l.carried_outputs));
      out.push_back(fb::CreateInstruction(b_, fb::Instruction_::Loop, loop.Union()));
    }
    return b_.CreateVector(out);
  }

 private:
  flatbuffers::FlatBufferBuilder& b_;
};

// The FlatBuffer with segments starting at `segments_start` (absolute). Defaults are written
// out, so its size does not depend on the offsets' values.
std::string build_flatbuffer(const export_ir::Program& p, uint64_t segments_start,
                             std::vector<uint64_t>& segment_offsets) {
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);
  Writer w(b);
  const std::vector<std::string> operators = p.operators();
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const auto& name : operators) ops.push_back(fb::CreateOperator(b, b.CreateString(name)));
  std::vector<uint64_t> bytes;
  for (const auto& c : p.constants) bytes.push_back(c.data.nbytes());
  std::vector<flatbuffers::Offset<fb::Method>> methods;
  for (const auto& m : p.methods) methods.push_back(w.method(m, operators));
  segment_offsets.clear();
  uint64_t at = segments_start;
  for (uint64_t n : bytes) {
    segment_offsets.push_back(at);
    at = align_up(at + n);
  }
  std::vector<flatbuffers::Offset<fb::Segment>> segment_tables;
  for (size_t i = 0; i < bytes.size(); ++i) segment_tables.push_back(fb::CreateSegment(b, segment_offsets[i], bytes[i]));
  std::vector<flatbuffers::Offset<fb::KeyValue>> metadata;
  for (const auto& [key, value] : p.metadata)
    metadata.push_back(fb::CreateKeyValue(b, b.CreateString(key), b.CreateString(value)));
  auto program = fb::CreateProgram(b, kFormatVersion, b.CreateVector(ops), b.CreateVector(methods),
                                   b.CreateVector(segment_tables), b.CreateVector(metadata));
  fb::FinishProgramBuffer(b, program);
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

// ---- reading ----------------------------------------------------------------------------

export_ir::Expr read_expr(const fb::Expr* e) {
  export_ir::Expr out;
  if (!e) return out;
  out.constant = e->constant();
  if (e->terms())
    for (const fb::Term* t : *e->terms()) out.terms.push_back({t->symbol(), t->coefficient()});
  return out;
}

std::vector<export_ir::Expr> read_exprs(const flatbuffers::Vector<flatbuffers::Offset<fb::Expr>>* es) {
  std::vector<export_ir::Expr> out;
  if (es)
    for (const fb::Expr* e : *es) out.push_back(read_expr(e));
  return out;
}

template <typename T>
std::vector<T> read_vector(const flatbuffers::Vector<T>* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>{};
}

std::string read_string(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::vector<export_ir::Instruction> read_instructions(
    const flatbuffers::Vector<flatbuffers::Offset<fb::Instruction>>* list, const std::vector<std::string>& operators,
    const std::string& path) {
  std::vector<export_ir::Instruction> out;
  if (!list) return out;
  for (const fb::Instruction* ins : *list) {
    if (const fb::Loop* l = ins->instruction_as_Loop()) {
      out.push_back({export_ir::Loop{.trip_count = read_expr(l->trip_count()),
                                     .index_symbol = l->index_symbol(),
                                     .body = read_instructions(l->body(), operators, path),
                                     .carried_inputs = read_vector(l->carried_inputs()),
                                     .carried_outputs = read_vector(l->carried_outputs())}});
      continue;
    }
    const fb::Call* c = ins->instruction_as_Call();
    EMBER_CHECK(c && c->op() < operators.size(), "ExportedProgram::load", path,
                ": an instruction is not a call of a listed operator");
    export_ir::Call call{.op = operators[c->op()], .inputs = read_vector(c->inputs()),
                         .outputs = read_vector(c->outputs())};
    if (c->attributes())
      for (const fb::Attribute* a : *c->attributes())
        call.attributes.push_back({.name = read_string(a->name()),
                                   .kind = static_cast<export_ir::AttributeKind>(a->kind()),
                                   .int_value = a->int_value(),
                                   .float_value = a->float_value(),
                                   .ints = read_vector(a->ints()),
                                   .floats = read_vector(a->floats()),
                                   .string_value = read_string(a->string_value()),
                                   .exprs = read_exprs(a->exprs())});
    out.push_back({std::move(call)});
  }
  return out;
}

}  // namespace

void ExportedProgram::save(const std::string& path) const {
  std::vector<uint64_t> offsets;
  const uint64_t guess = align_up(kHeaderBytes + build_flatbuffer(program_, 0, offsets).size());
  const std::string buffer = build_flatbuffer(program_, guess, offsets);
  EMBER_CHECK(align_up(kHeaderBytes + buffer.size()) == guess, "export", "program buffer size changed with offsets");
  uint64_t end = guess;
  for (size_t i = 0; i < program_.constants.size(); ++i)
    end = std::max<uint64_t>(end, offsets[i] + program_.constants[i].data.nbytes());
  std::string bytes(end, '\0');
  fb::write_file_header(reinterpret_cast<unsigned char*>(bytes.data()), {kFormatVersion, buffer.size()});
  std::memcpy(bytes.data() + kHeaderBytes, buffer.data(), buffer.size());
  for (size_t i = 0; i < program_.constants.size(); ++i) {
    const Tensor data = program_.constants[i].data.contiguous();
    std::memcpy(bytes.data() + offsets[i], data.data_ptr(), data.nbytes());
  }
  write_file_atomically(path, bytes, "ExportedProgram::save");
}

ExportedProgram ExportedProgram::load(const std::string& path) {
  const std::string bytes = read_file(path, "ExportedProgram::load");
  fb::FileHeader header;
  EMBER_CHECK(bytes.size() >= kHeaderBytes &&
                  fb::read_file_header(reinterpret_cast<const unsigned char*>(bytes.data()), &header),
              "ExportedProgram::load", path, " is not a program file (no EMBERPRG header)");
  EMBER_CHECK(header.version == kFormatVersion, "ExportedProgram::load", path, " has format version ", header.version,
              ", expected ", kFormatVersion);
  const uint64_t size = header.flatbuffer_bytes;
  EMBER_CHECK(size <= bytes.size() - kHeaderBytes, "ExportedProgram::load", path, ": the FlatBuffer (", size,
              " bytes) runs past the end of the file (", bytes.size(), " bytes)");
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data() + kHeaderBytes);
  flatbuffers::Verifier verifier(data, size);
  EMBER_CHECK(fb::VerifyProgramBuffer(verifier), "ExportedProgram::load", path, ": the FlatBuffer does not verify");
  const fb::Program* p = fb::GetProgram(data);
  EMBER_CHECK(p->version() == kFormatVersion, "ExportedProgram::load", path, ": program version ", p->version());
  export_ir::Program out;
  if (p->metadata())
    for (const fb::KeyValue* kv : *p->metadata()) out.metadata[kv->key()->str()] = read_string(kv->value());
  std::vector<std::string> operators;
  if (p->operators())
    for (const fb::Operator* op : *p->operators()) operators.push_back(op->name()->str());
  const uint64_t segments_start = kHeaderBytes + size;
  if (p->segments())
    for (const fb::Segment* s : *p->segments()) {
      EMBER_CHECK(s->offset() % kSegmentAlignment == 0 && s->offset() >= segments_start &&
                      s->offset() <= bytes.size() && s->size() <= bytes.size() - s->offset(),
                  "ExportedProgram::load", path, ": segment at ", s->offset(), " of ", s->size(),
                  " bytes is not an aligned range after the FlatBuffer inside the file");
      out.constants.push_back({"", Tensor()});
    }
  if (p->methods())
    for (const fb::Method* m : *p->methods()) {
      export_ir::Method method{.name = read_string(m->name()), .arena_bytes = m->arena_bytes()};
      if (m->symbols())
        for (const fb::Symbol* s : *m->symbols())
          method.symbols.push_back({read_string(s->name()), static_cast<export_ir::SymbolSource>(s->source()),
                                    s->input(), s->dim(), s->min(), s->max()});
      if (m->values())
        for (const fb::Value* v : *m->values()) {
          export_ir::Value value{.name = read_string(v->name()),
                                 .dtype = static_cast<ScalarType>(v->dtype()),
                                 .shape = read_exprs(v->shape()),
                                 .strides = read_exprs(v->strides()),
                                 .location = static_cast<export_ir::Location>(v->location()),
                                 .arena_offset = v->arena_offset(),
                                 .max_bytes = v->max_bytes(),
                                 .constant = v->segment(),
                                 .slot = v->slot(),
                                 .base = v->base(),
                                 .view_offset = read_expr(v->view_offset())};
          if (value.location == export_ir::Location::Constant) {
            EMBER_CHECK(value.constant < out.constants.size(), "ExportedProgram::load", path, ": value '", value.name,
                        "' names segment ", value.constant, " of ", out.constants.size());
            const fb::Segment* s = p->segments()->Get(value.constant);
            std::vector<int64_t> shape;
            int64_t numel = 1;
            for (const auto& e : value.shape) {
              EMBER_CHECK(e.terms.empty() && e.constant >= 0, "ExportedProgram::load", path, ": constant '",
                          value.name, "' has a symbolic or negative size");
              shape.push_back(e.constant);
              numel *= e.constant;
            }
            EMBER_CHECK(static_cast<uint64_t>(numel) * element_size(value.dtype) <= s->size(), "ExportedProgram::load",
                        path, ": constant '", value.name, "' is larger than its segment");
            auto& constant = out.constants[value.constant];
            if (!constant.data.defined()) {
              constant.name = value.name;
              constant.data = empty(shape, TensorOptions().dtype(value.dtype));
              std::memcpy(constant.data.data_ptr(), bytes.data() + s->offset(), constant.data.nbytes());
            }
          }
          method.values.push_back(std::move(value));
        }
      method.inputs = read_vector(m->inputs());
      method.outputs = read_vector(m->outputs());
      method.instructions = read_instructions(m->instructions(), operators, path);
      out.methods.push_back(std::move(method));
    }
  return ExportedProgram(std::move(out));
}

}  // namespace ember
