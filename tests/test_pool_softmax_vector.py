"""The vector tactics of MaxPool / AveragePool (an output row at a time, ops/pool.py),
Softmax / LogSoftmax and LayerNormalization (ops/normalize.py) forced on odd shapes, edges,
tails and extreme inputs, run against onnxruntime on AVX2, NEON (armv7a, qemu) and AVX-512
where the host has it."""

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from conftest import REPO, in_qemu, onnx_model, save_graph
from onnxcc.importer import ceil_pools
from onnxcc.core.errors import OnnxccError
from onnxcc.importer.stage import import_model
from onnxcc.ops import pool
from onnxcc.target import host_cpu_flags
from test_tactics import save_model, verify

TARGETS = ["x86_64", *in_qemu("armv7a", "aarch64"),
           pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
               "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))]

P = dict
#: (op, input shape, attributes)
POOLS = [
    ("MaxPool", [1, 3, 1, 1], P(kernel_shape=[1, 1])),
    ("MaxPool", [1, 2, 2, 2], P(kernel_shape=[2, 2], strides=[2, 2])),
    ("MaxPool", [1, 2, 7, 7], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", [2, 3, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", [1, 3, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[2, 3], strides=[3, 3], pads=[1, 0, 0, 2])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 2], strides=[1, 1], pads=[2, 1, 2, 1])),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[3, 3], ceil_mode=1)),
    ("MaxPool", [1, 2, 13, 17], P(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 2, 1, 2])),
    ("MaxPool", [1, 2, 13, 40], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                  ceil_mode=1)),
    ("MaxPool", [1, 3, 37], P(kernel_shape=[3], strides=[2], ceil_mode=1)),
    ("MaxPool", [1, 3, 31], P(kernel_shape=[2], strides=[3], pads=[1, 1])),
    ("MaxPool", [1, 4, 50], P(kernel_shape=[3], strides=[1], pads=[1, 1], dilations=[2])),
    ("AveragePool", [1, 2, 1, 1], P(kernel_shape=[1, 1])),
    ("AveragePool", [1, 2, 7, 7], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      count_include_pad=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[2, 3], strides=[3, 1], pads=[1, 2, 0, 1],
                                      count_include_pad=1)),
    ("AveragePool", [1, 2, 13, 19], P(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 0, 1, 0],
                                      ceil_mode=1)),
    ("AveragePool", [1, 2, 13, 17], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                      ceil_mode=1, count_include_pad=1)),
    ("AveragePool", [1, 3, 29], P(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", [1, 3, 30], P(kernel_shape=[2], strides=[3], pads=[1, 0],
                                  count_include_pad=1, ceil_mode=1)),
    # ceil_mode windows that would start in the right padding: onnxruntime drops them,
    # onnx's shape inference does not (onnxcc/ceil_pools.py)
    ("MaxPool", [1, 3, 29], P(kernel_shape=[2], strides=[3], pads=[1, 0], ceil_mode=1)),
    ("AveragePool", [1, 3, 29], P(kernel_shape=[2], strides=[3], pads=[1, 1], ceil_mode=1)),
    ("AveragePool", [1, 3, 29], P(kernel_shape=[2], strides=[3], pads=[1, 1], ceil_mode=1,
                                  count_include_pad=1)),
    ("MaxPool", [1, 2, 29, 14], P(kernel_shape=[2, 3], strides=[3, 2], pads=[1, 0, 0, 0],
                                  ceil_mode=1)),  # the other axis' last window past the input
    ("AveragePool", [1, 2, 14, 29], P(kernel_shape=[3, 2], strides=[2, 3], pads=[0, 1, 0, 0],
                                      ceil_mode=1)),
    ("AveragePool", [1, 2, 29, 15], P(kernel_shape=[2, 3], strides=[3, 2], pads=[1, 0, 0, 0],
                                      ceil_mode=1, count_include_pad=1)),
]


def pool_zoo(path):
    nodes, inputs, outputs = [], {}, {}
    for k, (op, shape, attrs) in enumerate(POOLS):
        nodes.append(helper.make_node(op, [f"x{k}"], [f"y{k}"], **attrs))
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    return save_model(path, nodes, inputs, outputs, {})


