"""Row bands through a network's interior blocks, so that a wide tensor stays in cache.

A MobileNet-style inverted residual block expands a narrow tensor six times (a 1x1
convolution), filters it (a depthwise one) and projects it back (a 1x1, with the residual
Add fused or not). At high resolution the expanded tensor outgrows the L2 cache: the
expansion writes it to memory and the depthwise reads it back, both memory-bound. Run as
row bands of the block's output, each band's expanded rows are written and read while
they are still in the cache, for the cost of the halo rows computed again (a 3x3 window
reads one or two rows of the neighbour band).

The rewrite is patch-based execution's (plan/patches.py), started at an interior
tensor (the band's first node reads a ``Slice`` of it) and applied to several stages of
one graph; every kernel and tactic applies unchanged (a band node keeps its layer's
tactic). ``choose`` finds the stages and how many bands each gets:

  auto  on a target with an ``l2_bytes`` cache (the host targets), a stage with a tensor
        inside larger than the cache that a depthwise convolution reads (an expansion),
        cut into the fewest bands whose tensors fit half of it, when the bytes kept out
        of memory (``CYCLES_PER_BYTE``) outweigh the cycles the halos add (the chosen
        tactics' estimates, epilogues included)
  N     every stage (of up to ``MAX_NODES`` nodes from a windowed one) in N bands: for
        the tests and the fuzzer, which check that any stage runs right in bands
"""

from dataclasses import dataclass

from onnxcc import ops
from onnxcc.core.errors import OnnxccError
from onnxcc.core.macs import graph_macs
from onnxcc.ops.common.spatial import is_depthwise

from . import patches as patching

#: the longest stage tried from each windowed node (an inverted residual block and a
#: separate residual Add or activation)
MAX_NODES = 4
#: cycles one byte of a tensor written to memory and read back costs more than from L2: a
#: little below the rate measured, so that a stage measured slower in bands is not banded.
#: The Slices and joins the bands copy (``copied_bytes``) are not charged: part of it is
#: traffic the unbanded layers pay too (the numbers, and what is left to measure:
#: docs/memory.md, "What a byte kept out of memory is worth")
CYCLES_PER_BYTE = 0.1
#: the share of the cache one band's tensors may fill (the weights and the next band's
#: first rows share it)
BAND_SHARE = 0.5
#: what a forced ``bands=N`` says when no block can run in bands
NO_BLOCK = "has no block to run in row bands"
#: the most bands of one stage
MAX_BANDS = 32


@dataclass
class Stage:
    """A run of nodes from ``source`` to its join, and its cost in bands."""
    source: str
    nodes: list  # node indices, in order
    bands: int
    extra_macs: int = 0
    extra_cycles: int = 0  # estimated
    saved_bytes: int = 0
    copied_bytes: int = 0  # by the Slices and joins

    def describe(self, graph):
        return {"source": self.source, "join": graph.nodes[self.nodes[-1]].outputs[0],
                "nodes": [graph.nodes[k].name for k in self.nodes], "bands": self.bands,
                "extra_macs": self.extra_macs, "extra_cycles": self.extra_cycles,
                "saved_bytes": self.saved_bytes, "copied_bytes": self.copied_bytes}


def check_bands(value):
    """``bands=``: 'off', 'auto' or N (every stage in N row bands)."""
    if value in ("off", "auto"):
        return value
    if str(value).isdigit() and 2 <= int(value) <= MAX_BANDS:
        return int(value)
    raise OnnxccError(f"bands={value} is not known",
                      hint=f"bands= takes off, auto or N (2 to {MAX_BANDS} row bands per block)")


def _run_from(graph, k):
    """The local nodes from node ``k`` (a windowed one reading an image tensor), in the
    graph's order, and its join lengths."""
    first = graph.nodes[k]
    if first.op not in patching.WINDOWED or graph.is_constant(first.inputs[0]) \
            or not patching.is_image(graph, first.inputs[0]):
        return None, [], []
    ready, nodes = {first.inputs[0]}, []
    for j in range(k, min(k + MAX_NODES, len(graph.nodes))):
        if not patching.is_local(graph.nodes[j], graph, ready):
            break
        nodes.append(j)
        ready.add(graph.nodes[j].outputs[0])
    return first.inputs[0], nodes, patching.joins_of(graph, nodes)


