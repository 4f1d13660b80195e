"""What a firmware build tree needs from compiled models besides ``lib<name>.a`` and ``<name>.h``.

* a Make fragment ``<name>.mk`` and a CMake file ``<name>.cmake`` beside the library (plus a
  ``CMakeLists.txt`` that includes it, for ``add_subdirectory``): include folder, library,
  the header's API macros as defines, arena size and alignment, weights section. Their
  paths are relative to the fragment's own folder, so a build folder can move.
* one arena shared by models that never run at the same time: ``<arena>.h``/``<arena>.c``,
  sized by the largest of the models' arenas and aligned to the strictest of their
  alignments, both taken from the models' headers by the C compiler, so it cannot go stale.
"""

import json
import re

from onnxcc.codegen.render import render
from onnxcc.core.ctext import build_word
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_texts

_SECTION_NAME = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]*")


def check_section_name(section, option="weights_section"):
    """``section`` ('' for none) when it can name an ELF section in C and in a linker script."""
    if section and not _SECTION_NAME.fullmatch(section):
        raise OnnxccError(f"{option}={section!r} is not a linker section name",
                          hint=f"use letters, digits, '_', '.' and '$', e.g. {option}=.extflash")
    return section or ""


def api_defines(header_text, name):
    """The object-like ``<NAME>_*`` macros of a model header whose value is one token, as
    ``(macro, value)`` in header order: the same values, so defining them again is
    harmless. A parenthesized number (a zero point, ``(-128)``) loses its parentheses,
    which a shell would read on a ``-D`` flag."""
    pattern = re.compile(rf"^#define ({re.escape(name.upper())}_\w+) (\S+)(?:\s*/\*.*\*/)?\s*$",
                         re.M)
    return [(macro, re.sub(r"^\((-?\d+)\)$", r"\1", value))
            for macro, value in pattern.findall(header_text)]


def fragment_texts(name, target, plan, header_text, system_libs, target_cflags, weights_section):
    """``{"mk", "cmake", "cmakelists"}``: the texts of a model's build-system fragments.
    What comes from the model (its name, the header's macros) is checked to mean only
    itself in Make and CMake (ctext.build_word); flags and libraries are the build's own."""
    values = dict(name=build_word(name, "model name"), NAME=name.upper(), target=target,
                  defines=[build_word(f"{m}={v}", "header macro")
                           for m, v in api_defines(header_text, name)],
                  arena_bytes=int(plan["arena_bytes"]), arena_align=int(plan["alignment"]),
                  system_libs=list(system_libs), target_cflags=list(target_cflags),
                  weights_section=weights_section,
                  here="${CMAKE_CURRENT_LIST_DIR}")  # CMake's syntax is also Mako's
    return {"mk": render("model.mk.mako", **values),
            "cmake": render("model.cmake.mako", **values),
            "cmakelists": render("model_CMakeLists.txt.mako", **values)}


def run_fragments(plan_path, header_path, mk_path, cmake_path, cmakelists_path, name, target,
                  system_libs, target_cflags, weights_section):
    with open(plan_path) as f:
        plan = json.load(f)
    with open(header_path) as f:
        header = f.read()
    texts = fragment_texts(name, target, plan, header, system_libs, target_cflags,
                           weights_section)
    write_texts({mk_path: texts["mk"], cmake_path: texts["cmake"],
                 cmakelists_path: texts["cmakelists"]})


def run_shared_arena(h_path, c_path, arena, models):
    """``<arena>.h`` and ``<arena>.c`` for the models named ``models`` (C names)."""
    values = dict(arena=arena, ARENA=arena.upper(), models=list(models),
                  MODELS=[m.upper() for m in models])
    write_texts({h_path: render("shared_arena.h.mako", **values),
                 c_path: render("shared_arena.c.mako", **values)})
