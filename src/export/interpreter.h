// What ExportedProgram::run (src/export/interpreter.cpp) can execute, for the op table's checks.
#pragma once
#include <set>
#include <string>

namespace ember::export_detail {

// The ops ExportedProgram::run has a kernel for.
std::set<std::string> interpreter_ops();

// The op table's rows that exported programs may call (Note [Op table]).
std::set<std::string> program_ops();

}  // namespace ember::export_detail