def _region_bytes(graph, t, r):
    info = graph.info(t)
    return info.nbytes * (r.r1 - r.r0) * (r.c1 - r.c0) // (info.shape[2] * info.shape[3])


def _copied_bytes(graph, nodes, source, need, windows):
    """Bytes one band copies: the Slices ``patches.rewrite`` makes (each reader of the
    source, or of a tensor held larger than it reads, gets its region copied, unless
    that is one contiguous run) and the band's piece of the join (PatchJoin)."""
    copied = _region_bytes(graph, graph.nodes[nodes[-1]].outputs[0], need[graph.nodes[nodes[-1]].outputs[0]])
    for k in nodes:
        node = graph.nodes[k]
        out = need[node.outputs[0]]
        reads = [(node.inputs[0], windows[k][0])] + [(t, out) for t in node.inputs[1:]] \
            if node.op in patching.WINDOWED else [(t, out) for t in node.inputs]
        for t, wanted in reads:
            if not t or graph.is_constant(t):
                continue
            shape = graph.info(t).shape
            have = patching.Region(0, shape[2], 0, shape[3]) if t == source else need[t]
            # (rows of a one-channel tensor: a view, plan/forwarding.py)
            if wanted != have and not (shape[1] == 1 and (wanted.c0, wanted.c1) == (have.c0, have.c1)):
                copied += _region_bytes(graph, t, wanted)
    return copied


def _cost(graph, nodes, bands, work):
    """(largest band's bytes of tensors, bytes the bands copy, the added work) of
    ``nodes`` in ``bands`` row bands, for each of ``work`` ({node name: one work measure
    of the layer}, e.g. MACs); OnnxccError where a band's windows read only padding."""
    join = graph.nodes[nodes[-1]].outputs[0]
    source = graph.nodes[nodes[0]].inputs[0]
    _, _, h, w = graph.info(join).shape
    largest, copied, shares = 0, 0, {k: 0.0 for k in nodes}
    for r0, r1 in patching.split_range(h, bands):
        need, windows = patching.needs(graph, nodes, patching.Region(r0, r1, 0, w))
        largest = max(largest, sum(_region_bytes(graph, t, r) for t, r in need.items()))
        copied += _copied_bytes(graph, nodes, source, need, windows)
        for k in nodes:
            out = graph.nodes[k].outputs[0]
            r, shape = need[out], graph.info(out).shape
            shares[k] += (r.r1 - r.r0) * (r.c1 - r.c0) / (shape[2] * shape[3])
    return largest, copied, [round(sum(each[graph.nodes[k].name] * (shares[k] - 1) for k in nodes))
                             for each in work]


class _Cycles(dict):
    """{node name: estimated cycles of its chosen tactic} (its MACs where not
    estimated), each costed when first asked for: only the stages' nodes are."""

    def __init__(self, graph, macs):
        super().__init__()
        self.nodes, self.graph, self.macs = {n.name: n for n in graph.nodes}, graph, macs

    def __missing__(self, name):
        node = self.nodes[name]
        tactic, cpu = ops.chosen_tactic(node)
        found = next((t for t in ops.tactics_for(node) if t.name == tactic), None)
        self[name] = found.cost(node, self.graph, cpu) if found and found.cost else self.macs[name]
        return self[name]


def _auto(graph, source, nodes, length, cache, work):
    """The Stage of ``nodes[:length]`` in the fewest bands whose tensors fit half of
    ``cache``, when that pays; else None."""
    stage = nodes[:length]
    internal = [graph.nodes[k].outputs[0] for k in stage[:-1]]
    saved = sum(2 * graph.info(t).nbytes for t in internal if graph.info(t).nbytes > cache)
    if not saved or not _filters_wide(graph, stage, cache):
        return None
    rows = graph.info(graph.nodes[stage[-1]].outputs[0]).shape[2]
    for bands in range(2, min(rows, MAX_BANDS) + 1):
        try:
            largest, copied, (macs, cycles) = _cost(graph, stage, bands, work)
        except OnnxccError:
            continue
        if largest <= cache * BAND_SHARE:
            s = Stage(source, stage, bands, macs, cycles, saved, copied)
            return s if _gain(s) > 0 else None
    return None


