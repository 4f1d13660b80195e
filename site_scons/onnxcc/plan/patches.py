"""Patch-based execution of a graph's leading layers, when the layer-by-layer plan does
not fit the RAM (MCUNetV2's idea, Lin et al. 2021).

A CNN's peak memory sits in its first, high-resolution layers. The *stage* is the
graph's leading run of spatially local nodes (convolutions, pools, elementwise ops) fed
by one image input, up to a *join* tensor of lower resolution. Cut the join into a grid
of patches; each patch is computed from its receptive field alone, layer by layer, in
buffers the size of a patch (halos overlapping a neighbour are computed again), and its
piece of the join is copied into place (``PatchJoin``, written over the join in place).
Only one patch's buffers are live at a time.

The rewrite is a plain graph: each patch is a copy of the stage's nodes on smaller
tensors, whose windows get explicit pads (the image's own pads where the patch touches
its border, none inside: the neighbour's pixels are there), fed by a ``Slice`` of the
input region (a patch, not a copy of the input). Every kernel, tactic and memory
planning rule then applies unchanged, and every output element is computed by the same
arithmetic as in the layer-by-layer build: the patch nodes keep their layer's tactic.

``search`` builds the candidates (where to join, how many patches), plans each, and
keeps the cheapest in recomputed multiply-accumulates that fits the budget.
"""

from dataclasses import dataclass, replace

from onnxcc import ops
from onnxcc.core.errors import OnnxccError
from onnxcc.core.ir import Graph, Node
from onnxcc.core.macs import graph_macs
from onnxcc.ops.common.epilogue import operands_of
from onnxcc.ops.common.spatial import window_2d, window_reach
from onnxcc.ops.qlinear.lowering import RESIDUAL_INPUT

#: ops computed over a window of their first input (2-D, NCHW)
WINDOWED = {"Conv", "QLinearConv", "MaxPool", "AveragePool"}
#: the op that copies a patch's piece of the join into place (ops/patch.py)
JOIN = "PatchJoin"
#: what a forced ``patches=N`` says when the graph has nothing to patch (or too small)
NO_STAGE = "has no leading layers to run in patches"
#: the grids searched (rows x columns of patches), fewest patches first: rows up to 8,
#: no more columns than rows (row bands need fewer distinct patch shapes, so fewer kernels)
GRIDS = sorted(((r, c) for r in range(1, 9) for c in range(1, r + 1) if 2 <= r * c <= 36),
               key=lambda g: (g[0] * g[1], g[1]))


@dataclass(frozen=True)
class Region:
    """Rows [r0, r1) and columns [c0, c1) of an NCHW tensor."""
    r0: int
    r1: int
    c0: int
    c1: int

    def hull(self, other):
        return Region(min(self.r0, other.r0), max(self.r1, other.r1),
                      min(self.c0, other.c0), max(self.c1, other.c1))


@dataclass
class Patched:
    """A graph rewritten for patches, and what it costs."""
    graph: Graph
    join: str  # the tensor where the patches meet
    grid: tuple  # (rows, columns) of patches
    layers: int  # nodes of the stage
    macs: int  # multiply-accumulates of one inference, patched
    extra_macs: int  # against the layer-by-layer graph
    kernels: int  # distinct patch node shapes: each is a kernel of its own
    nodes: list  # the stage's node names, in the order each patch runs them

    def describe(self):
        return {"join": self.join, "grid": list(self.grid), "layers": self.layers, "nodes": self.nodes,
                "macs": self.macs, "extra_macs": self.extra_macs, "kernels": self.kernels}


def is_image(graph, t):
    """A 4-D tensor of one image: what patches and bands slice."""
    info = graph.info(t)
    return info.shape is not None and len(info.shape) == 4 and info.shape[0] == 1


def _spatial_constant(graph, t):
    """A constant that varies along H or W (it would not broadcast onto a patch)."""
    shape = tuple(graph.info(t).shape)
    return any(d != 1 for d in shape[-2:]) if len(shape) >= 2 else any(d != 1 for d in shape)


