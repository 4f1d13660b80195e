"""bench's estimate of Cortex-M cycles (verbs/cycles.py): the instructions qemu ran,
weighted by the core's instruction timings (the target file's [cycles])."""

import json
import subprocess

import pytest

from onnxcc.target import load_target
from onnxcc.verbs import cycles

M4 = load_target("armv7").cycles

# a loop of known cost on the Cortex-M4: two loads (2, then 1: pipelined), an add, a
# subtract and a taken branch (1 + refill 2), 1000 times: 8 cycles and 5 instructions a turn
LOOP = r"""
int main(void)
{
    static volatile unsigned data[2] = {1, 2};
    unsigned sum = 0;
    __asm__ volatile(
        "mov  r3, #1000\n"
        "1:\n"
        "ldr  r1, [%1]\n"
        "ldr  r2, [%1, #4]\n"
        "add  %0, %0, r1\n"
        "subs r3, r3, #1\n"
        "bne  1b\n"
        : "+r"(sum) : "r"(data) : "r1", "r2", "r3", "cc", "memory");
    return sum == 1000 ? 0 : 1;
}
"""


@pytest.mark.unit
@pytest.mark.parametrize("mnemonic, operands, after_memory, cost", [
    ("ldr", "r1, [r0]", False, 2), ("ldr.w", "r1, [r0, #4]", True, 1), ("str", "r1, [r0]", False, 1),
    ("push", "{r4, r5, r6, r7, lr}", False, 6), ("vpush", "{d8-d11}", False, 5),
    ("smlad", "r0, r1, r2, r0", False, 1), ("udiv", "r0, r1, r2", False, 7),
    ("vfma.f32", "s0, s1, s2", False, 3), ("vdiv.f32", "s0, s1, s2", False, 14),
    ("vldr", "s0, [r0]", False, 2), ("adds", "r0, #1", False, 1),
])
def test_instruction_costs_follow_the_cortex_m4_table(mnemonic, operands, after_memory, cost):
    assert cycles.instruction_cost(mnemonic, operands, after_memory, M4) == cost


def _program(tmp_path, name, source, target):
    """``source`` built as the target's verify programs are (its startup and board); the
    command that runs it."""
    (tmp_path / f"{name}.c").write_text(source)
    elf = str(tmp_path / f"{name}.elf")
    subprocess.run(["arm-none-eabi-gcc", *target.cflags, "-O2", str(tmp_path / f"{name}.c"),
                    *target.harness_sources, *target.linkflags, "-o", elf], check=True)
    return target.run_command(elf)


@pytest.mark.emulated
def test_a_loop_of_known_cost_is_estimated_exactly(tmp_path):
    """Against the same program with one turn of the loop: 999 more turns are 4,995 more
    instructions and 7,992 more cycles, loads pipelined and taken branches refilled."""
    t = load_target("armv7")
    many = cycles.estimate(_program(tmp_path, "many", LOOP, t), t.cycles)
    once = cycles.estimate(_program(tmp_path, "once", LOOP.replace("#1000", "#1")
                                    .replace("== 1000", "== 1"), t), t.cycles)
    assert many.instructions - once.instructions == 999 * 5
    assert many.cycles - once.cycles == 999 * 8


@pytest.mark.emulated
def test_bench_on_the_cortex_m4_reports_instructions_and_cycles(scons):
    r = scons("model=models/int8/kws_qdq.onnx", "target=armv7", "bench")
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("[bench]"))
    report = json.loads((scons.build_dir / "armv7" / "kws_qdq" / "bench" / "bench.json").read_text())
    assert f"; about {report['cycles_estimate']:,} cycles (" in line
    # loads, multiplies and branches cost more than one cycle; the DSP code is not all loads
    assert 1.1 < report["cycles_per_instruction"] < 2.0
    assert abs(report["cycles_estimate"] - report["median"] * report["cycles_per_instruction"]) \
        < report["median"] * 1e-4


@pytest.mark.emulated
def test_a_traced_run_that_never_ends_is_stopped_at_its_timeout(tmp_path):
    t = load_target("armv7")
    spin = _program(tmp_path, "spin", "int main(void) { for (volatile int i = 0;; ++i) {} }\n", t)
    with pytest.raises(subprocess.TimeoutExpired):
        cycles.estimate(spin, t.cycles, timeout=3)


# 400,000 instructions between two reads of SysTick's counter (its reload the largest)
TICKS = r"""
#include <stdint.h>
#include <stdio.h>
#define SYST ((volatile uint32_t *)0xE000E010u) /* CSR, RVR, CVR */
int main(void)
{
    SYST[1] = 0xFFFFFFu;
    SYST[2] = 0u;
    SYST[0] = 5u; /* the processor clock, enabled */
    const uint32_t t0 = SYST[2];
    uint32_t n = 200000u;
#if defined(__ARM_ARCH_6M__) /* gcc hands Thumb-1 asm the divided syntax */
    __asm__ volatile(".syntax unified\n1: subs %0, %0, #1\n\tbne 1b\n.syntax divided" : "+l"(n));
#else
    __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+l"(n));
#endif
    const uint32_t t1 = SYST[2];
    printf("ticks %lu\n", (unsigned long)((t0 - t1) & 0xFFFFFFu));
    return 0;
}
"""


@pytest.mark.emulated
@pytest.mark.parametrize("name", ["cortex-m0", "cortex-m0plus", "cortex-m3", "armv7", "cortex-m7",
                                  "cortex-m33", "cortex-m55"])
def test_systick_counts_the_instructions_per_tick_the_target_says(tmp_path, name):
    """bench multiplies SysTick's ticks by [bench] instructions_per_tick: each board's
    clock, read against a loop of known length under -icount shift=0."""
    t = load_target(name)
    assert t.bench["clock"] == "systick"
    cmd = _program(tmp_path, "ticks", TICKS, t)
    r = subprocess.run(cmd[:1] + t.bench["runner_args"] + cmd[1:], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    ticks = int(r.stdout.split("ticks ")[1].split()[0])
    assert abs(ticks * t.bench["instructions_per_tick"] - 400000) <= t.bench["instructions_per_tick"] + 8
