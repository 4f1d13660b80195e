/* Startup code of the example firmware (Cortex-M4F on QEMU's mps2-an386): the vector
 * table, the reset handler that turns the FPU on and sets up C, and a fault handler that
 * ends QEMU instead of hanging. printf and exit go to the host through semihosting
 * (newlib's librdimon), so link with -nostartfiles --specs=rdimon.specs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* from firmware.ld */
extern uint32_t __stack_top__[];
extern uint8_t __data_load__[], __data_start__[], __data_end__[];
extern uint8_t __bss_start__[], __bss_end__[];

int main(void);
void initialise_monitor_handles(void); /* librdimon: stdin/stdout/stderr over semihosting */

void Reset_Handler(void);
void Fault_Handler(void);

typedef void (*handler_t)(void);

/* the 16 system exceptions; this firmware enables no interrupts */
__attribute__((section(".isr_vector"), used))
const handler_t isr_vector[16] = {
    (handler_t)__stack_top__, Reset_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, /* NMI..UsageFault */
    0, 0, 0, 0,
    Fault_Handler, Fault_Handler, 0, Fault_Handler, Fault_Handler, /* SVC, DebugMon, PendSV, SysTick */
};

static void start_c(void)
{
    memcpy(__data_start__, __data_load__, (size_t)(__data_end__ - __data_start__));
    memset(__bss_start__, 0, (size_t)(__bss_end__ - __bss_start__));
    initialise_monitor_handles(); /* (plain C: no constructors to run) */
    exit(main());
}

/* The FPU (CP10, CP11 in CPACR) must be on before the compiler's first float instruction,
 * so this part is assembly. */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
        "ldr r0, =0xE000ED88\n"
        "ldr r1, [r0]\n"
        "orr r1, r1, #(0xF << 20)\n"
        "str r1, [r0]\n"
        "dsb\n"
        "isb\n"
        "b %c0\n"
        ".ltorg\n" :: "i"(start_c));
}

void Fault_Handler(void)
{
    /* semihosting SYS_WRITE0, then SYS_EXIT with a run-time error */
    register uintptr_t op __asm__("r0") = 0x04;
    register const char *text __asm__("r1") = "firmware: FAULT\n";
    __asm__ volatile("bkpt 0xAB" : "+r"(op) : "r"(text) : "memory");
    for (;;) {
        register uintptr_t exit_op __asm__("r0") = 0x18;
        register uintptr_t reason __asm__("r1") = 0x20023;
        __asm__ volatile("bkpt 0xAB" : "+r"(exit_op) : "r"(reason) : "memory");
    }
}
