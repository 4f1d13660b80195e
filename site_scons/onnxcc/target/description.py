"""What a target is: its CPU (what the kernels may use), its toolchain and how a program
runs there."""

import os
import shutil
from dataclasses import dataclass, field

from onnxcc.core.errors import OnnxccError

from .host import host_cpu_flags


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
    # estimates of ops/common/tiling.py count. AMD Zen 4 runs its 512-bit vectors through 256-bit
    # units (64), Intel's AVX-512 server cores have two 512-bit units (128)
    fma_bytes: int = 0
    # vector shuffles issued a cycle: Intel's one shuffle port, Zen 4's two pipes
    shuffle_ports: int = 1
    # the level-2 cache: what the cost model reads re-read operands from at cache speed,
    # and what a row band of an interior block should fit (plan/bands.py); 0: none
    l2_bytes: int = 0
    # float arithmetic in hardware; false: the compiler's soft-float calls, which the int8
    # kernels' float32 steps then avoid (templates/kernels/lib/float32_int.mako)
    float_unit: bool = True

    def lanes(self, itemsize=4):
        """Elements of ``itemsize`` bytes per vector (1: scalar code)."""
        return max(1, self.simd_bytes // itemsize)

    def as_dict(self):
        return {"simd_bytes": self.simd_bytes, "registers": self.registers, "fma": self.fma,
                "l1d_bytes": self.l1d_bytes, "features": list(self.features),
                "fma_bytes": self.fma_bytes, "shuffle_ports": self.shuffle_ports,
                "l2_bytes": self.l2_bytes, "float_unit": self.float_unit}

    @classmethod
    def from_dict(cls, d):
        """The Cpu ``as_dict`` wrote (tactics.json)."""
        return cls(**dict(d, features=tuple(d["features"])))


#: ``[cycles]`` of a target file, each the cycles of a class of instructions
#: (verbs/cycles.py); ``pipelined_loads``, a flag, says a load after a load or store takes one less
CYCLE_COUNTS = ("alu", "load", "store", "multiple", "refill", "mul", "mla", "mul_long", "div",
                "fp", "fp_mac", "fp_div", "fp_load")


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
    bench: dict = field(default_factory=dict)  # how `bench` counts (verbs/bench.py)
    # the core's instruction timings, for bench's estimate of cycles (verbs/cycles.py)
    cycles: dict = field(default_factory=dict)
    exit_status: str = ""  # how the runner's exit code carries the program's (EXIT_STATUSES)
    # the size report's footprint program: a minimal link on bare-metal targets (by
    # default, like the verify harness)
    footprint_sources: list = None
    footprint_linkflags: list = None
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



#: ``exit_status`` of a target file: "" (the runner's exit code is the program's) or
#: "isa-debug-exit" (QEMU's debug-exit device: it exits with (status << 1) | 1)
EXIT_STATUSES = ("", "isa-debug-exit")

#: ``[bench] clock`` of a target file, and the unit of what it counts (verbs/bench.py)
CLOCKS = {"monotonic": "ns", "systick": "instructions", "minstret": "instructions"}
