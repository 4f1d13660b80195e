"""Incremental builds, proved with SCons' own --debug=explain: a stage runs again only
when what it reads changed."""

import re
import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import MODELS, run_scons

EXPLAIN = re.compile(r"^scons: (?:re)?building `([^']+)' because", re.M)


def rebuilt(repo, *args):
    r = run_scons("--debug=explain", "model=models/kws.onnx", *args, cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    # (the size table is printed by an alias on every build: it writes no file)
    return {p.split("/kws/", 1)[-1] for p in EXPLAIN.findall(r.stdout)
            if not p.startswith("size-table-")}


def scale_weights(path, factor):
    """The same graph with every float weight tensor scaled: a weights-only edit."""
    model = onnx.load(path)
    for init in model.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.ndim > 1:
            init.CopyFrom(numpy_helper.from_array(a * factor, init.name))
    onnx.save(model, path)


@pytest.mark.slow
def test_second_build_rebuilds_nothing(repo_copy):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models")
    assert "libkws.a" in rebuilt(repo_copy)
    assert rebuilt(repo_copy) == set()


@pytest.mark.slow
def test_weights_only_edit_skips_plan_and_kernels(repo_copy):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models")
    rebuilt(repo_copy)
    scale_weights(repo_copy / "models" / "kws.onnx", 1.5)
    again = rebuilt(repo_copy)
    assert {"imported.onnx", "optimized.onnx", "kws_weights.S", "kws_weights.o", "libkws.a"} <= again
    assert not again & {"plan.json", "kws_kernels.c", "kws.c", "kws.o", "kws_kernels.o"}


@pytest.mark.slow
def test_template_edit_regenerates_only_its_users(repo_copy):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models")
    rebuilt(repo_copy)
    unused = repo_copy / "site_scons" / "onnxcc" / "templates" / "kernels" / "strided_copy.c.mako"  # kws moves no data
    unused.write_text(unused.read_text() + "/* edited */\n")
    assert rebuilt(repo_copy) == set()
    used = repo_copy / "site_scons" / "onnxcc" / "templates" / "kernels" / "softmax_vector.c.mako"
    used.write_text(used.read_text() + "/* edited */\n")
    again = rebuilt(repo_copy)
    # (a comment leaves the object file's bytes as they were, so nothing is re-archived)
    assert {"kws_kernels.c", "kws_kernels.o"} <= again
    assert not again & {"plan.json", "kws.c", "kws_weights.S", "imported.onnx", "optimized.onnx"}


def _edit(path):
    path.write_text(path.read_text() + "\n# edited\n")


@pytest.mark.slow
def test_report_code_edit_reruns_only_the_report(repo_copy):
    """Each stage depends on the compiler modules it runs (their import graph), so an edit
    of the footprint code re-measures (the fit check before linking and the size report)
    and touches nothing before it, and an edit of the HTML report's code rewrites only
    report.html."""
    import onnxcc.footprint
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models")
    rebuilt(repo_copy)
    site = onnxcc.footprint.__file__.split("/site_scons/", 1)[1]
    _edit(repo_copy / "site_scons" / site)
    assert rebuilt(repo_copy) == {"fit.json", "size.json"}
    _edit(repo_copy / "site_scons" / "onnxcc" / "verbs" / "html_report.py")
    assert rebuilt(repo_copy) == {"report.html"}


@pytest.mark.slow
def test_planner_code_edit_replans_without_reimporting(repo_copy):
    shutil.copy(f"{MODELS}/kws.onnx", repo_copy / "models")
    rebuilt(repo_copy)
    _edit(repo_copy / "site_scons" / "onnxcc" / "plan" / "algorithms.py")
    again = rebuilt(repo_copy)
    assert "plan.json" in again
    assert not again & {"imported.onnx", "optimized.onnx", "size.json"}
