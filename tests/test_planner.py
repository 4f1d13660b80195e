"""The placement algorithms and pools: properties over random buffers (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxcc.core.errors import OnnxccError
from onnxcc.plan.algorithms import ALGORITHMS, FirstFitOrder, annealing, exact, greedy_by_size
from onnxcc.plan.pools import parse_pools, place_in_pools
from onnxcc.plan.problem import Buffer, Problem, collisions, lower_bound

pytestmark = pytest.mark.unit

ALIGNS = st.sampled_from([4, 16, 64])


@st.composite
def simple_buffers(draw, max_size=30):
    """Buffers of one size each, live over a random range of steps."""
    specs = draw(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 30), st.integers(0, 10),
                                    ALIGNS), max_size=max_size))
    return [Buffer.simple(f"t{k}", -(-size // 16) * 16, first, first + length, align)
            for k, (size, first, length, align) in enumerate(specs)]


@st.composite
def shared_buffers(draw, max_size=20):
    """Buffers whose bytes change from step to step, and may start above their offset
    (what in-place chains and concat slices give)."""
    out = []
    for k in range(draw(st.integers(0, max_size))):
        first = draw(st.integers(0, 20))
        steps = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 200)), min_size=1,
                              max_size=8))
        out.append(Buffer(f"s{k}", tuple((first + i, 16 * lo, 16 * (lo + n))
                                         for i, (lo, n) in enumerate(steps)), 16))
    return out


def check(buffers, placement):
    assert len(placement.offsets) == len(buffers)
    assert collisions(buffers, placement.offsets) == []  # none overlap while both live; aligned
    assert placement.bytes == max((o + b.size for o, b in zip(placement.offsets, buffers)),
                                  default=0)
    assert placement.bytes >= lower_bound(buffers)
    if placement.optimal and placement.algorithm != "exact":
        assert placement.bytes == lower_bound(buffers)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@settings(max_examples=60, deadline=None)
@given(bufs=simple_buffers())
def test_placements_are_valid_and_never_below_the_lower_bound(name, bufs):
    check(bufs, ALGORITHMS[name](Problem(bufs)))


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@settings(max_examples=30, deadline=None)
@given(bufs=shared_buffers(max_size=14))
def test_placements_of_buffers_that_change_size_are_valid(name, bufs):
    check(bufs, ALGORITHMS[name](Problem(bufs)))


@settings(max_examples=150, deadline=None)
@given(bufs=simple_buffers(max_size=9))
def test_nothing_beats_a_finished_exact_search(bufs):
    problem = Problem(bufs)
    best = exact(problem)
    if best.optimal:
        for fn in ALGORITHMS.values():
            assert fn(problem).bytes >= best.bytes


def test_exact_and_annealing_beat_greedy_where_greedy_is_not_optimal():
    # greedy by size and by conflicts stack d on a and b (96 bytes); 80 is possible, and
    # placing the buffers in the order they are needed finds it too
    bufs = [Buffer.simple("a", 48, 4, 5), Buffer.simple("b", 32, 1, 3),
            Buffer.simple("c", 48, 0, 2), Buffer.simple("d", 16, 3, 4)]
    problem = Problem(bufs)
    greedy = min(ALGORITHMS["greedy_by_size"](problem), ALGORITHMS["greedy_by_conflicts"](problem),
                 key=lambda p: p.bytes)
    found = exact(problem)
    assert greedy.bytes == 96 and found.optimal and found.bytes == 80
    assert annealing(problem).bytes == 80
    assert ALGORITHMS["greedy_by_start"](problem).bytes == 80
    assert ALGORITHMS["auto"](problem).bytes == 80


@settings(max_examples=20, deadline=None)
@given(bufs=simple_buffers(max_size=40))
def test_annealing_is_deterministic(bufs):
    assert annealing(Problem(bufs)).offsets == annealing(Problem(bufs)).offsets


class TightLabels(FirstFitOrder):
    """Labels one apart, so that nearly every move runs out of room and relabels."""
    LABEL_GAP = 1


@pytest.mark.parametrize("state_class", [FirstFitOrder, TightLabels])
@settings(max_examples=60, deadline=None)
@given(bufs=st.one_of(simple_buffers(), shared_buffers()),
       moves=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99), st.booleans()), max_size=40))
def test_a_move_places_what_a_first_fit_of_the_whole_order_would(state_class, bufs, moves):
    # annealing's moves place again only the buffers they can change: after every move
    # (kept or taken back) the offsets and the pool size are the whole order's first fit
    problem = Problem(bufs)
    if len(problem) < 2:
        return
    state = state_class(problem, greedy_by_size(problem))
    for i, j, keep in moves:
        i, j = i % len(problem), j % len(problem)
        undo, _ = state.move(i, j)
        if not keep:
            state.undo(i, j, undo)
        assert state.offsets == problem.first_fit(state.order)
        assert state.bytes == problem.bytes(state.offsets)


@settings(max_examples=60, deadline=None)
@given(bufs=simple_buffers(), capacity=st.integers(0, 20000))
def test_pools_hold_what_fits_and_spill_the_rest(bufs, capacity):
    plans = place_in_pools(bufs, parse_pools(f"fast:{capacity},slow"), ALGORITHMS["auto"])
    fast, slow = plans
    assert sorted(fast.buffers + slow.buffers) == list(range(len(bufs)))
    assert fast.placement.bytes <= capacity
    for plan in plans:
        check([bufs[i] for i in plan.buffers], plan.placement)


def test_a_buffer_larger_than_every_pool_is_an_error():
    with pytest.raises(OnnxccError, match="pools too small"):
        place_in_pools([Buffer.simple("big", 4096, 0, 0)], parse_pools("a:1K,b:2K"),
                       ALGORITHMS["auto"])


@pytest.mark.parametrize("text, message", [
    ("Dtcm:1K", "not a pool name"), ("inputs", "not a pool name"), ("a:1K,a", "named twice"),
    ("a,b:1K", "only the last pool"), ("a:lots", "not a size")])
def test_bad_pools_option(text, message):
    with pytest.raises(OnnxccError, match=message):
        parse_pools(text)


def test_default_pool_is_the_arena():
    (pool,) = parse_pools("")
    assert pool.name == "arena" and pool.capacity is None
