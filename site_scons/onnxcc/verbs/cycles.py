"""Estimated cycles of a program on a Cortex-M core: the instructions qemu executed,
weighted by the core's documented timings.

qemu counts instructions, not cycles. Run with ``-d in_asm,exec,nochain`` it prints every
translation block it makes (the disassembly of its instructions) and every time it runs
one, so the trace gives each executed instruction, and for each block that ends in a
branch, whether the branch was taken (the next block is not the one after it). Each
instruction costs what the core's technical reference manual says (the target file's
``[cycles]``: loads 2, a load after a load or store 1 where the core pipelines them,
multiply-accumulates 1, a taken branch 1 + the pipeline refill, ``LDM``/``PUSH`` 1 + the
registers, ...). What it cannot see: wait states of flash and RAM (it assumes none), the
exact refill of each branch (the TRM gives 1 to 3; the table takes one value), stalls
between dependent instructions beyond the load pipelining, interrupts. docs/speed.md
compares it with published cycle counts.
"""

import re
import subprocess
import threading
from dataclasses import dataclass, field

_LINE = re.compile(r"^0x([0-9a-f]+):\s+([0-9a-f]{4})(?: ([0-9a-f]{4}))?\s+(\S+)\s*(.*)$")
_CONDITIONS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge",
               "lt", "gt", "le")


def _registers(operands):
    """How many registers a register list ``{r4, r5, lr}`` / ``{d8-d15}`` names."""
    inside = operands[operands.find("{") + 1:operands.find("}")]
    count = 0
    for item in filter(None, (i.strip() for i in inside.split(","))):
        if "-" in item:
            a, b = item.split("-")
            count += int(b[1:]) - int(a[1:]) + 1
        else:
            count += 1
    return count


def _branch(mnemonic, operands):
    """'b' for a branch (taken: 1 + refill), 'pc' for a load of the PC (POP {pc}, LDR pc),
    None for no change of flow."""
    m = mnemonic.split(".")[0]
    if m in ("b", "bl", "bx", "blx", "cbz", "cbnz", "tbb", "tbh") or (
            m[:1] == "b" and m[1:] in _CONDITIONS):
        return "b"
    if (m in ("pop", "ldm", "ldmia", "ldmfd") and "pc" in operands) or (
            m.startswith("ldr") and operands.startswith("pc")):
        return "pc"
    return None


def instruction_cost(mnemonic, operands, after_memory, c):
    """Cycles of one instruction that does not branch (a branch's own cycle included),
    ``after_memory``: the one before it loaded or stored."""
    m = mnemonic.split(".")[0]
    if m in ("push", "pop", "ldm", "ldmia", "ldmdb", "ldmfd", "stm", "stmia", "stmdb",
             "stmfd", "vpush", "vpop", "vldmia", "vldmdb", "vstmia", "vstmdb", "vldm", "vstm"):
        return c["multiple"] + _registers(operands)
    if m in ("vldr", "vstr"):
        return c["fp_load"]
    if m.startswith("ldr"):
        load = c["load"] + (1 if m == "ldrd" else 0)
        return load - 1 if after_memory and c["pipelined_loads"] else load
    if m.startswith("str"):
        return c["store"] + (1 if m == "strd" else 0)
    if m in ("sdiv", "udiv"):
        return c["div"]
    if m in ("umull", "smull", "umlal", "smlal"):
        return c["mul_long"]
    if m in ("mla", "mls"):
        return c["mla"]
    if m in ("mul", "muls"):
        return c["mul"]
    if m in ("vdiv", "vsqrt"):
        return c["fp_div"]
    if m in ("vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms"):
        return c["fp_mac"]
    if m.startswith("v"):
        return c["fp"]
    return c["alu"]


def _block_costs(lines, c):
    """(instructions, cycles when its branch is not taken, extra cycles when taken, the
    address after the block) of one translation block's disassembly."""
    cycles, after_memory, end, extra = 0, False, 0, 0
    for address, size, mnemonic, operands in lines:
        kind = _branch(mnemonic, operands)
        # a branch's own cycle; a load of the PC costs its load; either refills when taken
        cycles += c["alu"] if kind == "b" else instruction_cost(mnemonic, operands,
                                                               after_memory, c)
        extra = c["refill"] if kind else 0
        m = mnemonic.split(".")[0]
        after_memory = m.startswith(("ldr", "str")) and kind is None
        end = address + size
    return len(lines), cycles, extra, end


