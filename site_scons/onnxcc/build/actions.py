"""How a stage runs under SCons: its action, the files it depends on, its named inputs.

A stage is a function ``fn(targets, inputs, env)`` returning the line to print; ``inputs``
has one attribute per name the stage declares (``Inputs``), so neither the stage nor the
place that declares it counts positions.
"""

import functools
import os
import traceback
from dataclasses import dataclass

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Node
import SCons.Scanner
from onnxcc.build.module_deps import files_of, modules_used_by
from onnxcc.core.errors import OnnxccError, one_line
from onnxcc.core.paths import TEMPLATES_DIR


class Inputs:
    """A stage's source files by name: every name one file, a last name ending in ``*``
    the rest of them (a list, maybe empty)."""

    def __init__(self, names, sources):
        fixed = [n for n in names if not n.endswith("*")]
        if len(sources) < len(fixed):
            raise ValueError(f"{len(sources)} sources for the inputs {', '.join(names)}")
        for name, source in zip(fixed, sources):
            setattr(self, name, source)
        for name in names[len(fixed):]:
            setattr(self, name[:-1], list(sources[len(fixed):]))


def action(label, fn, inputs=("sources*",), varlist=()):
    """A Python action running stage ``fn``.

    A user error becomes one line (``scons: *** [target] what, where, what to do``);
    anything else is a bug in onnxcc, reported as such (the traceback with verbose=1).
    """
    def run(target, source, env):
        try:
            line = fn([str(t) for t in target], Inputs(inputs, [str(s) for s in source]), env)
        except OnnxccError as e:
            raise SCons.Errors.BuildError(errstr=str(e), exitstatus=2) from None
        except Exception as e:
            if env.get("ONNXCC_VERBOSE"):
                traceback.print_exc()
            what = one_line(f"{type(e).__name__}: {e}")
            raise SCons.Errors.BuildError(
                errstr=f"internal error in onnxcc's {label} stage: {what} "
                       "(please report it; verbose=1 shows where)", exitstatus=3) from None
        if line:
            print(line)
        return 0

    def show(target, source, env):
        if env.get("ONNXCC_VERBOSE"):
            return (f"[{label}] {fn.__name__}({', '.join(map(str, source))}) -> "
                    f"{', '.join(map(str, target))}")
        return None

    return SCons.Action.Action(run, strfunction=show, varlist=list(varlist))


def _code_scanner(fn, templates, scan):
    """Implicit dependencies of a stage's targets: the closure of the compiler modules it
    (and the action around it) uses, computed from the import graph once per SCons run, the
    templates it renders (the kernel templates a model uses are scanned from its tactics
    instead), and what ``scan(node, env)`` finds when the build reaches the target."""
    files = functools.cache(lambda: files_of(modules_used_by(fn) | modules_used_by(action))
                            + [os.path.join(TEMPLATES_DIR, t) for t in templates])
    return SCons.Scanner.Scanner(
        lambda node, env, path: env.File(files()) + (scan(node, env) if scan else []),
        name=f"onnxcc_code_{fn.__name__.strip('_')}", node_class=SCons.Node.Node)


def beside(*siblings):
    """An emitter: the first target names the others, files beside it (``{stem}`` is its
    name without extension): ``beside("{stem}.c")`` makes ``kws.h`` into kws.h, kws.c."""
    def emit(target, source, env):
        first = target[0]
        stem = os.path.splitext(first.name)[0]
        return [first] + [first.dir.File(s.format(stem=stem)) for s in siblings], source
    return emit


@dataclass(frozen=True)
class Stage:
    builder: str  # the environment's builder method, OnnxccPlan
    inputs: tuple  # the names of its sources, in order

    def __call__(self, env, target, variables=None, **sources):
        """Declare the stage's targets from its sources, given by name (and construction
        variables of these targets only)."""
        ordered = []
        for name in self.inputs:
            value = sources.pop(name.rstrip("*"))
            if name.endswith("*"):
                ordered += list(value)
            else:  # one file: a node, or a node list of one
                ordered.append(_one(value, name))
        if sources:
            raise TypeError(f"{self.builder} has no inputs {', '.join(sources)}")
        return getattr(env, self.builder)(target, ordered, **(variables or {}))


def _one(value, name):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise TypeError(f"input {name}: {len(value)} files where one is read")
        return value[0]
    return value


#: builder name -> SCons builder, filled by ``stage``
BUILDERS = {}


def stage(label, inputs, varlist=(), templates=(), scan=None, **kw):
    """Decorator: ``fn`` is a stage whose targets depend on its sources (named ``inputs``),
    on the construction variables ``varlist``, on the onnxcc modules it runs and the
    ``templates`` it renders (and on what ``scan`` finds), and on nothing else of the
    compiler. Returns the ``Stage`` that declares it."""
    def register(fn):
        name = "Onnxcc" + "".join(w.capitalize() for w in fn.__name__.strip("_").split("_"))
        BUILDERS[name] = SCons.Builder.Builder(
            action=action(label, fn, tuple(inputs), list(varlist) + ["ONNXCC_PYTHON_DEPS"]),
            target_scanner=_code_scanner(fn, templates, scan), **kw)
        return Stage(name, tuple(inputs))
    return register


class OnnxccDeclarationError(OnnxccError, SCons.Errors.UserError):
    """Bad arguments of a pseudo-builder: SCons stops with one line (``scons: *** ...``) in
    any SConstruct, and onnxcc's own SConstruct still catches it as an OnnxccError."""


def declaration(pseudo_builder):
    """``pseudo_builder`` (OnnxModel ...) raising its errors as OnnxccDeclarationError."""
    @functools.wraps(pseudo_builder)
    def declare(*args, **kwargs):
        try:
            return pseudo_builder(*args, **kwargs)
        except OnnxccDeclarationError:
            raise
        except OnnxccError as e:
            raise OnnxccDeclarationError(e.message, where=e.where, hint=e.hint) from None
    return declare
