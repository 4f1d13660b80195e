"""Liveness: the buffers a forwarded schedule needs, with their bytes at every step.

A tensor is live from the step that writes it (graph inputs: from the start) to the
last step that reads it (graph outputs kept in the arena: to the end). Each arena root
becomes one buffer that, at each step, spans the tensors placed in it that are live
then; each kernel's scratch is a buffer live during its own step only.
"""

from dataclasses import dataclass

from .problem import Buffer, align_up


@dataclass
class Planned:
    buffer: Buffer
    tensors: dict  # tensor -> byte offset in the buffer (empty for scratch)
    scratch_step: int = None  # the step whose kernel uses it, for scratch


def live_ranges(graph, order, forwarding):
    """tensor -> (first step, last step) of every tensor in an arena buffer."""
    nodes = [graph.nodes[k] for k in order]
    born, last = {}, {}
    for t in graph.inputs:
        born[t] = 0
    for step, node in enumerate(nodes):
        for t in node.outputs:
            if t:
                born.setdefault(t, step)
        for t in node.inputs:
            if t:
                last[t] = step
    for t in forwarding.persistent:
        last[t] = len(nodes) - 1
    return {t: (born[t], max(born[t], last.get(t, born[t]))) for t in born
            if forwarding.root(t) not in forwarding.fixed}


def buffers(graph, order, forwarding, alignment):
    """[Planned] of every arena buffer, in a deterministic order."""
    groups = {}
    for t, (first, last) in sorted(live_ranges(graph, order, forwarding).items()):
        root, offset = forwarding.place[t]
        groups.setdefault(root, []).append((t, offset, first, last))
    planned = []
    for root, members in groups.items():
        spans = {}
        for t, offset, first, last in members:
            end = offset + forwarding.sizes[t]
            for s in range(first, last + 1):
                lo, hi = spans.get(s, (offset, end))
                spans[s] = (min(lo, offset), max(hi, end))
        extent = tuple((s, lo // alignment * alignment, align_up(hi, alignment))
                       for s, (lo, hi) in sorted(spans.items()))
        planned.append(Planned(Buffer(root, extent, alignment),
                               {t: offset for t, offset, _, _ in members}))
    taken = {p.buffer.name for p in planned}
    for step, k in enumerate(order):
        call = forwarding.calls.get(k)
        if call is not None and call.scratch_bytes:
            name = f"{graph.nodes[k].name}.scratch"
            while name in taken:
                name += "_"
            taken.add(name)
            planned.append(Planned(Buffer.simple(name, align_up(call.scratch_bytes, alignment),
                                                 step, step, alignment), {}, step))
    return planned
