"""Where the bytes of a model go: flash and RAM of its footprint program.

Every model build links a small *footprint* program: a ``main`` that calls
``<name>_run(inputs, outputs, arena)`` on static buffers ``<name>_footprint_arena``
(``<name>_footprint_arena_<pool>`` with pools), ``<name>_footprint_input<k>`` and
``<name>_footprint_output<k>`` (none with io=arena). On bare-metal targets it is a
minimal link (a reset handler that calls ``main``; no semihosting, no stdio, no heap), so
its C library is exactly what the model's library pulls in.

One module per job: :mod:`.elf_sizes` splits the ELF by category and symbol,
:mod:`.stack` reads the stack usage, :mod:`.fit` checks a model against the target's
memory, :mod:`.size_gate` compares with a CI baseline; :func:`measure` makes ``size.json``
of the first two. The tables are printed by :mod:`onnxcc.report`.
"""

from .elf_sizes import ELF_KEYS, FLASH_KEYS, RAM_KEYS, SYMBOL_KEYS, elf_size, section_kind, split
from .stack import read_su, stack_usage

__all__ = ["ELF_KEYS", "FLASH_KEYS", "RAM_KEYS", "SYMBOL_KEYS", "elf_size", "measure",
           "read_su", "section_kind", "stack_usage"]


def measure(elf_path, name, su_paths, program_objects=()):
    """Flash and RAM of model ``name`` from its footprint ELF, the library's .su files and
    the objects of the footprint program itself (its main and startup code).

    Returns ``{"model", "flash": {kernels, runtime, model, weights, libc, other, total},
    "ram": {arena, io, data, bss, stack, total, stack_exact}, "elf": {text, data, bss},
    "symbols": {runtime, libc, other: {symbol: bytes}}}`` (bytes). flash.total = text +
    data and its categories add up to it; ram.total = data + bss + stack and arena + io +
    data + bss + stack = total.
    """
    flash, symbols, buffers, sizes = split(elf_path, name, program_objects)
    stack, exact = stack_usage(name, su_paths)
    ram = {
        "arena": sum(buffers["arena"].values()),
        "io": sum(buffers["io"].values()),
        # A buffer is counted once: taken out of the section column it sits in.
        "data": sizes["data"] - buffers["arena"]["data"] - buffers["io"]["data"],
        "bss": sizes["bss"] - buffers["arena"]["bss"] - buffers["io"]["bss"],
        "stack": stack,
        "total": sizes["data"] + sizes["bss"] + stack,
        "stack_exact": exact,
    }
    return {"model": name, "flash": flash, "ram": ram, "elf": sizes, "symbols": symbols}
