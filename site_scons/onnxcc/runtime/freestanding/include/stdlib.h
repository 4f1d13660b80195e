/* stdlib.h of onnxcc's freestanding C library (runtime/freestanding/README.md): no heap. */
#ifndef ONNXCC_FREESTANDING_STDLIB_H
#define ONNXCC_FREESTANDING_STDLIB_H

#include <stddef.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1

/* ends the program with ``status`` (provided with the board's startup code) */
__attribute__((noreturn)) void exit(int status);
__attribute__((noreturn)) void abort(void);
int abs(int x);
long labs(long x);

#endif
