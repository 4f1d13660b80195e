"""profile (each step's cost, MACs, tactic, live arena bytes) and report.html."""

import hashlib
import json
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import MODELS, run_scons, save_graph
from onnxcc.importer import stage as importer
from onnxcc.core.macs import graph_macs
from onnxcc.core.onnx_io import load_graph


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_profile(folder, name, unit):
    profile = json.loads((folder / "profile.json").read_text())
    plan = json.loads((folder / "plan.json").read_text())
    assert profile["unit"] == unit
    # every scheduled node once, in schedule order
    assert [n["node"] for n in profile["nodes"]] == [s["node"] for s in plan["schedule"]]
    # the steps add up to the uninstrumented run
    assert profile["steps_sum"] == pytest.approx(sum(n["cost"] for n in profile["nodes"])
                                                 + profile["output_copies"])
    assert profile["total"] > 0
    assert 0.95 < profile["steps_sum"] / profile["total"] < 1.05, profile
    assert sum(n["share"] for n in profile["nodes"]) == pytest.approx(1, abs=0.01)
    # MACs from the graph; live bytes never above the arena
    graph = load_graph(str(folder / "optimized.onnx"), with_values=False)
    assert {n["node"]: n["macs"] for n in profile["nodes"]} == graph_macs(graph)
    assert max(n["live_bytes"] for n in profile["nodes"]) <= plan["arena_bytes"]
    assert profile["plan_sha256"] == _sha(folder / "plan.json")
    return profile


@pytest.mark.slow
def test_profile_on_the_host_times_every_step(scons, tmp_path):
    r = scons("model=models/kws.onnx", "profile")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "warning:" not in r.stdout + r.stderr
    folder = scons.build_dir / "x86_64" / "kws"
    profile = _check_profile(folder, "kws", "ns")
    convs = [n for n in profile["nodes"] if n["op"] == "Conv"]
    assert all(n["cost"] > 0 and n["macs"] > 0 for n in convs)
    # the table: a row per step, then both totals and their ratio
    lines = r.stdout.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("[profile] kws on x86_64")))
    assert "MACs" in lines[head + 1] and "arena live" in lines[head + 1]
    assert lines[head + 2].split()[:4] == ["0", "conv1", "Conv", profile["nodes"][0]["tactic"]]
    assert "whole inference (uninstrumented)" in lines[head + 2 + len(profile["nodes"])]
    # the instrumented variant is a program of its own: the library is the shipping one
    assert (folder / "profile" / "profile.c").exists()
    lib = _sha(folder / "libkws.a")
    r = scons("model=models/kws.onnx")
    assert r.returncode == 0 and _sha(folder / "libkws.a") == lib
    assert "[archive]" not in r.stdout and "[compile]" not in r.stdout
    plain = tmp_path / "plain"
    assert run_scons(f"build_dir={plain}", "model=models/kws.onnx").returncode == 0
    assert _sha(plain / "x86_64" / "kws" / "libkws.a") == lib


@pytest.mark.emulated
def test_profile_on_cortex_m_counts_instructions(scons):
    r = scons("model=models/kws.onnx", "target=armv7", "profile")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    profile = _check_profile(scons.build_dir / "armv7" / "kws", "kws", "instructions")
    assert profile["clock"] == "systick" and profile["total"] > 1_000_000
    # exact counts (one SysTick tick = 40 instructions): within a few ticks per step
    assert abs(profile["steps_sum"] - profile["total"]) < 40 * 4 * len(profile["nodes"])


def test_profile_names_the_targets_that_cannot(repo_copy):
    """A bare-metal target without a [bench] clock has nothing to count with: one line."""
    text = (repo_copy / "site_scons" / "onnxcc" / "targets" / "armv7.toml").read_text()
    (repo_copy / "site_scons" / "onnxcc" / "targets" / "nocount.toml").write_text(text[:text.index("[bench]")])
    shutil.copy(f"{MODELS}/tiny_cnn.onnx", repo_copy / "models")
    r = run_scons("model=models/tiny_cnn.onnx", "target=nocount", "profile", cwd=repo_copy)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "target nocount cannot profile" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (repo_copy / "build" / "nocount" / "tiny_cnn" / "profile.json").exists()


