"""What the C compiler is told and asked: the warnings every build compiles under, and
whether a toolchain='env' compiler generates code for the target's CPU features."""

import functools
import os
import subprocess
import tempfile

from onnxcc.core.errors import OnnxccError

#: the warnings the generated C (and the runtime and harnesses beside it) compiles under on
#: every target (tests and the fuzzer fail on any): -Wshadow because a kernel local named
#: like a parameter once read the wrong operand (docs/trust.md, "Warnings")
WARNINGS = ("-Wall", "-Wextra", "-Wshadow")

#: the warnings that stop any build of the library's C (the generated files and the
#: runtime, whichever compiler and flags): a kernel handed an operand it never reads, or a
#: local it computes and drops, computes without it (docs/trust.md, "Warnings")
UNUSED_ERRORS = ("-Werror=unused-parameter", "-Werror=unused-variable",
                 "-Werror=unused-but-set-variable")



#: the macro by which a C compiler says it generates code for a ``[cpu]`` feature
FEATURE_MACROS = {"avx2": "__AVX2__", "fma": "__FMA__", "avx512f": "__AVX512F__",
                  "avx512vl": "__AVX512VL__", "avx512dq": "__AVX512DQ__", "sse2": "__SSE2__",
                  "neon": "__ARM_NEON", "dsp": "__ARM_FEATURE_DSP", "mve": "__ARM_FEATURE_MVE"}


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
