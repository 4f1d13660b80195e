"""Targets (``targets/<name>.toml``) and toolchains (``toolchains/<name>.toml``).

A target says what CPU the code runs on and how to run a program there; a toolchain says
which compiler builds for it. Adding a target is adding one small file.
"""

from .compiler import FEATURE_MACROS, UNUSED_ERRORS, WARNINGS, check_env_flags
from .description import CLOCKS, EXIT_STATUSES, Cpu, Target, Toolchain
from .files import (NATIVE, canonical_target, describe_targets, known_targets, load_target,
                    native_target, parse_bytes, target_aliases, with_memory)
from .host import host_cpu_flags, host_cpu_id, run_captured

__all__ = ["CLOCKS", "EXIT_STATUSES", "FEATURE_MACROS", "NATIVE", "UNUSED_ERRORS", "WARNINGS",
           "Cpu", "Target", "Toolchain", "canonical_target", "check_env_flags",
           "describe_targets", "host_cpu_flags", "host_cpu_id", "known_targets", "load_target",
           "native_target", "parse_bytes", "run_captured", "target_aliases", "with_memory"]
