// Loading verifies everything before anything runs: hand-made hostile programs, each broken in
// one place, are rejected with a status and a message that names the fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "runtime_test_util.h"
#include "sample_programs.h"

namespace ember::rt::testing {
namespace {

void expect_rejected(const ProgramSpec& spec, EmberRtStatus status, const std::string& fragment) {
  Loaded loaded(spec);
  EXPECT_EQ(loaded.status, status) << loaded.message;
  EXPECT_EQ(loaded.program, nullptr);
  EXPECT_NE(loaded.message.find(fragment), std::string::npos) << "message: " << loaded.message;
}

void expect_invalid(const ProgramSpec& spec, const std::string& fragment) {
  expect_rejected(spec, EMBER_RT_ERROR_INVALID_PROGRAM, fragment);
}

MethodSpec& method(ProgramSpec& p) { return p.methods[0]; }

TEST(RuntimeLoader, TheSampleProgramsLoad) {
  for (const ProgramSpec& spec : {add_relu_program(), recurrence_program()}) {
    Loaded loaded(spec);
    EXPECT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
    EXPECT_NE(loaded.method(), nullptr);
  }
}

TEST(RuntimeLoader, RejectsAWrongMagic) {
  auto file = build_program(add_relu_program());
  file[0] = 'X';
  Loaded loaded(file);
  EXPECT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM);
  EXPECT_NE(loaded.message.find("wrong magic"), std::string::npos) << loaded.message;
}

TEST(RuntimeLoader, RejectsAWrongVersion) {
  ProgramSpec p = add_relu_program();
  p.version = 2;
  expect_invalid(p, "format version 2, this runtime reads version 1");
  p = add_relu_program();
  p.header_version = 1;
  p.version = 7;  // the header says 1, the FlatBuffer 7
  expect_invalid(p, "Program.version 7 differs from the header's version 1");
}

TEST(RuntimeLoader, RejectsEveryTruncationOfAFile) {
  const auto file = build_program(add_relu_program());
  for (size_t size = 1; size < file.size(); ++size) {
    std::vector<unsigned char> prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(size));
    Loaded loaded(prefix);
    ASSERT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM) << "prefix of " << size << " bytes loaded";
    const bool named = loaded.message.find("truncated") != std::string::npos ||
                       loaded.message.find("past the end of the file") != std::string::npos;
    ASSERT_TRUE(named) << size << ": " << loaded.message;
  }
}

TEST(RuntimeLoader, RejectsAFlatBufferThatFailsItsVerifier) {
  auto file = build_program(add_relu_program());
  std::memset(file.data() + 32, 0xff, 8);  // the root offset and identifier
  Loaded loaded(file);
  EXPECT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM);
  EXPECT_NE(loaded.message.find("FlatBuffers verifier"), std::string::npos) << loaded.message;
}

TEST(RuntimeLoader, RejectsSegmentsOutsideTheFileOrMisaligned) {
  const auto good = build_program(add_relu_program());
  const uint64_t offset = good.size() / 64 * 64;  // where the 16-byte segment starts
  ProgramSpec p = add_relu_program();
  p.segment_table = std::vector<SegmentSpec>{{offset, 128}};
  expect_invalid(p, "ends past the end of the file");
  p.segment_table = std::vector<SegmentSpec>{{offset, UINT64_MAX - 32}};
  expect_invalid(p, "ends past the end of the file");
  p.segment_table = std::vector<SegmentSpec>{{offset + 8, 16}};
  expect_invalid(p, "is not 64-byte aligned");
  p.segment_table = std::vector<SegmentSpec>{{0, 16}};
  expect_invalid(p, "overlaps the header and program");
}

