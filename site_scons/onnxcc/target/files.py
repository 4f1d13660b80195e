"""Reading target files (``targets/<name>.toml``) and toolchain files
(``toolchains/<name>.toml``): every field checked, aliases, ``target=native``."""

import json
import os
import platform
import tomllib

from onnxcc.core.errors import OnnxccError
from onnxcc.core.paths import PACKAGE_DIR, TARGETS_DIR, TOOLCHAINS_DIR

from .compiler import FEATURE_MACROS
from .description import CLOCKS, CYCLE_COUNTS, EXIT_STATUSES, Cpu, Target, Toolchain
from .host import host_cpu_flags, host_cpu_id


def _whole(value, least):
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _texts(value):
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _one_of(values):
    return (lambda v: v in values), f"one of {', '.join(json.dumps(v) for v in values)}"


# what each field of a target or toolchain file must be: (test, what it must be), or the
# fields of a table
TEXT = (lambda v: isinstance(v, str), "a string")
TEXTS = (_texts, "a list of strings")
FLAG = (lambda v: isinstance(v, bool), "true or false")
BYTES = (lambda v: _whole(v, 0), "a non-negative integer")
COUNT = (lambda v: _whole(v, 1), "a positive integer")
POSITIVE = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
            "a positive number")

TOOLCHAIN_FIELDS = {"description": TEXT, "prefix": TEXT, "packages": TEXTS, "cflags": TEXTS,
                    "linkflags": TEXTS, "libs": TEXTS}
TARGET_FIELDS = {
    "description": TEXT, "aliases": TEXTS, "toolchain": TEXT, "cflags": TEXTS,
    "isa_cflags": TEXTS, "linkflags": TEXTS, "harness_sources": TEXTS,
    "footprint_sources": TEXTS, "footprint_linkflags": TEXTS, "flash_bytes": BYTES,
    "ram_bytes": BYTES, "fma": FLAG, "runner_package": TEXT,
    "runner": (lambda v: _texts(v) and (not v or any("{elf}" in a for a in v)),
               'a list of strings that names the program as "{elf}" (empty: run it natively)'),
    "exit_status": _one_of(EXIT_STATUSES),
    "cpu": {"simd_bytes": (lambda v: _whole(v, 0) and v & (v - 1) == 0, "0 or a power of two"),
            "registers": COUNT, "l1d_bytes": BYTES, "l2_bytes": BYTES, "features": TEXTS,
            "fma_bytes": BYTES, "shuffle_ports": COUNT, "float_unit": FLAG},
    "bench": {"clock": _one_of(list(CLOCKS)), "runner_args": TEXTS,
              "instructions_per_tick": POSITIVE, "runs": COUNT, "warmup": BYTES},
    "cycles": {**{f: COUNT for f in CYCLE_COUNTS}, "pipelined_loads": FLAG},
    "native": {"vendor": TEXT, "families": (lambda v: isinstance(v, list) and all(
        _whole(f, 0) for f in v), "a list of CPU family numbers")},
}


def _bad_fields(data, fields, table=""):
    """What is wrong with the fields of ``data`` (a TOML table) by ``fields``, one clause
    per bad or unknown field."""
    bad = []
    for key, value in data.items():
        name = f"[{table}] {key}" if table else key
        rule = fields.get(key)
        if rule is None:
            bad.append(f"unknown field {name} (known fields{f' of [{table}]' if table else ''}: "
                       f"{', '.join(sorted(fields))})")
        elif isinstance(rule, dict):
            bad += _bad_fields(value, rule, key) if isinstance(value, dict) else \
                [f"{key} = {json.dumps(value, default=str)} must be a table ([{key}])"]
        elif not rule[0](value):
            bad.append(f"{name} = {json.dumps(value, default=str)} must be {rule[1]}")
    return bad


def _check_fields(data, fields, path, example):
    """One line naming every bad or unknown field of the target or toolchain file ``path``."""
    bad = _bad_fields(data, fields)
    if bad:
        raise OnnxccError("; ".join(bad), where=path,
                          hint=f"fix the file; {os.path.relpath(example, PACKAGE_DIR)} is a "
                               "commented one to follow")


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


def target_aliases():
    """{spelling: target} for the other names people type for a target (``aliases`` in
    its file: ``cortex-m4`` for armv7, ``rv32`` for riscv32, ...)."""
    aliases = {}
    for name in known_targets():
        with open(os.path.join(TARGETS_DIR, f"{name}.toml"), "rb") as f:
            try:
                spellings = tomllib.load(f).get("aliases", [])
            except tomllib.TOMLDecodeError:
                continue  # load_target names the broken file when it is asked for
        aliases.update((str(a).lower(), name) for a in spellings)
    return aliases


#: the target name that means "the best target this machine runs natively"
NATIVE = "native"


