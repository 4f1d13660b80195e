/*
 * Startup of onnxcc's footprint program on Cortex-M (the size report): the least a
 * firmware has, so that the report's libc line is exactly what the model pulls in.
 * No semihosting, no stdio, no heap, no constructors; .data and .bss are set up with
 * plain loops, not memcpy/memset, which would otherwise be counted against the model.
 *
 * Link with: -nostartfiles --specs=nosys.specs -T toolchains/arm-none-eabi/<board>.ld
 * (startup_cortexm.c is the full startup of the verify and bench programs).
 */
#include <stdint.h>

/* Provided by the linker script. */
extern uint32_t __stack_top__;
extern uint32_t __data_load__[], __data_start__[], __data_end__[];
extern uint32_t __bss_start__[], __bss_end__[];

extern int main(void);
void Reset_Handler(void);

/* The two entries a core needs to boot: initial SP and reset PC (the linker script KEEPs
 * .vectors where the core boots). A real firmware's full table is its own cost, not the
 * model's. */
__attribute__((section(".vectors"), used))
void (*const footprint_vector_table[2])(void) = {
    (void (*)(void))&__stack_top__,
    Reset_Handler,
};

/* Enable the FPU, if the code uses one (CPACR CP10/CP11 full access), before main's first
 * FP instruction; this function has none. The loops must stay loops: GCC would turn them into memcpy/memset. */
__attribute__((noreturn, optimize("no-tree-loop-distribute-patterns")))
void Reset_Handler(void)
{
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    const uint32_t *src = __data_load__;
    for (uint32_t *dst = __data_start__; dst < __data_end__;)
        *dst++ = *src++;
    for (uint32_t *dst = __bss_start__; dst < __bss_end__;)
        *dst++ = 0;
    main();
    for (;;) {
    }
}
