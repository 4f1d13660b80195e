"""Targets (``targets/<name>.toml``), toolchains (``toolchains/<name>.toml``) and boards
(``boards/<part>.toml``).

A target says what CPU the code runs on and how to run a program there; a toolchain says
which compiler builds for it. Adding a target is adding one small file.
"""

from .boards import Board, catalog, known_boards, load_board
from .choice import FLOAT_ABIS, build_target
from .compiler import FEATURE_MACROS, UNUSED_ERRORS, WARNINGS, check_env_flags
from .description import CLOCKS, EXIT_STATUSES, Cpu, Target, Toolchain
from .files import (NATIVE, canonical_target, describe_targets, known_targets, load_target,
                    native_target, parse_bytes, target_aliases)
from .host import host_cpu_flags, host_cpu_id, run_captured

__all__ = ["CLOCKS", "EXIT_STATUSES", "FEATURE_MACROS", "NATIVE", "UNUSED_ERRORS", "WARNINGS",
           "FLOAT_ABIS", "Board", "Cpu", "Target", "Toolchain", "build_target", "canonical_target", "catalog",
           "check_env_flags", "describe_targets", "host_cpu_flags", "host_cpu_id", "known_boards",
           "known_targets", "load_board", "load_target", "native_target", "parse_bytes",
           "run_captured", "target_aliases"]
