"""The differential fuzzer (fuzz/graphs.py) in CI: every regression it ever found replays,
and a fixed seeded sample of random graphs matches onnxruntime on x86_64, armv7, riscv32
and x86-baremetal (32-bit SSE, no libc) under every configuration the fuzzer builds
(cost-model tactics, reference kernels, forced tactics with fusion on or off)."""

import glob
import json
import os
import shutil
import sys

import numpy as np
import pytest

from conftest import REPO, in_qemu

sys.path.insert(0, REPO)
from fuzz import graphs, spec as fuzz_spec, verdict  # noqa: E402
from onnxcc.verbs import verify  # noqa: E402
from onnxcc.core.errors import OnnxccError  # noqa: E402
from onnxcc.target import load_target  # noqa: E402

REGRESSIONS = sorted(glob.glob(os.path.join(graphs.REGRESSIONS, "*.json")))
#: the regressions whose replay takes more than about 20 s
SLOW_REGRESSIONS = {"g27cac3973c", "g54acb8799b", "g8634854570", "ga69531f914", "gb2fb7611d6"}


def _replay(path):
    """A regression file as a case: emulated where its target's programs run in qemu, slow
    where it is one of SLOW_REGRESSIONS."""
    name = os.path.basename(path)[:-5]
    with open(path) as f:
        emulated = bool(load_target(json.load(f)["target"]).runner)
    return pytest.param(path, id=name, marks=[pytest.mark.emulated] * emulated
                        + [pytest.mark.slow] * (name in SLOW_REGRESSIONS))


@pytest.mark.parametrize("path", [_replay(p) for p in REGRESSIONS])
def test_regression_replays(path, tmp_path):
    """Every build of a graph the fuzzer once found failing ends as the file expects: it
    passes (or, where the file says so, onnxruntime is the one that is off: ``expect``),
    the configuration that failed among them; a forced tactic no node can run is refused."""
    with open(path) as f:
        case = json.load(f)
    results = graphs.check([case["spec"]], case["target"], str(tmp_path), jobs=1)
    expect = case.get("expect", "pass")
    judged = [r for r in results if r["status"] != "refused"]
    assert all(r["status"] == expect for r in judged), [r for r in judged if r["status"] != expect]
    assert case["config"] in [r["config"] for r in judged], results


#: the squeeze-excitation graphs of issue 33 (an SE block between a 3x3 and a 1x1 Conv; a
#: small CNN of Conv + Clip, an HardSigmoid SE, a 1x1 projection and a channel shuffle),
#: whose opt=size builds lost the fused channel scale when the plan ran the 1x1 in place
SE_GRAPHS = ["g11c1ab0f01", "g8985a3e07f"]


