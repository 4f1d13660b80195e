/* stdio.h of onnxcc's freestanding C library (runtime/freestanding/README.md): output
 * only, unbuffered, through the board's freestanding_console_putc (a serial port). printf
 * knows %d %i %u %x %s %c %% with the l, ll and z length modifiers. */
#ifndef ONNXCC_FREESTANDING_STDIO_H
#define ONNXCC_FREESTANDING_STDIO_H

#include <stdarg.h>
#include <stddef.h>

typedef struct onnxcc_file FILE;
extern FILE *const stdout;
extern FILE *const stderr;
#define EOF (-1)

/* the board's console: one byte out (provided with its startup code) */
void freestanding_console_putc(char c);

int putchar(int c);
int puts(const char *s);
int printf(const char *restrict format, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *restrict format, va_list args);
int fflush(FILE *stream);

#endif