TEST(RuntimeLoader, RejectsAConstantOffsetPastItsSegment) {
  ProgramSpec p = add_relu_program();
  method(p).values[1].offset = 16;  // the segment holds 16 bytes
  expect_invalid(p, "runs past segment 0");
  p = add_relu_program();
  method(p).values[1].segment = 3;
  expect_invalid(p, "constant value 1 is in segment 3 of 1");
  p = add_relu_program();
  method(p).values[1].offset = 2;
  method(p).values[1].max_bytes = 8;
  method(p).values[1].shape = lits({2});
  expect_invalid(p, "not aligned to its 4-byte elements");
  p = add_relu_program();
  method(p).values[1].shape = lits({8});  // 32 bytes in a reservation of 16
  expect_invalid(p, "constant value 1 needs 32 bytes, it reserves 16");
}

TEST(RuntimeLoader, RejectsANegativeDim) {
  ProgramSpec p = add_relu_program();
  method(p).values[2].shape = {sym(0, 1, -2), lit(4)};  // T - 2 < 0 at T = 1
  expect_invalid(p, "a negative dim at dim 0");
  p = add_relu_program();
  method(p).values[1].shape = lits({-4});
  expect_invalid(p, "a negative dim at dim 0");
}

TEST(RuntimeLoader, RejectsAnOverflowingDim) {
  ProgramSpec p = add_relu_program();
  method(p).values[2].shape = {sym(0, int64_t{1} << 62), lit(4)};  // 16 * 2^62
  expect_invalid(p, "an overflowing or malformed dim at dim 0");
  p = add_relu_program();
  method(p).values[2].shape = lits({int64_t{1} << 40, int64_t{1} << 40});
  expect_invalid(p, "an element count past 2^63");
  p = add_relu_program();
  method(p).values[2].shape = lits({int64_t{1} << 31, int64_t{1} << 31});  // 2^62 floats: 2^64 bytes
  expect_invalid(p, "spans more than 2^63 bytes");
  p = add_relu_program();
  method(p).values[2].strides = std::vector<ExprSpec>{lit(INT64_MAX / 2), lit(1)};
  expect_invalid(p, "an extent past 2^63");
}

TEST(RuntimeLoader, RejectsAttributeExpressionsNamingMissingSymbols) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[0].call->attributes = {
      AttributeSpec{.name = "alpha_expr", .kind = fb::AttributeKind::Exprs, .exprs = {sym(7)}}};
  expect_invalid(p, "call of add: attribute 'alpha_expr' has an expression that overflows or is malformed");
  method(p).instructions[0].call->attributes[0].exprs = {sym(0, INT64_MAX)};
  expect_invalid(p, "attribute 'alpha_expr' has an expression that overflows or is malformed");
}

// The fuzzer's findings, kept as seeds in fuzz/program_seeds: a terabyte arena, a view 2^61
// elements into an input (its byte offset overflowed), an Expr whose terms vector is not
// 8-byte aligned (it passes the FlatBuffers verifier; reading it is undefined behaviour).
TEST(RuntimeLoader, RejectsTheFuzzersFindings) {
  for (const char* name : {"huge_arena.ember", "view_offset_overflow.ember", "misaligned_terms.ember"}) {
    EmberRtProgram* program = nullptr;
    EXPECT_EQ(ember_rt_load((std::string(EMBER_FUZZ_SEEDS_DIR) + "/" + name).c_str(), &program),
              EMBER_RT_ERROR_INVALID_PROGRAM)
        << name;
    EXPECT_EQ(program, nullptr);
    EXPECT_STRNE(ember_rt_last_error(), "") << name;
    ember_rt_free(program);
  }
}

TEST(RuntimeLoader, RejectsAnOperatorIndexPastTheTable) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[1].call->op = 2;
  expect_invalid(p, "names operator 2 of 2");
}

TEST(RuntimeLoader, RejectsAValueIndexPastTheTable) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[0].call->inputs = {0, 9};
  expect_invalid(p, "is value 9 of 4");
  p = add_relu_program();
  method(p).inputs = {7};
  expect_invalid(p, "input 0 names value 7 of 4");
}

