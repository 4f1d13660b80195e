# ${name}.cmake: model ${name} (onnxcc, target ${target}) for CMake. Generated; do not edit.
#
#   include(path/to/${name}.cmake)      # or add_subdirectory(path/to/this/folder ${name})
#   target_link_libraries(firmware PRIVATE onnxcc::${name})
#
# onnxcc::${name} brings the include folder of ${name}.h, lib${name}.a, the C libraries it
# needs and the CPU flags of its target (compile and link: the code must be ABI-compatible).
# Paths are relative to this file's folder, so the build folder may move.
if(NOT TARGET onnxcc::${name})
  add_library(onnxcc::${name} STATIC IMPORTED GLOBAL)
  set_target_properties(onnxcc::${name} PROPERTIES
    IMPORTED_LOCATION "${here}/lib${name}.a"
    INTERFACE_INCLUDE_DIRECTORIES "${here}"
    INTERFACE_LINK_LIBRARIES "${';'.join(system_libs)}"
    INTERFACE_COMPILE_OPTIONS "${';'.join(target_cflags)}"
    INTERFACE_LINK_OPTIONS "${';'.join(target_cflags)}")
endif()
# the API macros of ${name}.h, for code that sizes buffers without including it
set(${NAME}_DEFINES "${';'.join(defines)}" CACHE INTERNAL "")
set(${NAME}_ARENA_BYTES ${arena_bytes} CACHE INTERNAL "")
set(${NAME}_ARENA_ALIGN ${arena_align} CACHE INTERNAL "")
# the linker section of the weights (empty: .rodata, with the rest of the constants)
set(${NAME}_WEIGHTS_SECTION "${weights_section}" CACHE INTERNAL "")
# the CPU and ABI flags the library was compiled with (onnxcc::${name} adds them for you)
set(${NAME}_TARGET_CFLAGS "${';'.join(target_cflags)}" CACHE INTERNAL "")
