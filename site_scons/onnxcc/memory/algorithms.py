"""Placement algorithms: one interface, ``algorithm(problem) -> Placement``.

``planner=NAME`` picks one; ``auto`` (the default) runs the greedy ones, stops when one
reaches the lower bound (no placement can do better), else tries exact search on small
problems and simulated annealing on the rest, and keeps the best. Budgets are counted
in steps, not seconds, and randomness is seeded: the same problem always gets the same
offsets.
"""

import math
import random
from dataclasses import dataclass

from .problem import Buffer, Problem, align_up

#: orders simulated annealing tries (each one a first-fit placement), and how many in a
#: row may fail to improve on the best before it stops
ANNEALING_STEPS = 3000
ANNEALING_PATIENCE = 1000
#: buffers annealing may place in all (each step re-places the order from the first
#: buffer it moves): big problems get fewer steps, so that planning stays linear in the
#: graph -- 3000 steps up to 166 buffers, 50 at 10,000 (a 10,000-node transformer's plan
#: took 15 s with 3000)
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


def annealing(problem, start=None, steps=ANNEALING_STEPS, seed=0):
    """Simulated annealing over first-fit orders: move one buffer elsewhere in the order,
    keep the move when the pool shrinks, and sometimes (less and less) when it grows."""
    start = start or greedy_by_size(problem)
    n = len(problem)
    steps = min(steps, max(1, ANNEALING_PLACEMENTS // max(n, 1)))
    best = Placement(start.offsets, start.bytes, "annealing", start.optimal, start.order)
    if n < 2 or best.optimal:
        return best
    rng = random.Random(seed)
    order, placed, current = list(start.order), start.offsets, start.bytes
    temperature = max(1.0, 0.02 * current)
    improved = 0
    for step in range(steps):
        if step - improved > ANNEALING_PATIENCE:
            break
        i, j = rng.randrange(n), rng.randrange(n)
        candidate = list(order)
        candidate.insert(j, candidate.pop(i))
        offsets = problem.first_fit(candidate, min(i, j), placed)
        size = problem.bytes(offsets)
        heat = temperature * (1.0 - step / steps)
        if size <= current or (heat > 0 and rng.random() < math.exp((current - size) / heat)):
            order, placed, current = candidate, offsets, size
        if size < best.bytes:
            improved = step
            best = Placement(offsets, size, "annealing", size == problem.lower_bound, candidate)
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
    """The best placement within the budgets (see the module docstring)."""
    greedy = min(greedy_by_size(problem), greedy_by_conflicts(problem), key=lambda p: p.bytes)
    if greedy.optimal:
        return greedy
    best = annealing(problem, start=greedy)
    best = best if best.bytes < greedy.bytes else greedy
    if not best.optimal and len(problem) <= EXACT_MAX_BUFFERS:
        found = exact(problem, start=best)
        if found.bytes < best.bytes or found.optimal:
            return found
    return best


ALGORITHMS = {
    "auto": auto,
    "greedy_by_size": greedy_by_size,
    "greedy_by_conflicts": greedy_by_conflicts,
    "annealing": annealing,
    "exact": exact,
}
