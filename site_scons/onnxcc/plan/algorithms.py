"""Placement algorithms: one interface, ``algorithm(problem) -> Placement``.

``planner=NAME`` picks one; ``auto`` (the default) runs greedy by size and by conflicts,
stops when one reaches the lower bound (no placement can do better), else tries
simulated annealing, exact search on small problems and greedy by start, and keeps the
best. Budgets are counted in steps, not seconds, and randomness is seeded: the same
problem always gets the same offsets.
"""

import heapq
import math
import random
from collections import Counter
from dataclasses import dataclass

from .problem import Buffer, Problem, align_up, lowest_clear

#: orders simulated annealing tries (each one a first-fit placement), and how many in a
#: row may fail to improve on the best before it stops
ANNEALING_STEPS = 3000
ANNEALING_PATIENCE = 1000
#: buffers annealing may place in all: a move places again only the buffers it can
#: change (``FirstFitOrder``), a few on a long graph, but up to all of them where every
#: buffer is live with every other; it stops once it has placed this many
ANNEALING_PLACEMENTS = 500_000
#: nodes exact search visits before it gives up proving its best placement optimal
EXACT_NODES = 20000
#: auto tries exact search only on problems this small
EXACT_MAX_BUFFERS = 14


@dataclass
class Placement:
    offsets: list
    bytes: int
    algorithm: str
    optimal: bool  # proven: at the lower bound, or exact search finished
    order: list = None  # the first-fit order that gave the offsets, when there is one


def _first_fit(problem, order, name):
    offsets = problem.first_fit(order)
    size = problem.bytes(offsets)
    return Placement(offsets, size, name, size == problem.lower_bound, list(order))


def greedy_by_size(problem):
    """Largest buffer first, each as low as it fits (TFLite Micro's planner)."""
    b = problem.buffers
    order = sorted(range(len(b)), key=lambda i: (-b[i].size, b[i].first, b[i].name))
    return _first_fit(problem, order, "greedy_by_size")


def greedy_by_conflicts(problem):
    """The buffer live with the most others first (TVM's greedy_by_conflicts)."""
    b = problem.buffers
    order = sorted(range(len(b)), key=lambda i: (-len(problem.conflicts[i]), -b[i].size,
                                                 b[i].first, b[i].name))
    return _first_fit(problem, order, "greedy_by_conflicts")


def greedy_by_start(problem):
    """The buffer needed first first (the larger first among those of one step), each as
    low as it fits: the order a run-time allocator meets them in. It suits long graphs
    of repeated layers: on a 10,000-node transformer the two orders above leave a buffer
    above the lower bound in every one of its 303 layers (1152 bytes against 1024), which
    annealing, one move at a time, cannot mend; this one reaches the bound."""
    b = problem.buffers
    order = sorted(range(len(b)), key=lambda i: (b[i].first, -b[i].size, b[i].name))
    return _first_fit(problem, order, "greedy_by_start")