// A loop reading its input backwards, row T - 1 - t (Note [Views in reverse loops]): loads,
// and runs h = relu(h + x[T - 1 - t]); one row further back, or a trip count that may be 0
// (the index stays 0, the row is -1), reaches before the input and is refused.
TEST(RuntimeLoader, ViewsOfReverseLoopsAreBoundedByTheTripCount) {
  ProgramSpec p = recurrence_program();
  method(p).symbols[0].min = 1;
  method(p).values[3].view_offset = ExprSpec{-4, {{0, 4}, {1, -4}}};
  {
    Loaded loaded(p);
    ASSERT_EQ(loaded.status, EMBER_RT_OK) << loaded.message;
    std::vector<float> x = {1, -2, 3, 4, -5, 6, 7, 8, -9, 10, 11, -12}, y(4);
    EmberRtTensor input = tensor(x.data(), EMBER_RT_FLOAT32, {3, 4});
    EmberRtTensor output = tensor(y.data(), EMBER_RT_FLOAT32, {}, y.size() * sizeof(float));
    ASSERT_EQ(ember_rt_run(loaded.method(), &input, 1, &output, 1), EMBER_RT_OK) << ember_rt_last_error();
    for (int c = 0; c < 4; ++c) {
      float h = 0;
      for (int row = 2; row >= 0; --row) h = std::max(h + x[static_cast<size_t>(row * 4 + c)], 0.0f);
      EXPECT_EQ(y[static_cast<size_t>(c)], h) << "column " << c;
    }
  }
  method(p).values[3].view_offset = ExprSpec{-8, {{0, 4}, {1, -4}}};
  expect_invalid(p, "view value 3 starts -4 elements before its base");
  method(p).values[3].view_offset = ExprSpec{-4, {{0, 4}, {1, -4}}};
  method(p).symbols[0].min = 0;  // T = 0: the row T - 1 is -1
  expect_invalid(p, "view value 3 starts -4 elements before its base");
}

TEST(RuntimeLoader, RejectsAValueUsedBeforeItIsDefined) {
  ProgramSpec p = add_relu_program();
  std::swap(method(p).instructions[0], method(p).instructions[1]);
  expect_invalid(p, "reads value 2 before any instruction writes it");
}

TEST(RuntimeLoader, RejectsACycle) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[0].call->inputs = {0, 2};  // add(x, h) -> h
  expect_invalid(p, "reads value 2, which it writes itself (a cycle)");
  // Two calls feeding each other: the first reads what only the second writes.
  p = add_relu_program();
  method(p).values.push_back(ValueSpec{.name = "g", .shape = {sym(0), lit(4)}, .location = fb::Location::Arena,
                                       .arena_offset = 256, .max_bytes = 256});
  method(p).arena_bytes = 512;
  method(p).instructions = {call({.op = 1, .inputs = {4}, .outputs = {2}}), call({.op = 1, .inputs = {2}, .outputs = {4}}),
                            call({.op = 1, .inputs = {2}, .outputs = {3}})};
  expect_invalid(p, "reads value 4 before any instruction writes it");
}

TEST(RuntimeLoader, RejectsAnArenaSmallerThanThePlan) {
  ProgramSpec p = add_relu_program();
  method(p).arena_bytes = 128;
  expect_invalid(p, "past the arena of 128 bytes");
  p = add_relu_program();
  method(p).values[2].max_bytes = 64;  // h needs 16 rows * 16 bytes at T's bound
  expect_invalid(p, "value 2 needs 256 bytes at the symbols' bounds, the plan reserves 64");
  p = add_relu_program();
  method(p).values[2].arena_offset = 32;
  expect_invalid(p, "arena offset 32 is not 64-byte aligned");
  p = add_relu_program();
  method(p).values[2].arena_offset = UINT64_MAX - 63;
  expect_invalid(p, "past the arena");
}

