"""Does a model fit the target's memory (``targets/*.toml``, or ``flash=`` / ``ram=``)?

Checked twice, so that a model too big never reaches the linker's "region overflowed":
:func:`check_library` before anything links the model's library (its own code, weights,
data and stack, and the planned arena and I/O), :func:`check_fits` on the footprint
program once linked (with the C library it pulls in). Both fail in one line: what is
needed, what is available, and what would help.
"""

import json
import re
from dataclasses import dataclass

from onnxcc.core.errors import OnnxccError
from onnxcc.core.report import human_bytes

from .elf_sizes import elf_size


@dataclass
class Budget:
    """The memory a model may use, and what the advice may suggest."""
    target: str            # the target's name
    flash_bytes: int       # 0: no limit
    ram_bytes: int         # 0: no limit
    opt: str = "speed"     # the build's opt= (opt=size is advice only when not already)
    quantized: bool = False  # an int8 model (int8 is advice only for a float one)


#: the ops of an int8 graph after the optimizer (QDQ groups become QLinear*/QGemm ops)
_INT8_OP = re.compile(r"^Q|Quantize|Integer$")


def is_quantized(tactics_path):
    """Whether the model of ``tactics_path`` (tactics.json) runs integer kernels."""
    with open(tactics_path, encoding="utf-8") as f:
        nodes = json.load(f)["nodes"]
    return any(_INT8_OP.search(node["op"]) for node in nodes)


def _versus(need, have):
    a, b = human_bytes(need), human_bytes(have)
    return (a, b) if a != b else (f"{need} B", f"{have} B")


def _advice(budget, flash_over, ram_over):
    """What would help, e.g. 'try opt=size, an int8 model, or a part with more flash (flash=SIZE)'."""
    ideas = []
    if flash_over and budget.opt != "size":
        ideas.append("opt=size")
    if not budget.quantized:
        ideas.append("an int8 model")
    over = [(m, o) for m, o, is_over in (("flash", "flash", flash_over), ("RAM", "ram", ram_over))
            if is_over]
    ideas.append(f"a part with more {' and '.join(m for m, _ in over)}, given as "
                 + " ".join(f"{o}=SIZE" for _, o in over))
    return "try " + (", ".join(ideas[:-1]) + ", or " if len(ideas) > 1 else "") + ideas[-1]


def _check(name, flash, ram, budget, what):
    over = []
    for memory, need, have in (("flash", flash, budget.flash_bytes),
                               ("ram", ram, budget.ram_bytes)):
        if have and need > have:
            a, b = _versus(need, have)
            over.append(f"{memory} needs {a}{what}, has {b}")
    if over:
        raise OnnxccError(f"model {name} does not fit {budget.target}: " + "; ".join(over),
                          hint=_advice(budget, flash > (budget.flash_bytes or flash),
                                       ram > (budget.ram_bytes or ram)))


def check_fits(sizes, budget):
    """Raise OnnxccError when the linked model (``size.json``'s ``sizes``) needs more
    flash or RAM than ``budget``."""
    _check(sizes["model"], sizes["flash"]["total"], sizes["ram"]["total"], budget, "")


def library_needs(lib_object, plan, stack_bytes):
    """(flash, ram) bytes of the model's relocatable library object ``lib_object`` with its
    ``plan`` (plan.json: the arena's pools and the I/O buffers) and worst-case stack."""
    sizes = elf_size(lib_object)
    pools = sum(pool["bytes"] for pool in plan["pools"])
    return (sizes["text"] + sizes["data"],
            sizes["data"] + sizes["bss"] + pools + plan["io_bytes"] + stack_bytes)


def check_library(name, lib_object, plan, stack_bytes, budget):
    """Raise OnnxccError when the model's library alone, before any link, needs more flash
    or RAM than ``budget``; returns its (flash, ram) needs."""
    flash, ram = library_needs(lib_object, plan, stack_bytes)
    _check(name, flash, ram, budget, " before the C library is linked")
    return flash, ram
