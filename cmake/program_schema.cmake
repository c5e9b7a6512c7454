# The .ember program file's schema (src/runtime/schema/program.fbs), compiled by flatc at build
# time into the build tree: <build>/generated/runtime/schema/program_generated.h, included as
# "runtime/schema/program_generated.h" by the runtime (libember_rt) and the exporter (src/export).
# Targets that read or write program files link `ember_program_schema`.
find_program(EMBER_FLATC flatc REQUIRED)
set(EMBER_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
set(EMBER_PROGRAM_SCHEMA ${PROJECT_SOURCE_DIR}/src/runtime/schema/program.fbs)
set(EMBER_PROGRAM_HEADER ${EMBER_GENERATED_DIR}/runtime/schema/program_generated.h)
# --scoped-enums: enum class ScalarType { Float32, ... } instead of ScalarType_Float32.
add_custom_command(OUTPUT ${EMBER_PROGRAM_HEADER}
  COMMAND ${EMBER_FLATC} --cpp --scoped-enums -o ${EMBER_GENERATED_DIR}/runtime/schema ${EMBER_PROGRAM_SCHEMA}
  DEPENDS ${EMBER_PROGRAM_SCHEMA}
  COMMENT "flatc: the program file schema")
add_custom_target(ember_program_schema_header DEPENDS ${EMBER_PROGRAM_HEADER})
add_library(ember_program_schema INTERFACE)
target_include_directories(ember_program_schema INTERFACE $<BUILD_INTERFACE:${EMBER_GENERATED_DIR}>)
add_dependencies(ember_program_schema ember_program_schema_header)