def native_target(flags=None, machine=None, cpu_id=None):
    """``target=native``: of the targets that run on this machine without an emulator, the
    one of the widest vectors whose ``[cpu]`` features ``flags`` (default: this machine's
    /proc/cpuinfo) all has; of those, one whose ``[native]`` table names this CPU
    (``cpu_id``: vendor, family) first, and never one whose table names other CPUs (its
    cost model is fitted to those). It names a target file, so the build is the same as
    one with that name: the build folder is that target's, and a build elsewhere
    reproduces it by naming it."""
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64"):
        raise OnnxccError(f"target=native knows x86-64 hosts; this machine is {machine}",
                          hint=f"name the target: {', '.join(known_targets())}")
    flags = host_cpu_flags() if flags is None else set(flags)
    vendor, family = cpu_id or host_cpu_id()

    def fitted(t):
        """Whether ``t`` is fitted to this CPU: 1 by its [native] table, 0 for any CPU."""
        if t.native is None:
            return 0
        return 1 if (t.native.get("vendor") == vendor and family in t.native.get("families", [])) \
            else None

    hosts = [load_target(n) for n in known_targets()]
    fitting = [t for t in hosts if not t.runner and t.toolchain.name == "gcc"
               and set(t.cpu.features) <= flags and fitted(t) is not None]
    if not fitting:
        raise OnnxccError("target=native: this CPU has none of the host targets' features "
                          "(x86_64 needs AVX2 and FMA)", hint="build for a Cortex-M, RISC-V or "
                          "x86-baremetal target, which run in qemu")
    return max(fitting, key=lambda t: (t.cpu.simd_bytes, t.cpu.registers, fitted(t))).name


def canonical_target(name):
    """The target file's name for ``name`` or one of its aliases (case-insensitive);
    ``name`` itself when it is neither (load_target then says what is known)."""
    if name in known_targets():
        return name
    if str(name).lower() == NATIVE:
        return native_target()
    return target_aliases().get(str(name).lower(), name)


def describe_targets():
    """'armv7 (cortex-m4, m4), ...': every target with its aliases, for help texts."""
    aliases = target_aliases()
    return ", ".join([name + (f" ({', '.join(a for a, t in aliases.items() if t == name)})"
                              if name in aliases.values() else "")
                      for name in known_targets()]
                     + [f"{NATIVE} (the host target of the widest vectors this machine has)"])


def load_target(name):
    name = canonical_target(name)
    path = os.path.join(TARGETS_DIR, f"{name}.toml")
    t = _read_toml(path, "target", name, [describe_targets()])
    _check_fields(t, TARGET_FIELDS, path, os.path.join(TARGETS_DIR, "armv7.toml"))
    if "toolchain" not in t:
        raise OnnxccError("no toolchain field", where=path, hint="name a toolchain file: "
                          f"toolchain = \"NAME\" of {', '.join(_stems(TOOLCHAINS_DIR))}")
    tc_name = t["toolchain"]
    tc_path = os.path.join(TOOLCHAINS_DIR, f"{tc_name}.toml")
    tc = _read_toml(tc_path, "toolchain", tc_name, _stems(TOOLCHAINS_DIR))
    _check_fields(tc, TOOLCHAIN_FIELDS, tc_path, os.path.join(TOOLCHAINS_DIR, "arm-none-eabi.toml"))
    toolchain = Toolchain(tc_name, tc.get("description", ""), tc.get("prefix", ""),
                          tc.get("packages", []), [_repo_path(a) for a in tc.get("cflags", [])],
                          tc.get("linkflags", []),
                          tc.get("libs", []))
    cpu = t.get("cpu", {})
    fma = bool(t.get("fma", False))
    exit_status = t.get("exit_status", "")
    unknown = [f for f in cpu.get("features", ()) if f not in FEATURE_MACROS]
    if unknown:
        raise OnnxccError(f"[cpu] features {unknown} are not among {sorted(FEATURE_MACROS)}",
                          where=path, hint="add the feature's C macro to target/compiler.py's FEATURE_MACROS")
    isa_cflags = list(t.get("isa_cflags", []))
    return Target(name, t.get("description", ""), toolchain,
                  [_repo_path(a) for a in t.get("cflags", [])] + isa_cflags,
                  [_repo_path(a) for a in t.get("linkflags", [])],
                  [os.path.join(PACKAGE_DIR, s) for s in t.get("harness_sources", [])],
                  int(t.get("flash_bytes", 0)), int(t.get("ram_bytes", 0)),
                  fma, t.get("runner", []), t.get("runner_package", ""),
                  Cpu(int(cpu.get("simd_bytes", 0)), int(cpu.get("registers", 16)), fma,
                      int(cpu.get("l1d_bytes", 0)), tuple(cpu.get("features", ())),
                      int(cpu.get("fma_bytes", 0)), int(cpu.get("shuffle_ports", 1)),
                      int(cpu.get("l2_bytes", 0)), bool(cpu.get("float_unit", True))),
                  t.get("bench", {}), exit_status=exit_status, cycles=t.get("cycles", {}),
                  footprint_sources=[os.path.join(PACKAGE_DIR, s) for s in t["footprint_sources"]]
                  if "footprint_sources" in t else None,
                  footprint_linkflags=[_repo_path(a) for a in t["footprint_linkflags"]]
                  if "footprint_linkflags" in t else None,
                  native=t.get("native"),
                  isa_cflags=isa_cflags)



def parse_bytes(text, option):
    """``'256K'``, ``'1M'``, ``'4096'`` -> bytes (K and M are 1024 and 1024*1024)."""
    units = {"K": 1024, "M": 1024 * 1024}
    t = str(text).strip().upper().removesuffix("B")
    scale = units.get(t[-1:], 1)
    digits = t[:-1] if t[-1:] in units else t
    if not digits.isdigit():
        raise OnnxccError(f"{option}={text} is not a size", hint=f"for example {option}=256K")
    return int(digits) * scale


def _repo_path(arg):
    """Flags name files relative to the package (a linker script, an include folder)."""
    candidate = os.path.join(PACKAGE_DIR, arg)
    return candidate if not arg.startswith("-") and os.path.exists(candidate) else arg
