"""The placement problem every planning algorithm solves: buffers in, offsets out.

A buffer needs, at each step it is live, the bytes ``[offset + lo, offset + hi)`` of its
pool. Most buffers hold one tensor (``[0, size)`` from the step that writes it to the
last step that reads it); a buffer may also hold several tensors that share memory (a
kernel that writes over its input, a concat whose producers write into its slices), and
then what it needs changes from step to step. Two buffers may share bytes only at steps
where they are not both live. Offsets are multiples of the buffer's alignment.
"""

from dataclasses import dataclass
from functools import cached_property


def align_up(n, alignment):
    return -(-n // alignment) * alignment


@dataclass(frozen=True)
class Buffer:
    name: str
    extent: tuple  # ((step, lo, hi), ...) in step order: the bytes it needs at each live step
    align: int = 16

    @classmethod
    def simple(cls, name, size, first, last, align=16):
        """``size`` bytes, live from step ``first`` to step ``last``."""
        return cls(name, tuple((s, 0, size) for s in range(first, last + 1)), align)

    @property
    def first(self):
        return self.extent[0][0]

    @property
    def last(self):
        return self.extent[-1][0]

    @cached_property
    def size(self):
        """The most bytes above its offset it ever needs."""
        return max(hi for _, _, hi in self.extent)

    @cached_property
    def at(self):
        """step -> (lo, hi)."""
        return {s: (lo, hi) for s, lo, hi in self.extent}

    @cached_property
    def uniform(self):
        """(lo, hi) when it needs the same bytes at every step from its first to its last
        (most buffers: one tensor), else None."""
        lo_hi = self.extent[0][1:]
        same = len(self.extent) == self.last - self.first + 1 and all(
            lo == lo_hi[0] and hi == lo_hi[1] for _, lo, hi in self.extent)
        return lo_hi if same else None


def forbidden_offsets(placed, other):
    """Where ``other`` may not go relative to ``placed``: sorted, merged open intervals of
    ``other.offset - placed.offset`` (empty when the two are never live together)."""
    if placed.last < other.first or other.last < placed.first:
        return []
    if placed.uniform and other.uniform:  # (then live together at some step: no gaps)
        (p_lo, p_hi), (o_lo, o_hi) = placed.uniform, other.uniform
        return [(p_lo - o_hi, p_hi - o_lo)]
    p, o = placed.at, other.at
    # the steps of the shorter one: a long buffer meets many short ones
    both = [s for s in min(p, o, key=len) if s in p and s in o]
    spans = sorted({(p[s][0] - o[s][1], p[s][1] - o[s][0]) for s in both})
    merged = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class Problem:
    """Buffers and, computed once, which pairs conflict and how (for the algorithms)."""

    def __init__(self, buffers):
        self.buffers = list(buffers)
        n = len(self.buffers)
        # conflicts[i]: [(j, intervals of offset_i - offset_j forbidden by buffer j)]
        self.conflicts = [[] for _ in range(n)]
        by_first = sorted(range(n), key=lambda i: self.buffers[i].first)
        for a, i in enumerate(by_first):
            bi = self.buffers[i]
            for b in range(a + 1, n):  # (not a slice: copying the rest for each made it quadratic)
                j = by_first[b]
                bj = self.buffers[j]
                if bj.first > bi.last:
                    break
                ij = forbidden_offsets(bj, bi)
                if ij:
                    self.conflicts[i].append((j, ij))
                    self.conflicts[j].append((i, forbidden_offsets(bi, bj)))
        for c in self.conflicts:
            c.sort()
        self.lower_bound = lower_bound(self.buffers)

    def __len__(self):
        return len(self.buffers)

    def lowest_offset(self, i, offsets):
        """The lowest offset of buffer i clear of every buffer already given an offset
        (``offsets[j]`` is None for buffers not placed yet)."""
        return lowest_clear(sorted((offsets[j] + s, offsets[j] + e)
                                   for j, intervals in self.conflicts[i]
                                   if offsets[j] is not None for s, e in intervals),
                            self.buffers[i].align)

    def first_fit(self, order):
        """Offsets from placing the buffers in ``order``, each as low as it fits."""
        offsets = [None] * len(self.buffers)
        for i in order:
            offsets[i] = self.lowest_offset(i, offsets)
        return offsets

    def bytes(self, offsets):
        """The pool size a placement needs."""
        return max((o + b.size for o, b in zip(offsets, self.buffers)), default=0)


def lowest_clear(spans, alignment):
    """The lowest multiple of ``alignment`` outside the open intervals ``spans`` (sorted by
    start): where first fit puts a buffer, ``spans`` being where it may not go."""
    x = 0
    for start, end in spans:
        if x <= start:
            break
        if x < end:
            x = align_up(end, alignment)
    return x


def live_bytes(buffers):
    """step -> the bytes the buffers need at that step."""
    live = {}
    for b in buffers:
        for s, lo, hi in b.extent:
            live[s] = live.get(s, 0) + hi - lo
    return live


def lower_bound(buffers):
    """The most bytes live at any one step: no placement of ``buffers`` needs less."""
    return max(live_bytes(buffers).values(), default=0)


def collisions(buffers, offsets):
    """Pairs of buffers (names) that share a byte at a step where both are live, and
    buffers whose offset breaks their alignment: empty for a valid placement."""
    bad = [(b.name, "misaligned") for b, o in zip(buffers, offsets) if o % b.align]
    for i, a in enumerate(buffers):
        for j in range(i + 1, len(buffers)):
            b = buffers[j]
            for s, (alo, ahi) in a.at.items():
                blo_bhi = b.at.get(s)
                if blo_bhi and offsets[i] + alo < offsets[j] + blo_bhi[1] \
                        and offsets[j] + blo_bhi[0] < offsets[i] + ahi:
                    bad.append((a.name, b.name))
                    break
    return bad