@pytest.mark.parametrize("target", TARGETS)
def test_vector_pools_match_onnxruntime(scons, tmp_path, target):
    model = pool_zoo(tmp_path / "pools.onnx")
    verify(scons, model, target, "MaxPool:vector,AveragePool:vector")
    kernels = (scons.build_dir / target / "pools" / "pools_kernels.c").read_text()
    assert "__builtin_shufflevector" in kernels  # the stride-2 deinterleave ran


def test_reference_pools_match_onnxruntime(scons, tmp_path):
    """The same windows (a count_include_pad window past the padded input among them)."""
    verify(scons, pool_zoo(tmp_path / "pools.onnx"), "x86_64",
           "MaxPool:reference,AveragePool:reference")


@pytest.mark.unit
def test_row_pool_writes_over_its_input_only_where_rows_were_read():
    g = dict(h=8, w=8, oh=4, ow=4, kh=3, kw=3, sh=2, sw=2, dh=1, dw=1, pt=1, pl=1)
    assert pool._rows_overwrite_only_read_input(g)
    same = dict(g, oh=8, ow=8, sh=1, sw=1)  # row oy lands on input row oy, read by oy + 1
    assert not pool._rows_overwrite_only_read_input(same)


NEG_INF = np.float32(-np.inf)
#: (op, input shape, axis, what comes before: None, "large" (x 300) or "mask" (-inf added))
SOFTMAXES = [
    ("Softmax", [3, 1], -1, None), ("Softmax", [3, 7], -1, None), ("Softmax", [2, 8], -1, None),
    ("Softmax", [2, 9], -1, None), ("Softmax", [4, 100], -1, None),
    ("LogSoftmax", [3, 1], -1, None), ("LogSoftmax", [2, 7], -1, None),
    ("LogSoftmax", [2, 9], -1, None), ("LogSoftmax", [4, 100], -1, None),
    ("Softmax", [2, 9, 11], 1, None), ("Softmax", [5, 3], 0, None),
    ("LogSoftmax", [2, 5, 20], 1, None), ("LogSoftmax", [3, 4, 9], 0, None),
    ("Softmax", [2, 9], -1, "large"), ("LogSoftmax", [2, 100], -1, "large"),
    ("Softmax", [2, 3, 19], 1, "large"),
    ("Softmax", [2, 9], -1, "mask"), ("LogSoftmax", [2, 9], -1, "mask"),
    ("Softmax", [3, 9, 17], 1, "mask"), ("LogSoftmax", [3, 9, 17], 1, "mask"),
]


def softmax_zoo(path):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (op, shape, axis, before) in enumerate(SOFTMAXES):
        src = f"x{k}"
        if before == "large":
            inits[f"big{k}"] = np.float32(300.0)
            nodes.append(helper.make_node("Mul", [src, f"big{k}"], [f"m{k}"]))
            src = f"m{k}"
        elif before == "mask":  # -inf in some places along the axis, never all of them
            mask = np.zeros(shape[axis:] if axis >= 0 else shape[axis:], np.float32)
            mask.reshape(shape[axis], -1)[1::3] = NEG_INF
            inits[f"mask{k}"] = mask
            nodes.append(helper.make_node("Add", [src, f"mask{k}"], [f"m{k}"]))
            src = f"m{k}"
        nodes.append(helper.make_node(op, [src], [f"y{k}"], axis=axis))
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    return save_model(path, nodes, inputs, outputs, inits)


def verified_kernels(scons, model, target, tactic):
    """The kernels C file of ``model`` built with ``tactic`` forced, once verified."""
    verify(scons, model, target, tactic)
    name = model.stem
    return (scons.build_dir / target / name / f"{name}_kernels.c").read_text()


@pytest.mark.parametrize("target", TARGETS)
def test_vector_softmax_matches_onnxruntime(scons, tmp_path, target):
    model = softmax_zoo(tmp_path / "softmax.onnx")
    kernels = verified_kernels(scons, model, target, "Softmax:vector,LogSoftmax:vector")
    assert "vm_exp_v" in kernels and "vm_log_" in kernels and "expf(" not in kernels


#: (input shape, axis, bias, Mean and InvStdDev outputs, offset added first)
LAYER_NORMS = [([3, 37], -1, True, False, 0.0), ([2, 5, 16], 1, False, False, 0.0),
               ([4, 8], -1, True, False, 0.0), ([2, 3, 64], -1, True, True, 0.0),
               ([5, 100], -1, True, False, 1000.0), ([2, 1, 33], -2, False, True, 0.0)]


