"""The memory planner: properties over random live ranges, and plans of real models."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from onnxcc.planner import ALIGNMENT, greedy_by_size, lower_bound


buffers = st.lists(
    st.tuples(st.integers(1, 5000), st.integers(0, 30), st.integers(0, 10)).map(
        lambda t: {"bytes": (t[0] + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT, "first": t[1],
                   "last": t[1] + t[2]}),
    max_size=40)


@settings(max_examples=300, deadline=None)
@given(buffers)
def test_greedy_by_size_never_overlaps_live_buffers(bufs):
    for k, b in enumerate(bufs):
        b["tensor"] = f"t{k}"
    placed = greedy_by_size(bufs)
    assert len(placed) == len(bufs)
    for a in placed:
        assert a["offset"] % ALIGNMENT == 0
        for b in placed:
            if a is not b and a["first"] <= b["last"] and b["first"] <= a["last"]:
                assert a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
    arena = max((b["offset"] + b["bytes"] for b in placed), default=0)
    assert arena >= lower_bound(placed, 41)


def test_plan_of_kws_is_consistent(scons):
    r = scons("model=models/kws.onnx")
    assert r.returncode == 0, r.stderr
    plan = json.loads((scons.build_dir / "x86_64" / "kws" / "plan.json").read_text())
    assert plan["arena_bytes"] >= plan["lower_bound_bytes"] > 0
    assert [s["op"] for s in plan["schedule"]][0] == "Conv"
    # the arena in the header is the plan's
    header = (scons.build_dir / "x86_64" / "kws" / "kws.h").read_text()
    assert f"#define KWS_ARENA_BYTES {plan['arena_bytes']}u" in header
    # Flatten is a view of the pool's output, not a buffer of its own
    assert "flatten" in plan["views"]
