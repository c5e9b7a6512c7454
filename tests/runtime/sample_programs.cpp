#include "sample_programs.h"

namespace ember::rt::testing {

ProgramSpec add_relu_program() {
  ProgramSpec p;
  p.operators = {"add", "relu"};
  p.segments = {float_bytes({kBias[0], kBias[1], kBias[2], kBias[3]})};
  MethodSpec m;
  m.symbols = {SymbolSpec{"T", fb::SymbolSource::InputDim, 0, 0, 1, 16}};
  ValueSpec x{.name = "x", .shape = {sym(0), lit(4)}, .location = fb::Location::Input, .slot = 0};
  ValueSpec bias{.name = "bias", .shape = lits({4}), .location = fb::Location::Constant, .max_bytes = 16};
  ValueSpec h{.name = "h", .shape = {sym(0), lit(4)}, .location = fb::Location::Arena, .max_bytes = 256};
  ValueSpec y{.name = "y", .shape = {sym(0), lit(4)}, .location = fb::Location::Output, .slot = 0};
  m.values = {x, bias, h, y};
  m.inputs = {0};
  m.outputs = {3};
  m.instructions = {call({.op = 0, .inputs = {0, 1}, .outputs = {2}}), call({.op = 1, .inputs = {2}, .outputs = {3}})};
  m.arena_bytes = 256;
  p.methods = {m};
  return p;
}

ProgramSpec recurrence_program() {
  ProgramSpec p;
  p.operators = {"add", "relu"};
  p.segments = {float_bytes({0, 0, 0, 0})};
  MethodSpec m;
  m.symbols = {SymbolSpec{"T", fb::SymbolSource::InputDim, 0, 0, 0, 16},
               SymbolSpec{"t", fb::SymbolSource::LoopIndex, 0, 0, 0, 15}};
  m.values = {
      ValueSpec{.name = "x", .shape = {sym(0), lit(4)}, .location = fb::Location::Input, .slot = 0},
      ValueSpec{.name = "zeros", .shape = lits({4}), .location = fb::Location::Constant, .max_bytes = 16},
      ValueSpec{.name = "h", .shape = lits({4}), .location = fb::Location::Arena, .arena_offset = 0, .max_bytes = 16},
      ValueSpec{.name = "x_t", .shape = lits({4}), .location = fb::Location::View, .base = 0, .view_offset = sym(1, 4)},
      ValueSpec{.name = "sum", .shape = lits({4}), .location = fb::Location::Arena, .arena_offset = 64, .max_bytes = 16},
      ValueSpec{.name = "h_next", .shape = lits({4}), .location = fb::Location::Arena, .arena_offset = 128,
                .max_bytes = 16},
      ValueSpec{.name = "y", .shape = lits({4}), .location = fb::Location::Output, .slot = 0},
  };
  m.inputs = {0};
  m.outputs = {6};
  LoopSpec body{.trip_count = sym(0),
                .index_symbol = 1,
                .body = {call({.op = 0, .inputs = {2, 3}, .outputs = {4}}),
                         call({.op = 1, .inputs = {4}, .outputs = {5}})},
                .carried_inputs = {2},
                .carried_outputs = {5}};
  m.instructions = {call({.op = 0, .inputs = {1, 1}, .outputs = {2}}), loop(body),
                    call({.op = 0, .inputs = {2, 1}, .outputs = {6}})};
  m.arena_bytes = 192;
  p.methods = {m};
  return p;
}

}  // namespace ember::rt::testing
