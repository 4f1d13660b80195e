"""Shared fixtures: the compiler package on sys.path, a way to run scons like a user, model
files written the one way, and the check that a test marked ``unit`` builds nothing."""

import os
import shlex
import shutil
import subprocess
import sys

import onnx
import pytest
from onnx import helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "site_scons"))
MODELS = os.path.join(REPO, "models")
SCONS = [sys.executable, "-m", "SCons"]


#: programs that build or emulate: what a test marked ``unit`` may not start
BUILD_PROGRAMS = {"scons", "make", "cmake", "cc", "gcc", "ld", "as"}


def builds(args):
    """Whether the command ``args`` (a Popen's) runs SCons, a compiler or qemu."""
    if isinstance(args, (str, bytes)):
        argv = shlex.split(os.fsdecode(args))
    elif isinstance(args, os.PathLike):
        argv = [os.fspath(args)]
    else:
        argv = [os.fsdecode(a) for a in args]
    program = os.path.basename(argv[0]) if argv else ""
    return (program in BUILD_PROGRAMS or program.endswith(("-gcc", "-ld", "-as"))
            or program.startswith("qemu-") or argv[1:3] == ["-m", "SCons"])


@pytest.fixture(autouse=True)
def _unit_tests_build_nothing(request, monkeypatch):
    """A test marked ``unit`` fails as soon as it starts SCons, a compiler or qemu."""
    if request.node.get_closest_marker("unit") is None:
        return
    start = subprocess.Popen.__init__

    def checked(self, args, *rest, **kw):
        if builds(args):
            pytest.fail(f"a test marked unit runs {args!r}: it is no unit test", pytrace=False)
        start(self, args, *rest, **kw)
    monkeypatch.setattr(subprocess.Popen, "__init__", checked)


def _marked(mark, cases):
    """``parametrize`` cases (a value, a tuple of values or a pytest.param), each with ``mark``."""
    param = type(pytest.param(None))
    return [pytest.param(*c.values, marks=[*c.marks, mark], id=c.id) if isinstance(c, param)
            else pytest.param(*(c if isinstance(c, tuple) else (c,)), marks=mark) for c in cases]


def in_qemu(*cases):
    """``parametrize`` cases that run a program in qemu: marked ``emulated``."""
    return _marked(pytest.mark.emulated, cases)


def slow(*cases):
    """``parametrize`` cases that take more than about 20 s each: marked ``slow``."""
    return _marked(pytest.mark.slow, cases)


def run_scons(*args, cwd=REPO, timeout=900):
    """Run scons with ``args`` (``key=value`` options and targets); CompletedProcess."""
    return subprocess.run(SCONS + ["-Q", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def scons(tmp_path):
    """scons in the repository, building under a fresh folder of this test."""
    build = tmp_path / "build"

    def call(*args, **kw):
        return run_scons(f"build_dir={build}", *args, **kw)
    call.build_dir = build
    return call


@pytest.fixture(scope="session")
def shared_build(tmp_path_factory):
    """``shared_build(*args)``: ``scons args`` run once per test process (each xdist worker
    runs its own) for the tests that ask for the same ``args`` and only read what it made;
    (the CompletedProcess, its build_dir). A test that builds again in it takes ``scons``."""
    done = {}

    def build(*args):
        if args not in done:
            folder = tmp_path_factory.mktemp("shared_build")
            done[args] = run_scons(f"build_dir={folder}", *args), folder
        return done[args]
    return build


def verify_clean(scons, model, *options):
    """``scons model=M options verify`` (the ``scons`` fixture) that passed with every
    output matching and without a compiler warning; the CompletedProcess."""
    r = scons(f"model={model}", *options, "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify]" in r.stdout and "MISMATCH" not in r.stdout
    assert "warning" not in r.stdout + r.stderr
    return r


def onnx_model(graph, opset=17, domains=None):
    """``graph`` as a model of the default domain's ``opset`` (and ``domains``' {domain:
    version}), IR version 8: what the tests' onnxruntime reads."""
    opsets = [helper.make_opsetid("", opset)]
    opsets += [helper.make_opsetid(d, v) for d, v in (domains or {}).items()]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def save_graph(path, graph, opset=17, domains=None):
    """``graph`` saved at ``path`` as ``onnx_model`` makes it; ``str(path)``."""
    onnx.save(onnx_model(graph, opset, domains), str(path))
    return str(path)


@pytest.fixture
def repo_copy(tmp_path):
    """A private copy of the compiler (for tests that edit templates or models)."""
    root = tmp_path / "repo"
    root.mkdir()
    for item in ("SConstruct", "site_scons"):
        src = os.path.join(REPO, item)
        if os.path.isdir(src):
            shutil.copytree(src, root / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, root / item)
    (root / "models").mkdir()
    return root


def readme_sample(after):
    """The lines of the README's first plain ``` block after the line that contains
    ``after``, without the "..." lines that stand for output left out: what a test checks
    the command really prints, so the README cannot go stale."""
    with open(os.path.join(REPO, "README.md")) as f:
        lines = f.read().splitlines()
    at = next(k for k, line in enumerate(lines) if after in line)
    blocks, opening = [], None  # (first line, language, lines) of every fenced block
    for k, line in enumerate(lines):
        if line.startswith("```") and opening is None:
            opening = k
        elif line == "```" and opening is not None:
            blocks.append((opening, lines[opening][3:], lines[opening + 1:k]))
            opening = None
    # the first block after that line with no language (```sh blocks hold commands)
    body = next(body for first, language, body in blocks if first > at and not language)
    return [line for line in body if line != "..."]
