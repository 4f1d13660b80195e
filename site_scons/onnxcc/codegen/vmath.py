"""The math functions of templates/kernels/lib/vmath.mako a kernels file calls: each rendered
once for the vector width it is called with, after the types and functions it uses."""

import re

from .render import render_def

TEMPLATE = "kernels/lib/vmath.mako"
_CALL = re.compile(r"\bvm_(\w+?)_(v\d+|s)\(")


def _lanes(suffix):
    return 1 if suffix == "s" else int(suffix[1:])


def functions(code):
    """C definitions of every vm_ function ``code`` calls (none: the empty string)."""
    done, parts = set(), []

    def need(name, lanes):
        if ("types", lanes) not in done:
            done.add(("types", lanes))
            parts.append(render_def(TEMPLATE, "types", L=lanes))
        if name in ("sel", "pow2") or (name, lanes) in done:
            return
        done.add((name, lanes))
        text = render_def(TEMPLATE, name, L=lanes)
        for called, suffix in _CALL.findall(text):
            need(called, _lanes(suffix))
        parts.append(text)
    for name, suffix in _CALL.findall(code):
        need(name, _lanes(suffix))
    return "\n".join(parts)
