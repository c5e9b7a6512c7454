// Small valid programs the runtime tests start from (the hostile ones are these, broken in
// one place each).
#pragma once
#include "program_builder.h"

namespace ember::rt::testing {

// forward(x [T, 4], T in [1, 16]) -> relu(x + bias), bias = {0.5, -1, 2, -3} a constant:
//   values 0 x (input), 1 bias (constant), 2 h (arena), 3 y (output)
//   operators add, relu; calls add(x, bias) -> h, relu(h) -> y
ProgramSpec add_relu_program();
inline const float kBias[4] = {0.5f, -1.0f, 2.0f, -3.0f};

// forward(x [T, 4], T in [0, 16]) -> h_T, where h_0 = 0 and h_{t+1} = relu(h_t + x[t]): one
// Loop (not unrolled) over the dynamic length, the state carried in the arena.
//   values 0 x (input), 1 zeros (constant [4]), 2 h (arena), 3 x_t (view of x at row t),
//   4 sum (arena), 5 h_next (arena), 6 y (output); symbols 0 T, 1 t (loop index)
ProgramSpec recurrence_program();

}  // namespace ember::rt::testing
