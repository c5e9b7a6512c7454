/* The C API from C: loads the sample programs written by runtime_write_programs, runs them
 * and checks the results against values computed here; a hostile file is an error with a
 * message. Exits 0 when every check holds.
 *   runtime_c_api DIR */
#include <stdio.h>
#include <string.h>

#include "ember/runtime.h"

static int failures = 0;

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond,     \
              ember_rt_last_error());                                           \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

static void check_add_relu(const char* dir) {
  static const float bias[4] = {0.5f, -1.0f, 2.0f, -3.0f};
  char path[1024];
  EmberRtProgram* program = NULL;
  EmberRtMethod* forward = NULL;
  float x[12], y[12];
  EmberRtTensor input, output;
  int i;
  snprintf(path, sizeof(path), "%s/add_relu.ember", dir);
  CHECK(ember_rt_load(path, &program) == EMBER_RT_OK);
  if (program == NULL) return;
  CHECK(ember_rt_method(program, "forward", &forward) == EMBER_RT_OK);
  for (i = 0; i < 12; ++i) x[i] = (float)(i - 6) * 0.5f;
  memset(&input, 0, sizeof(input));
  memset(&output, 0, sizeof(output));
  input.data = x;
  input.dtype = EMBER_RT_FLOAT32;
  input.ndim = 2;
  input.sizes[0] = 3;
  input.sizes[1] = 4;
  output.data = y;
  output.capacity_bytes = sizeof(y);
  CHECK(ember_rt_run(forward, &input, 1, &output, 1) == EMBER_RT_OK);
  CHECK(output.ndim == 2 && output.sizes[0] == 3 && output.sizes[1] == 4 && output.dtype == EMBER_RT_FLOAT32);
  for (i = 0; i < 12; ++i) {
    const float expected = x[i] + bias[i % 4] > 0 ? x[i] + bias[i % 4] : 0.0f;
    CHECK(y[i] == expected);
  }
  input.sizes[0] = 17; /* outside T's bounds [1, 16] */
  CHECK(ember_rt_run(forward, &input, 1, &output, 1) == EMBER_RT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(ember_rt_last_error(), "outside its bounds [1, 16]") != NULL);
  ember_rt_free(program);
}

static void check_bad_magic(const char* dir) {
  char path[1024];
  EmberRtProgram* program = NULL;
  snprintf(path, sizeof(path), "%s/bad_magic.ember", dir);
  CHECK(ember_rt_load(path, &program) == EMBER_RT_ERROR_INVALID_PROGRAM);
  CHECK(program == NULL);
  CHECK(strstr(ember_rt_last_error(), "wrong magic") != NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  check_add_relu(argv[1]);
  check_bad_magic(argv[1]);
  if (failures == 0) printf("C API: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