def layer_norm_zoo(path):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    rng = np.random.default_rng(5)
    for k, (shape, axis, bias, stats, offset) in enumerate(LAYER_NORMS):
        n = int(np.prod(shape[axis:]))
        inits[f"s{k}"] = rng.standard_normal(shape[axis:]).astype(np.float32)
        src, ins = f"x{k}", [f"x{k}", f"s{k}"]
        if bias:
            inits[f"b{k}"] = rng.standard_normal(n).astype(np.float32).reshape(shape[axis:])
            ins.append(f"b{k}")
        if offset:  # values far from 0 that differ little: the corrected variance
            inits[f"o{k}"] = np.float32(offset)
            nodes.append(helper.make_node("Add", [src, f"o{k}"], [f"a{k}"]))
            ins[0] = f"a{k}"
        outs = [f"y{k}"] + ([f"mean{k}", f"inv{k}"] if stats else [])
        nodes.append(helper.make_node("LayerNormalization", ins, outs, axis=axis))
        inputs[f"x{k}"] = shape
        outputs.update({o: len(shape) for o in outs})
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target", TARGETS)
def test_vector_layer_norm_matches_onnxruntime(scons, tmp_path, target):
    model = layer_norm_zoo(tmp_path / "ln.onnx")
    kernels = verified_kernels(scons, model, target, "LayerNormalization:vector")
    assert "normalize_rows_vector" in kernels
    # rows shorter than a vector (8 floats on AVX-512) keep the reference kernel
    assert ("ln_normalize_rows_layer_f32_4x8" in kernels) == (target == "x86_64-avx512")


@pytest.mark.emulated
@pytest.mark.slow
def test_softmax_keeps_the_reference_kernel_at_opt_size_and_on_scalar_cpus(scons, tmp_path):
    model = softmax_zoo(tmp_path / "softmax.onnx")
    for target, opt in (("x86_64", "size"), ("armv7", "speed")):
        r = scons(f"model={model}", f"target={target}", f"opt={opt}", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        kernels = (scons.build_dir / target / "softmax" / "softmax_kernels.c").read_text()
        assert "vm_exp_v" not in kernels and "expf(" in kernels


def _ceil_model(path, op, shape, declared, **attrs):
    """``op`` (ceil_mode) then Relu, the output declared ``declared`` (as an exporter would)."""
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["p"], name="pool", ceil_mode=1, **attrs),
         helper.make_node("Relu", ["p"], ["y"])], "ceil",
        [helper.make_tensor_value_info("x", 1, shape)],
        [helper.make_tensor_value_info("y", 1, declared)])
    save_graph(path, graph, 18)  # (LpPool's ceil_mode)
    return path


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "LpPool"])
@pytest.mark.slow
def test_ceil_pool_counts_as_onnxruntime_where_onnx_counts_one_more(scons, tmp_path, op):
    """onnx's shape inference gives [1, 3, 11]; onnxruntime (and the spec) 10: a model that
    declares 10 builds and matches; one that declares 11 is refused, naming the node."""
    attrs = dict(kernel_shape=[2], strides=[3], pads=[1, 0])
    verify(scons, _ceil_model(tmp_path / "ort.onnx", op, [1, 3, 29], [1, 3, 10], **attrs),
           "x86_64", "" if op == "LpPool" else f"{op}:vector")  # (LpPool: one kernel)
    r = scons(f"model={_ceil_model(tmp_path / 'onnx.onnx', op, [1, 3, 29], [1, 3, 11], **attrs)}",
              "target=x86_64", "verify")
    assert r.returncode != 0 and f"'pool' ({op})" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.unit
def test_ceil_pool_refuses_what_it_cannot_count_as_onnxruntime(tmp_path):
    """count_include_pad with a window dropped on one axis and one reaching past the padding
    on the other: the floor form's longer padding would change that window's divisor."""
    path = _ceil_model(tmp_path / "m.onnx", "AveragePool", [1, 2, 29, 14], [1, 2, 10, 7],
                       kernel_shape=[2, 3], strides=[3, 2], pads=[1, 0, 0, 0], count_include_pad=1)
    refusal = "node 'pool' \\(op AveragePool\\): ceil_mode=1 and count_include_pad=1"
    with pytest.raises(OnnxccError, match=refusal):
        import_model(str(path))


