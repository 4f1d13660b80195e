"""Memory pools: ``pools=dtcm:64K,sram`` - each a caller-provided buffer, filled in order.

Each buffer goes to the first pool where it fits and spills to the next: the algorithm
places everything left in a pool; what ends beyond the pool's size spills, after a last
try to fit each spilled buffer (largest first) into a gap below the size.
"""

import re
from dataclasses import dataclass, replace

from onnxcc.core.errors import OnnxccError
from onnxcc.target import parse_bytes

from .problem import Problem

#: the single pool of the default API (``<NAME>_ARENA_BYTES``, ``<name>_run(..., arena)``)
DEFAULT = "arena"
#: names the generated C already uses, and C keywords (a pool name is a C parameter)
RESERVED = {"inputs", "outputs", "auto", "break", "case", "char", "const", "continue",
            "default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if",
            "inline", "int", "long", "register", "restrict", "return", "short", "signed",
            "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
            "volatile", "while"}


@dataclass
class Pool:
    name: str
    capacity: int = None  # bytes; None: as large as needed


def parse_pools(text):
    """``'dtcm:64K,sram'`` -> [Pool('dtcm', 65536), Pool('sram')]; '' -> the default pool."""
    pools = []
    for item in filter(None, (text or DEFAULT).split(",")):
        name, _, size = item.partition(":")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in RESERVED:
            raise OnnxccError(f"pools: '{name}' is not a pool name",
                              hint="use lower-case C identifiers, e.g. pools=dtcm:64K,sram")
        if any(p.name == name for p in pools):
            raise OnnxccError(f"pools: '{name}' is named twice")
        pools.append(Pool(name, parse_bytes(size, f"pools={name}:") if size else None))
    if not pools:
        raise OnnxccError("pools= names no pool", hint="for example pools=dtcm:64K,sram")
    if any(p.capacity is None for p in pools[:-1]):
        raise OnnxccError("pools: only the last pool may be left without a size",
                          hint="for example pools=dtcm:64K,sram")
    return pools


@dataclass
class PoolPlan:
    pool: Pool
    buffers: list  # indices of the buffers placed in this pool
    placement: object  # algorithms.Placement of those buffers
    lower_bound: int  # of those buffers


def place_in_pools(buffers, pools, algorithm):
    """[PoolPlan] of each pool, in the order given."""
    left = list(range(len(buffers)))
    plans = []
    for pool in pools:
        problem = Problem([buffers[i] for i in left])
        placement = algorithm(problem)
        if pool.capacity is not None and placement.bytes > pool.capacity:
            placement, kept = _within(problem, placement, pool.capacity)
            inside = Problem([problem.buffers[k] for k in kept])
            plans.append(PoolPlan(pool, [left[k] for k in kept], placement, inside.lower_bound))
            left = [i for k, i in enumerate(left) if k not in kept]
        else:
            plans.append(PoolPlan(pool, left, placement, problem.lower_bound))
            left = []
    if left:
        largest = max(buffers[i].size for i in left)
        raise OnnxccError(f"pools too small: {len(left)} buffer(s) (the largest {largest} bytes) "
                          f"fit in none of {', '.join(p.name for p in pools)}",
                          hint="make the last pool larger or leave it without a size")
    return plans


def _within(problem, placement, capacity):
    """The placement cut to the buffers that fit below ``capacity`` (spilled ones that fit
    a gap moved there, largest first), and the indices of those buffers."""
    offsets = list(placement.offsets)
    spilled = sorted((k for k, b in enumerate(problem.buffers) if offsets[k] + b.size > capacity),
                     key=lambda k: (-problem.buffers[k].size, k))
    for k in spilled:
        offsets[k] = None
    for k in spilled:
        x = problem.lowest_offset(k, offsets)
        if x + problem.buffers[k].size <= capacity:
            offsets[k] = x
    kept = [k for k, o in enumerate(offsets) if o is not None]
    inside = [offsets[k] for k in kept]
    size = max((o + problem.buffers[k].size for k, o in zip(kept, inside)), default=0)
    return replace(placement, offsets=inside, bytes=size, optimal=False, order=None), kept
