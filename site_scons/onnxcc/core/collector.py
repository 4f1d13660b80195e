"""The cyclic garbage collector, paused while a stage runs.

A stage builds many thousand small objects (tensors, nodes, kernel calls, the planner's
buffers and extents) and lives a few seconds. Every so many allocations CPython walks all
the objects it tracks, looking for reference cycles: the plan stage of a 10,000-node
transformer made 32 full walks, a third of its time. Reference counting frees a stage's
objects all the same; the few cycles it leaves are collected once no stage runs (SCons
runs Python actions of parallel jobs in threads: the first to start pauses, the last to
end resumes).
"""

import contextlib
import gc
import threading

_LOCK = threading.Lock()
_STATE = {"running": 0, "was_enabled": False}


@contextlib.contextmanager
def paused():
    """Usable as a decorator: ``@paused()`` on a stage's ``run``."""
    with _LOCK:
        if not _STATE["running"]:
            _STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _STATE["running"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["running"] -= 1
            if not _STATE["running"] and _STATE["was_enabled"]:
                gc.enable()
