"""The test cases: ONNX's backend node tests (generated from the generators the onnx wheel
ships in ``onnx.backend.test.case.node``, as ``onnx.backend.test.cmd_tools`` writes them)
and the model suites the wheel ships as data (``onnx/backend/test/data/<suite>``).

Many node tests feed an operator's parameters (Slice's starts, Reshape's shape, a
reduction's axes, ...) as graph inputs, where every exporter writes constants. onnxcc
compiles static code, so it needs them constant: ``bind_parameters`` turns such inputs
into initializers holding the test's values, and the report says so for each case.
"""

import glob
import os
import shutil
import warnings
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

DATA_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
NODE_SUITE = "node"
#: the suites the onnx wheel ships as data files (``real`` and ``light`` need downloads
#: or are full-size networks, and are not run)
DATA_SUITES = ("pytorch-converted", "pytorch-operator", "simple")
SUITES = (NODE_SUITE,) + DATA_SUITES

#: op type -> input positions that are parameters: they set the output shape or which
#: elements are read, and exporters always write them as constants
PARAMETER_INPUTS = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 3},
    "Squeeze": {1}, "Unsqueeze": {1}, "Split": {1}, "TopK": {1}, "Resize": {1, 2, 3},
    "Upsample": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2}, "OneHot": {1},
    "CumSum": {1}, "CumProd": {1}, "Clip": {1, 2}, "Trilu": {1}, "CenterCropPad": {1},
    "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0}, "DFT": {1, 2},
    "Col2Im": {1, 2},
    # quantization parameters (scales, zero points) of statically quantized models
    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2}, "QLinearConv": {1, 2, 4, 5, 6, 7},
    "QLinearMatMul": {1, 2, 4, 5, 6, 7}, "ConvInteger": {2, 3}, "MatMulInteger": {2, 3},
    "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1},
    "ReduceProd": {1}, "ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSum": {1},
    "ReduceLogSumExp": {1}, "ReduceSumSquare": {1},
}


@dataclass
class Case:
    suite: str
    name: str
    folder: str  # holds model.onnx and test_data_set_N/
    op: str = ""  # what the report groups it under
    bound: list = field(default_factory=list)  # graph inputs made constants
    input_shape: str = ""  # input_shape= of inputs with symbolic dimensions, from the data

    @property
    def model(self):
        return os.path.join(self.folder, "model.onnx")

    @property
    def data_sets(self):
        return sorted(glob.glob(os.path.join(self.folder, "test_data_set_*")))

    @property
    def key(self):
        return f"{self.suite}/{self.name}"


