"""The cyclic garbage collector is paused while stages run and resumed after the last one,
also when they overlap in threads (SCons's parallel jobs) or fail."""

import gc
import threading

import pytest

from onnxcc.core.collector import paused

pytestmark = pytest.mark.unit


def test_paused_while_a_stage_runs_and_resumed_after_it_even_when_it_fails():
    assert gc.isenabled()

    @paused()
    def stage(fail):
        assert not gc.isenabled()
        if fail:
            raise RuntimeError("failed")

    stage(False)
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        stage(True)
    assert gc.isenabled()


def test_overlapping_stages_resume_it_when_the_last_one_ends():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with paused():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second():
        first_in.wait()
        with paused():
            second_in.set()
            first_out.wait()
            seen["after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"after the first ended": False}
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