class FirstFitOrder:
    """A first-fit order of a problem's buffers, its offsets and its pool size, changed one
    move at a time (annealing's state). A move (one buffer elsewhere in the order) places
    again only the buffers whose offset it can change: the moved one, those it passes that
    are live with it, then any placed after a buffer that moved and live with it. They get
    the offsets a first fit of the whole new order would give; on a long graph a buffer is
    live with a few others, so a move costs the same whatever the graph's length (placing
    every buffer after the moved one made it cost the graph's length). Where a buffer is
    in the order is a label, spaced ``LABEL_GAP`` apart: a moved buffer takes one between
    its new neighbours', so that a move relabels nothing else until a gap runs out."""

    LABEL_GAP = 2 ** 32

    def __init__(self, problem, start):
        self.problem = problem
        self.order, self.offsets, self.bytes = list(start.order), list(start.offsets), start.bytes
        self.label = [0] * len(problem)
        self._relabel()
        self.ends = Counter(o + b.size for o, b in zip(self.offsets, problem.buffers))

    def move(self, i, j):
        """Move the buffer at position i of the order to position j (``insert(j, pop(i))``).
        Returns its undo list ([(buffer, offset before)]) and how many buffers it placed."""
        order, label, offsets, conflicts = self.order, self.label, self.offsets, self.problem.conflicts
        moved = order[i]
        low, high = label[order[min(i, j)]], label[order[max(i, j)]]
        passed = [k for k, _ in conflicts[moved] if low <= label[k] <= high]
        order.insert(j, order.pop(i))
        self._label_at(j)
        queue = [(label[k], k) for k in [moved] + passed]
        heapq.heapify(queue)
        queued = {moved, *passed}
        undo = []
        while queue:
            at, k = heapq.heappop(queue)
            x = lowest_clear(sorted((offsets[c] + s, offsets[c] + e) for c, spans in conflicts[k]
                                    if label[c] < at for s, e in spans),
                             self.problem.buffers[k].align)
            if x != offsets[k]:
                undo.append((k, offsets[k]))
                self._place(k, x)
                for c, _ in conflicts[k]:
                    if label[c] > at and c not in queued:
                        heapq.heappush(queue, (label[c], c))
                        queued.add(c)
        self._settle_bytes()
        return undo, len(queued)

    def undo(self, i, j, undo):
        """Take back ``move(i, j)``, whose undo list is ``undo``."""
        for k, x in undo:
            self._place(k, x)
        self.order.insert(i, self.order.pop(j))
        self._label_at(i)
        self._settle_bytes()

    def _label_at(self, p):
        """Label the buffer at position p of the order between its neighbours."""
        order, label = self.order, self.label
        before = label[order[p - 1]] if p > 0 else label[order[1]] - 2 * self.LABEL_GAP
        after = label[order[p + 1]] if p + 1 < len(order) else before + 2 * self.LABEL_GAP
        if after - before < 2:
            self._relabel()
        else:
            label[order[p]] = (before + after) // 2

    def _relabel(self):
        for p, k in enumerate(self.order):
            self.label[k] = p * self.LABEL_GAP

    def _place(self, k, x):
        size = self.problem.buffers[k].size
        end = self.offsets[k] + size
        self.ends[end] -= 1
        if not self.ends[end]:
            del self.ends[end]
        self.offsets[k] = x
        self.ends[x + size] += 1
        self.bytes = max(self.bytes, x + size)

    def _settle_bytes(self):
        """The pool size, once the buffer that set it may have moved down."""
        if self.bytes not in self.ends:
            self.bytes = max(self.ends)


def annealing(problem, start=None, steps=ANNEALING_STEPS, seed=0):
    """Simulated annealing over first-fit orders: move one buffer elsewhere in the order,
    keep the move when the pool shrinks, and sometimes (less and less) when it grows."""
    start = start or greedy_by_size(problem)
    n = len(problem)
    best = Placement(start.offsets, start.bytes, "annealing", start.optimal, start.order)
    if n < 2 or best.optimal:
        return best
    rng = random.Random(seed)
    state = FirstFitOrder(problem, start)
    current = state.bytes
    temperature = max(1.0, 0.02 * current)
    improved, placements = 0, 0
    for step in range(steps):
        if step - improved > ANNEALING_PATIENCE or placements > ANNEALING_PLACEMENTS:
            break
        i, j = rng.randrange(n), rng.randrange(n)
        undo, placed = state.move(i, j)
        placements += placed
        size = state.bytes
        heat = temperature * (1.0 - step / steps)
        if size <= current or (heat > 0 and rng.random() < math.exp((current - size) / heat)):
            current = size
        else:
            state.undo(i, j, undo)
        if size < best.bytes:  # (then the move was kept: the best is never above current)
            improved = step
            best = Placement(list(state.offsets), size, "annealing", size == problem.lower_bound,
                             list(state.order))
            if best.optimal:
                break
    return best


