// The C API of include/ember/runtime.h over the C++ runtime (loader, verifier, executor).
#include <cstdio>
#include <cstring>

#include "ember/runtime.h"
#include "runtime/program.h"

using ember::rt::Error;
using ember::rt::Method;
using ember::rt::Program;

namespace {

thread_local char t_last_error[512] = "";

EmberRtStatus report(const Error& error) {
  std::snprintf(t_last_error, sizeof(t_last_error), "%s", error.message());
  return error.status();
}

EmberRtStatus invalid_argument(const char* format, const char* detail) {
  Error error;
  error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, format, detail);
  return report(error);
}

Program* from_handle(EmberRtProgram* program) { return reinterpret_cast<Program*>(program); }
Method* from_handle(EmberRtMethod* method) { return reinterpret_cast<Method*>(method); }
const Method* from_handle(const EmberRtMethod* method) { return reinterpret_cast<const Method*>(method); }

EmberRtStatus finish_load(std::unique_ptr<Program> loaded, const Error& error, EmberRtProgram** program) {
  if (!loaded) return report(error);
  *program = reinterpret_cast<EmberRtProgram*>(loaded.release());
  return EMBER_RT_OK;
}

EmberRtStatus tensor_info(const Method& m, bool output, size_t index, EmberRtTensorInfo* info) {
  const ember::program::Method& fm = *m.method;
  const auto* list = output ? fm.outputs() : fm.inputs();
  const size_t count = list == nullptr ? 0 : list->size();
  if (info == nullptr || index >= count) {
    char detail[64];
    std::snprintf(detail, sizeof(detail), "%zu of %zu", index, count);
    return invalid_argument(output ? "[info] no output %s" : "[info] no input %s", detail);
  }
  const uint32_t value_index = list->Get(static_cast<uint32_t>(index));
  const ember::program::Value& v = *fm.values()->Get(value_index);
  info->name = v.name() != nullptr ? v.name()->c_str() : "";
  info->dtype = static_cast<int32_t>(v.dtype());
  info->ndim = v.shape() == nullptr ? 0 : static_cast<int32_t>(v.shape()->size());
  for (int32_t d = 0; d < info->ndim; ++d) {
    ember::rt::Interval range;
    ember::rt::expr_range(v.shape()->Get(d), m.symbol_bounds.data(), static_cast<uint32_t>(m.symbol_bounds.size()),
                          &range);
    info->min_sizes[d] = range.lo;
    info->max_sizes[d] = range.hi;
  }
  info->max_bytes = static_cast<uint64_t>(m.values[value_index].max_bytes);
  return EMBER_RT_OK;
}

}  // namespace

extern "C" {

EmberRtStatus ember_rt_load(const char* path, EmberRtProgram** program) {
  if (program == nullptr || path == nullptr) return invalid_argument("[load] %s", "null path or result pointer");
  *program = nullptr;
  Error error;
  return finish_load(ember::rt::load_program_file(path, error), error, program);
}

EmberRtStatus ember_rt_load_buffer(const void* data, size_t size, EmberRtProgram** program) {
  if (program == nullptr || data == nullptr) return invalid_argument("[load] %s", "null buffer or result pointer");
  *program = nullptr;
  Error error;
  return finish_load(ember::rt::load_program(static_cast<const unsigned char*>(data), size, error), error, program);
}

size_t ember_rt_num_methods(const EmberRtProgram* program) {
  return program == nullptr ? 0 : reinterpret_cast<const Program*>(program)->methods.size();
}

const char* ember_rt_method_name(const EmberRtProgram* program, size_t index) {
  if (index >= ember_rt_num_methods(program)) return nullptr;
  return reinterpret_cast<const Program*>(program)->methods[index].method->name()->c_str();
}

const char* ember_rt_metadata(const EmberRtProgram* program, const char* key) {
  if (program == nullptr || key == nullptr) return nullptr;
  const auto* entries = reinterpret_cast<const Program*>(program)->root->metadata();
  if (entries == nullptr) return nullptr;
  for (const ember::program::KeyValue* entry : *entries)
    if (std::strcmp(entry->key()->c_str(), key) == 0) return entry->value() ? entry->value()->c_str() : "";
  return nullptr;
}

EmberRtStatus ember_rt_method(EmberRtProgram* program, const char* name, EmberRtMethod** method) {
  if (program == nullptr || name == nullptr || method == nullptr)
    return invalid_argument("[method] %s", "null program, name or result pointer");
  *method = nullptr;
  for (Method& m : from_handle(program)->methods) {
    if (std::strcmp(m.method->name()->c_str(), name) == 0) {
      *method = reinterpret_cast<EmberRtMethod*>(&m);
      return EMBER_RT_OK;
    }
  }
  return invalid_argument("[method] the program has no method '%s'", name);
}

size_t ember_rt_num_inputs(const EmberRtMethod* method) { return from_handle(method)->input_data.size(); }
size_t ember_rt_num_outputs(const EmberRtMethod* method) { return from_handle(method)->output_data.size(); }

EmberRtStatus ember_rt_input_info(const EmberRtMethod* method, size_t index, EmberRtTensorInfo* info) {
  return tensor_info(*from_handle(method), false, index, info);
}

EmberRtStatus ember_rt_output_info(const EmberRtMethod* method, size_t index, EmberRtTensorInfo* info) {
  return tensor_info(*from_handle(method), true, index, info);
}

EmberRtStatus ember_rt_run(EmberRtMethod* method, const EmberRtTensor* inputs, size_t num_inputs,
                           EmberRtTensor* outputs, size_t num_outputs) {
  if (method == nullptr || (num_inputs > 0 && inputs == nullptr) || (num_outputs > 0 && outputs == nullptr))
    return invalid_argument("[run] %s", "null method, inputs or outputs");
  Error error;
  if (!ember::rt::run_method(*from_handle(method), inputs, num_inputs, outputs, num_outputs, error))
    return report(error);
  return EMBER_RT_OK;
}

void ember_rt_free(EmberRtProgram* program) { delete from_handle(program); }

const char* ember_rt_last_error(void) { return t_last_error; }

}  // extern "C"
