"""The generated C files, each from its own inputs (see the package docstring)."""

import json

from ..cgen import c_array_body, c_type
from ..errors import OnnxccError
from ..files import write_texts
from ..onnx_io import load_graph
from ..paths import kernel_template
from .lowering import lower_graph, weight_symbols
from .render import render


def _io(graph, names):
    return [{"tensor": t, "ctype": c_type(graph.info(t).dtype), "dtype": graph.info(t).dtype,
             "shape": list(graph.info(t).shape), "bytes": graph.info(t).nbytes} for t in names]


def model_sources(graph, plan, name, source):
    """``<name>.h`` and ``<name>.c``: the API and the run function (structure + plan)."""
    steps, _ = lower_graph(graph, name, source)
    offsets = {b["tensor"]: b["offset"] for b in plan["buffers"]}
    views = plan["views"]
    weights = weight_symbols(graph, name)

    def pointer(tensor, const):
        tensor = views.get(tensor, tensor)
        ctype = c_type(graph.info(tensor).dtype)
        q = "const " if const else ""
        if tensor in graph.inputs:
            return f"({q}{ctype} *)inputs[{graph.inputs.index(tensor)}]"
        if tensor in graph.outputs:
            return f"({ctype} *)outputs[{graph.outputs.index(tensor)}]"
        if tensor in weights:
            return weights[tensor]
        return f"({q}{ctype} *)(a + {offsets[tensor]}u)"

    calls = []
    for step in steps:
        node = step.node
        if step.kernel is not None:
            args = [pointer(t, True) for _, t in step.call.inputs]
            args += [pointer(t, False) for _, t in step.call.outputs]
            calls.append({"node": node, "code": f"{step.kernel.name}({', '.join(args)});"})
        elif node.outputs[0] in graph.outputs:  # a view that must land in the caller's buffer
            n = graph.info(node.outputs[0]).nbytes
            calls.append({"node": node, "code": f"memcpy({pointer(node.outputs[0], False)}, "
                                                  f"{pointer(node.inputs[0], True)}, {n}u);"})
    for k, out in enumerate(graph.outputs):  # outputs that are constants or graph inputs
        if out in weights or out in graph.inputs:
            calls.append({"node": None, "code": f"memcpy(outputs[{k}], {pointer(out, True)}, "
                                                 f"{graph.info(out).nbytes}u);"})
    used_weights = [(weights[t], c_type(graph.info(t).dtype), graph.info(t).size, t)
                    for t in graph.constants]
    values = dict(name=name, NAME=name.upper(), source=source, plan=plan,
                  inputs=_io(graph, graph.inputs), outputs=_io(graph, graph.outputs),
                  calls=calls, weights=used_weights)
    return {"h": render("model.h.mako", **values), "c": render("model.c.mako", **values)}


def kernel_sources(graph, name, source):
    """``<name>_kernels.c`` and ``.h``: one specialized function per distinct kernel."""
    _, kernels = lower_graph(graph, name, source)
    bodies = []
    for k in kernels:
        code = render(f"kernels/{k.call.template}.c.mako", signature=k.signature(graph),
                      p=k.call.params, model=name)
        bodies.append({"name": k.name, "template": k.call.template, "code": code,
                       "signature": k.signature(graph)})
    values = dict(name=name, source=source, kernels=bodies)
    return {"c": render("model_kernels.c.mako", **values),
            "h": render("model_kernels.h.mako", **values)}


def used_kernel_templates(graph_path, name):
    """The template files a model's kernels are generated from (for SCons' scanner)."""
    graph = load_graph(graph_path, with_values=False)
    _, kernels = lower_graph(graph, name, graph_path)
    return sorted({kernel_template(k.call.template) for k in kernels})


def weights_source(graph, name, source):
    """``<name>_weights.c``: every constant as a const array (placed in flash)."""
    symbols = weight_symbols(graph, name)
    arrays = [{"symbol": symbols[t], "ctype": c_type(v.dtype), "size": v.size, "tensor": t,
               "shape": list(v.shape), "body": c_array_body(v)}
              for t, v in graph.constants.items()]
    return render("model_weights.c.mako", name=name, source=source, arrays=arrays)


def _load_plan(path):
    with open(path) as f:
        return json.load(f)


def run_model(graph_path, plan_path, h_path, c_path, name, source):
    graph = load_graph(graph_path, with_values=False)
    files = model_sources(graph, _load_plan(plan_path), name, source)
    write_texts({h_path: files["h"], c_path: files["c"]})


def run_kernels(graph_path, c_path, h_path, name, source):
    graph = load_graph(graph_path, with_values=False)
    files = kernel_sources(graph, name, source)
    write_texts({c_path: files["c"], h_path: files["h"]})
    return len(lower_graph(graph, name, source)[1])


def run_weights(graph_path, c_path, name, source):
    graph = load_graph(graph_path)
    if any(v is None for v in graph.constants.values()):
        raise OnnxccError("weights are missing", where=graph_path)
    write_texts({c_path: weights_source(graph, name, source)})
    return sum(v.nbytes for v in graph.constants.values())


def run_footprint_main(graph_path, c_path, name):
    """The smallest program that runs the model, linked to measure its footprint."""
    graph = load_graph(graph_path, with_values=False)
    write_texts({c_path: render("footprint_main.c.mako", name=name, NAME=name.upper(),
                                num_inputs=len(graph.inputs), num_outputs=len(graph.outputs))})
