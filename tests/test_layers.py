"""The folder layout is the architecture: each package of the compiler imports only from
itself and from the layers below it (onnxcc.LAYERS), never a sibling stage or a higher one."""

import os

import pytest

import onnxcc
from onnxcc.build import module_deps

PACKAGE_DIR = os.path.dirname(onnxcc.__file__)


def all_modules():
    found = []
    for folder, _, files in os.walk(PACKAGE_DIR):
        rel = os.path.relpath(folder, os.path.dirname(PACKAGE_DIR)).replace(os.sep, ".")
        for f in files:
            if f.endswith(".py"):
                found.append(rel if f == "__init__.py" else f"{rel}.{f[:-3]}")
    return sorted(found)


def layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


@pytest.mark.unit
def test_every_package_is_a_layer():
    packages = {layer(m) for m in all_modules()} - {None}
    assert packages == set(onnxcc.LAYERS), "a package of onnxcc is missing from onnxcc.LAYERS"


@pytest.mark.unit
def test_no_module_imports_a_sibling_or_higher_layer():
    rank = {name: i for i, name in enumerate(onnxcc.LAYERS)}
    wrong = []
    for module in all_modules():
        own = layer(module)
        if own is None:
            continue
        for used in module_deps.direct_imports(module):
            other = layer(used)
            if other is not None and other != own and rank[other] > rank[own]:
                wrong.append(f"{module} imports {used} ({other} is above {own})")
            elif other is not None and other != own and rank[other] == rank[own]:
                wrong.append(f"{module} imports {used} (a sibling layer)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.unit
def test_the_scons_tool_is_thin_and_no_module_is_long():
    """The SCons tool adds the builders to an environment and nothing else; a module that
    outgrows 400 lines is doing two jobs."""
    tool = os.path.join(os.path.dirname(PACKAGE_DIR), "site_tools", "onnxcc.py")
    with open(tool) as f:
        assert len(f.readlines()) < 150
    long = []
    for module in all_modules():
        path = module_deps.module_file(module)
        with open(path) as f:
            lines = len(f.readlines())
        if lines > 400:
            long.append(f"{module}: {lines} lines")
    assert not long, "\n".join(long)