def _write_tensor(path, value, name):
    t = value if isinstance(value, TensorProto) else numpy_helper.from_array(np.asarray(value), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def _write_node_case(case, folder):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for k, (inputs, outputs) in enumerate(case.data_sets):
        data = os.path.join(folder, f"test_data_set_{k}")
        os.makedirs(data, exist_ok=True)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                if infos[j].type.HasField("tensor_type"):  # sequences, maps, optionals: no file
                    _write_tensor(os.path.join(data, f"{kind}_{j}.pb"), value, infos[j].name)


def write_node_cases(folder):
    """Every node test case of the installed onnx, written under ``folder`` (skipped when
    it was written by this onnx version already)."""
    stamp = os.path.join(folder, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read() == onnx.__version__:
        return
    import onnx.backend.test.case.node as node_cases
    shutil.rmtree(folder, ignore_errors=True)
    with warnings.catch_warnings():  # the generators warn about numpy casts they mean
        warnings.simplefilter("ignore")
        for case in node_cases.collect_testcases(None):
            _write_node_case(case, os.path.join(folder, case.name))
    with open(stamp, "w") as f:
        f.write(onnx.__version__)


def _read_tensor(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def _symbolic_input_shapes(inputs, data):
    """input_shape= text fixing the inputs whose shape is symbolic to the test data's."""
    fixed = []
    for k, vi in enumerate(inputs):
        dims = vi.type.tensor_type.shape.dim
        path = os.path.join(data, f"input_{k}.pb")
        if vi.type.HasField("tensor_type") and any(not d.HasField("dim_value") for d in dims) \
                and os.path.exists(path):
            shape = _read_tensor(path).dims
            fixed.append(f"{vi.name}:{'x'.join(map(str, shape))}")
    return ",".join(fixed)


def parameter_inputs(model):
    """Graph inputs that feed parameter positions (``PARAMETER_INPUTS``) and nothing else."""
    graph = model.graph
    params, data_uses = set(), set()
    for node in graph.node:
        for pos, name in enumerate(node.input):
            if pos in PARAMETER_INPUTS.get(node.op_type, ()) and node.domain in ("", "ai.onnx"):
                params.add(name)
            else:
                data_uses.add(name)
    return {i.name for i in graph.input} & (params - data_uses)


def bind_parameters(src, dst, also=()):
    """Copy the case in ``src`` to ``dst``, with graph inputs that feed parameter positions
    (``PARAMETER_INPUTS``) made initializers of the test's values; their input_K.pb files
    go and the others are renumbered; ``also``: more inputs to bind (an expanded function
    test binds those of the op's own test). Returns the names of the bound inputs and the
    input_shape= text of the remaining inputs with symbolic dimensions."""
    model = onnx.load(os.path.join(src, "model.onnx"))
    graph = model.graph
    inits = {i.name for i in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in inits]
    bound = [n for n in inputs if n in parameter_inputs(model) | set(also)]
    data_sets = sorted(glob.glob(os.path.join(src, "test_data_set_*")))
    if bound and len(data_sets) != 1:
        bound = []  # values differ per data set: nothing to bind
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for data in data_sets:
        out = os.path.join(dst, os.path.basename(data))
        os.makedirs(out)
        k = 0
        for j, name in enumerate(inputs):
            path = os.path.join(data, f"input_{j}.pb")
            if name in bound:
                tensor = _read_tensor(path)
                tensor.name = name
                graph.initializer.append(tensor)
            elif os.path.exists(path):
                shutil.copy(path, os.path.join(out, f"input_{k}.pb"))
                k += 1
        for path in glob.glob(os.path.join(data, "output_*.pb")):
            shutil.copy(path, out)
    if bound:
        keep = [i for i in graph.input if i.name not in bound]
        del graph.input[:]
        graph.input.extend(keep)
    onnx.save(model, os.path.join(dst, "model.onnx"))
    runtime_inputs = [i for i in graph.input if i.name not in inits]
    shapes = _symbolic_input_shapes(runtime_inputs, os.path.join(dst, "test_data_set_0"))
    return bound, shapes


def _ops_of(model_path):
    model = onnx.load(model_path, load_external_data=False)
    ops = sorted({n.op_type for n in model.graph.node} - {"Constant"})
    return "+".join(ops) or "no op"


def case_op(suite, name, source):
    """The op a case tests: a node test's op (an expanded function test: the op it
    expands), or the ops of a model."""
    if suite == NODE_SUITE:
        base = os.path.join(source, name.split("_expanded")[0], "model.onnx")
        if os.path.exists(base):
            return _ops_of(base)
    return _ops_of(os.path.join(source, name, "model.onnx"))


def prepare(work, suites, select=None):
    """[Case] of ``suites`` under ``work``/cases, parameters bound; ``select(key)``
    filters them ("node/test_relu")."""
    raw = os.path.join(work, "generated", NODE_SUITE)
    if NODE_SUITE in suites:
        write_node_cases(raw)
    cases = []
    for suite in suites:
        source = raw if suite == NODE_SUITE else os.path.join(DATA_DIR, suite)
        for name in sorted(os.listdir(source)):
            if name.startswith(".") or not os.path.isfile(os.path.join(source, name, "model.onnx")):
                continue
            case = Case(suite, name, os.path.join(work, "cases", suite, name))
            if select is not None and not select(case.key):
                continue
            case.op = case_op(suite, name, source)
            base = os.path.join(source, name.split("_expanded")[0], "model.onnx")
            also = parameter_inputs(onnx.load(base)) if "_expanded" in name and os.path.exists(base) else ()
            case.bound, case.input_shape = bind_parameters(os.path.join(source, name), case.folder,
                                                           also)
            cases.append(case)
    return cases