def _option_grid(count, name):
    """``count`` builds that cross opt, io and schedule in full and give every planner,
    pools, weights_format, fuse and name value a turn among them."""
    planners = graphs.PLANNERS
    grid = []
    for i in range(count):
        opt, io, schedule = ("speed", "size")[i % 2], ("caller", "arena")[i // 2 % 2], ("memory", "graph")[i // 4 % 2]
        grid.append({"config": f"o{i}", "opt": opt, "fuse": i % 5 != 4, "tactic": "", "patches": "auto",
                     "bands": "auto", "io": io, "schedule": schedule, "planner": planners[i % len(planners)],
                     "pools": ("", "fast:64,slow", "fast:2048,slow")[i % 3],
                     "weights_format": ("bin", "c")[i // 3 % 2],
                     "name": (name, f"{name}-v2.1", f"9{name}")[i % 3]})
    return grid


@pytest.mark.slow
@pytest.mark.parametrize("target,count", [("x86_64", 12), *in_qemu(("armv7", 8), ("riscv32", 8))])
def test_se_graphs_verify_with_every_option(target, count, tmp_path):
    """Issue 33's graphs verify in every combination of opt, io and schedule, and with
    every planner, pool layout, weights format, fusion setting and odd C name."""
    specs = []
    for name in SE_GRAPHS:
        with open(os.path.join(graphs.REGRESSIONS, f"{name}_{target}.json")) as f:
            specs.append({k: v for k, v in json.load(f)["spec"].items() if k != "options"})
    results = graphs.check(specs, target, str(tmp_path), jobs=2, builds=lambda spec, t: _option_grid(count, fuzz_spec.spec_name(spec)))
    assert len(results) == len(specs) * count
    assert all(r["status"] == "pass" for r in results), [r for r in results if r["status"] != "pass"]


#: (target, graphs, seed): the x86_64 sample crosses every configuration; the other
#: targets' fast paths (AVX-512, NEON, the scalar tiles of Cortex-M and RISC-V, 32-bit SSE
#: with runtime/freestanding's libm) on fewer graphs, in qemu where they are not the host;
#: every build draws its memory and code options (fuzz/graphs.build_options)
SAMPLES = [("x86_64", 24, 1), ("x86_64-avx512", 6, 5), ("x86_64-zen4", 4, 7), ("aarch64", 6, 4),
           ("armv7", 6, 2), ("riscv32", 6, 3), ("x86-baremetal", 6, 6)]
def _host_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512f" in f.read()
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("target,count,seed", SAMPLES[:3] + in_qemu(*SAMPLES[3:]), ids=[s[0] for s in SAMPLES])
def test_seeded_sample_matches_onnxruntime(target, count, seed, tmp_path):
    if target in ("x86_64-avx512", "x86_64-zen4") and not _host_has_avx512():
        pytest.skip(f"this machine has no AVX-512 to run the {target} code on")
    if target == "x86-baremetal" and shutil.which("qemu-system-i386") is None:
        pytest.skip("qemu-system-i386 is not installed (./setup.sh installs it)")
    counts, checked, failures = graphs.campaign(
        target, count, seed, batch=8, jobs=1, workdir=str(tmp_path), progress=lambda line: None,
        regressions=None, shrink=False, stop_on_failure=True)
    assert not failures, [f"{r['name']} [{r['config']}]: {r['message']}" for r, _ in failures]
    assert checked >= count
    assert counts["pass"] >= count  # every graph built and verified at least once


@pytest.mark.slow
@pytest.mark.parametrize("target,count,seed", [("x86_64", 12, 21), *in_qemu(("armv7", 4, 22), ("riscv32", 4, 23))])
def test_seeded_network_sample_matches_onnxruntime(target, count, seed, tmp_path):
    """Small CNNs of chained MCU blocks (fuzz/networks.py: squeeze-excitation, inverted
    residuals, fire modules, shuffles, residual blocks, heads), each build with its own
    drawn memory and code options, match onnxruntime."""
    counts, checked, failures = graphs.campaign(
        target, count, seed, batch=count, jobs=2, workdir=str(tmp_path), progress=lambda line: None,
        regressions=None, shrink=False, stop_on_failure=True, networks=True)
    assert not failures, [f"{r['name']} [{r['config']}]: {r['message']}" for r, _ in failures]
    assert checked >= count and counts["pass"] >= 2 * count


@pytest.mark.slow
@pytest.mark.parametrize("target,count,seed", [("x86_64", 8, 12), *in_qemu(("armv7", 4, 14))])
def test_seeded_image_sample_runs_in_patches(target, count, seed, tmp_path):
    """Graphs that start with a convolution of one image: their builds with 2x1 or 2x2
    patches forced (plan/patches.py), and with 2 or 3 row bands from each convolution
    (plan/bands.py), verify like the others, and most of them run so."""
    counts, checked, failures = graphs.campaign(
        target, count, seed, batch=count, jobs=1, workdir=str(tmp_path), progress=lambda line: None,
        regressions=None, shrink=False, stop_on_failure=True, images=True)
    assert not failures, [f"{r['name']} [{r['config']}]: {r['message']}" for r, _ in failures]
    assert checked >= count and counts["patches"] >= count // 2 and counts["bands"] >= count // 2


@pytest.mark.unit
def test_specs_are_valid_models_with_finite_reference():
    """The generator's contract (as NNSmith's): every spec is a valid ONNX model that
    onnxruntime runs, and its guarded ops never produce NaN or Inf."""
    import onnxruntime as ort
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=80, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(fuzz_spec.specs(big=True))
    def valid(spec):
        # the float graph: onnxruntime's quantizer writes some int8 graphs its own runtime
        # cannot run (a per-channel zero point QLinearMatMul refuses), which a campaign
        # discards; the generator answers for the graph it draws
        model = fuzz_spec.build_float_model(spec)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {i.name: rng.uniform(-1, 1, i.shape).astype(np.float32)
                 for i in session.get_inputs()}
        (y,) = session.run(None, feeds)
        assert np.all(np.isfinite(y))
        assert list(y.shape) == fuzz_spec.output_shape(spec)

    valid()


#: per target, the fast branches a seeded sample of draws must reach (fuzz/coverage.py;
#: a branch is named by a part of the names coverage gives): the shapes small tails miss
#: -- depthwise rows of whole vectors split by shuffles at stride 2 (several rows at another
#: row stride; on x86 also without planes, depthwise_s2), depthwise_shift's taps over rows
#: of several vectors, winograd's tiles in several chunks (a vector of them across rows of
#: tiles: its patch planes; the planes split by shuffles, on x86 -- aarch64's draws are too
#: narrow, its 4-float split is x86's half vectors -- and the tiles an image cuts), rows of
#: stride 4 split by shuffles (depthwise and implicit), pooling rows of several vectors and
#: ceil_mode, the recurrent blocked tactic's chunked projection and sequence lengths, a 1x1
#: convolution's channel-vector tiles transposed back in blocks (on AVX-512 several tiles
#: and panels: the next panel prefetched) and its fused input scale (a squeeze-excitation's,
#: passes/fuse_channel_scale.py), the implicit GEMM's tiles over groups of rows (SIMD CPUs
#: of 32 registers), a group convolution's long channel-vector tiles (AVX-512) and a
#: decomposed LayerNorm fused into one node (passes/fuse_layer_norm.py)
ONE_BY_ONE = ["conv2d_1x1: pixel tiles", "conv2d_1x1: channel-vector tiles, transposed back in blocks",
              "conv2d_1x1: a fused input scale"]
REACHED = {
    # (x86_64's sample reached depthwise_shift's shifted taps on stride-2 rows only, which
    # depthwise_s2 now takes; the shift template's taps are reached on AVX-512. Its two
    # draws of implicit's bands of stored rows went with the group and LayerNorm draws'
    # changes; AVX-512 and aarch64 reach them, the same template)
    "x86_64": ONE_BY_ONE + ["depthwise: stride-2 shuffle fill, whole vectors",
               "depthwise: stride-2 rows split in registers",
               "depthwise: stride-2 shuffle fill of several rows", "winograd: several chunks",
               "winograd: vectors of tiles across rows of tiles",
               "winograd: patch planes split by shuffles", "winograd: cut tiles stored in loops",
               "depthwise: stride-4 shuffle fill", "implicit: stride-4 shuffle fill",
               "pool2d_vector: rows of several vectors", "pool2d_vector: ceil_mode",
               "pool2d_vector: taps at stride 2", "blocked: chunked projection",
               "blocked: sequence lengths", "blocked: several blocks of units",
               "a fused LayerNorm chain",
               "conv2d_implicit: flat group tiles across rows"],
    "x86_64-avx512": ONE_BY_ONE + ["depthwise: stride-2 shuffle fill, whole vectors", "winograd: several chunks",
                      "winograd: vectors of tiles across rows of tiles",
                      "winograd: patch planes split by shuffles", "winograd: cut tiles stored in loops",
                      "depthwise: stride-4 shuffle fill", "implicit: stride-4 shuffle fill",
                      "depthwise: stride-2 rows split in registers",
                      "depthwise: shifted taps over rows of several vectors",
                      "pool2d_vector: rows of several vectors",
                      "conv2d_implicit: tiles over groups of rows",
                      "conv2d_implicit: long group tiles",
                      "conv2d_1x1: channel-vector tiles prefetching the next panel",
                      "conv2d_implicit: channel-vector tiles stored in bands of rows"],
    "aarch64": ONE_BY_ONE + ["depthwise: stride-2 shuffle fill, whole vectors", "winograd: cut tiles stored in loops",
                "depthwise: stride-4 shuffle fill", "implicit: stride-4 shuffle fill",
                "depthwise: shifted taps over rows of several vectors",
                "conv2d_implicit: tiles over groups of rows",
                "depthwise: stride-2 shuffle fill of several rows",
                "pool2d_vector: rows of several vectors", "pool2d_vector: ceil_mode",
                "conv2d_implicit: channel-vector tiles stored in bands of rows"],
    "armv7": ["blocked: chunked projection", "blocked: several blocks of units"],
    # (the AVX-512 code of x86_64-avx512 with winograd on 256-bit vectors)
    "x86_64-zen4": ["winograd: several chunks", "winograd: patch planes split by shuffles"],
}


@pytest.mark.unit
@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(REACHED))
def test_the_draws_reach_the_fast_paths(target):
    """The fuzzer crosses a fast path only if its graphs reach it: 400 seeded draws, taken
    through the compiler's stages (not built), reach every branch of ``REACHED``."""
    from fuzz import coverage
    counts, drawn, _ = coverage.survey(target, 400, 1)
    assert drawn >= 300
    missed = [part for part in REACHED[target] if not any(part in path for path in counts)]
    assert not missed, (missed, sorted(k for k in counts if ": " in k))


#: the int8 campaign's: every branch of the q15 kernels (the Cortex-M4's int8 fast paths)
REACHED_INT8 = {
    "armv7": ["qconv2d_q15: 1x1, four-pixel tiles", "qconv2d_q15: 1x1, weights in registers",
              "qconv2d_q15: windows, four-pixel tiles", "qconv2d_q15: windows, weights in registers",
              "qconv2d_q15: matrix rows, four-pixel tiles", "qconv2d_q15: matrix rows, weights in registers",
              "qconv2d_q15: an odd last pixel", "qconv2d_q15: last pixels, two channels at once",
              "qconv2d_q15: several blocks", "qconv2d_dw_q15: sums times 256",
              *(f"qconv2d_dw_q15: pairs of taps, stride {s}, {rows} rows"
                for s in (1, 2, 3) for rows in ("odd", "even"))],
}


@pytest.mark.unit
@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(REACHED_INT8))
def test_the_int8_draws_reach_the_q15_paths(target):
    """As test_the_draws_reach_the_fast_paths, for the int8 campaign (``--int8``)."""
    from fuzz import coverage
    counts, drawn, _ = coverage.survey(target, 400, 1, int8=True)
    assert drawn >= 300
    missed = [part for part in REACHED_INT8[target] if not any(part in path for path in counts)]
    assert not missed, (missed, sorted(k for k in counts if ": " in k))


