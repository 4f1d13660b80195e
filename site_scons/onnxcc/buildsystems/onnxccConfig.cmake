# onnxcc for CMake firmware trees: find_package(onnxcc CONFIG REQUIRED), then
#
#   onnxcc_add_model(kws models/kws.onnx TARGET cortex-m4 [OPTIONS --weights-section .ext ...])
#   target_link_libraries(firmware PRIVATE onnxcc::kws)
#
# onnxcc::kws brings kws.h's folder, libkws.a, the target's CPU flags (compile and link) and
# the C libraries the model needs. The model is compiled when CMake configures (so a bad
# model stops there, with onnxcc's one-line error) and again at build time whenever the
# .onnx file or onnxcc changed; changing TARGET or OPTIONS re-configures. OPTIONS are flags
# of `onnxcc build` (`onnxcc build --help`). CMake finds this folder with
#   cmake -Donnxcc_DIR="$(onnxcc --cmake-dir)" ...
# and the onnxcc command beside the package's Python (override with -DONNXCC_COMMAND=...).
cmake_minimum_required(VERSION 3.19)
include_guard(GLOBAL)

get_filename_component(_onnxcc_package "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
# where pip put the command: <prefix>/lib/pythonX.Y/site-packages/onnxcc -> <prefix>/bin;
# a checkout's (./setup.sh): site_scons/onnxcc -> .venv/bin
get_filename_component(_onnxcc_parent "${_onnxcc_package}" DIRECTORY)
get_filename_component(_onnxcc_parent "${_onnxcc_parent}" NAME)
if(_onnxcc_parent MATCHES "^(site|dist)-packages$")
  get_filename_component(_onnxcc_bin "${_onnxcc_package}/../../../../bin" ABSOLUTE)
else()
  get_filename_component(_onnxcc_bin "${_onnxcc_package}/../../.venv/bin" ABSOLUTE)
endif()
find_program(ONNXCC_COMMAND onnxcc HINTS "${_onnxcc_bin}" DOC "the onnxcc command")
if(NOT ONNXCC_COMMAND)
  set(onnxcc_FOUND FALSE)
  set(onnxcc_NOT_FOUND_MESSAGE
      "no onnxcc command: pip install onnxcc (or ./setup.sh in a checkout), or pass -DONNXCC_COMMAND=/path/to/onnxcc")
  return()
endif()
# the Python onnxcc runs on (it has onnx and onnxruntime), for a firmware's own scripts
find_program(ONNXCC_PYTHON NAMES python3 python HINTS "${_onnxcc_bin}" NO_DEFAULT_PATH)
# a rebuild follows onnxcc itself too (an upgrade changes the generated code)
file(GLOB_RECURSE _onnxcc_package_files CONFIGURE_DEPENDS
     "${_onnxcc_package}/*.py" "${_onnxcc_package}/*.mako" "${_onnxcc_package}/*.toml"
     "${_onnxcc_package}/*.c" "${_onnxcc_package}/*.h" "${_onnxcc_package}/*.ld")
set(ONNXCC_PACKAGE_FILES "${_onnxcc_package_files}" CACHE INTERNAL "")

function(onnxcc_add_model name model)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "TARGET" "OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "onnxcc_add_model(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS} (TARGET t, OPTIONS flags...)")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "onnxcc_add_model(${name}): the name is not a C identifier (it prefixes the model's C API)")
  endif()
  if(NOT arg_TARGET)
    message(FATAL_ERROR "onnxcc_add_model(${name}): no TARGET (one of `onnxcc targets`, e.g. TARGET cortex-m4)")
  endif()
  get_filename_component(model "${model}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  execute_process(COMMAND "${ONNXCC_COMMAND}" targets "${arg_TARGET}" RESULT_VARIABLE status
                  OUTPUT_VARIABLE target ERROR_VARIABLE error OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "onnxcc_add_model(${name}): ${error}")
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/onnxcc")
  set(folder "${out}/${target}/${name}")
  set(command "${ONNXCC_COMMAND}" build "${model}" --target "${arg_TARGET}" --name "${name}"
              -o "${out}" ${arg_OPTIONS})
  # now, for what onnxcc::<name> carries (its <name>.cmake) and to fail early on a bad model
  execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_QUIET
                  ERROR_VARIABLE error ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "onnxcc_add_model(${name}): ${error}")
  endif()
  include("${folder}/${name}.cmake")
  file(TOUCH "${folder}.stamp")
  # at build time, when the model or onnxcc changed (SCons redoes only the stages that must)
  add_custom_command(OUTPUT "${folder}.stamp"
                     COMMAND ${command}
                     COMMAND "${CMAKE_COMMAND}" -E touch "${folder}.stamp"
                     DEPENDS "${model}" ${ONNXCC_PACKAGE_FILES}
                     BYPRODUCTS "${folder}/lib${name}.a" "${folder}/${name}.h"
                     COMMENT "onnxcc: ${name} (${arg_TARGET})" VERBATIM)
  add_custom_target(onnxcc_${name} DEPENDS "${folder}.stamp")
  add_dependencies(onnxcc::${name} onnxcc_${name})
endfunction()
