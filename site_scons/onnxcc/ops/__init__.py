"""Operator registry: ``FAMILIES`` names every module that registers ops.

Each family module covers one family of ONNX operators. It exports
``LOWERINGS`` (op type -> function(node, graph) -> KernelCall) for ops that run a kernel,
``ALIASES`` (op types whose output is its first input, re-viewed: no code, no memory),
and ``INPLACE`` (op type -> function(node, graph, tensor) -> KernelCall that writes the
node's output over its input ``tensor``, or None where it cannot).
Kernels are float32 unless the module lists the op in ``TYPED_OPS`` (its lowering then
handles, or rejects, each element type itself).
``ELEMENTWISE`` names its ops whose every output element depends on the same element of
each input (patch-based execution runs them on a patch: plan/patches.py).
A kernel call names the Mako template under ``templates/kernels/`` that implements it
and the compile-time parameters the template specializes on.

A module whose kernels take binary ops in their epilogue exports ``EPILOGUE_SPANS``
(op type -> function(node, graph) -> the output dimensions each of its kernel's loop
counters walks; ops/common/epilogue.py).

An op with several implementations also exports ``TACTICS`` (op type -> [Tactic]):
sibling kernels with the same C interface, the first being the reference (smallest code);
``tactics/stage.py`` picks one per node and records it on the node (``onnxcc_tactic``), which
``lower`` follows. An op with only ``LOWERINGS`` has one tactic, ``reference``; its
kernels that write over an input are ``INPLACE``'s, another tactic's its ``in_place``.
"""

from dataclasses import dataclass, field, replace
from typing import Callable

from onnxcc.core.errors import OnnxccError
from onnxcc.target import Cpu


@dataclass
class KernelCall:
    template: str  # templates/kernels/<template>.c.mako
    tag: str  # readable summary of the parameters, part of the C symbol name
    params: dict  # everything the template specializes on (JSON-able)
    inputs: list  # [(role, tensor name)]: C parameter names and the tensors passed
    outputs: list
    #: bytes of workspace the kernel needs during the call, passed as ``void *scratch``;
    #: the memory planner places it in the arena with everything else
    scratch_bytes: int = 0
    #: output role -> input role: that output is written over that input (same address)
    overwrites: dict = field(default_factory=dict)
    #: role -> packing spec (ops/common/packing.py): that constant input is passed re-laid-out at
    #: compile time into the order the kernel reads it
    packed: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Tactic:
    """One implementation of an op; every tactic of an op computes the same outputs."""
    name: str
    lower: Callable  # (node, graph, cpu) -> KernelCall
    applies: Callable = None  # (node, graph, cpu) -> bool; None: always
    cost: Callable = None  # (node, graph, cpu) -> estimated cycles; None: not estimated
    #: (node, graph, cpu, tensor) -> its KernelCall writing the output over that input, or
    #: None (the reference tactic's are the module's INPLACE instead)
    in_place: Callable = None


#: ops the optimizer removes before code generation (inference-time no-ops)
REMOVED = {"Identity", "Dropout"}
#: ops folded into their producer by the optimizer when it can, else lowered on their own
FOLDED = {"BatchNormalization"}


def supported_ops():
    return sorted(set(LOWERINGS) | set(TACTICS) | ALIASES | REMOVED | FOLDED)


def tactics_for(node):
    """The tactics of ``node``'s op, the reference first."""
    if node.op in TACTICS:
        return TACTICS[node.op]
    if node.op in LOWERINGS:
        fn = LOWERINGS[node.op]
        return [Tactic("reference", lambda n, g, cpu: fn(n, g))]
    raise OnnxccError(f"node '{node.name}' (op {node.op}) has no kernel",
                      hint=f"supported ops: {', '.join(supported_ops())}")


def applicable(node, graph, cpu):
    """The tactics that can run ``node`` on ``cpu``, the reference first. A tactic whose
    kernel reads an input packed at compile time is no candidate where that input is
    computed at run time (a weight fed as a graph input): there is nothing to pack."""
    return [t for t in tactics_for(node) if (t.applies is None or t.applies(node, graph, cpu))
            and (t is tactics_for(node)[0] or not _packs_variable(t.lower(node, graph, cpu), graph))]


def _packs_variable(call, graph):
    """The first input ``call`` wants packed at compile time that is no constant, or None."""
    roles = dict(call.inputs)
    return next((roles[r] for r in call.packed if not graph.is_constant(roles[r])), None)


def chosen_tactic(node):
    """(tactic name, Cpu) recorded on the node by tactics.annotate; the reference kernel
    for a plain CPU when none was."""
    name, cpu = node.attrs.get("onnxcc_tactic", [None, None])
    return (name or tactics_for(node)[0].name,
            Cpu.from_dict(cpu) if cpu else Cpu())