def _window(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    kernel = node.attrs.get("kernel_shape") or graph.info(node.inputs[1]).shape[2:]
    return window_2d(node, graph.info(x).shape, graph.info(y).shape, kernel)


def is_local(node, graph, ready):
    """Whether ``node`` can run on a patch: its image inputs are ``ready`` (the input or
    the stage's tensors), its output an image of the same batch."""
    if len(node.outputs) != 1 or not is_image(graph, node.outputs[0]):
        return False
    if node.op in WINDOWED:
        a = node.attrs
        # (MaxPool's ceil_mode is explicit padding at the end, ignored like the rest;
        # AveragePool's would change its divisors)
        if len(graph.info(node.inputs[0]).shape) != 4 or node.inputs[0] not in ready \
                or (a.get("ceil_mode", 0) and node.op != "MaxPool"):
            return False
        others = node.inputs[1:]
    elif node.op in ops.ELEMENTWISE or (node.op == "Concat" and node.attrs.get("axis") in (1, -3)):
        others = node.inputs
    else:
        return False
    out_shape = graph.info(node.outputs[0]).shape
    # a constant operand (of an elementwise op, or of an op fused into a window op: an
    # epilogue's, a fused QLinearAdd's residual; not its own weights and tables) must not
    # vary over pixels
    operands = set(others) if node.op not in WINDOWED else \
        set(operands_of(node)) | set(node.inputs[RESIDUAL_INPUT:] if node.op == "QLinearConv" else [])
    for t in others:
        if not t or graph.is_constant(t):
            if t in operands and (node.op == "Concat" or _spatial_constant(graph, t)):
                return False
            continue
        shape = graph.info(t).shape
        if t not in ready or (shape != out_shape if node.op != "Concat" else shape[2:] != out_shape[2:]):
            return False
    return True


def stage(graph, order=None):
    """The leading local nodes (indices, in ``order``: a topological order, the graph's by
    default) fed by one image input, and the join candidates: prefix lengths after which
    only the last node's output leaves it. Each patch runs its nodes in that order."""
    images = [t for t in graph.inputs if is_image(graph, t)]
    if len(images) != 1:
        return [], []
    ready, nodes = {images[0]}, []
    for k in order or range(len(graph.nodes)):
        node = graph.nodes[k]
        if not is_local(node, graph, ready):
            break
        nodes.append(k)
        ready.add(node.outputs[0])
    return nodes, joins_of(graph, nodes)


def joins_of(graph, nodes):
    """The prefix lengths of ``nodes`` after which only the last node's output leaves it."""
    consumers = graph.consumers()
    joins = []
    for length in range(1, len(nodes) + 1):
        inside = {graph.nodes[k].name for k in nodes[:length]}
        produced = [graph.nodes[k].outputs[0] for k in nodes[:length - 1]]
        if all(t not in graph.outputs and all(c.name in inside for c in consumers.get(t, []))
               for t in produced):
            joins.append(length)
    return joins


def split_range(n, parts):
    """[0, n) in ``parts`` nearly equal ranges."""
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _input_range(a, b, k, s, d, p, n):
    """(first, end, pad before, pad after) of the input rows output rows [a, b) read."""
    lo = a * s - p
    hi = lo + window_reach(b - a, k, s, d)
    return max(lo, 0), min(hi, n), max(0, -lo), max(0, hi - n)


def needs(graph, nodes, region):
    """For one patch of the join (the last node's output): the region each tensor of the
    stage must hold (the hull of what its readers need), and for each windowed node the
    region of its input its windows read and its pads."""
    need = {graph.nodes[nodes[-1]].outputs[0]: region}
    windows = {}
    for k in reversed(nodes):
        node = graph.nodes[k]
        out = need[node.outputs[0]]
        wants = []
        if node.op in WINDOWED:
            g = _window(node, graph)
            r0, r1, pt, pb = _input_range(out.r0, out.r1, g["kh"], g["sh"], g["dh"], g["pt"], g["h"])
            c0, c1, pl, pr = _input_range(out.c0, out.c1, g["kw"], g["sw"], g["dw"], g["pl"], g["w"])
            windows[k] = (Region(r0, r1, c0, c1), [pt, pl, pb, pr])
            wants.append((node.inputs[0], windows[k][0]))
            wants += [(t, out) for t in node.inputs[1:] if t and not graph.is_constant(t)]
        else:
            wants += [(t, out) for t in node.inputs if t and not graph.is_constant(t)]
        for t, r in wants:
            if r.r1 <= r.r0 or r.c1 <= r.c0:  # the patch's windows read padding only
                raise OnnxccError(f"a patch of '{node.outputs[0]}' reads no pixel of '{t}'")
            need[t] = need[t].hull(r) if t in need else r
    return need, windows


def _fresh(tensors, name):
    """``name``, or with a suffix where another stage's rewrite already took it."""
    taken, n = name, 0
    while taken in tensors:
        n += 1
        taken = f"{name}_{n}"
    return taken


def rewrite(graph, nodes, grid, source=None):
    """``graph`` with its stage ``nodes`` (indices, a join candidate) run as ``grid``
    patches of the join; the patches run one after the other. ``source``: the tensor the
    stage reads (default: the image input, and the patches run first); an interior one
    (plan/bands.py) has the patches run where the stage's first node was."""
    join = graph.nodes[nodes[-1]].outputs[0]
    _, _, jh, jw = graph.info(join).shape
    tensors, new_nodes = dict(graph.tensors), []
    image = source or next(t for t in graph.inputs if is_image(graph, t))
    stage_nodes = [graph.nodes[k] for k in nodes]
    full = None
    patches = [Region(r0, r1, c0, c1) for r0, r1 in split_range(jh, grid[0]) for c0, c1 in split_range(jw, grid[1])]
    for p, region in enumerate(patches):
        need, windows = needs(graph, nodes, region)
        names = {}  # stage tensor -> this patch's tensor (its region of it)

        def local(t, wanted):
            """This patch's tensor holding region ``wanted`` of ``t``: the patch's own, or a
            Slice of it (when a reader wants less than the hull) or of the input."""
            info = graph.info(t)
            have = need[t] if t != image else Region(0, info.shape[2], 0, info.shape[3])
            if have == wanted:
                return names.get(t, t)
            name = _fresh(tensors, f"{t}__p{p}_slice{len(new_nodes)}")
            tensors[name] = replace(info, name=name, shape=(1, info.shape[1], wanted.r1 - wanted.r0,
                                                            wanted.c1 - wanted.c0))
            new_nodes.append(Node(name, "Slice", [names.get(t, t)], [name],
                                  {"starts": [wanted.r0 - have.r0, wanted.c0 - have.c0],
                                   "ends": [wanted.r1 - have.r0, wanted.c1 - have.c0], "axes": [2, 3]}))
            return name

        for k, node in zip(nodes, stage_nodes):
            out = node.outputs[0]
            region_out = need[out]
            if node.op in WINDOWED:
                read, pads = windows[k]
                inputs = [local(node.inputs[0], read)]
                rest = node.inputs[1:]
                attrs = dict(node.attrs, pads=pads)
                attrs.pop("auto_pad", None)
                attrs.pop("ceil_mode", None)
            else:
                inputs, rest, attrs = [], node.inputs, dict(node.attrs)
            inputs += [t if not t or graph.is_constant(t) else local(t, region_out) for t in rest]
            name = _fresh(tensors, f"{out}__p{p}")
            info = graph.info(out)
            tensors[name] = replace(info, name=name, shape=(1, info.shape[1], region_out.r1 - region_out.r0,
                                                            region_out.c1 - region_out.c0))
            names[out] = name
            new_nodes.append(Node(f"{node.name}__p{p}", node.op, inputs, [name], attrs))
        joined = join if p == len(patches) - 1 else _fresh(tensors, f"{join}__joined{p}")
        if joined != join:
            tensors[joined] = replace(graph.info(join), name=joined)
        new_nodes.append(Node(f"{join}__join{p}", JOIN, ([full] if full else []) + [names[join]],
                              [joined], {"at": [region.r0, region.c0]}))
        full = joined
    inside = set(nodes)
    rest = [n for k, n in enumerate(graph.nodes) if k not in inside]
    at = 0 if source is None else sum(1 for k in range(min(nodes)) if k not in inside)
    return Graph(graph.name, list(graph.inputs), list(graph.outputs), rest[:at] + new_nodes + rest[at:],
                 tensors, graph.constants, graph.opset)


def patched(graph, nodes, grid, base_macs):
    g = rewrite(graph, nodes, grid)
    m = sum(graph_macs(g).values())
    shapes = {(n.op, origin(n.name), tuple(g.info(n.inputs[0]).shape), tuple(n.attrs.get("pads", ())))
              for n in g.nodes if "__p" in n.name}
    return Patched(g, graph.nodes[nodes[-1]].outputs[0], grid, len(nodes), m, m - base_macs,
                   len(shapes), [graph.nodes[k].name for k in nodes])


def search(graph, arena_of, budget, grids=None, smallest_first=False, order=None):
    """(best, smallest): (the cheapest Patched whose arena fits ``budget`` bytes, its arena)
    or None, and (the smallest arena reached, its Patched) or None without candidates.
    ``arena_of``: graph -> arena bytes, or None where the graph cannot be planned (a
    tactic that does not apply to a patch's shape). The cheapest: the fewest recomputed
    multiply-accumulates, then the fewest kernels. Each join's grids are tried from the
    fewest patches up until one fits (more patches recompute more), skipping those that
    already recompute more than the best found; with ``smallest_first`` the smallest
    arena wins instead. ``order``: the order the layer-by-layer plan runs the nodes in
    (the memory-aware schedule's), which each patch follows."""
    best, smallest = None, None

    def key(p, arena):
        return (arena, p.extra_macs) if smallest_first else (p.extra_macs, p.kernels, arena)
    for at_join in candidates(graph, grids, order):
        for p in at_join:
            if best is not None and not smallest_first and p.extra_macs > best[0].extra_macs:
                continue
            arena = arena_of(p.graph)
            if arena is None:
                continue
            if smallest is None or arena < smallest[0]:
                smallest = (arena, p)
            if arena <= budget:
                if best is None or key(p, arena) < key(*best):
                    best = (p, arena)
                if not smallest_first:
                    break
    return best, smallest


def candidates(graph, grids=None, order=None):
    """The patched graphs worth costing, join by join from the shallowest: for each join
    an iterator of Patched, built as it is read, over ``grids`` (default GRIDS, fewest
    patches first) that fit the join and whose patches all read some pixel."""
    base = sum(graph_macs(graph).values())
    nodes, joins = stage(graph, order)

    def at_join(length):
        _, _, h, w = graph.info(graph.nodes[nodes[length - 1]].outputs[0]).shape
        for grid in grids or GRIDS:
            if grid[0] > h or grid[1] > w:
                continue
            try:
                yield patched(graph, nodes[:length], grid, base)
            except OnnxccError:  # a patch whose windows lie in the padding: not this grid
                continue
    return [at_join(length) for length in joins]


def overhead_percent(described):
    """'x.y%': the recomputed multiply-accumulates of a plan's ``patches`` entry."""
    base = described["macs"] - described["extra_macs"]
    return f"{100.0 * described['extra_macs'] / base:.1f}%" if base else "0%"


def apply(graph, plan):
    """``graph`` as ``plan`` (a plan.json) runs it: rewritten for its patches and its row
    bands (plan/bands.py), if any."""
    p = plan.get("patches")
    if p:
        index = {n.name: k for k, n in enumerate(graph.nodes)}
        graph = rewrite(graph, [index[name] for name in p["nodes"]], tuple(p["grid"]))
    for band in plan.get("bands", ()):
        index = {n.name: k for k, n in enumerate(graph.nodes)}
        graph = rewrite(graph, [index[name] for name in band["nodes"]], (band["bands"], 1),
                        source=band["source"])
    return graph


def origin(name):
    """The name of the stage node that patch node ``name`` copies (else ``name``)."""
    return name.rsplit("__p", 1)[0] if "__p" in name else name


def check_grid(value):
    """``patches=``: 'off', 'auto', N (an N x N grid) or RxC (R rows of C patches); a grid
    is returned as (rows, columns)."""
    if value in ("off", "auto"):
        return value
    parts = str(value).lower().split("x")
    if len(parts) in (1, 2) and all(p.isdigit() for p in parts):
        rows, cols = int(parts[0]), int(parts[-1])
        if 1 <= rows <= 64 and 1 <= cols <= 64 and rows * cols >= 2:
            return rows, cols
    raise OnnxccError(f"patches={value} is not known",
                      hint="patches= takes off, auto, N (N x N patches) or RxC (e.g. 4x2)")

