"""Memory-aware scheduling: a topological order of the nodes that needs less memory.

The memory live after a set of nodes has run does not depend on the order they ran in,
so the search is a dynamic program over those sets (Serenity's idea), level by level,
keeping the ``BEAM`` best sets of each size: exact for graphs with few parallel
branches. A step costs what is live before it, plus the memory its outputs newly take
and its scratch, counting the kernels that can write over an input that dies at them.

The nodes that every kept set ran first, in the same order, are set aside after each
level (they are in all of them), and each set keeps the nodes it may run next: a level
costs the beam times the graph's width, not its length, so a long graph with short
branches (a transformer's Q, K and V) is searched in linear time.
"""

from .forwarding import forward
from .problem import align_up

#: sets of nodes kept per level of the search
BEAM = 256


class _Costs:
    """What each node reads, writes and frees, over the roots that views and concats
    leave (they do not depend on the order)."""

    def __init__(self, graph, io_in_arena, alignment, lowered=None):
        n = len(graph.nodes)
        f = forward(graph, list(range(n)), io_in_arena, in_place=False, lowered=lowered)
        self.graph, self.f = graph, f
        producer = {t: k for k, node in enumerate(graph.nodes) for t in node.outputs if t}
        self.preds = [{producer[t] for t in node.inputs if t in producer}
                      for node in graph.nodes]
        self.reads = [{f.root(t) for t in node.inputs if t} - f.fixed for node in graph.nodes]
        self.writes = [{f.root(t) for t in node.outputs if t} - f.fixed for node in graph.nodes]
        self.size = {r: align_up(f.extent(r), alignment)
                     for r in set().union(*self.reads, *self.writes)}
        self.readers, self.producers = {}, {}
        for k in range(n):
            for r in self.reads[k]:
                self.readers.setdefault(r, set()).add(k)
            for r in self.writes[k]:
                self.producers.setdefault(r, set()).add(k)
        self.written = set()  # roots a settled node wrote (see ``settle``)
        self.persistent = {f.root(t) for t in f.persistent} - f.fixed
        self.start = {f.root(t) for t in graph.inputs} - f.fixed
        self.scratch = [align_up(f.calls[k].scratch_bytes, alignment) if k in f.calls else 0
                        for k in range(n)]
        self.in_place = [self._in_place_options(k, alignment) for k in range(n)]

    def _in_place_options(self, k, alignment):
        """[(root written over, scratch bytes)] of the node's in-place kernels."""
        node, f = self.graph.nodes[k], self.f
        if f.code.get(k) != "kernel" or len(node.outputs) != 1 \
                or not f.owns_memory(node.outputs[0]):
            return []
        options = []
        inputs = [t for t in dict.fromkeys(node.inputs) if t]
        for x in inputs:
            others = {f.root(t) for t in inputs if t != x}
            if f.root(x) in f.fixed or f.root(x) in others or f.root(x) in self.persistent:
                continue
            call = f.lowered.overwriting(k, x)
            if call is not None:
                options.append((f.root(x), align_up(call.scratch_bytes, alignment)))
        return options

    def step(self, done, live, k):
        """(bytes needed while node k runs after the set ``done``, bytes live after it);
        ``done`` need not hold the nodes ``settle`` was told about."""
        new = {r for r in self.writes[k] if r not in self.start and r not in self.written
               and not self.producers[r] & done}
        grown = sum(self.size[r] for r in new)
        need = live + grown + self.scratch[k]
        for root, scratch in self.in_place[k]:
            if self.readers[root] - {k} <= done and len(new) == 1:
                (y,) = new
                need = min(need, live + max(0, self.size[y] - self.size[root]) + scratch)
        freed = {r for r in self.reads[k] | self.writes[k] if r not in self.persistent
                 and self.readers.get(r, set()) - {k} <= done}
        return need, live + grown - sum(self.size[r] for r in freed)

    def settle(self, k):
        """Node k has run in every state the search keeps: leave it out of the sets of
        readers and producers that ``step`` compares with a state's nodes."""
        for r in self.reads[k]:
            self.readers[r].discard(k)
        for r in self.writes[k]:
            self.producers[r].discard(k)
            self.written.add(r)


def memory_order(graph, io_in_arena, alignment, lowered=None):
    """Node indices in the order the search found least memory-hungry (``lowered``: the
    graph's ``forwarding.Lowered``, to share)."""
    costs = _Costs(graph, io_in_arena, alignment, lowered)
    n = len(graph.nodes)
    users = [[] for _ in range(n)]
    for k, preds in enumerate(costs.preds):
        for p in preds:
            users[p].append(k)
    # every state of a level ran ``prefix`` first (settled nodes); each state is kept
    # under the set of the nodes it ran after those, as ((peak, live, those nodes in
    # order), the nodes it may run next)
    prefix, settled = [], set()
    level = {frozenset(): ((0, sum(costs.size.get(r, 0) for r in costs.start), ()),
                           frozenset(k for k in range(n) if not costs.preds[k]))}
    for _ in range(n):
        following = {}  # own nodes -> (state, the ready nodes before the last, the last)
        for own, ((peak, live, order), ready) in level.items():
            for k in ready:
                need, after = costs.step(own, live, k)
                state = (max(peak, need), after, order + (k,))
                key = own | {k}
                if key not in following or state < following[key][0]:
                    following[key] = (state, ready, k)
        kept = sorted(following.items(), key=lambda item: item[1][0])[:BEAM]
        if not kept:
            return []
        level = {own: (state, (ready - {k}) | {u for u in users[k]
                                               if costs.preds[u] - settled <= own})
                 for own, (state, ready, k) in kept}
        orders = [order for (_, _, order), _ in level.values()]
        same = next((i for i, ks in enumerate(zip(*orders)) if len(set(ks)) > 1),
                    len(orders[0]))
        if same:
            ran = orders[0][:same]
            prefix.extend(ran)
            for k in ran:
                costs.settle(k)
            settled.update(ran)
            level = {own - settled: ((peak, live, order[same:]), ready)
                     for own, ((peak, live, order), ready) in level.items()}
    return prefix + list(min(state for state, _ in level.values())[2])