def lower(node, graph, overwrite=None):
    """The node's kernel call, by its chosen tactic; with ``overwrite``, the one that
    writes the node's output over that input tensor (the memory plan chose it; see
    ``can_overwrite``)."""
    if overwrite is not None:
        call = can_overwrite(node, graph, overwrite)
        if call is None:
            raise OnnxccError(f"node '{node.name}' (op {node.op}) cannot write its output over "
                              f"'{overwrite}'", hint="re-run the plan stage")
        return call
    tactic, cpu = chosen_tactic(node)
    if node.op not in TYPED_OPS:
        for name in node.inputs + node.outputs:
            if name and graph.info(name).dtype != "float32":
                raise unsupported(node, f"element type {graph.info(name).dtype} of '{name}'",
                                  hint=f"onnxcc compiles {node.op} for float32")
    for t in tactics_for(node):
        if t.name == tactic:
            call = applies_its_chain(node, t.lower(node, graph, cpu), tactic)
            variable = _packs_variable(call, graph)
            if variable is not None:
                raise OnnxccError(f"node '{node.name}' (op {node.op}): tactic '{tactic}' packs "
                                  f"'{variable}' at compile time, but it is computed at run time",
                                  hint="re-run the select stage, or choose another tactic=")
            return call
    raise OnnxccError(f"node '{node.name}' (op {node.op}) has no tactic '{tactic}'",
                      hint=f"its tactics: {', '.join(t.name for t in tactics_for(node))}")


def applies_its_chain(node, call, tactic):
    """``call``, when its kernel applies every op the optimizer fused after ``node``, in
    order (as the last steps of its ``epilogue``, or ``chain`` for a unary kernel, after any
    bias it adds first); never silently wrong: a kernel that would drop work is refused."""
    fused = [op for op, _ in node.attrs.get("onnxcc_epilogue", [])]
    if not fused:
        return call
    applied = [op for op, _ in call.params.get("epilogue", call.params.get("chain", []))]
    if applied[len(applied) - len(fused):] != fused:
        raise OnnxccError(f"node '{node.name}' (op {node.op}): its kernel ({tactic} tactic, "
                          f"template {call.template}) cannot apply the fused ops "
                          f"{', '.join(fused)}; onnxcc refuses rather than drop them",
                          hint="build with fuse=0, or force another tactic= for this node")
    return call


def can_overwrite(node, graph, tensor):
    """A kernel call of the node's tactic writing its output over its input ``tensor``,
    or None."""
    name, cpu = chosen_tactic(node)
    tactics = tactics_for(node)
    if name == tactics[0].name:
        fn = INPLACE.get(node.op)
        call = fn(node, graph, tensor) if fn else None
    else:
        tactic = next((t for t in tactics if t.name == name), None)
        call = tactic.in_place(node, graph, cpu, tensor) if tactic and tactic.in_place else None
    return call and applies_its_chain(node, call, name)


def possible_templates(node, graph):
    """Every template the node's kernel may come from, whichever the memory plan picks."""
    calls = [lower(node, graph)] + [can_overwrite(node, graph, t) for t in set(node.inputs) if t]
    return {c.template for c in calls if c is not None}


def in_place(call, tensor, roles, **changes):
    """``call`` made to write its one output over input ``tensor``, when the kernel reads
    that tensor once, as one of ``roles`` (those it may share memory with); else None."""
    matching = [role for role, t in call.inputs if t == tensor]
    if len(matching) != 1 or matching[0] not in roles or len(call.outputs) != 1:
        return None
    changes.setdefault("tag", f"{call.tag}_inplace")
    return replace(call, overwrites={call.outputs[0][0]: matching[0]}, **changes)


def unsupported(node, what, hint=None):
    return OnnxccError(f"node '{node.name}' (op {node.op}): {what} is not supported", hint=hint)


# the registry's tables
LOWERINGS = {}
TACTICS = {}
EPILOGUE_SPANS = {}
ALIASES = set()
INPLACE = {}
TYPED_OPS = set()
#: ops whose every output element depends on the same element of each input (constants
#: broadcast along some dimensions at most)
ELEMENTWISE = set()

# the registry: every family module, named here; they import the names above, so they are
# imported last
from . import (binary, col2im, det, dft, dropout, einsum, elementwise,  # noqa: E402
               elementwise_vector, gather, gemm, grid_sample, layout, normalize, pad, patch,
               pool, pool_lp, recurrent, reduce, resize, scan, transpose, unary)
from .conv import in_place as conv_in_place  # noqa: E402
from .conv import tactics as conv_tactics  # noqa: E402
from .conv import transpose as conv_transpose  # noqa: E402
from .qlinear import in_place as qlinear_in_place  # noqa: E402
from .qlinear import lowering as qlinear_lowering  # noqa: E402
from .qlinear import tactics as qlinear_tactics  # noqa: E402

FAMILIES = (binary, col2im, conv_tactics, conv_in_place, conv_transpose, det, dft, dropout,
            einsum, elementwise, elementwise_vector, gather, gemm, grid_sample, layout,
            normalize, pad, patch, pool, pool_lp, qlinear_lowering, qlinear_in_place,
            qlinear_tactics, recurrent, reduce, resize, scan, transpose, unary)


def _register(table, entries, family):
    if entries is table:  # a module that imports the registry itself
        return
    twice = set(table) & set(entries)
    if twice:  # one op, one home: a second family may not silently replace the first
        raise ImportError(f"{family.__name__} registers {sorted(twice)} again")
    table.update(entries)


for _m in FAMILIES:
    for _table, _name in ((LOWERINGS, "LOWERINGS"), (TACTICS, "TACTICS"),
                          (EPILOGUE_SPANS, "EPILOGUE_SPANS"), (INPLACE, "INPLACE")):
        _register(_table, getattr(_m, _name, {}), _m)
    ALIASES.update(getattr(_m, "ALIASES", ()))
    TYPED_OPS.update(getattr(_m, "TYPED_OPS", ()))
    ELEMENTWISE.update(getattr(_m, "ELEMENTWISE", ()))
