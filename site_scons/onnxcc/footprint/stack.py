"""The worst-case stack of one ``<name>_run`` call, from gcc's ``-fstack-usage`` files."""

import re

from onnxcc.core.errors import OnnxccError

from .elf_sizes import symbol_category

_SU_LINE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::(?P<col>\d+))?:(?P<func>.+)$")


def read_su(su_path):
    """The entries of a gcc ``-fstack-usage`` file: [(function, bytes, qualifiers)].

    A line is ``file:line:column:function<TAB>bytes<TAB>qualifiers`` where qualifiers are
    ``static`` (exact), ``dynamic,bounded`` (bounded, exact upper bound) or ``dynamic``
    (alloca/VLA of unknown size: the number is only the fixed part).
    """
    try:
        with open(su_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise OnnxccError("stack usage file not found", where=su_path,
                          hint="compile the model library with -fstack-usage") from None
    except OSError as e:
        raise OnnxccError(f"cannot read stack usage file: {e.strerror or e}",
                          where=su_path) from None
    entries = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        match = _SU_LINE.match(fields[0])
        if len(fields) != 3 or not match or not fields[1].strip().isdigit():
            raise OnnxccError(f"malformed stack usage line {line.strip()!r}",
                              where=f"{su_path}:{lineno}",
                              hint="expected file:line:col:function<TAB>bytes<TAB>qualifiers")
        entries.append((match["func"], int(fields[1]), fields[2].strip()))
    return entries


def _exact(qualifiers):
    quals = {q.strip() for q in qualifiers.split(",")}
    return "dynamic" not in quals or "bounded" in quals


def stack_usage(name, su_paths):
    """(bytes, exact) of the worst-case stack of one ``<name>_run`` call.

    The generated call graph is exactly: ``<name>_run`` calls the runtime's argument
    check (``onnxcc_*``) and then each kernel (``<name>_*``) in turn, and kernels are
    leaves.  So the worst case is the frame of ``<name>_run`` plus the largest frame among
    every kernel and ``onnxcc_*`` function found in the ``.su`` files.

    Not seen (so this is a lower bound there): the stack of libm/libc/libgcc functions a
    kernel calls (``expf``, ``tanhf``, soft-float helpers ...), which are compiled without
    ``-fstack-usage``, and interrupt handlers running on the same stack.  ``exact`` is
    False when a counted frame is ``dynamic`` (alloca or a VLA of unbounded size), whose
    number is only the fixed part of the frame.
    """
    run = f"{name}_run"
    frames = {}
    for path in su_paths:
        for func, size, quals in read_su(path):
            old_size, old_exact = frames.get(func, (0, True))
            frames[func] = (max(old_size, size), old_exact and _exact(quals))
    if run not in frames:
        raise OnnxccError(f"no stack usage entry for {run}",
                          where=", ".join(str(p) for p in su_paths) or name,
                          hint=f"pass the .su file of {name}.o, compiled with -fstack-usage")
    callees = [frames[f] for f in frames
               if f != run and symbol_category(f, name) in ("kernels", "runtime")]
    deepest = max((size for size, _ in callees), default=0)
    exact = frames[run][1] and all(ok for _, ok in callees)
    return frames[run][0] + deepest, exact
