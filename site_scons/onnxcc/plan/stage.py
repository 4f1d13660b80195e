"""Plan stage: where every tensor and every kernel's scratch lives (plan.json).

Reads the optimized graph's structure only (never its weights), so a weights-only edit
does not re-plan. The steps are the modules of ``memory/``: choose the order of the nodes,
decide which tensors share memory (views, concat slices, kernels writing over an input
that dies at them), turn that into buffers with their live bytes at every step, and place
the buffers in the pools. Constants stay in flash; graph inputs and outputs stay in the
caller's buffers unless ``io=arena``.
"""

import json

from onnxcc.core.collector import paused
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_text
from onnxcc.core.onnx_io import load_graph
from onnxcc.core.report import human_bytes
from onnxcc.tactics import stage as tactics

from . import bands as banding
from . import liveness
from . import patches as patching
from . import schedule as scheduling
from .algorithms import ALGORITHMS
from .forwarding import Lowered, forward
from .pools import parse_pools, place_in_pools
from .problem import align_up, live_bytes, lower_bound

ALIGNMENT = 16
SCHEDULES = ("memory", "graph")
IO_MODES = ("caller", "arena")


def check_options(planner, schedule, io):
    for option, value, known in (("planner", planner, ALGORITHMS), ("schedule", schedule, SCHEDULES),
                                 ("io", io, IO_MODES)):
        if value not in known:
            raise OnnxccError(f"{option}={value} is not known",
                              hint=f"{option}= takes {', '.join(known)}")


def forwarded(graph, order, io_in_arena, **forwarding):
    """(``Forwarding``, [``liveness.Planned``]) of ``graph`` run in ``order``."""
    f = forward(graph, order, io_in_arena, **forwarding)
    return f, liveness.buffers(graph, order, f, ALIGNMENT)


def order_lower_bound(graph, order, io_in_arena, **forwarding):
    """The lower bound of the arena of ``graph`` run in ``order``."""
    return lower_bound([p.buffer for p in forwarded(graph, order, io_in_arena, **forwarding)[1]])


def graph_lower_bound(graph, lowered=None):
    """The liveness lower bound of the graph itself: every tensor but views in memory of
    its own, inputs and outputs included, in the graph's order. Forwarding is measured
    against it."""
    return order_lower_bound(graph, list(range(len(graph.nodes))), True, in_place=False,
                             concat=False, lowered=lowered)


def choose_order(graph, schedule, io_in_arena, lowered=None):
    """(order, its ``forwarded`` with every in-place kernel, or None where not computed):
    the graph's order, or the memory-aware one when it needs less. A patched graph keeps
    its order: its patches run one after the other, as they were written (the search
    over interleavings of independent patches would be long, and no better)."""
    given = list(range(len(graph.nodes)))
    if schedule == "graph" or any(n.op == patching.JOIN for n in graph.nodes):
        return given, None
    found = scheduling.memory_order(graph, io_in_arena, ALIGNMENT, lowered)
    if found == given:
        return given, None
    tried = [(order, forwarded(graph, order, io_in_arena, lowered=lowered))
             for order in (given, found)]  # (the graph's order first: it stays on a tie)
    return min(tried, key=lambda t: lower_bound([p.buffer for p in t[1][1]]))


def in_place_that_counts(graph, order, f, planned, joins=False):
    """The nodes whose writing over an input keeps the peak down: without it, the bytes
    live at their step would exceed the lower bound. Elsewhere, writing over the input
    only ties buffers together (a shrunk output left at the bottom of a large one), which
    can keep the placement from reaching the lower bound. With ``joins``, a patch's join
    always counts: copying the whole join tensor for each band cost mobilenet_v2's row
    bands (plan/bands.py) 2% of its time."""
    live = live_bytes([p.buffer for p in planned])
    bound = max(live.values(), default=0)
    needed = {k for k in f.overwrites if joins and graph.nodes[k].op == patching.JOIN}
    for step, k in enumerate(order):
        if k not in f.overwrites:
            continue
        node = graph.nodes[k]
        x, y = f.sizes[f.overwrites[k]], f.sizes[node.outputs[0]]
        scratch = f.calls[k].scratch_bytes - f.lowered.call(k).scratch_bytes
        if live[step] + align_up(min(x, y), ALIGNMENT) - scratch > bound:
            needed.add(k)
    return needed