def test_a_dropped_chain_is_caught(tmp_path):
    """The comparison the fuzzer relies on can fail: outputs that lost the last op of their
    chain (simulated by changing the expected outputs to match) are a mismatch."""
    spec = {"anchor": {"op": "MatMul", "x": [8, 24], "w": [24, 32], "attrs": {},
                       "weight_input": False},
            "chain": [["Tanh", {}], ["Exp", {}]], "seed": 1}
    results = graphs.check([spec], "x86_64", str(tmp_path), jobs=1, keep=True)
    assert all(r["status"] == "pass" for r in results)
    # corrupt the expected outputs of one build: verify must now report a mismatch
    name = fuzz_spec.spec_name(spec)
    npz = tmp_path / "speed" / "x86_64" / name / "verify" / "expected.npz"
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["arr_0"] = np.tanh(arrays["arr_0"])  # as if the Exp were lost
    np.savez(npz, **arrays)
    elf = tmp_path / "speed" / "x86_64" / name / "verify" / f"{name}_harness"
    with pytest.raises(OnnxccError, match="MISMATCH"):
        verify.run(load_target("x86_64"), str(elf), str(npz), str(tmp_path / "r.json"), name)


def test_a_mismatch_that_goes_away_is_not_excused(tmp_path):
    """Every verdict judges a second run of the harness; a mismatch the second run does not
    give (nondeterminism) is a failure, not ill-conditioning."""
    spec = {"anchor": {"op": "MatMul", "x": [4, 6], "w": [6, 5], "attrs": {}, "weight_input": False},
            "chain": [["Tanh", {}]], "seed": 3}
    results = graphs.check([spec], "x86_64", str(tmp_path), jobs=1, keep=True)
    assert all(r["status"] == "pass" for r in results)
    name = fuzz_spec.spec_name(spec)
    case = {"out": str(tmp_path / "speed" / "x86_64" / name), "model": str(tmp_path / "models" / f"{name}.onnx"),
            "seed": spec["seed"] % 1000}
    assert not verdict.reproduces(case, "x86_64")  # it matches: a reported mismatch went away
    npz = os.path.join(case["out"], "verify", "expected.npz")
    with np.load(npz) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["arr_0"] = arrays["arr_0"] + 1.0  # a mismatch that stays
    np.savez(npz, **arrays)
    assert verdict.reproduces(case, "x86_64")


