/* onnxcc_runtime.h: the runtime every generated model shares.
 * Pure C99, freestanding: no heap, no I/O, no state.
 */
#ifndef ONNXCC_RUNTIME_H
#define ONNXCC_RUNTIME_H

#include <stddef.h>

#define ONNXCC_OK 0
#define ONNXCC_ERROR_ARGUMENT (-1) /* a NULL pointer or a misaligned arena */

/* ONNXCC_OK when every input and output pointer is set and the arena is present (if
 * arena_bytes > 0) and aligned to align; ONNXCC_ERROR_ARGUMENT otherwise. */
int onnxcc_check_args(const void *const *inputs, size_t num_inputs, void *const *outputs,
                      size_t num_outputs, const void *arena, size_t arena_bytes, size_t align);

#endif /* ONNXCC_RUNTIME_H */
