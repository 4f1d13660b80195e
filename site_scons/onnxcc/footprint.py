"""Where the bytes of a model go: flash and RAM of its footprint ELF, and the CI size gate.

Every model build links a small *footprint* program: a ``main`` that calls
``<name>_run(inputs, outputs, arena)`` on static buffers ``<name>_footprint_arena``
(``<name>_footprint_arena_<pool>`` with pools), ``<name>_footprint_input<k>`` and
``<name>_footprint_output<k>`` (none with io=arena).  :func:`measure` reads
that ELF (and the gcc ``-fstack-usage`` files of the model library) and splits

* flash (``text + data``, the ``.data`` image lives in flash) into the model's kernels
  (``<name>_*``), the glue (``<name>_run``), the weights (``<name>_w_*``), the onnxcc
  runtime (``onnxcc_*``) and everything else ("libc": C library, libm, libgcc, crt,
  startup code and ``main``);
* RAM (``data + bss + stack``) into the arena, the I/O buffers, the other ``.data`` and
  ``.bss``, and the worst-case stack of one ``<name>_run`` call.

``elf`` in the result is exactly what binutils ``size`` (Berkeley format) prints for the
ELF; see :func:`section_kind` for its rules.
"""

import io
import json
import os
import re
import struct
import tempfile
from fractions import Fraction

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from .errors import OnnxccError
from .report import human_bytes, pct

FLASH_KEYS = ("kernels", "runtime", "model", "weights", "libc", "total")
RAM_KEYS = ("arena", "io", "data", "bss", "stack", "total")
ELF_KEYS = ("text", "data", "bss")

_SU_LINE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::(?P<col>\d+))?:(?P<func>.+)$")


# --------------------------------------------------------------------------- ELF sizes

def section_kind(sh_flags, sh_type):
    """The column binutils ``size`` (Berkeley format) adds a section to, or None.

    ``size`` looks at BFD section flags, which BFD derives from the ELF header as
    SEC_ALLOC = SHF_ALLOC, SEC_CODE = SHF_EXECINSTR, SEC_READONLY = not SHF_WRITE and
    SEC_HAS_CONTENTS = not SHT_NOBITS.  Its Berkeley rules are then, in this order:

    * not SHF_ALLOC: not counted (debug info, symbol and string tables, .comment, ...);
    * SHF_EXECINSTR, *or* not SHF_WRITE: ``text`` -- so read-only data (.rodata,
      .eh_frame, .ARM.exidx, notes, .interp, .dynsym, .rela.dyn ...) is text, a writable
      executable section (a .ramfunc, "awx") is text too, and so is a read-only
      SHT_NOBITS section;
    * else (writable, not executable) not SHT_NOBITS: ``data`` -- .data, .tdata,
      .init_array/.fini_array/.preinit_array, .dynamic, .got, .data.rel.ro ...;
    * else (writable SHT_NOBITS): ``bss`` -- .bss, .tbss (TLS is not special: its full
      sh_size counts), .noinit, a NOLOAD .stack/.heap reservation.

    ``--common`` (common symbols of relocatable objects) is off by default and not modelled.
    """
    if not sh_flags & SH_FLAGS.SHF_ALLOC:
        return None
    if sh_flags & SH_FLAGS.SHF_EXECINSTR or not sh_flags & SH_FLAGS.SHF_WRITE:
        return "text"
    if sh_type != "SHT_NOBITS":
        return "data"
    return "bss"


