// Puts an op of the op layer on the profiler's timeline, with its inputs' shapes and dtypes
// when the profile records shapes (one line at the top of each op's shared entry point). It
// also names the op in graph capture errors (Note [Graph capture]).
#pragma once
#include <vector>

#include "core/graph_capture.h"
#include "ember/profiler.h"
#include "ember/tensor.h"

namespace ember::core {

// Fills event.input_shapes ("[2, 3], [3]") and event.input_dtypes ("float32, float32");
// an undefined tensor shows as "[]" and "undefined".
void describe_inputs(profiler::Event& event, const std::vector<Tensor>& inputs);

}  // namespace ember::core

// A RecordFunction named `name` for the enclosing scope; the inputs are read only while a
// profile records shapes, so an off profiler costs one relaxed load.
#define EMBER_RECORD_OP(name, ...)                                                              \
  ::ember::core::CaptureOpName ember_capture_op_(name);                                         \
  ::ember::profiler::RecordFunction ember_record_op_(name, ::ember::profiler::Category::Op);   \
  if (ember_record_op_.record_shapes()) ::ember::core::describe_inputs(*ember_record_op_.event(), {__VA_ARGS__})
