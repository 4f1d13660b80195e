<%doc>
  now(): what a run costs on the target, for bench.c and profile.c (verbs/bench.py explains the
  clocks): "monotonic" ns, "cputime" ns of CPU time of the calling thread (verbs/profile.py: under
  QEMU's user mode on a busy machine), "systick" SysTick ticks of the processor clock (an overflow
  interrupt extends its 24 bits; start_clock() sets it up), "minstret" instructions.
</%doc>

## Includes and defines that must come first in the file.
<%def name="head(clock)">\
% if clock in ("monotonic", "cputime"):
#define _POSIX_C_SOURCE 199309L
#include <stdlib.h>
#include <time.h>
% endif
</%def>

## now() (and start_clock() for SysTick).
<%def name="functions(clock)">\
% if clock in ("monotonic", "cputime"):
static uint64_t now(void)
{
    struct timespec t;
    clock_gettime(${'CLOCK_MONOTONIC' if clock == 'monotonic' else 'CLOCK_THREAD_CPUTIME_ID'}, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
% elif clock == "systick":
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)

typedef void (*vector_t)(void);
static vector_t vectors[128] __attribute__((aligned(512)));
static volatile uint32_t wraps;

static void systick_wrapped(void)
{
    ++wraps;
}

/* SysTick counts down from 2^24 - 1 on the processor clock and interrupts when it wraps:
 * the vector table is copied to RAM so that its SysTick entry can count the wraps. */
static void start_clock(void)
{
    const vector_t *rom = (const vector_t *)SCB_VTOR;
    for (int k = 0; k < 16; ++k)
        vectors[k] = rom[k];
    vectors[15] = systick_wrapped;
    SCB_VTOR = (uint32_t)vectors;
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 7u; /* enable, interrupt, processor clock */
    while (SYST_CVR == 0u) {
        /* until the first reload: read at 0 before it, now() would run backwards */
    }
}

static uint64_t now(void)
{
    uint32_t w, v;
    do {
        w = wraps;
        v = SYST_CVR;
    } while (w != wraps);
    return (uint64_t)w * 0x1000000u + (0xFFFFFFu - v);
}
% else:
static uint64_t now(void)
{
#if __riscv_xlen == 32
    uint32_t hi, lo, again;
    do {
        __asm__ volatile("csrr %0, minstreth" : "=r"(hi));
        __asm__ volatile("csrr %0, minstret" : "=r"(lo));
        __asm__ volatile("csrr %0, minstreth" : "=r"(again));
    } while (hi != again);
    return (uint64_t)hi << 32 | lo;
#else
    uint64_t n;
    __asm__ volatile("csrr %0, minstret" : "=r"(n));
    return n;
#endif
}
% endif
</%def>