def exact(problem, start=None, nodes=EXACT_NODES):
    """Branch and bound over placements in order of offset, each buffer at 0 or right
    above a buffer it is live with (some optimal placement has that form). Optimal when
    it finishes within ``nodes``; else the best placement it found."""
    start = start or min(greedy_by_size(problem), greedy_by_conflicts(problem),
                         key=lambda p: p.bytes)
    if start.optimal:
        return Placement(start.offsets, start.bytes, "exact", True)
    # buffers that need bytes only above some floor at some step are searched as if they
    # needed them from 0 (stricter, so still valid): the result is then not proven optimal
    raised = any(lo for b in problem.buffers for _, lo, _ in b.extent)
    search = Problem([Buffer(b.name, tuple((s, 0, hi) for s, _, hi in b.extent), b.align)
                      for b in problem.buffers]) if raised else problem
    n = len(search)
    size = [b.size for b in search.buffers]
    by_size = sorted(range(n), key=lambda i: (-size[i], i))
    offsets = [None] * n
    best = {"bytes": start.bytes, "offsets": start.offsets}
    visited = [0]
    # bytes the unplaced buffers need at each step: all of them go at or above the
    # current floor, stacked where they are live together
    pending = {}
    for b in search.buffers:
        for s, _, hi in b.extent:
            pending[s] = pending.get(s, 0) + hi

    def feasible(i, x):
        return all(not (offsets[j] + s < x < offsets[j] + e)
                   for j, intervals in search.conflicts[i] if offsets[j] is not None
                   for s, e in intervals)

    def place(floor, last, top, left):
        if not left:
            best["bytes"], best["offsets"] = top, list(offsets)
            return True
        visited[0] += 1
        if visited[0] > nodes:
            return False
        if floor + max(pending.values()) >= best["bytes"]:
            return True
        finished = True
        for i in by_size:
            if i not in left:
                continue
            b = search.buffers[i]
            spots = {0} | {align_up(offsets[j] + e, b.align) for j, intervals in search.conflicts[i]
                           if offsets[j] is not None for _, e in intervals}
            for x in sorted(spots):
                if x < floor or (x == floor and i < last):
                    continue
                if x + size[i] >= best["bytes"]:
                    break
                if feasible(i, x):
                    offsets[i] = x
                    for s, _, hi in b.extent:
                        pending[s] -= hi
                    finished &= place(x, i, max(top, x + size[i]), left - {i})
                    for s, _, hi in b.extent:
                        pending[s] += hi
                    offsets[i] = None
                    if best["bytes"] == search.lower_bound or not finished:
                        return finished
        return finished

    finished = place(0, -1, 0, frozenset(range(n)))
    optimal = (finished and not raised) or best["bytes"] == problem.lower_bound
    return Placement(best["offsets"], best["bytes"], "exact", optimal)


def auto(problem):
    """The best placement within the budgets (see the module docstring). greedy_by_start
    comes last, and only where it needs fewer bytes than what came before: where the
    others reach as low, their placement stays as it was."""
    greedy = min(greedy_by_size(problem), greedy_by_conflicts(problem), key=lambda p: p.bytes)
    if greedy.optimal:
        return greedy
    best = annealing(problem, start=greedy)
    best = best if best.bytes < greedy.bytes else greedy
    if not best.optimal and len(problem) <= EXACT_MAX_BUFFERS:
        found = exact(problem, start=best)
        if found.bytes < best.bytes or found.optimal:
            best = found
    if best.optimal:
        return best
    by_start = greedy_by_start(problem)
    return by_start if by_start.bytes < best.bytes else best


ALGORITHMS = {
    "auto": auto,
    "greedy_by_size": greedy_by_size,
    "greedy_by_conflicts": greedy_by_conflicts,
    "greedy_by_start": greedy_by_start,
    "annealing": annealing,
    "exact": exact,
}
