// ExportedProgram::to_string: a readable listing of a program (like torch.export's
// print_readable), for people and for tests.
#include <sstream>

#include "ember/export.h"

namespace ember {
namespace {

std::string expr_text(const export_ir::Expr& e, const std::vector<export_ir::Symbol>& symbols) {
  std::ostringstream s;
  bool first = true;
  for (const auto& t : e.terms) {
    const std::string& name = symbols.at(t.symbol).name;
    if (t.coefficient == 1) s << (first ? "" : " + ") << name;
    else if (t.coefficient == -1) s << (first ? "-" : " - ") << name;
    else s << (first ? "" : t.coefficient < 0 ? " - " : " + ") << (first ? t.coefficient : std::abs(t.coefficient)) << "*" << name;
    first = false;
  }
  if (first || e.constant != 0) s << (first ? "" : e.constant < 0 ? " - " : " + ") << (first ? e.constant : std::abs(e.constant));
  return s.str();
}

std::string shape_text(const std::vector<export_ir::Expr>& shape, const std::vector<export_ir::Symbol>& symbols) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + expr_text(shape[d], symbols);
  return s + "]";
}

std::string value_name(const export_ir::Method& m, uint32_t v) {
  return m.values[v].name.empty() ? "%" + std::to_string(v) : m.values[v].name;
}

void list_instructions(std::ostringstream& out, const export_ir::Method& m,
                       const std::vector<export_ir::Instruction>& instructions, const std::string& indent) {
  for (const auto& instruction : instructions) {
    if (const auto* call = std::get_if<export_ir::Call>(&instruction.op)) {
      out << indent;
      for (size_t i = 0; i < call->outputs.size(); ++i) out << (i ? ", " : "") << value_name(m, call->outputs[i]);
      out << (call->outputs.empty() ? "" : " = ") << call->op << "(";
      for (size_t i = 0; i < call->inputs.size(); ++i) out << (i ? ", " : "") << value_name(m, call->inputs[i]);
      for (const auto& a : call->attributes) {
        out << ", " << a.name << "=";
        switch (a.kind) {
          case export_ir::AttributeKind::Int: out << a.int_value; break;
          case export_ir::AttributeKind::Float: out << a.float_value; break;
          case export_ir::AttributeKind::String: out << '"' << a.string_value << '"'; break;
          case export_ir::AttributeKind::Ints:
            out << "[";
            for (size_t i = 0; i < a.ints.size(); ++i) out << (i ? ", " : "") << a.ints[i];
            out << "]";
            break;
          case export_ir::AttributeKind::Floats:
            out << "[";
            for (size_t i = 0; i < a.floats.size(); ++i) out << (i ? ", " : "") << a.floats[i];
            out << "]";
            break;
          case export_ir::AttributeKind::Exprs: out << shape_text(a.exprs, m.symbols); break;
        }
      }
      out << ")\n";
      continue;
    }
    const auto& loop = std::get<export_ir::Loop>(instruction.op);
    out << indent << "loop " << m.symbols.at(loop.index_symbol).name << " in [0, "
        << expr_text(loop.trip_count, m.symbols) << "):\n";
    list_instructions(out, m, loop.body, indent + "  ");
    out << indent << "  carry";
    for (size_t i = 0; i < loop.carried_inputs.size(); ++i)
      out << (i ? "," : "") << " " << value_name(m, loop.carried_inputs[i]) << " <- "
          << value_name(m, loop.carried_outputs[i]);
    out << "\n";
  }
}

}  // namespace

std::string ExportedProgram::to_string() const {
  std::ostringstream out;
  for (const auto& m : program_.methods) {
    out << "method " << m.name << "(";
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const auto& v = m.values[m.inputs[i]];
      out << (i ? ", " : "") << v.name << ": " << dtype_name(v.dtype) << shape_text(v.shape, m.symbols);
    }
    out << ")";
    for (const auto& s : m.symbols)
      if (s.source != export_ir::SymbolSource::LoopIndex) out << " " << s.name << " in [" << s.min << ", " << s.max << "]";
    out << ", arena " << m.arena_bytes << " bytes\n";
    for (uint32_t v = 0; v < m.values.size(); ++v) {
      const auto& value = m.values[v];
      if (value.location != export_ir::Location::View) continue;
      out << "  " << value_name(m, v) << " = view(" << value_name(m, value.base) << ", "
          << shape_text(value.shape, m.symbols) << ", strides=" << shape_text(value.strides, m.symbols)
          << ", offset=" << expr_text(value.view_offset, m.symbols) << ")\n";
    }
    list_instructions(out, m, m.instructions, "  ");
    out << "  return";
    for (size_t i = 0; i < m.outputs.size(); ++i) out << (i ? ", " : " ") << value_name(m, m.outputs[i]);
    out << "\n";
  }
  return out.str();
}

}  // namespace ember
