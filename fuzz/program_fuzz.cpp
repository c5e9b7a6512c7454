// libFuzzer target for program loading (libember_rt): any input must load or be refused
// with a status and a message, never crash or read out of bounds. A program that loads is
// then run once on inputs at its smallest sizes, so the executor's and the kernels' checks
// are fuzzed too (their src/cpu kernels are not instrumented: see scripts/fuzz).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ember/runtime.h"
#include "runtime/expr.h"

namespace {

constexpr uint64_t kMaxRunBytes = uint64_t{1} << 26;
constexpr double kMaxRunSteps = 1e5;

// Instructions a run executes at most, loops multiplied out at the symbols' bounds: a valid
// program may loop for hours (a trip count of 2^40), which is work, not a fault; such files
// are loaded but not run.
double steps(const flatbuffers::Vector<flatbuffers::Offset<ember::program::Instruction>>* list,
             const ember::rt::Interval* bounds, uint32_t num_symbols) {
  double total = 0;
  for (uint32_t i = 0; list != nullptr && i < list->size(); ++i) {
    const ember::program::Loop* loop = list->Get(i)->instruction_as_Loop();
    ember::rt::Interval trips;
    total += loop == nullptr ? 1
             : ember::rt::expr_range(loop->trip_count(), bounds, num_symbols, &trips)
                 ? static_cast<double>(trips.hi) * (1 + steps(loop->body(), bounds, num_symbols))
                 : kMaxRunSteps;
  }
  return total;
}

bool cheap_to_run(const uint8_t* data, const char* method_name) {
  const auto* program = ember::program::GetProgram(data + 32);  // verified by the load that succeeded
  for (const ember::program::Method* method : *program->methods()) {
    if (std::strcmp(method->name()->c_str(), method_name) != 0) continue;
    std::vector<ember::rt::Interval> bounds;
    if (method->symbols() != nullptr)
      for (const ember::program::Symbol* symbol : *method->symbols()) bounds.push_back({symbol->min(), symbol->max()});
    return steps(method->instructions(), bounds.data(), static_cast<uint32_t>(bounds.size())) <= kMaxRunSteps;
  }
  return false;
}

size_t element_size(int32_t dtype) {
  static const size_t sizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8};
  return dtype >= 0 && dtype < 9 ? sizes[dtype] : 1;
}

// Runs `method` on zero-filled inputs at their smallest sizes, if they are small.
void run_smallest(EmberRtMethod* method) {
  const size_t num_inputs = ember_rt_num_inputs(method), num_outputs = ember_rt_num_outputs(method);
  std::vector<EmberRtTensor> inputs(num_inputs), outputs(num_outputs);
  std::vector<std::vector<unsigned char>> buffers;
  for (size_t i = 0; i < num_inputs; ++i) {
    EmberRtTensorInfo info;
    if (ember_rt_input_info(method, i, &info) != EMBER_RT_OK) __builtin_trap();
    EmberRtTensor& t = inputs[i];
    std::memset(&t, 0, sizeof(t));
    t.dtype = info.dtype;
    t.ndim = info.ndim;
    uint64_t bytes = element_size(info.dtype);
    for (int32_t d = 0; d < info.ndim; ++d) {
      t.sizes[d] = info.min_sizes[d];
      if (t.sizes[d] < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(t.sizes[d]), &bytes)) return;
    }
    if (bytes > kMaxRunBytes) return;
    buffers.emplace_back(bytes + 8, 0);
    t.data = buffers.back().data();
  }
  for (size_t o = 0; o < num_outputs; ++o) {
    EmberRtTensorInfo info;
    if (ember_rt_output_info(method, o, &info) != EMBER_RT_OK) __builtin_trap();
    if (info.max_bytes > kMaxRunBytes) return;
    std::memset(&outputs[o], 0, sizeof(outputs[o]));
    buffers.emplace_back(info.max_bytes + 8, 0);
    outputs[o].data = buffers.back().data();
    outputs[o].capacity_bytes = info.max_bytes;
  }
  if (ember_rt_run(method, inputs.data(), num_inputs, outputs.data(), num_outputs) != EMBER_RT_OK &&
      ember_rt_last_error()[0] == '\0')
    __builtin_trap();  // a failure without a message
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  void* aligned = std::aligned_alloc(64, (size + 64) / 64 * 64);
  std::memcpy(aligned, data, size);
  EmberRtProgram* program = nullptr;
  if (ember_rt_load_buffer(aligned, size, &program) == EMBER_RT_OK) {
    for (const char* name : {"forward", "prefill", "decode"}) {
      EmberRtMethod* method = nullptr;
      if (ember_rt_method(program, name, &method) == EMBER_RT_OK && cheap_to_run(static_cast<const uint8_t*>(aligned), name))
        run_smallest(method);
    }
    ember_rt_free(program);
  } else if (ember_rt_last_error()[0] == '\0') {
    __builtin_trap();  // a refusal without a message
  }
  std::free(aligned);
  return 0;
}
