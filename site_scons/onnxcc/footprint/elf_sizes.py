"""Flash and RAM of a footprint ELF by category and by symbol, read with pyelftools.

``elf`` sizes are exactly what binutils ``size`` (Berkeley format) prints (see
:func:`section_kind`); flash is ``text + data`` (the ``.data`` image lives in flash) and
is split by the symbols that fill it:

* ``kernels`` (``<name>_*``), ``model`` (``<name>_run``), ``weights`` (``<name>_w_*``)
  and ``runtime`` (``onnxcc_*``): the model's library;
* ``libc``: every other symbol, i.e. what the library pulls in from the C library,
  libm and libgcc (``memcpy``, ``expf``, soft-float helpers, and their data);
* ``other``: the footprint program's own symbols (reset code, vector table, ``main``)
  and the bytes no symbol claims (alignment, unwind and dynamic-linking tables).

RAM: the footprint buffers (``<name>_footprint_arena*``, ``_input<k>``, ``_output<k>``)
are taken out of the ``data``/``bss`` columns they sit in.
"""

import io
import re
import struct

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from onnxcc.core.errors import OnnxccError

FLASH_KEYS = ("kernels", "runtime", "model", "weights", "libc", "other", "total")
RAM_KEYS = ("arena", "io", "data", "bss", "stack", "total")
ELF_KEYS = ("text", "data", "bss")
#: the flash categories listed symbol by symbol in size.json
SYMBOL_KEYS = ("runtime", "libc", "other")

_ELF_ERRORS = (ELFError, ConstructError, struct.error, ValueError, KeyError, IndexError,
               EOFError, TypeError, AttributeError)


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


def read_elf(elf_path):
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
    """``{"text", "data", "bss"}`` of ``elf_path`` (an executable or a relocatable object)
    exactly as binutils ``size`` prints them."""
    elf = read_elf(elf_path)
    try:
        return _berkeley(_section_kinds(elf))
    except _ELF_ERRORS as e:
        raise OnnxccError(f"corrupt ELF file: {e}", where=elf_path) from None


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
    """[(name, bytes, section index)] of the defined FUNC/OBJECT symbols, each byte counted
    once: an alias, or a second entry point inside a function (libgcc's soft-float
    ``__aeabi_fsub`` inside ``__aeabi_frsub``), gets only the bytes no symbol before it has."""
    tables = [s for s in elf.iter_sections() if s["sh_type"] == "SHT_SYMTAB"]
    if not tables:
        raise OnnxccError("ELF file has no symbol table", where=elf_path,
                          hint="link the footprint program without stripping it (no -s)")
    thumb = elf["e_machine"] == "EM_ARM"    # bit 0 of a Thumb function's address is set
    ranges = set()
    for table in tables:
        for sym in table.iter_symbols():
            kind = sym["st_info"]["type"]
            if kind not in ("STT_FUNC", "STT_OBJECT"):
                continue
            shndx = sym["st_shndx"]
            if not isinstance(shndx, int) or not sym.name:
                continue        # undefined, absolute or common
            start = sym["st_value"] & ~1 if thumb and kind == "STT_FUNC" else sym["st_value"]
            ranges.add((shndx, start, -sym["st_size"], sym.name))
    symbols = []
    covered = {}                # section index -> end of the bytes counted so far
    for shndx, start, minus_size, name in sorted(ranges):   # by address, longest first
        end = start - minus_size
        begin = max(start, covered.get(shndx, start))
        covered[shndx] = max(end, covered.get(shndx, end))
        symbols.append((name, max(0, end - begin), shndx))
    return symbols


def defined_symbols(object_paths):
    """The names of the FUNC/OBJECT symbols defined in the objects ``object_paths``."""
    names = set()
    for path in object_paths:
        elf = read_elf(path)
        try:
            names.update(symbol for symbol, _, _ in _symbols(elf, path))
        except _ELF_ERRORS as e:
            raise OnnxccError(f"corrupt ELF file: {e}", where=path) from None
    return names


def split(elf_path, name, program_objects=()):
    """Flash by category and by symbol, RAM buffers and ``elf`` sizes of the footprint ELF
    of model ``name``; ``program_objects``: the objects of the footprint program itself
    (its main and startup code), whose symbols count as ``other``.

    Returns ``(flash, symbols, buffers, elf)``: flash ``{kernels, runtime, model, weights,
    libc, other, total}`` adding up to total = text + data; symbols ``{runtime, libc,
    other}`` each ``{symbol: bytes}`` sorted by name; buffers ``{"arena"|"io": {"data",
    "bss"}}``; elf ``{text, data, bss}``.
    """
    own = defined_symbols(program_objects)
    elf = read_elf(elf_path)
    try:
        kinds = _section_kinds(elf)
        sizes = _berkeley(kinds)
        symbols = _symbols(elf, elf_path)
    except _ELF_ERRORS as e:
        raise OnnxccError(f"corrupt ELF file: {e}", where=elf_path) from None

    flash = dict.fromkeys(FLASH_KEYS, 0)
    listed = {key: {} for key in SYMBOL_KEYS}
    buffers = {"arena": {"data": 0, "bss": 0}, "io": {"data": 0, "bss": 0}}
    for symbol, size, shndx in sorted(symbols):
        kind = kinds[shndx][0] if shndx < len(kinds) else None
        buffer = _footprint_buffer(symbol, name)
        if buffer and kind in ("data", "bss"):
            buffers[buffer][kind] += size
        elif kind in ("text", "data"):         # both take flash
            category = symbol_category(symbol, name) or ("other" if symbol in own else "libc")
            flash[category] += size
            if category in listed and size:
                listed[category][symbol] = listed[category].get(symbol, 0) + size
    flash["total"] = sizes["text"] + sizes["data"]
    flash["other"] = flash["total"] - sum(flash[k] for k in FLASH_KEYS
                                          if k not in ("other", "total"))
    return flash, listed, buffers, sizes
