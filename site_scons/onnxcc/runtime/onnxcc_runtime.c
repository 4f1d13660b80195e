/* onnxcc_runtime.c: argument checks shared by every generated <name>_run. */
#include <stdint.h>

#include "onnxcc_runtime.h"

int onnxcc_check_args(const void *const *inputs, size_t num_inputs, void *const *outputs,
                      size_t num_outputs, const void *arena, size_t arena_bytes, size_t align)
{
    if ((num_inputs && inputs == NULL) || (num_outputs && outputs == NULL))
        return ONNXCC_ERROR_ARGUMENT;
    for (size_t i = 0; i < num_inputs; ++i)
        if (inputs[i] == NULL)
            return ONNXCC_ERROR_ARGUMENT;
    for (size_t i = 0; i < num_outputs; ++i)
        if (outputs[i] == NULL)
            return ONNXCC_ERROR_ARGUMENT;
    if (arena_bytes && (arena == NULL || (uintptr_t)arena % align != 0u))
        return ONNXCC_ERROR_ARGUMENT;
    return ONNXCC_OK;
}