@dataclass
class Traced:
    """What a traced run gives: the run itself (its exit status and what it printed), its
    instructions and estimated cycles, and per step (see ``marker``) the (instructions,
    cycles) of one of its invocations."""
    process: subprocess.CompletedProcess
    instructions: int
    cycles: int
    steps: list = field(default_factory=list)


class _Steps:
    """The cost of each step of a profile program: the code run between one call of the
    ``marker`` function and the next, within the caller of the markers (until ``main``
    runs again), averaged over the caller's invocations."""

    def __init__(self, marker):
        self.marker, self.inside, self.step = marker, False, -1
        self.sums, self.invocations = [], 0

    def add(self, symbol, instructions, cycles):
        if symbol == self.marker:
            if not self.inside:
                self.inside, self.step = True, -1
                self.invocations += 1
            if self.step < 0 or self.sums[self.step][0]:
                self.step += 1  # (a marker's own blocks, one after another, are one marker)
            if self.step == len(self.sums):
                self.sums.append([0, 0])
        elif symbol == "main":
            self.inside = False
        elif self.inside and self.step >= 0:
            self.sums[self.step][0] += instructions
            self.sums[self.step][1] += cycles

    def result(self):
        n = max(1, self.invocations)
        return [(i / n, c / n) for i, c in self.sums]


def estimate(command, cycles_table, timeout=1800, marker=None):
    """:class:`Traced`: run ``command`` (a qemu-system command line) with its execution
    traced, every instruction it executed weighted by ``cycles_table``; with ``marker``,
    also the cost of each step between the calls of that function (profile.c's). As
    run_captured: subprocess.TimeoutExpired when it runs longer than ``timeout`` seconds
    (killed), the exit status for the caller to judge."""
    c = dict(cycles_table)
    c.setdefault("pipelined_loads", False)
    traced = command[:1] + ["-d", "in_asm,exec,nochain", "-D", "/dev/stderr"] + command[1:]
    proc = subprocess.Popen(traced, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", stdin=subprocess.DEVNULL)
    blocks = {}        # host code address -> costs of the block translated there
    pending = []       # the disassembly of the block being read
    last = None        # the costs of the block run before
    steps = _Steps(marker) if marker else None
    instructions = cycles = 0
    expired, out = [], []
    timer = threading.Timer(timeout, lambda: (expired.append(True), proc.kill()))
    timer.start()
    # what it prints, read beside the trace: a full pipe would stop it
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    try:
        for line in proc.stderr:
            if line.startswith("0x"):
                m = _LINE.match(line)
                if m:
                    pending.append((int(m.group(1), 16), 4 if m.group(3) else 2,
                                    m.group(4), m.group(5)))
                continue
            if not line.startswith("Trace "):
                continue
            # "Trace 0: <host code> [<cs_base>/<pc>/<flags>/<cflags>] <symbol>"
            fields = line.split(" ", 4)
            if len(fields) < 4:
                continue
            host, pc = fields[2], int(fields[3][1:].split("/")[1], 16)
            if pending:  # a block is translated just before it first runs
                blocks[host] = _block_costs(pending, c)
                pending = []
            costs = blocks.get(host)
            if costs is None:
                continue
            taken = last[2] if last is not None and pc != last[3] else 0
            instructions += costs[0]
            cycles += costs[1] + taken  # (a taken branch ends the block before)
            if steps:
                steps.add(fields[4].strip() if len(fields) > 4 else "", costs[0],
                          costs[1] + taken)
            last = costs
        reader.join()
        proc.wait()
    finally:
        timer.cancel()
    if expired:
        raise subprocess.TimeoutExpired(command, timeout)
    return Traced(subprocess.CompletedProcess(command, proc.returncode, "".join(out), ""),
                  instructions, cycles, steps.result() if steps else [])