def _forward_and_place(graph, order, io_in_arena, pools, algorithm, lowered=None, joins=False,
                       everywhere=None):
    """(forwarding, buffers, pool plans): writing over inputs wherever kernels can, or only
    where that keeps the peak down, whichever needs fewer bytes (the latter on a tie:
    in-place kernels that need scratch are the slower ones). ``everywhere``: the
    ``forwarded`` of the former, when it is known."""
    best = None
    in_place = True
    f, planned = everywhere or forwarded(graph, order, io_in_arena, lowered=lowered)
    while True:
        plans = place_in_pools([p.buffer for p in planned], pools, algorithm)
        size = sum(p.placement.bytes for p in plans)
        if best is None or size <= best[0]:
            best = (size, f, planned, plans)
        if in_place is not True:
            return best[1:]
        in_place = in_place_that_counts(graph, order, f, planned, joins)
        if in_place == set(f.overwrites):
            return best[1:]
        f, planned = forwarded(graph, order, io_in_arena, in_place=in_place, lowered=lowered)


def plan(graph, planner="auto", schedule="memory", pools="", io="caller", joins_in_place=False):
    """The plan of ``graph``; ``joins_in_place``: every patch join writes over the one
    before (see ``in_place_that_counts``)."""
    check_options(planner, schedule, io)
    io_in_arena = io == "arena"
    if io_in_arena:
        for t in graph.outputs:
            if t in graph.constants:
                raise OnnxccError(f"output '{t}' is a constant, which io=arena cannot hold",
                                  hint="use io=caller")
    lowered = Lowered(graph)  # each node lowered once, whichever forwardings are tried
    order, everywhere = choose_order(graph, schedule, io_in_arena, lowered)
    f, planned, pool_plans = _forward_and_place(graph, order, io_in_arena, parse_pools(pools),
                                                ALGORITHMS[planner], lowered, joins_in_place,
                                                everywhere)

    where = {}  # buffer index -> (pool name, offset)
    pools_json = []
    for pp in pool_plans:
        listed = []
        for i, offset in zip(pp.buffers, pp.placement.offsets):
            where[i] = (pp.pool.name, offset)
            b = planned[i].buffer
            listed.append({"name": b.name, "offset": offset, "bytes": b.size, "first": b.first,
                           "last": b.last, "tensors": dict(sorted(planned[i].tensors.items()))})
        pools_json.append({
            "name": pp.pool.name, "capacity": pp.pool.capacity, "bytes": pp.placement.bytes,
            "lower_bound_bytes": pp.lower_bound, "algorithm": pp.placement.algorithm,
            "optimal": pp.placement.optimal,
            "buffers": sorted(listed, key=lambda b: (b["first"], b["offset"], b["name"]))})

    return {
        "model": graph.name,
        "alignment": ALIGNMENT,
        "io": io,
        "arena_bytes": sum(p["bytes"] for p in pools_json),
        "lower_bound_bytes": lower_bound([p.buffer for p in planned]),
        "io_bytes": 0 if io_in_arena else sum(graph.info(t).nbytes for t in
                                                dict.fromkeys(graph.inputs + graph.outputs)),
        "graph_lower_bound_bytes": graph_lower_bound(graph, lowered),
        "pools": pools_json,
        "schedule": _schedule_json(graph, order, f, planned, where),
        "tensors": _tensors_json(graph, f, planned, where),
    }


def _schedule_json(graph, order, f, planned, where):
    scratch = {p.scratch_step: where[i] for i, p in enumerate(planned) if p.scratch_step is not None}
    steps = []
    for step, k in enumerate(order):
        node = graph.nodes[k]
        entry = {"step": step, "index": k, "node": node.name, "op": node.op, "code": f.code[k]}
        if k in f.overwrites:
            entry["overwrites"] = f.overwrites[k]
        if step in scratch:
            pool, offset = scratch[step]
            entry["scratch"] = {"pool": pool, "offset": offset,
                                "bytes": f.calls[k].scratch_bytes}
        steps.append(entry)
    return steps


