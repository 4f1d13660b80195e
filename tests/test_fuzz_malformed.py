"""The malformed-model fuzzer (fuzz/malformed.py) in CI: a seeded sample of mutated models
ends in "ok" or one clear line every time -- no internal error, no timeout."""

import sys
import time

import onnx
import pytest

from conftest import REPO

sys.path.insert(0, REPO)
from fuzz import malformed  # noqa: E402
from onnxcc.core.errors import OnnxccError  # noqa: E402

pytestmark = pytest.mark.unit

SAMPLE = 150


@pytest.mark.slow
def test_seeded_sample_has_no_internal_error(tmp_path):
    counts, failures = malformed.campaign(SAMPLE, seed=12, timeout=30, save_dir=str(tmp_path))
    assert failures == [], "\n".join(f"variant {i} of seed 12 ({base}, {'+'.join(m)}): "
                                     f"{outcome}: {detail}" for i, base, m, outcome, detail in failures)
    assert counts["ok"] + counts["clear error"] == SAMPLE
    assert counts["ok"] > 0 and counts["clear error"] > 0  # the sample reaches both ends


def test_every_seed_model_compiles_unmutated(tmp_path):
    """Mutations start from valid models: each seed gets through every stage as it is."""
    for name, data in malformed.seed_models().items():
        folder = tmp_path / name.replace("/", "_")
        folder.mkdir()
        (folder / "model.onnx").write_bytes(data)
        assert malformed.run_variant(str(folder), timeout=60) == ("ok", ""), name


def test_variants_replay_from_seed_and_index(tmp_path):
    seeds = malformed.seed_models()
    drawn = []
    for index, folder in ((41, "a"), (41, "b"), (42, "c")):
        (tmp_path / folder).mkdir()
        drawn.append(malformed.make_variant(seeds, 3, index, str(tmp_path / folder)))
    data = [(tmp_path / f / "model.onnx").read_bytes() for f in "abc"]
    assert drawn[0] == drawn[1] and data[0] == data[1]
    assert data[0] != data[2]


def test_every_mutation_applies_to_some_seed(tmp_path):
    seeds = malformed.seed_models()
    for name in malformed.PROTO_MUTATIONS:
        model = onnx.ModelProto.FromString(seeds["conv"])
        before = model.SerializeToString()
        folder = tmp_path / name
        folder.mkdir()
        for k in range(5):  # a mutation may draw a no-op once; not five times
            malformed.apply(name, model, malformed.random.Random(k), str(folder))
        assert model.SerializeToString() != before, name


def _variant(tmp_path):
    folder = tmp_path / "v"
    folder.mkdir(parents=True)
    onnx.save(malformed.small_graphs()["gemm"], str(folder / "model.onnx"))
    return str(folder)


def test_an_exception_that_is_not_onnxcc_error_is_an_internal_error(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("epilogue")
    monkeypatch.setattr(malformed.tactics, "run", broken)
    outcome, detail = malformed.compile_variant(_variant(tmp_path), malformed.load_target("x86_64"))
    assert outcome == "internal error" and "tactics: KeyError" in detail


def test_a_clear_error_that_leaves_a_half_written_output_is_an_internal_error(tmp_path, monkeypatch):
    def half(graph_path, plan_path, *args, **kwargs):
        with open(plan_path, "w") as f:
            f.write("{")
        raise OnnxccError("too big")
    monkeypatch.setattr(malformed.planner, "run", half)
    outcome, detail = malformed.compile_variant(_variant(tmp_path), malformed.load_target("x86_64"))
    assert outcome == "internal error" and "half-written" in detail and "plan.json" in detail


def test_a_clean_model_compiles_and_a_hang_is_a_timeout(tmp_path, monkeypatch):
    assert malformed.run_variant(_variant(tmp_path)) == ("ok", "")
    monkeypatch.setattr(malformed.optimizer, "run", lambda *a, **k: time.sleep(60))
    start = time.monotonic()
    assert malformed.run_variant(_variant(tmp_path / "hang"), timeout=2)[0] == "timeout"
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink_out", "missing", "short"])
def test_bad_external_data_variants_are_clear_errors(tmp_path, kind, monkeypatch):
    """The external_data mutation's bad kinds each end in a clear error naming the tensor."""
    model = malformed.small_graphs()["gemm"]
    rng = malformed.random.Random(0)
    monkeypatch.setattr(rng, "choice", lambda items: kind if kind in items else items[0])
    malformed.external_data(model, rng, str(tmp_path))
    onnx.save(model, str(tmp_path / "model.onnx"))
    outcome, detail = malformed.compile_variant(str(tmp_path), malformed.load_target("x86_64"))
    assert outcome == "clear error" and "external data file" in detail, detail
