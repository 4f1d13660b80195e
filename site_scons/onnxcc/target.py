"""Targets (``targets/<name>.toml``) and toolchains (``toolchains/<name>.toml``).

A target says what CPU the code runs on and how to run a program there; a toolchain says
which compiler builds for it. Adding a target is adding one small file.
"""

import functools
import json
import os
import platform
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field

from onnxcc.core.errors import OnnxccError
from onnxcc.core.paths import REPO_ROOT, TARGETS_DIR, TOOLCHAINS_DIR

#: the warnings the generated C (and the runtime and harnesses beside it) compiles under on
#: every target (tests and the fuzzer fail on any): -Wshadow because a kernel local named
#: like a parameter once read the wrong operand (docs/trust.md, "Warnings")
WARNINGS = ("-Wall", "-Wextra", "-Wshadow")

#: the warnings that stop any build of the library's C (the generated files and the
#: runtime, whichever compiler and flags): a kernel handed an operand it never reads, or a
#: local it computes and drops, computes without it (docs/trust.md, "Warnings")
UNUSED_ERRORS = ("-Werror=unused-parameter", "-Werror=unused-variable",
                 "-Werror=unused-but-set-variable")


def run_captured(command, timeout, env=None):
    """Run ``command`` (a program, natively or in an emulator), with the variables ``env``
    added to the environment; CompletedProcess with text stdout and stderr. They go to
    files, not pipes: QEMU's semihosting console loses the end of a long output (a verify
    harness prints every output in hex) when a pipe fills while the machine is busy.
    subprocess.TimeoutExpired after ``timeout`` seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.run(command, stdout=out, stderr=err, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode,
                                           out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))


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


@dataclass(frozen=True)
class Cpu:
    """What the kernels may use on a target (its ``[cpu]`` table): tactics and tile
    sizes are chosen from this, and it is recorded in tactics.json."""
    simd_bytes: int = 0  # width of the float vectors the kernels use; 0: scalar only
    registers: int = 16  # float (or vector) registers a microkernel may fill
    fma: bool = False  # fused multiply-add instructions (a*b+c in one rounding)
    l1d_bytes: int = 0  # data cache a tile should fit in; 0: no cache (flash/SRAM)
    features: tuple = ()  # ISA extensions: 'avx2', 'fma', 'neon', 'dsp' ... (FEATURE_MACROS)
    # bytes of multiply-adds the core issues a cycle; 0: two vectors' worth, what the
    # estimates of ops/tiling.py count. AMD Zen 4 runs its 512-bit vectors through 256-bit
    # units (64), Intel's AVX-512 server cores have two 512-bit units (128)
    fma_bytes: int = 0
    # vector shuffles issued a cycle: Intel's one shuffle port, Zen 4's two pipes
    shuffle_ports: int = 1

    def lanes(self, itemsize=4):
        """Elements of ``itemsize`` bytes per vector (1: scalar code)."""
        return max(1, self.simd_bytes // itemsize)

    def as_dict(self):
        return {"simd_bytes": self.simd_bytes, "registers": self.registers, "fma": self.fma,
                "l1d_bytes": self.l1d_bytes, "features": list(self.features),
                "fma_bytes": self.fma_bytes, "shuffle_ports": self.shuffle_ports}

    @classmethod
    def from_dict(cls, d):
        """The Cpu ``as_dict`` wrote (tactics.json)."""
        return cls(**dict(d, features=tuple(d["features"])))


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
    cpu: Cpu = Cpu()
    bench: dict = field(default_factory=dict)  # how `bench` counts (bench.py)
    exit_status: str = ""  # how the runner's exit code carries the program's (EXIT_STATUSES)
    # the size report's footprint program: a minimal link on bare-metal targets (by
    # default, like the verify harness)
    footprint_sources: list = None
    footprint_linkflags: list = None
    # the cache (L2) a row band of an interior block should fit (memory/bands.py, the
    # [cpu] table's l2_bytes); 0: no block runs in bands unless forced
    l2_bytes: int = 0
    # the CPUs target=native picks this target for before any other (its [native] table:
    # vendor, families), when the cost model is fitted to them; None: any CPU with its
    # features
    native: dict = None
    # the last of ``cflags``: the ones that turn on the vector and float units the kernels
    # are written for and leave the ABI of <name>_run alone (x86's -mavx2 -mfma): a
    # toolchain='env' build puts them before the environment's own flags (check_env_flags)
    isa_cflags: list = field(default_factory=list)

    def __post_init__(self):
        if self.footprint_sources is None:
            self.footprint_sources = self.harness_sources
        if self.footprint_linkflags is None:
            self.footprint_linkflags = self.linkflags

    def run_command(self, elf):
        if not self.runner:
            return [os.path.abspath(elf)]
        return [arg.replace("{elf}", elf) for arg in self.runner]

    def program_status(self, returncode):
        """The exit status of the program from its runner's exit code (None: the program
        did not exit by itself, e.g. QEMU stopped on a CPU reset)."""
        if self.exit_status == "isa-debug-exit":  # QEMU exits with (status << 1) | 1
            return returncode >> 1 if returncode & 1 else None
        return returncode

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
        if need_runner and not self.runner:
            missing = [f for f in self.cpu.features if f not in host_cpu_flags()]
            if missing:
                raise OnnxccError(f"target {self.name} needs CPU features this machine lacks: "
                                  f"{', '.join(missing)}",
                                  hint="build for a target file whose [cpu] features it has")


def _cpuinfo(keys):
    """{key: value} of the first processor's ``keys`` in /proc/cpuinfo (those it has)."""
    found = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in keys and key not in found:
                    found[key] = value.strip()
                if line.strip() == "":  # the first processor's block ends
                    break
    except OSError:
        pass
    return found