// A file that asks for more arena than its values occupy (the fuzzer's first finding: a
// terabyte arena reserved at load).
TEST(RuntimeLoader, RejectsAnArenaLargerThanItsValues) {
  ProgramSpec p = add_relu_program();
  method(p).arena_bytes = uint64_t{1} << 40;
  expect_invalid(p, "an arena of 1099511627776 bytes, its values occupy 256");
  method(p).arena_bytes = 256 + 64;
  expect_invalid(p, "an arena of 320 bytes, its values occupy 256");
}

TEST(RuntimeLoader, RejectsViewsOutsideTheirBase) {
  ProgramSpec p = add_relu_program();
  // bias[2:6]: a view two elements into a 4-element constant.
  method(p).values.push_back(ValueSpec{.name = "bias_view", .shape = lits({4}), .location = fb::Location::View,
                                       .base = 1, .view_offset = lit(2)});
  method(p).instructions[0].call->inputs = {0, 4};
  expect_invalid(p, "spans elements [2, 6) of value 1, which holds 4");
  method(p).values[4].view_offset = lit(-1);
  expect_invalid(p, "starts -1 elements before its base");
  method(p).values[4].view_offset = lit(0);
  method(p).values[4].base = 4;
  expect_invalid(p, "view value 4 has base 4");
  method(p).values[4].base = 1;
  method(p).values[4].dtype = fb::ScalarType::Int32;
  expect_invalid(p, "view value 4 is Int32, its base 1 is Float32");
  // A view of an input 2^61 elements in (the fuzzer's second finding: its byte offset
  // overflowed when a run computed its address).
  method(p).values[4].dtype = fb::ScalarType::Float32;
  method(p).values[4].base = 0;
  method(p).values[4].view_offset = lit(int64_t{1} << 61);
  expect_invalid(p, "view value 4 reaches past byte 2^63 of its base");
}

TEST(RuntimeLoader, RejectsWritesIntoConstantsAndInputs) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[1].call->outputs = {1};
  expect_invalid(p, "writes value 1, which is a constant or an input");
  method(p).instructions[1].call->outputs = {0};
  expect_invalid(p, "writes value 0, which is a constant or an input");
}

TEST(RuntimeLoader, RejectsInconsistentInputsOutputsAndSymbols) {
  ProgramSpec p = add_relu_program();
  method(p).values[0].slot = 1;
  expect_invalid(p, "input 0 names value 0, whose location is not input slot 0");
  p = add_relu_program();
  method(p).values[2].location = fb::Location::Input;  // an input no list names: no buffer
  expect_invalid(p, "value 2 is input slot 0, which the method's inputs list does not name");
  p = add_relu_program();
  method(p).symbols[0].dim = 2;
  expect_invalid(p, "symbol 0 'T' is dim 2 of input 0, which has 2 dims");
  p = add_relu_program();
  method(p).symbols[0].min = 5;
  method(p).symbols[0].max = 4;
  expect_invalid(p, "symbol 0 'T' has bounds [5, 4]");
  p = add_relu_program();
  method(p).symbols[0].source = fb::SymbolSource::InputValue;
  expect_invalid(p, "which is not an int64 scalar");
  p = add_relu_program();
  method(p).values[3].dtype = static_cast<fb::ScalarType>(42);
  expect_invalid(p, "value 3 has an unknown dtype 42");
  p = add_relu_program();
  method(p).values[2].location = static_cast<fb::Location>(9);
  expect_invalid(p, "value 2 has an unknown location 9");
  p = add_relu_program();
  method(p).values[2].shape = lits({1, 1, 1, 1, 1, 1, 1, 1, 1});
  expect_invalid(p, "value 2 has 9 dims (at most 8)");
  p = add_relu_program();
  method(p).instructions.pop_back();
  expect_invalid(p, "output 0 (value 3) is never written");
}

