"""Operator registry: the folder is the registry.

Each module here covers one family of ONNX operators. It exports
``LOWERINGS`` (op type -> function(node, graph) -> KernelCall) for ops that run a kernel,
and ``ALIASES`` (op types whose output is its first input, re-viewed: no code, no memory).
A kernel call names the Mako template under ``templates/kernels/`` that implements it
and the compile-time parameters the template specializes on.

A module whose kernels take binary ops in their epilogue exports ``EPILOGUE_SPANS``
(op type -> function(node, graph) -> the output dimensions each of its kernel's loop
counters walks; ops/epilogue.py).

An op with several implementations also exports ``TACTICS`` (op type -> [Tactic]):
sibling kernels with the same C interface, the first being the reference (smallest code);
``tactics.py`` picks one per node. An op with only ``LOWERINGS`` has one tactic,
``reference``.
"""

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

from ..errors import OnnxccError


@dataclass
class KernelCall:
    template: str  # templates/kernels/<template>.c.mako
    tag: str  # readable summary of the parameters, part of the C symbol name
    params: dict  # everything the template specializes on (JSON-able)
    inputs: list  # [(role, tensor name)]: C parameter names and the tensors passed
    outputs: list
    #: working memory the kernel needs during the call (its last parameter, ``scratch``),
    #: placed in the arena by the planner like a tensor that lives for one step
    scratch_bytes: int = 0
    #: role -> packing spec (packing.py): that constant input is passed re-laid-out at
    #: compile time into the order the kernel reads it
    packed: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Tactic:
    """One implementation of an op; every tactic of an op computes the same outputs."""
    name: str
    lower: Callable  # (node, graph, cpu) -> KernelCall
    applies: Callable = None  # (node, graph, cpu) -> bool; None: always
    cost: Callable = None  # (node, graph, cpu) -> estimated cycles; None: not estimated


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
    return [t for t in tactics_for(node) if t.applies is None or t.applies(node, graph, cpu)]


def lower(node, graph, tactic="reference", cpu=None):
    """``node``'s KernelCall by the tactic named ``tactic`` (chosen by tactics.py)."""
    for t in tactics_for(node):
        if t.name == tactic:
            return t.lower(node, graph, cpu)
    raise OnnxccError(f"node '{node.name}' (op {node.op}) has no tactic '{tactic}'",
                      hint=f"its tactics: {', '.join(t.name for t in tactics_for(node))}")


def unsupported(node, what, hint=None):
    return OnnxccError(f"node '{node.name}' (op {node.op}): {what} is not supported", hint=hint)


# the registry: filled from the modules of this folder (they import the names above)
LOWERINGS = {}
TACTICS = {}
EPILOGUE_SPANS = {}
ALIASES = set()
for _mod in pkgutil.iter_modules(__path__):
    _m = importlib.import_module(f"{__name__}.{_mod.name}")
    LOWERINGS.update(getattr(_m, "LOWERINGS", {}))
    TACTICS.update(getattr(_m, "TACTICS", {}))
    EPILOGUE_SPANS.update(getattr(_m, "EPILOGUE_SPANS", {}))
    ALIASES.update(getattr(_m, "ALIASES", ()))
