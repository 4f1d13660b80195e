/* stdio.c: the output half of <stdio.h> and <stdlib.h>'s abs of onnxcc's freestanding
 * C library (README.md here): unbuffered, every byte straight to the board's
 * freestanding_console_putc. */
#include <stdio.h>
#include <stdlib.h>

struct onnxcc_file {
    int unused;
};
static struct onnxcc_file console;
FILE *const stdout = &console;
FILE *const stderr = &console;

int putchar(int c)
{
    freestanding_console_putc((char)c);
    return (unsigned char)c;
}

int puts(const char *s)
{
    while (*s)
        freestanding_console_putc(*s++);
    freestanding_console_putc('\n');
    return 0;
}

int fflush(FILE *stream)
{
    (void)stream; /* nothing is buffered */
    return 0;
}

int abs(int x) { return x < 0 ? -x : x; }
long labs(long x) { return x < 0 ? -x : x; }

/* digits of ``value`` in ``base``, after a '-' when ``negative``; the count written */
static int put_number(unsigned long long value, unsigned base, int negative)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[value % base];
        value /= base;
    } while (value);
    if (negative)
        freestanding_console_putc('-');
    for (int i = n; i-- > 0;)
        freestanding_console_putc(digits[i]);
    return n + negative;
}

int vprintf(const char *restrict format, va_list args)
{
    int written = 0;
    for (const char *p = format; *p; ++p) {
        if (*p != '%') {
            freestanding_console_putc(*p);
            ++written;
            continue;
        }
        int longs = 0, size = 0;
        for (++p; *p == 'l' || *p == 'z'; ++p)
            *p == 'l' ? ++longs : ++size;
        switch (*p) {
        case 'd':
        case 'i': {
            long long v = size ? (long long)va_arg(args, ptrdiff_t)
                        : longs >= 2 ? va_arg(args, long long)
                        : longs ? va_arg(args, long) : va_arg(args, int);
            written += put_number(v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v,
                                  10, v < 0);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = size ? va_arg(args, size_t)
                                 : longs >= 2 ? va_arg(args, unsigned long long)
                                 : longs ? va_arg(args, unsigned long) : va_arg(args, unsigned);
            written += put_number(v, *p == 'x' ? 16 : 10, 0);
            break;
        }
        case 's': {
            const char *s = va_arg(args, const char *);
            for (; *s; ++s, ++written)
                freestanding_console_putc(*s);
            break;
        }
        case 'c':
            freestanding_console_putc((char)va_arg(args, int));
            ++written;
            break;
        case '%':
            freestanding_console_putc('%');
            ++written;
            break;
        default: /* not supported: shown as is, so a missing conversion is seen */
            freestanding_console_putc('%');
            if (!*p)
                return written + 1;
            freestanding_console_putc(*p);
            written += 2;
        }
    }
    return written;
}

int printf(const char *restrict format, ...)
{
    va_list args;
    va_start(args, format);
    const int n = vprintf(format, args);
    va_end(args);
    return n;
}