@pytest.mark.slow
def test_seeded_sample_is_clean_under_sanitizers(tmp_path):
    """The fuzz sample built with sanitize=1 (AddressSanitizer + UBSan over the generated
    code, the runtime and the harness): no report, and still onnxruntime's results."""
    counts, checked, failures = graphs.campaign(
        "x86_64", 8, 6, batch=8, jobs=1, workdir=str(tmp_path), progress=lambda line: None,
        sanitize=True, regressions=None, shrink=False, stop_on_failure=True)
    assert not failures, [f"{r['name']} [{r['config']}]: {r['message']}" for r, _ in failures]
    assert checked >= 8 and counts["pass"] >= 8


@pytest.mark.unit
def test_a_mismatch_is_excused_only_when_onnxcc_is_as_accurate_as_onnxruntime():
    """The float64 arbiter of mismatches: onnxcc off by as much as onnxruntime (on the
    other side of the exact value) is ill-conditioning; onnxcc far from the exact value
    where onnxruntime is close is a bug, whatever the magnitudes."""
    exact = np.array([1.0, 0.5, 0.0037568798])
    theirs = exact + np.array([0.0, 1e-7, 2.8e-5])
    assert verdict.as_accurate(exact - np.array([0.0, 1e-7, 2.8e-5]), theirs, exact, 1e-4, 1e-5)
    assert not verdict.as_accurate(exact + np.array([0.0, 0.0, 1e-3]), theirs, exact, 1e-4, 1e-5)
    assert not verdict.as_accurate(np.tanh(exact), theirs, exact, 1e-4, 1e-5)  # a lost op


