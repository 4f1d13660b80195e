"""Targets (``targets/<name>.toml``) and toolchains (``toolchains/<name>.toml``).

A target says what CPU the code runs on and how to run a program there; a toolchain says
which compiler builds for it. Adding a target is adding one small file.
"""

import os
import shutil
import tomllib
from dataclasses import dataclass, field

from .errors import OnnxccError
from .paths import REPO_ROOT, TARGETS_DIR, TOOLCHAINS_DIR


@dataclass
class Toolchain:
    name: str
    description: str
    prefix: str
    packages: list
    cflags: list
    linkflags: list = field(default_factory=list)
    libs: list = field(default_factory=list)

    def tool(self, name):
        return self.prefix + name


@dataclass
class Target:
    name: str
    description: str
    toolchain: Toolchain
    cflags: list
    linkflags: list
    harness_sources: list
    flash_bytes: int
    ram_bytes: int
    fma: bool
    runner: list
    runner_package: str

    def run_command(self, elf):
        if not self.runner:
            return [os.path.abspath(elf)]
        return [arg.replace("{elf}", elf) for arg in self.runner]

    def check_tools(self, need_runner, compiler=True):
        """One clear line naming the Debian package when a compiler (unless the build brings
        its own) or the emulator is missing."""
        cc = self.toolchain.tool("gcc")
        if compiler and shutil.which(cc) is None:
            raise OnnxccError(f"target {self.name}: compiler '{cc}' not found",
                              hint=f"install it: apt-get install {' '.join(self.toolchain.packages)}")
        if need_runner and self.runner and shutil.which(self.runner[0]) is None:
            raise OnnxccError(f"target {self.name}: emulator '{self.runner[0]}' not found",
                              hint=f"install it: apt-get install {self.runner_package}")


def _read_toml(path, kind, name, known):
    if not os.path.isfile(path):
        raise OnnxccError(f"unknown {kind} '{name}'", hint=f"known {kind}s: {', '.join(known)}")
    with open(path, "rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise OnnxccError(f"invalid {kind} file: {e}", where=path) from None


def _stems(folder):
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".toml"))


def known_targets():
    return _stems(TARGETS_DIR)


def load_target(name):
    t = _read_toml(os.path.join(TARGETS_DIR, f"{name}.toml"), "target", name, known_targets())
    tc_name = t["toolchain"]
    tc = _read_toml(os.path.join(TOOLCHAINS_DIR, f"{tc_name}.toml"), "toolchain", tc_name,
                    _stems(TOOLCHAINS_DIR))
    toolchain = Toolchain(tc_name, tc.get("description", ""), tc.get("prefix", ""),
                          tc.get("packages", []), tc.get("cflags", []), tc.get("linkflags", []),
                          tc.get("libs", []))
    return Target(name, t.get("description", ""), toolchain, t.get("cflags", []),
                  [_repo_path(a) for a in t.get("linkflags", [])],
                  [os.path.join(REPO_ROOT, s) for s in t.get("harness_sources", [])],
                  int(t.get("flash_bytes", 0)), int(t.get("ram_bytes", 0)),
                  bool(t.get("fma", False)), t.get("runner", []), t.get("runner_package", ""))


def parse_bytes(text, option):
    """``'256K'``, ``'1M'``, ``'4096'`` -> bytes (K and M are 1024 and 1024*1024)."""
    units = {"K": 1024, "M": 1024 * 1024}
    t = str(text).strip().upper().removesuffix("B")
    scale = units.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in units else t
    if not digits.isdigit():
        raise OnnxccError(f"{option}={text} is not a size", hint=f"for example {option}=256K")
    return int(digits) * scale


def with_memory(target, flash=None, ram=None):
    """``target`` with its flash and RAM limits replaced (to model the chip a user ships on)."""
    if flash:
        target.flash_bytes = parse_bytes(flash, "flash")
    if ram:
        target.ram_bytes = parse_bytes(ram, "ram")
    return target


def _repo_path(arg):
    """Link flags name files relative to the repository (a linker script)."""
    candidate = os.path.join(REPO_ROOT, arg)
    return candidate if not arg.startswith("-") and os.path.exists(candidate) else arg
