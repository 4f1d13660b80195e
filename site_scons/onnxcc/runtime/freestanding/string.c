/* string.c: the <string.h> of onnxcc's freestanding C library (README.md here). Plain
 * byte loops; GCC must not turn them back into calls of themselves. */
#include <stdint.h>
#include <string.h>

#define NOT_A_CALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

NOT_A_CALL void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--)
        *d++ = *s++;
    return dst;
}

NOT_A_CALL void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if ((uintptr_t)d - (uintptr_t)s >= n) /* dst before src, or no overlap: forwards */
        return memcpy(dst, src, n);
    while (n--)
        d[n] = s[n];
    return dst;
}

NOT_A_CALL void *memset(void *dst, int c, size_t n)
{
    unsigned char *d = dst;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (; n; --n, ++x, ++y)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

NOT_A_CALL size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        ++n;
    return n;
}