@pytest.mark.unit
def test_macs_of_the_heavy_ops(tmp_path):
    importer.run(f"{MODELS}/kws.onnx", str(tmp_path / "i.onnx"), str(tmp_path / "i.bin"), {})
    g = load_graph(str(tmp_path / "i.onnx"), with_values=False)
    macs = graph_macs(g)
    conv = next(n for n in g.nodes if n.op == "Conv")
    w = g.info(conv.inputs[1]).shape
    assert macs[conv.name] == g.info(conv.outputs[0]).size * int(np.prod(w[1:]))
    gemm = next(n for n in g.nodes if n.op == "Gemm")
    assert macs[gemm.name] == 12 * 64
    assert all(macs[n.name] == 0 for n in g.nodes if n.op in ("Relu", "Softmax", "Flatten"))


# ---- report.html ----

HOSTILE = "<script>alert(1)</script>&\"'"


def _hostile_model(path):
    """A Conv -> Relu -> MatMul model whose graph, node and tensor names carry markup."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w" + HOSTILE)
    m = numpy_helper.from_array(rng.standard_normal((4 * 6 * 6, 5)).astype(np.float32), "m")
    shape = numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w" + HOSTILE], ["c" + HOSTILE], name="conv" + HOSTILE,
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c" + HOSTILE], ["r"], name="relu" + HOSTILE),
             helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["y"], name="mm" + HOSTILE)]
    graph = helper.make_graph(nodes, "graph" + HOSTILE,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
                              initializer=[w, m, shape])
    save_graph(path, graph)


class _Page(HTMLParser):
    """The sections, the scripts and the rectangles of each timeline of a page."""

    def __init__(self):
        super().__init__()
        self.sections, self.scripts, self.timelines, self.open = [], 0, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        if tag == "script" or any(k.startswith("on") for k in a):
            self.scripts += 1
        if tag == "svg" and a.get("class") == "timeline":
            self.timelines.append(0)
        if tag == "rect" and self.timelines:
            self.timelines[-1] += 1


def test_report_html_structure_and_escaping(scons, tmp_path):
    model = tmp_path / "net<script>.onnx"
    _hostile_model(model)
    r = scons(f"model={model}", "name=net")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    folder = scons.build_dir / "x86_64" / "net"
    text = (folder / "report.html").read_text()
    page = _Page()
    page.feed(text)
    assert page.sections == ["memory", "footprint", "tactics", "profile", "validate"]
    assert page.scripts == 0 and "<script>" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text  # the names, escaped
    plan = json.loads((folder / "plan.json").read_text())
    assert page.timelines == [len(p["buffers"]) for p in plan["pools"]]
    # each timeline is well-formed SVG: one rect per planned buffer
    start = text.index('<svg class="timeline"')
    svg = ET.fromstring(text[start:text.index("</svg>", start) + 6])
    rects = svg.findall("{http://www.w3.org/2000/svg}rect")
    assert [r.find("{http://www.w3.org/2000/svg}title").text.split(":")[0] for r in rects] == \
        [b["name"] for b in plan["pools"][0]["buffers"]]
    # a second build does not rewrite it
    again = scons(f"model={model}", "name=net", "--debug=explain")
    assert again.returncode == 0 and "`" + str(folder / "report.html") + "' because" not in again.stdout


def test_report_html_shows_a_profile_of_this_build_only(scons):
    r = scons("model=models/tiny_cnn.onnx", "profile")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    folder = scons.build_dir / "x86_64" / "tiny_cnn"
    text = (folder / "report.html").read_text()
    assert "whole inference (uninstrumented)" in text
    # another plan: the old profile.json is not shown as this build's
    r = scons("model=models/tiny_cnn.onnx", "planner=greedy_by_conflicts", "schedule=graph",
              "opt=size")
    assert r.returncode == 0
    text = (folder / "report.html").read_text()
    assert "whole inference (uninstrumented)" not in text and "run `profile` again" in text


def test_report_html_opens_in_a_headless_browser(scons, tmp_path):
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome",
                                               "firefox") if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no headless browser installed")
    import subprocess
    r = scons("model=models/tiny_cnn.onnx")
    assert r.returncode == 0
    page = scons.build_dir / "x86_64" / "tiny_cnn" / "report.html"
    shot = tmp_path / "shot.png"
    args = ([browser, "--headless", "--disable-gpu", "--no-sandbox", f"--screenshot={shot}"]
            if "firefox" not in browser else [browser, "--headless", "--screenshot", str(shot)])
    done = subprocess.run(args + [page.as_uri()], capture_output=True, timeout=120)
    assert done.returncode == 0 and shot.stat().st_size > 1000
