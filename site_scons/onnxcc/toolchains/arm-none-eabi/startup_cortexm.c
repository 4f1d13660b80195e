/*
 * Minimal startup code for onnxcc test/benchmark programs on Cortex-M (QEMU's MPS2/MPS3
 * boards: Cortex-M0+/M3 on an385, M4F on an386, M7 on an500, M33 on an505, M55 on an547),
 * newlib + semihosting.
 *
 * Link with: -nostartfiles --specs=rdimon.specs (full newlib, not nano)
 *            -T toolchains/arm-none-eabi/<board>.ld
 *
 * Why our own startup instead of newlib's rdimon-crt0.o:
 *   - A Cortex-M core boots from a vector table (initial SP + reset PC) at
 *     address 0 (VTOR reset value); newlib's crt0 does not provide one.
 *   - rdimon-crt0 asks the debugger (SYS_HEAPINFO) where stack and heap go;
 *     QEMU answers with a guess (middle/top of the RAM block holding SP) that
 *     can overlap a large .bss. We take the layout from the linker script.
 *   - The FPU must be switched on before the first FP instruction.
 *
 * stdout/exit go through newlib's librdimon (ARM semihosting, BKPT 0xAB);
 * QEMU must run with -semihosting-config enable=on,target=native.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Provided by the linker script. */
extern uint32_t __stack_top__;              /* initial SP (top of RAM)   */
extern uint8_t __data_load__[];             /* .data image in FLASH      */
extern uint8_t __data_start__[], __data_end__[];  /* .data in RAM        */
extern uint8_t __bss_start__[], __bss_end__[];

extern int main(void);
extern void initialise_monitor_handles(void);  /* librdimon: opens ":tt" for stdin/out/err */
extern void __libc_init_array(void);           /* newlib: runs .preinit/.init_array        */

void Reset_Handler(void);
void Fault_Handler(void);
static void reset_c(void);

/*
 * __libc_init_array() calls _init(); normally crti.o/crtn.o supply it, but
 * -nostartfiles drops them. Nothing needs it for C code: provide empty ones.
 */
void _init(void) {}
void _fini(void) {}

/*
 * Vector table. Only the 16 architectural entries: nothing here enables
 * interrupts, so no device IRQ vectors are needed. Every fault goes to one
 * handler that reports and exits, so a crash ends QEMU instead of hanging.
 * The linker script KEEPs .vectors where the core boots from (its VTOR reset value).
 */
typedef void (*vector_t)(void);
__attribute__((section(".vectors"), used))
const vector_t __vectors[16] = {
    (vector_t)&__stack_top__,  /*  0: initial MSP                   */
    Reset_Handler,             /*  1: reset                         */
    Fault_Handler,             /*  2: NMI                           */
    Fault_Handler,             /*  3: HardFault                     */
    Fault_Handler,             /*  4: MemManage                     */
    Fault_Handler,             /*  5: BusFault                      */
    Fault_Handler,             /*  6: UsageFault (e.g. FPU off)     */
    0, 0, 0, 0,                /*  7-10: reserved                   */
    Fault_Handler,             /* 11: SVCall                        */
    Fault_Handler,             /* 12: DebugMonitor                  */
    0,                         /* 13: reserved                      */
    Fault_Handler,             /* 14: PendSV                        */
    Fault_Handler,             /* 15: SysTick                       */
};

/*
 * Reset: enable the FPU (when the code uses one), then continue in C. Written in
 * assembly so that no compiler-generated FP instruction can run before CPACR is set (it
 * would raise a NOCP UsageFault). CPACR (0xE000ED88) bits 20-23 = full access to CP10/CP11
 * (on ARMv8.1-M also the MVE registers); DSB+ISB make the change visible before the next
 * instruction. Only ARMv6-M instructions, so one startup serves every Cortex-M.
 */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
#if defined(__ARM_FP)
        "ldr  r0, =0xE000ED88\n"
        "ldr  r1, [r0]\n"
        "ldr  r2, =0x00F00000\n"
        "orrs r1, r2\n"
        "str  r1, [r0]\n"
        "dsb\n"
        "isb\n"
#endif
        "ldr  r0, =%c0\n"
        "bx   r0\n"
        ".ltorg\n"
        :: "i"(reset_c));
}

__attribute__((noreturn, used)) static void reset_c(void)
{
    /* C runtime init: copy initialised data from FLASH, zero .bss.
     * (On QEMU the ELF loader already put .data in RAM, but real boards
     * need the copy, and it costs nothing.) */
    memcpy(__data_start__, __data_load__, (size_t)(__data_end__ - __data_start__));
    memset(__bss_start__, 0, (size_t)(__bss_end__ - __bss_start__));
    initialise_monitor_handles();
    __libc_init_array();
    exit(main());  /* flushes stdio, then librdimon _exit -> semihosting SYS_EXIT */
}

/* Raw semihosting call (M-profile: BKPT 0xAB, op in r0, argument in r1). */
static inline int semihost(int op, const void *arg)
{
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

/* Any fault/unexpected exception: say so on stdout and stop QEMU with a
 * non-zero status (SYS_EXIT with a reason other than ApplicationExit). */
void Fault_Handler(void)
{
    semihost(0x04 /* SYS_WRITE0 */, "\n*** CORTEX-M FAULT ***\n");
    for (;;)
        semihost(0x18 /* SYS_EXIT */, (const void *)0x20023 /* ADP_Stopped_RunTimeErrorUnknown */);
}