def _tensors_json(graph, f, planned, where):
    """Where each tensor's first byte is, for every tensor a step reads or writes."""
    buffer_of = {p.buffer.name: i for i, p in enumerate(planned) if p.scratch_step is None}
    used = dict.fromkeys(t for node in graph.nodes for t in node.inputs + node.outputs if t)
    used.update(dict.fromkeys(graph.inputs + graph.outputs))
    tensors = {}
    for t in used:
        root, offset = f.place[t]
        if root in graph.constants:
            if t != root:
                tensors[t] = {"constant": root, "offset": offset}
        elif root in f.fixed:
            kind = "input" if root in graph.inputs else "output"
            tensors[t] = {kind: (graph.inputs if kind == "input" else graph.outputs).index(root),
                          "offset": offset}
        else:
            pool, base = where[buffer_of[root]]
            tensors[t] = {"pool": pool, "offset": base + offset}
    return dict(sorted(tensors.items()))


def summary(plan):
    """One line: each pool against its lower bound, then the graph's own lower bound."""
    pools = ", ".join(f"{p['name']} {human_bytes(p['bytes'])} (lower bound "
                      f"{human_bytes(p['lower_bound_bytes'])}, {p['algorithm']})"
                      for p in plan["pools"])
    io = f" + io {human_bytes(plan['io_bytes'])}" if plan["io_bytes"] else ""
    p = plan.get("patches")
    patched = "" if not p else (
        f"; {p['grid'][0]}x{p['grid'][1]} patches of the first {p['layers']} nodes, joining at "
        f"'{p['join']}' (arena {human_bytes(p['arena_bytes_without'])} without, "
        f"{patching.overhead_percent(p)} more multiply-accumulates, {p['kernels']} patch kernels)")
    return (f"{pools}{io}; liveness lower bound of the graph "
            f"{human_bytes(plan['graph_lower_bound_bytes'])}{patched}"
            f"{banding.summary(plan.get('bands', []))}")


#: the largest arena of a target without a RAM size (the C API's sizes stay 32-bit)
MAX_ARENA_BYTES = 2 ** 32 - 1


def check_fits_ram(result, ram_bytes):
    """A plan whose arena (and the caller's I/O buffers) exceeds the target's RAM fails
    here, with the numbers, rather than at link time or on the chip; a target without a
    RAM size (0) still keeps its sizes within 32 bits."""
    need = result["arena_bytes"] + result["io_bytes"]
    limit = ram_bytes or MAX_ARENA_BYTES
    if need > limit:
        io = f" + {human_bytes(result['io_bytes'])} of inputs and outputs" if result["io_bytes"] else ""
        where = f"the target's {human_bytes(limit)} of RAM" if ram_bytes else \
            f"the limit of {human_bytes(limit)}"
        small = result.get("patches_smallest")
        reach = "" if not small else (
            f"; with patches the smallest arena is {human_bytes(small['arena_bytes'])} "
            f"({small['grid'][0]}x{small['grid'][1]} patches joining at '{small['join']}', "
            f"{patching.overhead_percent(small)} more multiply-accumulates)")
        raise OnnxccError(f"the activations need {human_bytes(result['arena_bytes'])} of arena{io}, "
                          f"more than {where}{reach}",
                          hint="use a smaller model or input, or ram= for a chip with more RAM")


#: RAM kept for the program's data and stack, which are known only once it is compiled
#: (the fit stage checks them): the arena's budget is the RAM less this and the I/O
RESERVED_RAM = 4096


def _arena_or_none(graph, io):
    """The lower bound of a patched ``graph``'s arena (the placement reaches it on these
    chains, and takes ten times longer), or None where a kernel cannot run a patch."""
    try:
        return order_lower_bound(graph, list(range(len(graph.nodes))), io == "arena")
    except OnnxccError:
        return None