def _filters_wide(graph, stage, cache):
    """Whether a depthwise convolution of the stage reads a tensor of it larger than
    ``cache``: an inverted residual block's expansion. Stages without one gained nothing
    in bands: their layers are compute-bound or stream once (the numbers: docs/memory.md,
    "Row bands through interior blocks (for speed)")."""
    made = {graph.nodes[k].outputs[0] for k in stage}
    for k in stage:
        node = graph.nodes[k]
        if node.op not in ("Conv", "QLinearConv") or node.inputs[0] not in made:
            continue
        info = graph.info(node.inputs[0])
        g = {"group": node.attrs.get("group", 1), "c": info.shape[1],
             "m": graph.info(node.outputs[0]).shape[1]}
        if info.nbytes > cache and is_depthwise(g):
            return True
    return False


def _forced(graph, source, nodes, length, bands, work):
    stage = nodes[:length]
    rows = graph.info(graph.nodes[stage[-1]].outputs[0]).shape[2]
    if rows < 2:
        return None
    try:
        _, copied, (macs, cycles) = _cost(graph, stage, min(bands, rows), work)
    except OnnxccError:
        return None
    return Stage(source, stage, min(bands, rows), macs, cycles, 0, copied)


def _lowers(graph, names):
    """Whether every node of ``graph`` named in ``names`` has a kernel (a tactic chosen
    for a layer may not run a band's shape)."""
    try:
        for node in graph.nodes:
            if node.name in names:
                ops.lower(node, graph)
    except OnnxccError:
        return False
    return True


def _gain(s):
    """The cycles a stage's bands save (the copies left out: see CYCLES_PER_BYTE)."""
    return s.saved_bytes * CYCLES_PER_BYTE - s.extra_cycles


def _auto_stages(graph, cache, work):
    """The stages that pay most, which do not overlap: from each node the best."""
    best = []
    for k in range(len(graph.nodes)):
        source, nodes, joins = _run_from(graph, k)
        options = [s for s in (_auto(graph, source, nodes, n, cache, work) for n in joins) if s]
        if options:
            best.append(max(options, key=lambda s: (_gain(s), len(s.nodes))))
    chosen, taken = [], set()
    for s in sorted(best, key=lambda s: (-_gain(s), s.nodes[0])):
        if not taken & set(s.nodes):
            chosen.append(s)
            taken |= set(s.nodes)
    return sorted(chosen, key=lambda s: s.nodes[0])


def _forced_stages(graph, bands, work):
    """From the first node on, the longest stage from each node not yet in one."""
    chosen, k = [], 0
    while k < len(graph.nodes):
        source, nodes, joins = _run_from(graph, k)
        options = [s for s in (_forced(graph, source, nodes, n, bands, work) for n in joins) if s]
        if not options:
            k += 1
            continue
        chosen.append(max(options, key=lambda s: len(s.nodes)))
        k = chosen[-1].nodes[-1] + 1
    return chosen


def choose(graph, mode, cache):
    """(the graph rewritten, [Stage description, ...]) for ``bands=`` ``mode`` (auto or
    N) on a target whose cache a band should fit (``cache`` bytes; 0: auto bands
    nothing). Stages never overlap; each is checked to lower on its band shapes."""
    if mode == "off" or (mode == "auto" and not cache):
        return graph, []
    macs = graph_macs(graph)
    work = (macs, _Cycles(graph, macs))
    chosen = _forced_stages(graph, mode, work) if mode != "auto" else _auto_stages(graph, cache, work)
    described, banded = [], graph
    for s in chosen:
        d = s.describe(graph)
        index = {n.name: i for i, n in enumerate(banded.nodes)}
        trial = patching.rewrite(banded, [index[n] for n in d["nodes"]], (s.bands, 1), source=s.source)
        if _lowers(trial, {f"{n}__p{p}" for n in d["nodes"] for p in range(s.bands)}):
            banded = trial
            described.append(d)
    return banded, described


def summary(described):
    """'; N blocks in row bands (b1, b2 ... bands, x M more multiply-accumulates)' of a
    plan's ``bands``."""
    if not described:
        return ""
    extra = sum(d["extra_macs"] for d in described)
    return (f"; {len(described)} block{'s' if len(described) > 1 else ''} in row bands "
            f"({', '.join(str(d['bands']) for d in described)} bands, "
            f"{extra / 1e6:.1f} M more multiply-accumulates)")