def _read_elf(elf_path):
    """An ELFFile over the bytes of ``elf_path``; OnnxccError when it is not one."""
    try:
        with open(elf_path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise OnnxccError("ELF file not found", where=elf_path,
                          hint="build the model's footprint program first") from None
    except IsADirectoryError:
        raise OnnxccError("is a directory, not an ELF file", where=elf_path) from None
    except OSError as e:
        raise OnnxccError(f"cannot read ELF file: {e.strerror or e}", where=elf_path) from None
    if data[:4] != b"\x7fELF":
        raise OnnxccError("not an ELF file", where=elf_path)
    try:
        return ELFFile(io.BytesIO(data))
    except _ELF_ERRORS as e:
        raise OnnxccError(f"corrupt ELF file: {e}", where=elf_path) from None


_ELF_ERRORS = (ELFError, ConstructError, struct.error, ValueError, KeyError, IndexError,
               EOFError, TypeError, AttributeError)


def _section_kinds(elf):
    """[(section kind or None, section header)] by section index."""
    return [(section_kind(s["sh_flags"], s["sh_type"]), s.header)
            for s in elf.iter_sections()]


def _berkeley(kinds):
    sizes = dict.fromkeys(ELF_KEYS, 0)
    for kind, header in kinds:
        if kind:
            sizes[kind] += header["sh_size"]
    return sizes


def elf_size(elf_path):
    """``{"text", "data", "bss"}`` of ``elf_path`` exactly as binutils ``size`` prints them."""
    elf = _read_elf(elf_path)
    try:
        return _berkeley(_section_kinds(elf))
    except _ELF_ERRORS as e:
        raise OnnxccError(f"corrupt ELF file: {e}", where=elf_path) from None


# --------------------------------------------------------------------------- symbols

def symbol_category(symbol, name):
    """The flash category of a symbol of model ``name``: kernels, model, weights,
    runtime, or None (C library and startup, or a footprint buffer)."""
    prefix = f"{name}_"
    if symbol == f"{name}_run":
        return "model"
    if symbol.startswith(prefix + "w_"):
        return "weights"
    if symbol.startswith(prefix + "footprint_"):
        return None
    if symbol.startswith(prefix):
        return "kernels"
    if symbol.startswith("onnxcc_"):
        return "runtime"
    return None


def _footprint_buffer(symbol, name):
    """"arena", "io" or None for a symbol of the footprint program."""
    if re.fullmatch(re.escape(name) + r"_footprint_arena(_\w+)?", symbol):  # one per pool
        return "arena"
    if re.fullmatch(re.escape(name) + r"_footprint_(input|output)\d+", symbol):
        return "io"
    return None


def _symbols(elf, elf_path):
    """[(name, size, section index)] of the defined FUNC/OBJECT symbols, each address once."""
    tables = [s for s in elf.iter_sections() if s["sh_type"] == "SHT_SYMTAB"]
    if not tables:
        raise OnnxccError("ELF file has no symbol table", where=elf_path,
                          hint="link the footprint program without stripping it (no -s)")
    seen = set()
    symbols = []
    for table in tables:
        for sym in table.iter_symbols():
            if sym["st_info"]["type"] not in ("STT_FUNC", "STT_OBJECT"):
                continue
            shndx = sym["st_shndx"]
            if not isinstance(shndx, int) or not sym.name:
                continue        # undefined, absolute or common
            key = (shndx, sym["st_value"], sym["st_size"])
            if key in seen:
                continue        # an alias of a symbol already counted
            seen.add(key)
            symbols.append((sym.name, sym["st_size"], shndx))
    return symbols


# --------------------------------------------------------------------------- stack

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


# --------------------------------------------------------------------------- measure

def measure(elf_path, name, su_paths):
    """Flash and RAM of model ``name`` from its footprint ELF and the library's .su files.

    Returns ``{"model", "flash": {kernels, runtime, model, weights, libc, total},
    "ram": {arena, io, data, bss, stack, total, stack_exact}, "elf": {text, data, bss}}``
    (bytes).  flash.total = text + data and its categories add up to it (libc is the
    rest); ram.total = data + bss + stack and arena + io + data + bss + stack = total.
    Only symbols in flash (text) sections count for the flash categories.
    """
    elf = _read_elf(elf_path)
    try:
        kinds = _section_kinds(elf)
        sizes = _berkeley(kinds)
        symbols = _symbols(elf, elf_path)
    except _ELF_ERRORS as e:
        raise OnnxccError(f"corrupt ELF file: {e}", where=elf_path) from None

    flash = dict.fromkeys(FLASH_KEYS, 0)
    buffers = {"arena": {"data": 0, "bss": 0}, "io": {"data": 0, "bss": 0}}
    for symbol, size, shndx in symbols:
        kind = kinds[shndx][0] if shndx < len(kinds) else None
        if kind == "text":
            category = symbol_category(symbol, name)
            if category:
                flash[category] += size
        elif kind in ("data", "bss"):
            buffer = _footprint_buffer(symbol, name)
            if buffer:
                buffers[buffer][kind] += size
    flash["total"] = sizes["text"] + sizes["data"]
    flash["libc"] = flash["total"] - sum(flash[k] for k in ("kernels", "runtime", "model",
                                                              "weights"))

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
    return {"model": name, "flash": flash, "ram": ram, "elf": sizes}


# --------------------------------------------------------------------------- limits

def _versus(value, limit):
    a, b = human_bytes(value), human_bytes(limit)
    return f"{a} > {b}" if a != b else f"{value} B > {limit} B"


def check_fits(sizes, flash_bytes, ram_bytes, target_name):
    """Raise OnnxccError when the model needs more flash or RAM than the target has.

    A limit of 0 (or None) means no limit.
    """
    over = []
    flash, ram = sizes["flash"]["total"], sizes["ram"]["total"]
    if flash_bytes and flash > flash_bytes:
        over.append(f"flash {_versus(flash, flash_bytes)}")
    if ram_bytes and ram > ram_bytes:
        over.append(f"ram {_versus(ram, ram_bytes)}")
    if over:
        raise OnnxccError(f"model {sizes['model']} does not fit {target_name}: "
                          + ", ".join(over),
                          hint="use a smaller model or a target with more memory")


# --------------------------------------------------------------------------- table

def format_table(sizes):
    """Both splits as a compact table: bytes, KiB, and % of each category in its total."""
    lines = []
    for section, keys in (("flash", FLASH_KEYS), ("ram", RAM_KEYS)):
        part = sizes[section]
        total = part["total"]
        lines.append(f"{section:<12}{'bytes':>10}{'KiB':>10}{'%':>7}")
        for key in keys:
            value = part[key]
            share = "" if key == "total" else f"{pct(value, total):7.1f}"
            label = key
            if key == "stack" and not part.get("stack_exact", True):
                label = "stack >="
            lines.append(f"  {label:<10}{value:>10}{value / 1024:>10.1f}{share}")
    if not sizes["ram"].get("stack_exact", True):
        lines.append("  (stack >=: a frame is dynamic, alloca/VLA size not included)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- size gate

def _categories(part):
    """(key, bytes) of a flash/ram dict, known keys first, skipping flags like stack_exact."""
    return {k: v for k, v in part.items() if isinstance(v, int) and not isinstance(v, bool)}


def compare(baseline, current, tolerance_pct):
    """The CI size gate: (ok, lines) comparing ``current`` with ``baseline`` sizes.

    For each category of flash and ram (totals included): baseline bytes, current bytes,
    the change in bytes and %, and whether it grew beyond ``tolerance_pct`` percent of
    its baseline.  Growing exactly by the tolerance passes; growing from 0 to more than 0
    always fails.  Shrinking never fails.  ``ok`` is False when any category failed.
    """
    try:
        tolerance = Fraction(str(tolerance_pct))
    except (ValueError, ZeroDivisionError):
        raise OnnxccError(f"size tolerance {tolerance_pct!r} is not a number") from None
    if tolerance < 0:
        raise OnnxccError(f"size tolerance {tolerance_pct}% is negative")
    for which, sizes in (("baseline", baseline), ("current", current)):
        if not all(isinstance(sizes.get(s), dict) for s in ("flash", "ram")):
            raise OnnxccError(f"{which} sizes have no flash and ram sections")

    lines = [f"size gate: model {current.get('model', '?')}, tolerance {tolerance_pct:g}%"]
    if baseline.get("model") not in (None, current.get("model")):
        lines.append(f"note: the baseline is of model {baseline['model']}")
    lines.append(f"{'category':<16}{'baseline':>10}{'current':>10}{'change':>10}{'%':>9}")
    grew = []
    for section, order in (("flash", FLASH_KEYS), ("ram", RAM_KEYS)):
        base, cur = _categories(baseline[section]), _categories(current[section])
        keys = [k for k in order if k in base or k in cur]
        keys += sorted((set(base) | set(cur)) - set(keys))
        for key in keys:
            b, c = base.get(key, 0), cur.get(key, 0)
            delta = c - b
            if b:
                change = f"{100 * delta / b:+8.1f}%"
                bad = delta > 0 and Fraction(100 * delta, b) > tolerance
            else:
                change = "     new" if c else "       -"
                bad = c > 0
            label = f"{section}.{key}"
            line = f"{label:<16}{b:>10}{c:>10}{delta:>+10}{change:>9}"
            if bad:
                line += f"  GREW > {tolerance_pct:g}%"
                grew.append(label)
            lines.append(line)
    if grew:
        lines.append(f"size gate FAILED: {', '.join(grew)} grew more than "
                     f"{tolerance_pct:g}% over the baseline")
    else:
        lines.append("size gate passed")
    return not grew, lines


def _baseline_hint(path):
    return f"create one with `scons ... size-baseline baseline={path}`"


def write_baseline(path, sizes):
    """Write the flash and ram sections and model name of ``sizes`` as readable JSON."""
    data = {"model": sizes["model"], "flash": dict(sizes["flash"]), "ram": dict(sizes["ram"])}
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".baseline-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise OnnxccError(f"cannot write size baseline: {e.strerror or e}", where=path) from None


def read_baseline(path):
    """The ``{"model", "flash", "ram"}`` written by :func:`write_baseline`."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise OnnxccError("size baseline not found", where=path,
                          hint=_baseline_hint(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise OnnxccError(f"cannot read size baseline: {getattr(e, 'strerror', None) or e}",
                          where=path, hint=_baseline_hint(path)) from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise OnnxccError(f"malformed size baseline: {e}", where=path,
                          hint=_baseline_hint(path)) from None
    problem = _baseline_problem(data)
    if problem:
        raise OnnxccError(f"malformed size baseline: {problem}", where=path,
                          hint=_baseline_hint(path))
    return {"model": data.get("model"), "flash": data["flash"], "ram": data["ram"]}


def _baseline_problem(data):
    if not isinstance(data, dict):
        return "not a JSON object"
    if "model" in data and not isinstance(data["model"], str):
        return "model is not a string"
    for section, keys in (("flash", FLASH_KEYS), ("ram", RAM_KEYS)):
        part = data.get(section)
        if not isinstance(part, dict):
            return f"no {section} section"
        for key, value in part.items():
            if key == "stack_exact":
                if not isinstance(value, bool):
                    return "ram.stack_exact is not true/false"
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return f"{section}.{key} is not a byte count"
        if "total" not in part:
            return f"no {section}.total"
    return None