@pytest.mark.unit
def test_an_int8_mismatch_is_excused_only_within_one_quantum_of_the_specification():
    """The int8 arbiter: onnxcc one quantum from the float64 QDQ evaluation, where
    onnxruntime's fused kernels are two away, is rounding; onnxcc two quanta away, or one
    where onnxruntime is exact everywhere, is onnxcc's error."""
    q = 0.0067
    exact = np.array([0.0, 1.0, -2.0, 3.0]) * q
    theirs = exact + np.array([0, 2, -1, 0]) * q
    assert verdict.within_one_quantum(exact + np.array([0, 1, 0, -1]) * q, theirs, exact, q)
    assert not verdict.within_one_quantum(exact + np.array([0, 2, 0, 0]) * q, theirs, exact, q)
    assert not verdict.within_one_quantum(exact + np.array([0, 0, 1, 0]) * q, exact, exact, q)
    assert not verdict.within_one_quantum(exact[:3], theirs, exact, q)  # a lost element


@pytest.mark.unit
def test_a_float_output_after_int8_ops_is_excused_only_when_closer_to_the_specification():
    """After the last DequantizeLinear: onnxcc off on fewer elements and by less than
    onnxruntime's fused kernels is excused; off where onnxruntime is exact, or by more
    than onnxruntime's worst, is onnxcc's error."""
    exact = np.array([1.0, 0.5, -0.25, 2.0])
    theirs = exact + np.array([0.02, -0.01, 0.015, 0.0])
    assert verdict.closer_than(exact + np.array([0.004, 0.0, 0.0, 0.0]), theirs, exact, 1e-3, 1e-4)
    assert not verdict.closer_than(exact + np.array([0.03, 0.0, 0.0, 0.0]), theirs, exact, 1e-3, 1e-4)
    assert not verdict.closer_than(exact + 0.004, exact, exact, 1e-3, 1e-4)


@pytest.mark.unit
@pytest.mark.slow
def test_a_seed_draws_the_same_graphs_in_every_process():
    """A campaign's graph i of seed S is the same in any process: one that imported only
    fuzz.graphs and one that imported every module of the compiler first draw the same
    graphs (Hypothesis drew from constants of the modules a process had imported: without
    fuzz/spec.py's fix these two part at graph 48)."""
    import subprocess
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); {}"
              "from fuzz.graphs import drawn; print(json.dumps(drawn('x86_64', 100, 5)))")
    everything = ("import importlib, pkgutil, fuzz.coverage, fuzz.malformed, onnxcc; "
                  "[importlib.import_module(m.name) for m in pkgutil.walk_packages(onnxcc.__path__, 'onnxcc.')]; ")
    first, second = (json.loads(subprocess.run([sys.executable, "-c", script.format(imports), REPO],
                                               capture_output=True, text=True, timeout=600,
                                               check=True).stdout)
                     for imports in ("", everything))
    assert len(first) == 100 and first == second
