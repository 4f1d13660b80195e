"""Plan stage: where every intermediate tensor lives in the caller's arena.

Reads the optimized graph's structure only (never its weights), so a weights-only edit
does not re-plan. Graph inputs and outputs stay in the caller's own buffers; constants
are in flash; the reshape family shares its input's memory. Every other tensor is a
buffer live from the step that writes it to the last step that reads it (or a view of
it); buffers live at the same time get disjoint, aligned ranges. A kernel's scratch
memory (``KernelCall.scratch_bytes``) is a buffer live during its own step only.
"""

import json

from . import ops
from .files import write_text
from .onnx_io import load_graph

ALIGNMENT = 16


def _align(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def storage_roots(graph):
    """tensor -> the tensor whose memory it views (itself when it owns its memory)."""
    root = {}
    for node in graph.nodes:
        if node.op in ops.ALIASES or node.op == "Identity":
            src, dst = node.inputs[0], node.outputs[0]
            if dst not in graph.outputs and not graph.is_constant(src):
                root[dst] = root.get(src, src)
    return root


def live_buffers(graph, scratch=None):
    """[{tensor, bytes, first, last}] for every tensor the arena must hold, and
    [{node, scratch, bytes, first, last}] for the scratch of node (``scratch``: name -> bytes)."""
    root = storage_roots(graph)
    external = set(graph.inputs) | set(graph.outputs) | set(graph.constants)
    ranges = {}
    for step, node in enumerate(graph.nodes):
        for name in node.outputs:
            if name and name not in external and name not in root:
                ranges[name] = [step, step]
        for name in node.inputs:
            owner = root.get(name, name)
            if owner in ranges:
                ranges[owner][1] = step
    buffers = [{"tensor": t, "bytes": _align(graph.info(t).nbytes), "first": f, "last": l}
               for t, (f, l) in ranges.items()]
    return buffers + [{"node": n.name, "scratch": True, "bytes": _align(scratch[n.name]),
                       "first": step, "last": step}
                      for step, n in enumerate(graph.nodes) if (scratch or {}).get(n.name)]


def _name(buffer):
    return buffer.get("tensor") or "scratch of " + buffer["node"]


def lower_bound(buffers, steps):
    """Most bytes live at any one step: no placement can use less."""
    return max((sum(b["bytes"] for b in buffers if b["first"] <= s <= b["last"])
                for s in range(steps)), default=0)


def greedy_by_size(buffers):
    """Largest first, each at the lowest offset clear of the placed buffers it is live with."""
    placed = []
    for b in sorted(buffers, key=lambda b: (-b["bytes"], b["first"], _name(b))):
        busy = sorted((p["offset"], p["offset"] + p["bytes"]) for p in placed
                      if p["first"] <= b["last"] and b["first"] <= p["last"])
        offset = 0
        for start, end in busy:
            if offset + b["bytes"] <= start:
                break
            offset = max(offset, end)
        placed.append(dict(b, offset=offset))
    return placed


def plan(graph, scratch=None):
    buffers = sorted(greedy_by_size(live_buffers(graph, scratch)),
                     key=lambda b: (b["first"], _name(b)))
    return {
        "model": graph.name,
        "alignment": ALIGNMENT,
        "algorithm": "greedy_by_size",
        "arena_bytes": max((b["offset"] + b["bytes"] for b in buffers), default=0),
        "lower_bound_bytes": lower_bound(buffers, len(graph.nodes)),
        "schedule": [{"step": i, "node": n.name, "op": n.op} for i, n in enumerate(graph.nodes)],
        "buffers": buffers,
        "views": dict(sorted(storage_roots(graph).items())),
    }


def run(graph_path, plan_path, selection=None):
    """``selection``: the tactics (tactics.py), whose kernels may need scratch memory."""
    from .codegen.lowering import scratch_needs  # (the planner needs no code otherwise)
    graph = load_graph(graph_path, with_values=False)
    result = plan(graph, scratch_needs(graph, selection) if selection else None)
    write_text(plan_path, json.dumps(result, indent=1) + "\n")
    return result