@pytest.mark.unit
def test_ceil_outputs_are_onnxruntimes():
    """ceil_pools.spec_outputs against onnxruntime's count, every small 1-D case at once."""
    cases, nodes, inputs, outputs = [], [], [], []
    for size in range(1, 11):
        for k in range(1, 4):
            for s in range(1, 4):
                for d in (1, 2):
                    for begin in range(k):
                        for end in range(k):
                            if size + begin + end < (k - 1) * d + 1:
                                continue
                            j = len(cases)
                            cases.append(ceil_pools.spec_outputs(size, k, s, d, begin, end))
                            nodes.append(helper.make_node(
                                "MaxPool", [f"x{j}"], [f"y{j}"], kernel_shape=[k], strides=[s],
                                dilations=[d], pads=[begin, end], ceil_mode=1))
                            inputs.append(helper.make_tensor_value_info(f"x{j}", 1, [1, 1, size]))
                            outputs.append(helper.make_tensor_value_info(f"y{j}", 1, None))
    model = onnx_model(helper.make_graph(nodes, "sweep", inputs, outputs))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: np.zeros(i.shape, np.float32) for i in session.get_inputs()})
    assert [y.shape[2] for y in got] == cases
    assert len(cases) > 500


NAN = np.float32(np.nan)
#: (op, input shape, attributes, where NaN is added: indices into the input)
NAN_POOLS = [
    # 1-D: onnxruntime ignores a NaN anywhere in a window; so does onnxcc
    ("MaxPool", [1, 3, 37], P(kernel_shape=[3], strides=[2], ceil_mode=1),
     [(0, 0, 0), (0, 1, 5), (0, 1, 6), (0, 2, 36), (0, 2, 35)]),
    ("MaxPool", [1, 2, 29], P(kernel_shape=[4], strides=[4]), [(0, 0, 3), (0, 1, 8), (0, 1, 9)]),
    # 2-D: onnxruntime's kernel (MLAS) restarts its max after a NaN (the max of the
    # elements after it); only a NaN first in a window is ignored by both
    ("MaxPool", [1, 2, 13, 21], P(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
     [(0, 0, 0, 0), (0, 1, 0, 0)]),
    ("MaxPool", [1, 2, 13, 21], P(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
     [(0, 0, 0, 0)]),
    ("GlobalMaxPool", [1, 3, 5, 7], {}, [(0, 0, 0, 0), (0, 1, 4, 6), (0, 2, 2, 3)]),
    ("MaxPool", [1, 3, 4, 5], P(kernel_shape=[4, 5]), [(0, 0, 0, 0), (0, 2, 1, 1)]),  # global
    ("Softmax", [3, 9], P(axis=-1), [(0, 0), (2, 8)]),
    ("Softmax", [3, 40], P(axis=-1), [(1, 17)]),
    ("LogSoftmax", [3, 9], P(axis=-1), [(1, 3)]),
    ("Softmax", [2, 5, 11], P(axis=1), [(0, 0, 0), (1, 4, 10), (1, 2, 3)]),
]


def nan_zoo(path):
    """Each op after an Add of a mask that is NaN at the given indices (0 elsewhere)."""
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, (op, shape, attrs, where) in enumerate(NAN_POOLS):
        mask = np.zeros(shape, np.float32)
        for i in where:
            mask[i] = NAN
        inits[f"nan{k}"] = mask
        nodes += [helper.make_node("Add", [f"x{k}", f"nan{k}"], [f"m{k}"]),
                  helper.make_node(op, [f"m{k}"], [f"y{k}"], **attrs)]
        inputs[f"x{k}"], outputs[f"y{k}"] = shape, len(shape)
    return save_model(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("aarch64", "armv7a")])
@pytest.mark.parametrize("tactic", ["vector", "reference"])
def test_nan_inputs_never_win_a_max_and_fill_a_softmax_row(scons, tmp_path, target, tactic):
    if tactic == "reference" and target != "x86_64":
        pytest.skip("the reference kernels are plain C: one target is enough")
    model = nan_zoo(tmp_path / "nan.onnx")
    ops = "MaxPool,GlobalMaxPool,Softmax,LogSoftmax"
    verify(scons, model, target, ",".join(f"{op}:{tactic}" for op in ops.split(",")))


def _ceil_chain(count, extra_nodes=(), initializers=()):
    """``count`` ceil_mode MaxPools in a row, each dropping a window onnx keeps, plus a
    second pool on each one's input (the same round rewrites both)."""
    size = 2
    for _ in range(count):
        size = 3 * size - 1  # (kernel 2, stride 3, pads [1, 0]: 3n - 1 -> n, one dropped)
    nodes, outputs, prev = list(extra_nodes), [], "x"
    for k in range(count):
        for name in (f"p{k}", f"q{k}"):
            nodes.append(helper.make_node("MaxPool", [prev], [f"{name}y"], name=name,
                                          kernel_shape=[2], strides=[3], pads=[1, 0],
                                          ceil_mode=1))
        outputs.append(helper.make_tensor_value_info(f"q{k}y", 1, None))
        prev = f"p{k}y"
    outputs.append(helper.make_tensor_value_info(prev, 1, None))
    return onnx_model(helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", 1, [1, 1, size])], outputs,
        initializer=list(initializers)))


