"""Activations written as several nodes become one (passes/fuse_activations.py), fuse into
the conv before them, and run as the vmath functions (templates/kernels/lib/vmath.mako) in
the speed tactics -- on vectors, or on one-lane vectors on a scalar CPU -- while opt=size
keeps libm; compiled and run against onnxruntime."""

import math
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import in_qemu, save_graph, slow
from onnxcc.importer.stage import import_model
from onnxcc.target import host_cpu_flags
from onnxcc.passes import fuse_activations, fuse_elementwise

F = TensorProto.FLOAT
RNG = np.random.default_rng(3)
SHAPE = [1, 4, 6, 7]


def save(tmp_path, nodes, inits=None, outputs=("y",), name="m", opset=17):
    inits = inits or {}
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", F, SHAPE)],
        [helper.make_tensor_value_info(o, F, SHAPE) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    path = tmp_path / f"{name}.onnx"
    save_graph(path, graph, opset)
    return path


def node(op, inputs, output, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def gelu(variant):
    """GELU as exporters write it: the 0.5 on either factor, x / sqrt2 or x * 1/sqrt2."""
    scale = [node("Div", ["x", "sqrt2"], "t")] if variant[0] == "div" else [node("Mul", ["inv", "x"], "t")]
    inner = scale + [node("Erf", ["t"], "e"), node("Add", ["one", "e"], "u")]
    ends = {"outer": [node("Mul", ["x", "u"], "m"), node("Mul", ["m", "half"], "y")],
            "x": [node("Mul", ["x", "half"], "h"), node("Mul", ["h", "u"], "y")],
            "u": [node("Mul", ["u", "half"], "v"), node("Mul", ["x", "v"], "y")]}
    inits = {"sqrt2": math.sqrt(2), "inv": 1 / math.sqrt(2), "one": 1.0, "half": 0.5}
    return inner + ends[variant[1]], inits


PATTERNS = {
    "swish": ([node("Sigmoid", ["x"], "s"), node("Mul", ["s", "x"], "y")], {}, "Swish", {"alpha": 1.0}),
    "swish_beta": ([node("Mul", ["x", "b"], "xb"), node("Sigmoid", ["xb"], "s"), node("Mul", ["x", "s"], "y")],
                   {"b": 1.702}, "Swish", {"alpha": float(np.float32(1.702))}),
    "hard_swish": ([node("HardSigmoid", ["x"], "s", alpha=1 / 6, beta=0.5), node("Mul", ["x", "s"], "y")],
                   {}, "HardSwish", {}),
    "mish": ([node("Softplus", ["x"], "p"), node("Tanh", ["p"], "t"), node("Mul", ["x", "t"], "y")],
             {}, "Mish", {}),
    **{f"gelu_{a}_{b}": (*gelu((a, b)), "Gelu", {}) for a in ("div", "mul") for b in ("outer", "x", "u")},
}


@pytest.mark.unit
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_patterns_become_one_node(tmp_path, pattern):
    nodes, inits, op, attrs = PATTERNS[pattern]
    g = fuse_activations(import_model(str(save(tmp_path, nodes, inits))))
    assert [(n.op, n.inputs, n.outputs, n.attrs) for n in g.nodes] == [(op, ["x"], ["y"], attrs)]


@pytest.mark.unit
def test_shared_or_output_intermediates_stay(tmp_path):
    """A pattern whose sigmoid is also read elsewhere, or is a graph output, is kept; so is
    a HardSigmoid of other constants."""
    shared = [node("Sigmoid", ["x"], "s"), node("Mul", ["x", "s"], "y"), node("Add", ["s", "x"], "z")]
    g = fuse_activations(import_model(str(save(tmp_path, shared, outputs=("y", "z"), name="a"))))
    assert [n.op for n in g.nodes] == ["Sigmoid", "Mul", "Add"]
    out = [node("Sigmoid", ["x"], "s"), node("Mul", ["x", "s"], "y")]
    g = fuse_activations(import_model(str(save(tmp_path, out, outputs=("y", "s"), name="b"))))
    assert [n.op for n in g.nodes] == ["Sigmoid", "Mul"]
    wrong = [node("HardSigmoid", ["x"], "s"), node("Mul", ["x", "s"], "y")]  # alpha 0.2
    g = fuse_activations(import_model(str(save(tmp_path, wrong, name="c"))))
    assert [n.op for n in g.nodes] == ["HardSigmoid", "Mul"]


def conv_activations(tmp_path):
    """A conv followed by each pattern (one after the other), and a squeeze-excitation."""
    c = SHAPE[1]
    nodes = [node("Conv", ["x", "w0"], "a0", pads=[1, 1, 1, 1])]
    inits = {"w0": RNG.standard_normal((c, c, 3, 3)) * 0.3}
    last = "a0"
    for k, name in enumerate(["swish", "mish", "gelu_div_outer", "hard_swish", "swish_beta"]):
        pattern, pinits = PATTERNS[name][:2]
        rename = {"x": last, "y": f"a{k + 1}"}
        for n in pattern:
            n2 = helper.make_node(n.op_type, [rename.get(i, f"{name}_{i}") for i in n.input],
                                  [rename.get(o, f"{name}_{o}") for o in n.output])
            n2.attribute.extend(n.attribute)
            nodes.append(n2)
        inits.update({f"{name}_{k2}": v for k2, v in pinits.items()})
        nodes.append(node("Conv", [f"a{k + 1}", f"w{k + 1}"], f"c{k + 1}", pads=[1, 1, 1, 1]))
        inits[f"w{k + 1}"] = RNG.standard_normal((c, c, 3, 3)) * 0.3
        last = f"c{k + 1}"
    nodes += [node("GlobalAveragePool", [last], "g"), node("Conv", ["g", "ws"], "q"),
              node("Sigmoid", ["q"], "s"), node("Mul", [last, "s"], "se"),
              node("Tanh", ["se"], "th"), node("Erf", ["th"], "er"), node("Elu", ["er"], "y")]
    inits["ws"] = RNG.standard_normal((c, c, 1, 1)) * 0.3
    return save(tmp_path, nodes, inits, name="acts")


@pytest.mark.unit
def test_patterns_fuse_into_conv_epilogues(tmp_path):
    g = import_model(str(conv_activations(tmp_path)))
    fuse_elementwise(fuse_activations(g))
    chains = [[op for op, _ in n.attrs.get("onnxcc_epilogue", [])] for n in g.nodes if n.op == "Conv"]
    assert ["Swish"] in chains and ["Mish"] in chains and ["Gelu"] in chains
    assert ["HardSwish"] in chains and ["Sigmoid"] in chains  # the SE's gate in its 1x1 conv


@pytest.mark.parametrize("target", [
    *slow("x86_64", *in_qemu("armv7", "aarch64")),
    pytest.param("x86_64-avx512", marks=pytest.mark.skipif(
        "avx512f" not in host_cpu_flags(), reason="this host has no AVX-512"))])
@pytest.mark.slow
def test_activations_match_onnxruntime(scons, tmp_path, target):
    """opt=speed calls the vmath functions (vectors on the SIMD CPUs -- x86's own exp steps
    on AVX2 and AVX-512 --, floats on the Cortex-M4), opt=size libm; both match onnxruntime."""
    path = conv_activations(tmp_path)
    for opt in ("speed", "size"):
        r = scons(f"model={path}", f"target={target}", f"opt={opt}", f"build_dir={scons.build_dir / opt}",
                  "verify")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "warning" not in r.stdout + r.stderr
        kernels = (scons.build_dir / opt / target / "acts" / "acts_kernels.c").read_text()
        if opt == "speed":
            assert "vm_mish_" in kernels and "vm_tanh_" in kernels and "tanhf(" not in kernels
            if target != "armv7":  # vectors: every function (floats: as the Cortex-M4)
                for name in ("sigmoid", "gelu", "erf", "elu"):
                    assert re.search(rf"vm_{name}_v\d+\(", kernels), name
            else:  # floats: newlib's expf and erff are cheaper than the branch-free forms
                assert "vm_gelu_" not in kernels and "erff(" in kernels
        else:
            assert "vm_" not in kernels and "expf(" in kernels