def host_cpu_flags():
    """The ISA extensions of the machine we run on (/proc/cpuinfo 'flags'); empty when unknown."""
    info = _cpuinfo(("flags", "Features"))
    return set(info.get("flags", info.get("Features", "")).split())


def host_cpu_id():
    """(vendor_id, cpu family) of the machine we run on, from /proc/cpuinfo (for
    ``[native]`` tables); ("", -1) when unknown."""
    info = _cpuinfo(("vendor_id", "cpu family"))
    family = info.get("cpu family", "")
    return info.get("vendor_id", ""), int(family) if family.isdigit() else -1


#: ``exit_status`` of a target file: "" (the runner's exit code is the program's) or
#: "isa-debug-exit" (QEMU's debug-exit device: it exits with (status << 1) | 1)
EXIT_STATUSES = ("", "isa-debug-exit")

#: ``[bench] clock`` of a target file, and the unit of what it counts (bench.py)
CLOCKS = {"monotonic": "ns", "systick": "instructions", "minstret": "instructions"}


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
            "fma_bytes": BYTES, "shuffle_ports": COUNT},
    "bench": {"clock": _one_of(list(CLOCKS)), "runner_args": TEXTS,
              "instructions_per_tick": COUNT, "runs": COUNT, "warmup": BYTES},
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
                          hint=f"fix the file; {os.path.relpath(example, REPO_ROOT)} is a "
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
                          where=path, hint="add the feature's C macro to targets.FEATURE_MACROS")
    isa_cflags = list(t.get("isa_cflags", []))
    return Target(name, t.get("description", ""), toolchain,
                  [_repo_path(a) for a in t.get("cflags", [])] + isa_cflags,
                  [_repo_path(a) for a in t.get("linkflags", [])],
                  [os.path.join(REPO_ROOT, s) for s in t.get("harness_sources", [])],
                  int(t.get("flash_bytes", 0)), int(t.get("ram_bytes", 0)),
                  fma, t.get("runner", []), t.get("runner_package", ""),
                  Cpu(int(cpu.get("simd_bytes", 0)), int(cpu.get("registers", 16)), fma,
                      int(cpu.get("l1d_bytes", 0)), tuple(cpu.get("features", ())),
                      int(cpu.get("fma_bytes", 0)), int(cpu.get("shuffle_ports", 1))),
                  t.get("bench", {}), exit_status=exit_status,
                  footprint_sources=[os.path.join(REPO_ROOT, s) for s in t["footprint_sources"]]
                  if "footprint_sources" in t else None,
                  footprint_linkflags=[_repo_path(a) for a in t["footprint_linkflags"]]
                  if "footprint_linkflags" in t else None,
                  l2_bytes=int(cpu.get("l2_bytes", 0)), native=t.get("native"),
                  isa_cflags=isa_cflags)