@pytest.mark.unit
def test_ceil_pools_in_a_row_count_as_onnxruntime():
    """Pools in a row are recounted a round of shape inference per pool in the row (a round
    rewrites every pool whose input shape is final), to onnxruntime's shapes; the model's
    weights are whole after; more than MAX_ROUNDS in a row are refused in one line."""
    weight = onnx.numpy_helper.from_array(np.arange(512, dtype=np.float32), "w")
    reshape = helper.make_node("Reshape", ["w", "s"], ["unused"])
    shape = onnx.numpy_helper.from_array(np.array([512], np.int64), "s")
    model = _ceil_chain(5, [reshape], [weight, shape])
    x = np.zeros(model.graph.input[0].type.tensor_type.shape.dim[2].dim_value, np.float32)
    options = ort.SessionOptions()
    options.log_severity_level = 3  # (it warns that the declared shapes are onnx's)
    expected = ort.InferenceSession(model.SerializeToString(), options, providers=[
        "CPUExecutionProvider"]).run(None, {"x": x.reshape(1, 1, -1)})
    done = ceil_pools.count_as_onnxruntime(model, "chain.onnx")
    assert len(done) == 10
    assert (onnx.numpy_helper.to_array(model.graph.initializer[0]) == np.arange(512)).all()
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    names = [f"q{k}y" for k in range(5)] + ["p4y"]
    assert [dims[n] for n in names] == [list(y.shape) for y in expected]
    too_many = _ceil_chain(ceil_pools.MAX_ROUNDS + 1)
    with pytest.raises(OnnxccError, match=f"more than {ceil_pools.MAX_ROUNDS} ceil_mode pools "
                                          f"in a row .*first left: 'p{ceil_pools.MAX_ROUNDS}'"):
        ceil_pools.count_as_onnxruntime(too_many, "chain.onnx")


@pytest.mark.unit
def test_a_floor_pool_after_a_ceil_pool_is_never_recounted():
    """Only ceil_mode pools are recounted. The fuzzer's g87a7c8ea14: a ceil AveragePool
    that drops no window, then a MaxPool without ceil_mode whose ceil count would be one
    more. The recount once tracked its pools by the ids of protobuf's node wrappers, which
    are new at each access: a freed wrapper's id came back for the MaxPool, which was
    rewritten to count as if ceil_mode were set (a refusal here; with no declared shapes
    after it, a model of another output shape than onnxruntime's)."""
    import json
    from fuzz import spec as fuzz_spec
    with open(os.path.join(REPO, "tests", "fuzz_regressions", "g87a7c8ea14.json")) as f:
        model = fuzz_spec.build_model(json.load(f)["spec"])
    pools = [n for n in model.graph.node if n.op_type in ceil_pools.POOLS]
    assert [ceil_pools._attr(n, "ceil_mode", 0) for n in pools] == [1, 0]
    assert ceil_pools.count_as_onnxruntime(model, "g87a7c8ea14.onnx") == []
    assert "ceil_mode" not in [a.name for a in pools[1].attribute]
    assert [list(a.ints) for a in pools[1].attribute if a.name == "pads"] == [[2, 0, 0, 0]]
