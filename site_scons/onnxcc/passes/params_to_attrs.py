"""Constant inputs that are really parameters become attributes.

Kernels are specialized on parameters, and the planner and the code generator read the
graph without its weights: so a parameter such as Clip's min and max (inputs since
opset 11) must live in the graph structure, not in the weights file. Each becomes the
attribute the op had before the parameter turned into an input (Slice's starts, a
reduction's axes, Pad's pads, ...), so a lowering reads one spelling for every opset;
the input is left empty ('') so the positions of the others do not move.
"""

from onnxcc.core.errors import OnnxccError

REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")

#: op -> {input position: attribute name}
PARAMETERS = {
    "Clip": {1: "min", 2: "max"},
    "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"},
    "Pad": {1: "pads", 2: "value", 3: "axes"},
    "Split": {1: "split"},
    "TopK": {1: "k"},
    "Resize": {1: "roi", 2: "scales", 3: "sizes"},
    "Upsample": {1: "scales"},
    "Tile": {1: "repeats"},
    "OneHot": {1: "depth"},
    "CumSum": {1: "axis"},
    "CumProd": {1: "axis"},
    "Trilu": {1: "k"},
    "Reshape": {1: "shape"},
    "Expand": {1: "shape"},
    "Squeeze": {1: "axes"},
    "Unsqueeze": {1: "axes"},
    "Dropout": {1: "ratio", 2: "training_mode"},
    "DFT": {1: "dft_length", 2: "axis"},
    "Col2Im": {1: "image_shape", 2: "block_shape"},
    **{op: {1: "axes"} for op in REDUCTIONS},
}
#: parameters whose value is one number
SCALARS = {"min", "max", "k", "depth", "axis", "value", "ratio", "training_mode", "dft_length"}
#: parameters a kernel can also read at run time: left as inputs when computed
RUNTIME_OK = {("Pad", "value")}


def _parameters(node, opset):
    if node.op == "Resize" and opset < 11:  # Resize-10: (X, scales)
        return {1: "scales"}
    return PARAMETERS.get(node.op, {})


def params_to_attrs(graph, where="graph"):
    for node in graph.nodes:
        for pos, key in _parameters(node, graph.opset).items():
            name = node.inputs[pos] if pos < len(node.inputs) else ""
            if not name:
                continue
            if not graph.is_constant(name):
                if (node.op, key) in RUNTIME_OK:
                    continue
                raise OnnxccError(f"node '{node.name}' (op {node.op}): its {key} input '{name}' is "
                                  "computed at run time, which is not supported", where=where,
                                  hint="onnxcc specializes the kernel on it: make it a constant")
            value = graph.constants[name].reshape(-1)
            node.attrs[key] = value[0].item() if key in SCALARS else value.tolist()
            node.inputs[pos] = ""
        while node.inputs and not node.inputs[-1]:
            node.inputs.pop()
    graph.drop_unused_constants()
    return graph