#: the macro by which a C compiler says it generates code for a ``[cpu]`` feature
FEATURE_MACROS = {"avx2": "__AVX2__", "fma": "__FMA__", "avx512f": "__AVX512F__",
                  "avx512vl": "__AVX512VL__", "avx512dq": "__AVX512DQ__", "sse2": "__SSE2__",
                  "neon": "__ARM_NEON", "dsp": "__ARM_FEATURE_DSP"}


def _shown(compiler):
    """A compiler command as the user named it: its program's file name, then its words."""
    return " ".join([os.path.basename(compiler[0]), *compiler[1:]])


@functools.lru_cache(maxsize=None)
def _predefined_macros(compiler, flags):
    """The names of the macros C compiler ``compiler`` (a tuple: the program and any words
    after it) predefines with ``flags`` (a tuple): what it generates code for, as it says
    itself -- exact for any compiler and flags, where a table of which -m flag implies or
    cancels which would not be. Asked once per compiler and flags (a few milliseconds)."""
    with tempfile.TemporaryDirectory() as folder:  # (a -MD among the flags writes a file)
        r = subprocess.run([*compiler, *flags, "-dM", "-E", "-x", "c", os.devnull], cwd=folder,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["(no message)"])[0]
        raise OnnxccError(f"toolchain='env': {_shown(compiler)} {' '.join(flags)} fails: {first}")
    return frozenset(line.split()[1] for line in r.stdout.splitlines()
                     if line.startswith("#define "))


def check_env_flags(target, compiler, flags):
    """Refuse a toolchain='env' build of ``target`` whose compiler (a list: the program and
    any words after it) and flags (the environment's CFLAGS and CCFLAGS, after the
    target's isa_cflags, as the build puts them) do not generate code for every ``[cpu]``
    feature of the target. The kernels are written for those (vmath's functions take and
    return the target's vectors, which GCC warns about without them: -Wpsabi), so such
    flags contradict the target: one line says so, rather than the code quietly running
    without them."""
    isa = list(target.isa_cflags)
    macros = _predefined_macros(tuple(compiler), tuple(isa + flags))
    missing = [f for f in target.cpu.features if FEATURE_MACROS[f] not in macros]
    if not missing:
        return
    if isa:
        own = " ".join(f for f in flags if f.startswith("-m")) or "none"
        hint = (f"remove the flag that turns it off (the environment's -m flags: {own}), "
                "or pass the target= of the CPU your flags are for")
    else:  # (the target's flags also set the float ABI, which must be the firmware's)
        hint = (f"add the target's flags for it ({' '.join(target.cflags)}) or your CPU's "
                "equivalents, or pass the target= of the CPU your flags are for")
    raise OnnxccError(f"toolchain='env': {_shown(compiler)} with the environment's CFLAGS and "
                      f"CCFLAGS{' after ' + ' '.join(isa) if isa else ''} does not generate "
                      f"{', '.join(missing)} code, which target {target.name}'s kernels are "
                      "written for", hint=hint)


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
    """Flags name files relative to the repository (a linker script, an include folder)."""
    candidate = os.path.join(REPO_ROOT, arg)
    return candidate if not arg.startswith("-") and os.path.exists(candidate) else arg