def plan_with_patches(graph, patches, ram_bytes, **options):
    """The plan, with patch-based execution of the leading layers where ``patches`` asks
    for it: a (rows, columns) grid, or ``auto`` when the layer-by-layer plan does not
    fit ``ram_bytes`` (then the candidate that fits with the fewest recomputed
    multiply-accumulates). The plan records the patches (``plan["patches"]``, which
    ``memory.patches.apply`` reapplies) and the arena without them."""
    result = plan(graph, **options)
    budget = (ram_bytes - result["io_bytes"] - RESERVED_RAM) if ram_bytes else 0
    if patches == "off" or (patches == "auto" and (not ram_bytes or result["arena_bytes"] <= budget)):
        return result
    forced = patches != "auto"
    io = options.get("io", "caller")
    order = [step["index"] for step in result["schedule"]]  # the layer-by-layer plan's
    found, smallest = patching.search(graph, lambda g: _arena_or_none(g, io),
                                      float("inf") if forced else budget,
                                      grids=[patches] if forced else None,
                                      smallest_first=forced, order=order)
    if found is None:
        if smallest is None:
            if forced:
                raise OnnxccError(f"patches={patches[0]}x{patches[1]}: the graph {patching.NO_STAGE} "
                                  "of that many",
                                  hint="patch-based execution takes convolutions, pools and "
                                       "elementwise ops fed by one NCHW image input, whose "
                                       "tactics run the patches' shapes (see tactic=)")
            return result
        arena, p = smallest
        result["patches_smallest"] = dict(p.describe(), arena_bytes=arena)
        return result
    p = found[0]
    patched = plan(p.graph, **options)
    patched["patches"] = dict(p.describe(), arena_bytes_without=result["arena_bytes"])
    return patched


def plan_with_bands(graph, bands, cache_bytes, patches, ram_bytes, **options):
    """``plan_with_patches``'s plan; where it runs no patches, with the interior blocks
    ``memory.bands.choose`` puts in row bands (``plan["bands"]``, which
    ``memory.patches.apply`` reapplies) for a cache of ``cache_bytes``."""
    result = plan_with_patches(graph, patches, ram_bytes, **options)
    banded, described = banding.choose(graph, bands, cache_bytes) if "patches" not in result else (graph, [])
    if not described:
        if bands not in ("auto", "off"):
            raise OnnxccError(f"bands={bands}: the graph {banding.NO_BLOCK}"
                              + (" besides its patches" if "patches" in result else ""),
                              hint="row bands take convolutions, pools and elementwise ops "
                                   "of one NCHW image")
        return result
    planned = plan(banded, **options, joins_in_place=True)
    planned["bands"] = described
    return planned


@paused()
def run(graph_path, plan_path, source=None, tactics_path=None, ram_bytes=0, patches="off",
        bands="off", cache_bytes=0, **options):
    """Plan the graph at ``graph_path`` into ``plan_path``; errors name ``source`` (the
    user's model file). ``tactics_path``: the kernels the nodes run (their scratch, and
    whether they can write over an input), else the reference kernels. ``ram_bytes``: the
    target's RAM (0: no limit), which the arena must fit; ``patches``: see
    ``plan_with_patches``; ``bands`` and ``cache_bytes`` (the target's L2): see
    ``plan_with_bands`` (opt=size bands nothing unless forced: its reference kernels are
    compute-bound)."""
    graph = load_graph(graph_path, with_values=False)
    bands = banding.check_bands(bands)
    if tactics_path:
        tactics.annotate(graph, tactics.load(tactics_path))
        if bands == "auto" and tactics.load_opt(tactics_path) == "size":
            bands = "off"
    try:
        result = plan_with_bands(graph, bands, cache_bytes, patching.check_grid(patches), ram_bytes,
                                 **options)
        check_fits_ram(result, ram_bytes)
    except OnnxccError as e:
        raise OnnxccError(e.message, where=e.where or source or graph_path, hint=e.hint) from None
    write_text(plan_path, json.dumps(result, indent=1) + "\n")
    return result


def live_at_steps(plan):
    """Per step of ``plan`` (a plan.json), the bytes of its buffers (kernel scratch
    included, each at its largest) live at that step, over all pools."""
    live = [0] * len(plan["schedule"])
    for pool in plan["pools"]:
        for b in pool["buffers"]:
            for step in range(b["first"], min(b["last"], len(live) - 1) + 1):
                live[step] += b["bytes"]
    return live
