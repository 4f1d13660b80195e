/*
 * Startup code of onnxcc's x86-baremetal target: a 32-bit x86 (SSE2) machine with no
 * C library, booted by QEMU's multiboot loader (qemu-system-i386 -kernel <elf>).
 *
 * Link with: -nostdlib -T toolchains/x86-baremetal/multiboot.ld, the freestanding C
 * library of runtime/freestanding/ and -lgcc (64-bit division).
 *
 *   - the multiboot (v1) header, which the loader looks for in the image's first 8 KiB;
 *   - _start: our own GDT (multiboot leaves its GDTR undefined), a stack at the top of
 *     RAM, SSE on (CR0.EM off, CR0.MP on, CR4.OSFXSR and OSXMMEXCPT on: off at reset,
 *     the first SSE instruction would fault), then C;
 *   - C: copy .data from its image in "flash", zero .bss, the serial port, an IDT that
 *     reports any CPU exception, then exit(main());
 *   - the board's I/O for the C library: freestanding_console_putc writes COM1 (0x3F8), which
 *     QEMU connects to its stdout (-serial stdio); exit(status) writes status to QEMU's
 *     isa-debug-exit port 0xF4, whose QEMU then exits with (status << 1) | 1 (the target
 *     file's exit_status = "isa-debug-exit" maps it back).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COM1 0x3F8u
#define DEBUG_EXIT_PORT 0xF4u
#define EXIT_CPU_EXCEPTION 127 /* a fault: also what a failed abort() gives */

/* the linker script's symbols */
extern uint8_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];

int main(void);
void start_c(void);
void cpu_exception(uint32_t vector);

/* magic, flags (none: the loader reads the ELF program headers), checksum */
__attribute__((section(".multiboot"), used, aligned(4)))
static const uint32_t multiboot_header[3] = {0x1BADB002u, 0u, -0x1BADB002u};

/* flat 4 GiB code (selector 0x08) and data (0x10) segments, ring 0 */
__attribute__((aligned(8)))
static const uint64_t gdt[3] = {0, 0x00CF9A000000FFFFull, 0x00CF92000000FFFFull};

struct descriptor_table {
    uint16_t limit;
    const void *base;
} __attribute__((packed));

__attribute__((used)) static const struct descriptor_table gdtr = {sizeof gdt - 1, gdt};

__asm__(
    ".section .text.boot,\"ax\"\n"
    ".global _start\n"
    "_start:\n"
    "    cli\n"
    "    lgdt gdtr\n"
    "    ljmp $0x08, $1f\n"
    "1:  mov $0x10, %ax\n"
    "    mov %ax, %ds\n"
    "    mov %ax, %es\n"
    "    mov %ax, %fs\n"
    "    mov %ax, %gs\n"
    "    mov %ax, %ss\n"
    "    mov $__stack_top, %esp\n"
    "    and $-16, %esp\n"
    "    mov %cr0, %eax\n"
    "    and $~0x4, %eax\n"         /* CR0.EM off: no x87 emulation trap */
    "    or $0x2, %eax\n"           /* CR0.MP on */
    "    mov %eax, %cr0\n"
    "    mov %cr4, %eax\n"
    "    or $0x600, %eax\n"         /* CR4.OSFXSR | CR4.OSXMMEXCPT */
    "    mov %eax, %cr4\n"
    "    fninit\n"
    "    call start_c\n"
    "2:  hlt\n"
    "    jmp 2b\n"
    /* one 16-byte stub per CPU exception vector: push its number, go to C */
    ".section .text.exceptions,\"ax\"\n"
    ".balign 16\n"
    "exception_stubs:\n"
    ".set vector, 0\n"
    ".rept 32\n"
    ".balign 16\n"
    "    push $vector\n"
    "    jmp exception_common\n"
    ".set vector, vector + 1\n"
    ".endr\n"
    "exception_common:\n"
    "    mov (%esp), %eax\n"
    "    and $-16, %esp\n"
    "    sub $12, %esp\n"
    "    push %eax\n"
    "    call cpu_exception\n"
    ".previous\n");

static inline void outb(uint16_t port, uint8_t value)
{
    __asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t value;
    __asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

void freestanding_console_putc(char c)
{
    while (!(inb(COM1 + 5u) & 0x20u)) /* line status: transmit holding register empty */
        ;
    outb(COM1, (uint8_t)c);
}

static void serial_init(void)
{
    outb(COM1 + 1u, 0x00u); /* no interrupts */
    outb(COM1 + 3u, 0x80u); /* divisor latch on */
    outb(COM1 + 0u, 0x01u); /* 115200 baud */
    outb(COM1 + 1u, 0x00u);
    outb(COM1 + 3u, 0x03u); /* 8 bits, no parity, one stop bit */
    outb(COM1 + 2u, 0xC7u); /* FIFOs on and cleared */
}

void exit(int status)
{
    outb(DEBUG_EXIT_PORT, (uint8_t)status);
    /* no isa-debug-exit device: an empty IDT makes the breakpoint a triple fault, which
     * stops QEMU under -no-reboot (exit 0: no status) instead of hanging */
    static const struct descriptor_table no_idt = {0, 0};
    __asm__ volatile("lidt %0\n int3" : : "m"(no_idt));
    for (;;)
        __asm__ volatile("hlt");
}

void abort(void) { exit(EXIT_CPU_EXCEPTION); }

void cpu_exception(uint32_t vector)
{
    printf("\n*** X86 CPU EXCEPTION %u ***\n", (unsigned)vector);
    exit(EXIT_CPU_EXCEPTION);
}

/* 32-bit interrupt gates for the 32 exception vectors (no device interrupts are enabled) */
static uint64_t idt[32];

static void idt_init(void)
{
    extern const uint8_t exception_stubs[];
    for (uint32_t v = 0; v < 32u; ++v) {
        const uint32_t handler = (uint32_t)(uintptr_t)(exception_stubs + 16u * v);
        idt[v] = (handler & 0xFFFFu) | (uint64_t)0x08u << 16 | (uint64_t)0x8Eu << 40 |
                 (uint64_t)(handler >> 16) << 48;
    }
    const struct descriptor_table idtr = {sizeof idt - 1, idt};
    __asm__ volatile("lidt %0" : : "m"(idtr));
}

__attribute__((noreturn)) void start_c(void)
{
    /* QEMU's loader put .data at its load address in "flash" (the ELF's physical
     * addresses), as a flash programmer would; it runs from RAM */
    memcpy(__data_start, __data_load, (size_t)(__data_end - __data_start));
    memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
    serial_init();
    idt_init();
    exit(main());
}
