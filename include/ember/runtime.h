/* libember_rt: loads a .ember program file (written by ember::export_program) and runs its
 * methods. A C API, usable from C and C++; the library links no part of ember's training
 * stack. Loading verifies the whole file before anything runs: a bad file is a status and a
 * message (ember_rt_last_error), never a crash. ember_rt_run allocates no memory: buffers are
 * sized for the program's bounds when it is loaded.
 *
 *   EmberRtProgram* program;
 *   if (ember_rt_load("model.ember", &program) != EMBER_RT_OK) puts(ember_rt_last_error());
 *   EmberRtMethod* forward;
 *   ember_rt_method(program, "forward", &forward);
 *   ember_rt_run(forward, inputs, 1, outputs, 1);
 *   ember_rt_free(program);
 *
 * A method may run on one thread at a time; different methods and programs are independent. */
#ifndef EMBER_RUNTIME_H
#define EMBER_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_RT_MAX_DIMS 8

/* The library exports the C API alone (its C++ internals are hidden). */
#if defined(__GNUC__)
#define EMBER_RT_API __attribute__((visibility("default")))
#else
#define EMBER_RT_API
#endif

typedef enum EmberRtStatus {
  EMBER_RT_OK = 0,
  EMBER_RT_ERROR_IO = 1,               /* the file cannot be opened, read or mapped */
  EMBER_RT_ERROR_INVALID_PROGRAM = 2,  /* the file fails verification */
  EMBER_RT_ERROR_MISSING_KERNEL = 3,   /* an operator of the file has no kernel in this build */
  EMBER_RT_ERROR_INVALID_ARGUMENT = 4, /* a name, input or output does not fit the method */
  EMBER_RT_ERROR_OUT_OF_MEMORY = 5,
  EMBER_RT_ERROR_KERNEL = 6            /* a kernel refused its operands while running */
} EmberRtStatus;

/* Element types, in the order of ember::ScalarType and the schema's ScalarType. */
typedef enum EmberRtDtype {
  EMBER_RT_BOOL = 0,
  EMBER_RT_UINT8 = 1,
  EMBER_RT_INT8 = 2,
  EMBER_RT_INT32 = 3,
  EMBER_RT_INT64 = 4,
  EMBER_RT_FLOAT16 = 5,
  EMBER_RT_BFLOAT16 = 6,
  EMBER_RT_FLOAT32 = 7,
  EMBER_RT_FLOAT64 = 8
} EmberRtDtype;

/* A dense, row-major tensor in the caller's memory. Inputs: data, dtype, ndim and sizes are
 * read. Outputs: data and capacity_bytes are read; ember_rt_run writes dtype, ndim and sizes. */
typedef struct EmberRtTensor {
  void* data;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[EMBER_RT_MAX_DIMS];
  uint64_t capacity_bytes;
} EmberRtTensor;

/* What a method expects of an input or output. Sizes a dim may take: [min_sizes[d],
 * max_sizes[d]] (equal for a static dim); max_bytes is the largest tensor at those bounds. */
typedef struct EmberRtTensorInfo {
  const char* name;
  int32_t dtype;
  int32_t ndim;
  int64_t min_sizes[EMBER_RT_MAX_DIMS];
  int64_t max_sizes[EMBER_RT_MAX_DIMS];
  uint64_t max_bytes;
} EmberRtTensorInfo;

typedef struct EmberRtProgram EmberRtProgram;
typedef struct EmberRtMethod EmberRtMethod;

/* Maps and verifies a program file. On success *program owns the map; free it with
 * ember_rt_free. On failure *program is NULL and ember_rt_last_error() says why. */
EMBER_RT_API EmberRtStatus ember_rt_load(const char* path, EmberRtProgram** program);

/* As ember_rt_load, over `size` bytes the caller keeps alive and unchanged until
 * ember_rt_free; `data` must be 64-byte aligned (constants are read in place). */
EMBER_RT_API EmberRtStatus ember_rt_load_buffer(const void* data, size_t size, EmberRtProgram** program);

/* The program's methods, by index: their count and names (NULL past the end). */
EMBER_RT_API size_t ember_rt_num_methods(const EmberRtProgram* program);
EMBER_RT_API const char* ember_rt_method_name(const EmberRtProgram* program, size_t index);

/* The value of the program's metadata entry `key` (strings the exporter wrote for tools,
 * e.g. "tokenizer_kind"), or NULL when it has none. */
EMBER_RT_API const char* ember_rt_metadata(const EmberRtProgram* program, const char* key);

/* Finds a method by name ("forward", "prefill", "decode"); it lives as long as its program. */
EMBER_RT_API EmberRtStatus ember_rt_method(EmberRtProgram* program, const char* name, EmberRtMethod** method);

EMBER_RT_API size_t ember_rt_num_inputs(const EmberRtMethod* method);
EMBER_RT_API size_t ember_rt_num_outputs(const EmberRtMethod* method);
EMBER_RT_API EmberRtStatus ember_rt_input_info(const EmberRtMethod* method, size_t index, EmberRtTensorInfo* info);
EMBER_RT_API EmberRtStatus ember_rt_output_info(const EmberRtMethod* method, size_t index, EmberRtTensorInfo* info);

/* Runs the method. Input sizes are checked against the method's bounds and shapes; each
 * output's capacity_bytes must hold its result. Allocates nothing. */
EMBER_RT_API EmberRtStatus ember_rt_run(EmberRtMethod* method, const EmberRtTensor* inputs, size_t num_inputs,
                           EmberRtTensor* outputs, size_t num_outputs);

EMBER_RT_API void ember_rt_free(EmberRtProgram* program);

/* The message of this thread's last failed call ("" when none failed). */
EMBER_RT_API const char* ember_rt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_RUNTIME_H */