TEST(RuntimeLoader, RejectsMalformedLoops) {
  ProgramSpec p = recurrence_program();
  method(p).instructions[1].loop->trip_count = sym(0, 1, -1);  // T - 1 < 0 at T = 0
  expect_invalid(p, "a loop's trip count can be negative (-1)");
  p = recurrence_program();
  method(p).symbols[1].max = 7;  // the loop runs up to 16 times
  expect_invalid(p, "has maximum 7, the loop runs up to 16 times");
  p = recurrence_program();
  method(p).instructions[1].loop->index_symbol = 0;
  expect_invalid(p, "a loop's index symbol 0 'T' is not a LoopIndex symbol");
  p = recurrence_program();
  method(p).instructions[1].loop->carried_outputs = {4, 5};
  expect_invalid(p, "a loop carries 1 inputs and 2 outputs");
  p = recurrence_program();
  method(p).instructions[1].loop->carried_inputs = {1};
  expect_invalid(p, "value 1 is a constant or an input");
  p = recurrence_program();
  method(p).instructions[0].call->outputs = {4};  // h is never written before the loop
  expect_invalid(p, "value 2 is read before any instruction writes it");
  p = recurrence_program();
  method(p).symbols[1].min = -1;
  expect_invalid(p, "loop index symbol 1 't' must have minimum 0");
  // Loops nested deeper than the runtime allows.
  p = recurrence_program();
  LoopSpec nested = *method(p).instructions[1].loop;
  for (int depth = 0; depth < 20; ++depth) {
    LoopSpec outer;
    outer.trip_count = lit(1);
    outer.index_symbol = 1;
    outer.body = {loop(nested)};
    nested = outer;
  }
  method(p).instructions[1] = loop(nested);
  Loaded loaded(p);
  EXPECT_EQ(loaded.status, EMBER_RT_ERROR_INVALID_PROGRAM) << loaded.message;
}

TEST(RuntimeLoader, RejectsAnOperatorWithoutAKernel) {
  ProgramSpec p = add_relu_program();
  p.operators[1] = "no_such_op";
  expect_rejected(p, EMBER_RT_ERROR_MISSING_KERNEL, "operator 1 'no_such_op' has no kernel in this build");
}

TEST(RuntimeLoader, RejectsACallTheKernelRefuses) {
  ProgramSpec p = add_relu_program();
  method(p).instructions[1].call->inputs = {2, 0};  // relu with two inputs
  expect_invalid(p, "call of relu: [relu] takes 1..1 inputs and 1 outputs, got 2 and 1");
  p = add_relu_program();
  method(p).values[1].dtype = fb::ScalarType::Int32;
  expect_invalid(p, "[add] operands of dtypes Int32 and Float32");
}

TEST(RuntimeLoader, MissingFilesAndEmptyFilesAreErrors) {
  EmberRtProgram* program = nullptr;
  EXPECT_EQ(ember_rt_load("/nonexistent/model.ember", &program), EMBER_RT_ERROR_IO);
  EXPECT_NE(std::string(ember_rt_last_error()).find("cannot open /nonexistent/model.ember"), std::string::npos);
  EXPECT_EQ(program, nullptr);
  EXPECT_EQ(ember_rt_load("/dev/null", &program), EMBER_RT_ERROR_IO);  // not a regular file
}

// Bytes flipped at random: each file is rejected or loads, never crashes (the sanitizer
// build and the fuzzer look harder; this keeps the property in the ordinary suite).
TEST(RuntimeLoader, RandomCorruptionsNeverCrash) {
  const auto file = build_program(recurrence_program());
  std::mt19937 rng(16);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto bytes = file;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] ^= static_cast<unsigned char>(1u << (rng() % 8));
    Loaded loaded(bytes);
    if (loaded.status != EMBER_RT_OK) {
      ++rejected;
      EXPECT_FALSE(loaded.message.empty());
    }
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace ember::rt::testing
