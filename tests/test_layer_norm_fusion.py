"""A decomposed LayerNorm fused into one LayerNormalization (passes/fuse_layer_norm.py):
rows of odd lengths (vector tails, rows shorter than a vector), two trailing axes, eps
of other values and shapes on either side of its Add, Pow or Mul for the square, gamma
and beta on either side, broadcast within the normalized axes, scalar, or absent --
run against onnxruntime on CPUs of 16-, 8-, 4- and 1-float vectors; and the chains that
must not fuse (an intermediate with another reader or a graph output, the mean over a
leading axis, the two means over different axes, eps or gamma not constant) still
there."""

import json

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import in_qemu, onnx_model, verify_clean
from onnxcc.target import host_cpu_flags

RNG = np.random.default_rng(17)
F = onnx.TensorProto.FLOAT
AVX512 = pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
    "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))

#: (name, x shape, axes, options); options: "pow" (Pow(d, 2), else Mul(d, d)), "eps_first",
#: "eps1" (eps of shape [1]), "gamma" / "beta" (their shapes), "affine_first" (g * q, b + p),
#: "d_out" (d also an output), "var_out", "gamma_in" (gamma an input), "eps_in", "axes2"
#: (the second mean's axes); a name starting with "kept" keeps its ReduceMean
CASES = [
    ("ln37", [2, 5, 37], [-1], dict(pow=1, gamma=[37], beta=[37])),
    ("ln23", [1, 3, 23], [2], dict(gamma=[1, 1, 23], beta=[23], eps=1e-6, eps_first=1)),
    ("ln13", [6, 13], [-1], dict(pow=1, gamma=[13], eps=1e-3, eps1=1, affine_first=1)),
    ("ln_bare", [3, 19], [-1], dict(eps=1e-12)),
    ("ln_beta", [2, 40], [-1], dict(beta=[1, 40], eps=0.5)),
    ("ln_2axes", [1, 3, 4, 7], [-2, -1], dict(gamma=[4, 7], beta=[7], pow=1)),
    ("ln_scalar", [2, 2, 9], [-1], dict(gamma=[], beta=[1])),
    ("ln_gamma_in", [1, 4, 11], [-1], dict(gamma=[11], gamma_in=1, beta=[11])),
    ("kept_d_out", [2, 17], [-1], dict(gamma=[17], d_out=1)),
    ("kept_var_out", [2, 17], [-1], dict(gamma=[17], var_out=1)),
    ("kept_axis", [2, 6, 5], [1], dict(gamma=[1, 6, 1])),
    ("kept_axes2", [2, 6, 5], [-1], dict(axes2=[1])),
    ("kept_eps_in", [2, 17], [-1], dict(eps_in=1)),
]


def _const(inits, name, shape):
    inits[name] = (RNG.standard_normal(shape) * 0.7 + 1).astype(np.float32)
    return name


def _case(k, name, xs, axes, o, nodes, inputs, outputs, inits):
    x, n = f"x{k}", lambda s: f"{s}{k}"
    inputs[x] = xs
    nodes.append(helper.make_node("ReduceMean", [x], [n("m")], name=f"mean_{name}", axes=axes))
    nodes.append(helper.make_node("Sub", [x, n("m")], [n("d")]))
    if o.get("pow"):
        inits[n("two")] = np.array(2.0, np.float32)
        nodes.append(helper.make_node("Pow", [n("d"), n("two")], [n("sq")]))
    else:
        nodes.append(helper.make_node("Mul", [n("d"), n("d")], [n("sq")]))
    nodes.append(helper.make_node("ReduceMean", [n("sq")], [n("v")], axes=o.get("axes2", axes)))
    eps = np.array([o.get("eps", 1e-5)] if o.get("eps1") else o.get("eps", 1e-5), np.float32)
    if o.get("eps_in"):
        inputs[n("eps")] = [1]
    else:
        inits[n("eps")] = eps
    pair = [n("eps"), n("v")] if o.get("eps_first") else [n("v"), n("eps")]
    nodes.append(helper.make_node("Add", pair, [n("ve")]))
    nodes.append(helper.make_node("Sqrt", [n("ve")], [n("s")]))
    nodes.append(helper.make_node("Div", [n("d"), n("s")], [n("q")]))
    last = n("q")
    for op, key, out in (("Mul", "gamma", "g"), ("Add", "beta", "b")):
        if key not in o:
            continue
        if key == "gamma" and o.get("gamma_in"):
            inputs[n(key)] = o[key]
        else:
            _const(inits, n(key), o[key])
        pair = [n(key), last] if o.get("affine_first") else [last, n(key)]
        nodes.append(helper.make_node(op, pair, [n(out)], name=f"{out}_{name}"))
        last = n(out)
    nodes.append(helper.make_node("Identity", [last], [n("y")]))
    outputs[n("y")] = len(xs)
    for key, t in (("d_out", "d"), ("var_out", "v")):
        if o.get(key):
            outputs[n(t)] = len(xs)


def layer_norm_zoo(path, cases=CASES, opset=13):
    nodes, inputs, outputs, inits = [], {}, {}, {}
    for k, case in enumerate(cases):
        _case(k, *case, nodes, inputs, outputs, inits)
    graph = helper.make_graph(
        nodes, "lnz", [helper.make_tensor_value_info(t, F, s) for t, s in inputs.items()],
        [helper.make_tensor_value_info(t, F, [None] * r) for t, r in outputs.items()],
        initializer=[numpy_helper.from_array(v, t) for t, v in inits.items()])
    model = onnx_model(graph, min(opset, 17))
    if opset > 17:  # the reductions' axes an input
        model = onnx.version_converter.convert_version(model, opset)
    onnx.save(model, path)
    return path


def _built(scons, target):
    chosen = json.loads((scons.build_dir / target / "lnz" / "tactics.json").read_text())
    return {n["node"]: (n["op"], n["tactic"]) for n in chosen["nodes"]}


def _check_fusions(built):
    """Each fused chain is one LayerNormalization, each kept one still starts with its
    ReduceMean; a gamma read at run time stays a Mul after the fused node."""
    for name, *_ in CASES:
        op = built[f"mean_{name}"][0]
        assert op == ("ReduceMean" if name.startswith("kept") else "LayerNormalization"), name
    assert built["g_ln_gamma_in"][0] == "Mul"
    assert "b_ln_gamma_in" in built and "g_ln37" not in built and "b_ln23" not in built


@pytest.mark.parametrize("target", ["x86_64", AVX512, *in_qemu("aarch64", "armv7a", "riscv32")])
def test_fused_layer_norm_matches_onnxruntime(scons, tmp_path, target):
    model = layer_norm_zoo(tmp_path / "lnz.onnx")
    verify_clean(scons, model, f"target={target}")
    _check_fusions(_built(scons, target))


def test_fused_layer_norm_opset18_axes_input(scons, tmp_path):
    """At opset 18 the means' axes are an input (a constant: params_to_attrs)."""
    model = layer_norm_zoo(tmp_path / "lnz.onnx", opset=18)
    verify_clean(scons, model, "target=x86_64")
    _check_fusions(_built(scons, "x86_64"))


@pytest.mark.slow
def test_fuse_0_keeps_the_chain(scons, tmp_path):
    model = layer_norm_zoo(tmp_path / "lnz.onnx")
    verify_clean(scons, model, "target=x86_64", "fuse=0")
    built = _built(scons, "x86_64")
    assert all(built[f"mean_{name}"][0] == "ReduceMean" for name, *_ in CASES)
