"""What a build compiles for: ``target=``, ``board=``, ``flash=``, ``ram=`` and
``float_abi=`` resolved to one Target, and a note on whose memory its fit is checked
against."""

import dataclasses

from onnxcc.core.errors import OnnxccError
from onnxcc.core.report import human_bytes

from .boards import load_board
from .files import canonical_target, load_target, parse_bytes

FLOAT_ABIS = ("hard", "softfp", "soft")
#: a float in an integer register: the general registers a soft-float tile may fill
SOFT_FLOAT_REGISTERS = 12


def _with_float_abi(tgt, abi):
    """``tgt`` compiled with ``-mfloat-abi=abi`` instead of its own: softfp passes floats in
    integer registers and still computes them on the FPU; soft computes them with the
    compiler's library (no FPU instruction: no fused multiply-add either)."""
    if abi not in FLOAT_ABIS:
        raise OnnxccError(f"float_abi={abi} is not one of {', '.join(FLOAT_ABIS)}")
    own = [f.split("=", 1)[1] for f in tgt.cflags if f.startswith("-mfloat-abi=")]
    if not own:
        raise OnnxccError(f"float_abi={abi}: target {tgt.name} has no float ABI to choose",
                          hint="float_abi= is for the Arm targets; on RISC-V the ABI is the "
                               "target's: riscv32 (ilp32f) or riscv32imac (ilp32)")
    if own[0] == "soft" and abi != "soft":
        raise OnnxccError(f"float_abi={abi}: target {tgt.name} has no FPU",
                          hint="float_abi=soft, or a target with an FPU")
    tgt.cflags = [f"-mfloat-abi={abi}" if f.startswith("-mfloat-abi=") else f for f in tgt.cflags
                  if not (abi == "soft" and f.startswith("-mfpu="))]
    if abi == "soft":
        tgt.fma = False
        tgt.cpu = dataclasses.replace(tgt.cpu, fma=False, registers=SOFT_FLOAT_REGISTERS,
                                      float_unit=False)
    return tgt


def build_target(target=None, board="", flash=None, ram=None, float_abi=""):
    """``(Target, memory)``: what a build compiles for -- ``target``, or the core of
    ``board`` (both: they must agree; neither: x86_64), with ``float_abi`` if given -- with
    the flash and RAM its fit check uses (``flash``/``ram``, else the board's, else the
    target file's), and ``memory``, whose memory that is ('rp2350's 4.0 MiB flash, 520.0
    KiB RAM'), when the build output should say it."""
    part = load_board(board) if board else None
    if part and target and canonical_target(target) != part.target:
        raise OnnxccError(f"board={board} is a {part.target} part, not {target}",
                          hint="leave target= out: board= chooses it")
    tgt = load_target(part.target if part else target or "x86_64")
    if float_abi:
        tgt = _with_float_abi(tgt, float_abi)
    if part:
        tgt.flash_bytes, tgt.ram_bytes = part.flash_bytes, part.ram_bytes
    if flash:
        tgt.flash_bytes = parse_bytes(flash, "flash")
    if ram:
        tgt.ram_bytes = parse_bytes(ram, "ram")
    memory = f"{human_bytes(tgt.flash_bytes)} flash, {human_bytes(tgt.ram_bytes)} RAM"
    if part:
        note = f"{board}'s {memory}"
    elif flash or ram or not tgt.flash_bytes:
        note = ""
    else:
        note = f"the emulated board's {memory}; board= or flash=, ram= for your part"
    return tgt, note
