"""Boards (``boards/<part>.toml``): a part people ship on, as the target its core builds
for and the flash, RAM and clock of the part. ``board=rp2350`` builds for cortex-m33 and
checks the fit against 4 MiB of flash and 520 KiB of RAM."""

import os
from dataclasses import dataclass

from onnxcc.core.errors import OnnxccError
from onnxcc.core.paths import BOARDS_DIR
from onnxcc.core.report import human_bytes

from .files import (COUNT, TEXT, _check_fields, _read_toml, _stems, canonical_target, known_targets,
                    load_target, parse_bytes, target_aliases)

BOARD_FIELDS = {"description": TEXT, "target": TEXT, "flash": TEXT, "ram": TEXT,
                "clock_mhz": COUNT}


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    target: str       # the canonical name of the target its core builds for
    flash_bytes: int
    ram_bytes: int
    clock_hz: int


def known_boards():
    return _stems(BOARDS_DIR)


def load_board(name):
    path = os.path.join(BOARDS_DIR, f"{name}.toml")
    b = _read_toml(path, "board", name, known_boards())
    example = os.path.join(BOARDS_DIR, "rp2350.toml")
    _check_fields(b, BOARD_FIELDS, path, example)
    missing = [f for f in BOARD_FIELDS if f not in b]
    if missing:
        raise OnnxccError(f"no {', '.join(missing)} field", where=path,
                          hint=f"a board file has {', '.join(BOARD_FIELDS)}")
    target = canonical_target(b["target"])
    if target not in known_targets():
        raise OnnxccError(f"target = \"{b['target']}\" is not a target", where=path,
                          hint=f"one of {', '.join(known_targets())}")
    return Board(name, b["description"], target, parse_bytes(b["flash"], "flash"),
                 parse_bytes(b["ram"], "ram"), b["clock_mhz"] * 1_000_000)


def catalog():
    """The targets (the names they also go by, the memory of the board they run on in
    emulation) and the boards (their target, memory and clock), as lines of text for
    ``scons -h`` and ``onnxcc targets``."""
    aliases = target_aliases()
    lines = ["Targets (memory: the emulated board's; board= or flash=, ram= give your part's):"]
    for name in known_targets():
        t = load_target(name)
        names = sorted(a for a, n in aliases.items() if n == name and a != name)
        memory = (f"{human_bytes(t.flash_bytes)} flash, {human_bytes(t.ram_bytes)} RAM"
                  if t.flash_bytes else "no memory limit")
        lines.append(f"  {name:<14} {memory:<30} {t.description}"
                     + (f" [{', '.join(names)}]" if names else ""))
    lines.append("Boards (board=NAME builds for its target and checks the fit against its memory):")
    for name in known_boards():
        b = load_board(name)
        memory = (f"{human_bytes(b.flash_bytes)} flash, {human_bytes(b.ram_bytes)} RAM, "
                  f"{b.clock_hz // 1_000_000} MHz")
        lines.append(f"  {name:<12} {b.target:<14} {memory:<38} {b.description}")
    return lines
