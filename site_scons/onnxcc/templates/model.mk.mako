# ${name}.mk: model ${name} (onnxcc, target ${target}) for a Makefile. Generated; do not edit.
#
#   include path/to/${name}.mk
#   CPPFLAGS += $(${NAME}_CPPFLAGS)   # -I for ${name}.h
#   LDLIBS   += $(${NAME}_LIBS)       # lib${name}.a and the C libraries it needs
#
# Paths are relative to this file's folder, so the build folder may move.
${NAME}_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
${NAME}_INCLUDE_DIR := $(${NAME}_DIR)
${NAME}_LIBRARY := $(${NAME}_DIR)/lib${name}.a
${NAME}_LIBS := $(${NAME}_LIBRARY)${''.join(f' -l{lib}' for lib in system_libs)}
${NAME}_CPPFLAGS := -I$(${NAME}_INCLUDE_DIR)
# the API macros of ${name}.h, for code that sizes buffers without including it
${NAME}_DEFINES := ${' '.join(defines)}
${NAME}_ARENA_BYTES := ${arena_bytes}
${NAME}_ARENA_ALIGN := ${arena_align}
# the linker section of the weights (empty: .rodata, with the rest of the constants)
${NAME}_WEIGHTS_SECTION := ${weights_section}
# the CPU and ABI flags the library was compiled with: compile and link compatibly
${NAME}_TARGET_CFLAGS := ${' '.join(target_cflags)}
ONNXCC_MODELS += ${name}
