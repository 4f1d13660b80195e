/*
 * Startup of onnxcc's footprint program on RISC-V (the size report): the least a firmware
 * has, so that the report's libc line is exactly what the model pulls in. No semihosting,
 * no stdio, no exit; .data and .bss are set up with plain loops, not memcpy/memset.
 * picolibc.ld (through qemu_virt.ld) gives the symbols; link with -nostartfiles.
 */
#include <stdint.h>

extern uint32_t __data_source[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];

extern int main(void);
void _start(void);
static void reset_c(void);

/* picolibc.ld puts .text.init.enter first: the reset address. gp before anything uses it. */
__attribute__((naked, noreturn, section(".text.init.enter"))) void _start(void)
{
    __asm__ volatile(
        ".option push\n"
        ".option norelax\n"
        "la gp, __global_pointer$\n"
        ".option pop\n"
        "la sp, __stack\n"
        "j %0\n" :: "i"(reset_c));
}

__attribute__((noreturn, used, optimize("no-tree-loop-distribute-patterns")))
static void reset_c(void)
{
    const uint32_t *src = __data_source;
    for (uint32_t *dst = __data_start; dst < __data_end;)
        *dst++ = *src++;
    for (uint32_t *dst = __bss_start; dst < __bss_end;)
        *dst++ = 0;
    main();
    for (;;) {
    }
}
