// The op table (include/ember/detail/op_table.def) against the pieces written by hand beside
// it: docs/RUNTIME_OPS.md's op index is regenerated from the rows and compared with the file
// (EMBER_UPDATE_DOCS=1 rewrites it), ExportedProgram::run has a kernel for exactly the
// table's program ops, and an export refuses an op the table leaves out of programs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ember/detail/op_table.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "export/interpreter.h"

namespace ember {
namespace {

struct IndexLine {
  std::string op, inputs, attributes, eager, runtime_kernel = {};
};

// One line per row that programs may call, in the table's order.
std::vector<IndexLine> index_lines() {
  std::vector<IndexLine> lines;
  auto add = [&](detail::OpProgram program, IndexLine line, const std::string& own_file) {
    if (program == detail::OpProgram::NotExported) return;
    line.runtime_kernel = program == detail::OpProgram::Runtime ? "`" + own_file + "`" : "interpreter only";
    lines.push_back(line);
  };
  const std::string alpha = "alpha (Float; a + alpha * b)";
#define EMBER_UNARY(name, program, Kernel, ...)                                                     \
  add(detail::OpProgram::program, {#name, "x", "", "ember::" #name " (unary_op, UnaryOp::" #Kernel ")"}, \
      "elementwise.cpp");
#define EMBER_UNARY_WITH_PARAMS(name, program, Kernel, dtype, attributes, ...)                  \
  add(detail::OpProgram::program, {#name, "x", attributes, "unary_op, UnaryOp::" #Kernel}, \
      #name ".cpp");
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...)                  \
  add(detail::OpProgram::program,                                            \
      {#name, "a, b", std::string(#api) == "BinaryScalarAlpha" ? alpha : "", \
       "ember::" #name " (binary_op, BinaryOp::" #Kernel ")"},               \
      "elementwise.cpp");
#define EMBER_PROGRAM(name, program, inputs, attributes, eager) \
  add(detail::OpProgram::program, {#name, inputs, attributes, eager}, #name ".cpp");
#include "ember/detail/op_table.def"
  return lines;
}

const char* const kIndexBegin =
    "<!-- The op index: generated from include/ember/detail/op_table.def by tests/export/test_op_table.cpp\n"
    "     (EMBER_UPDATE_DOCS=1 build/tests/test_export --gtest_filter=OpTable.* rewrites it). -->\n";
const char* const kIndexEnd = "<!-- end of the op index -->\n";

std::string render_index() {
  std::ostringstream s;
  s << kIndexBegin;
  s << "| op | inputs | attributes | eager (what ExportedProgram::run calls) | runtime kernel "
       "(src/runtime/kernels/) |\n";
  s << "| --- | --- | --- | --- | --- |\n";
  for (const IndexLine& l : index_lines())
    s << "| `" << l.op << "` | " << l.inputs << " | " << l.attributes << " | " << l.eager << " | "
      << l.runtime_kernel << " |\n";
  s << kIndexEnd;
  return s.str();
}

TEST(OpTable, ProgramOpsDocHasTheTablesIndex) {
  const std::string path = std::string(EMBER_SOURCE_DIR) + "/docs/RUNTIME_OPS.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const size_t begin = doc.find(kIndexBegin), end = doc.find(kIndexEnd);
  ASSERT_NE(begin, std::string::npos) << path << " has no op index (its first line: " << kIndexBegin << ")";
  ASSERT_NE(end, std::string::npos) << path << " has no end of the op index";
  const std::string written = doc.substr(begin, end + std::string(kIndexEnd).size() - begin);
  const std::string expected = render_index();
  const char* update = std::getenv("EMBER_UPDATE_DOCS");
  if (written != expected && update != nullptr && std::string(update) == "1") {
    std::ofstream out(path);
    out << doc.substr(0, begin) << expected << doc.substr(end + std::string(kIndexEnd).size());
    SUCCEED() << "rewrote the op index of " << path;
    return;
  }
  EXPECT_EQ(written, expected) << path << "'s op index differs from the op table; regenerate it with "
                               << "EMBER_UPDATE_DOCS=1 build/tests/test_export --gtest_filter=OpTable.*";
}

TEST(OpTable, TheInterpreterRunsExactlyTheProgramOps) {
  EXPECT_EQ(export_detail::interpreter_ops(), export_detail::program_ops());
  // A sample of each kind of row, so that an empty expansion cannot pass.
  for (const char* op : {"exp", "gelu", "round", "add", "pow", "linear", "cat"})
    EXPECT_EQ(export_detail::program_ops().count(op), std::string(op) == "round" ? 0u : 1u) << op;
}

TEST(OpTable, AnExportRefusesAnOpTheTableKeepsOutOfPrograms) {
  nn::Linear linear(nn::LinearOptions(3, 3));
  const ExportFunction forward = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{linear->forward(in.at(0).round(1))};
  };
  try {
    export_program(*linear, forward, {randn({2, 3})});
    FAIL() << "the export of round() succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("round"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
