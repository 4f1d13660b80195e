"""The generated C files, each from its own inputs (see the package docstring)."""

import json

from .. import packing, tactics
from ..cgen import c_array_body, c_type
from ..errors import OnnxccError
from ..files import write_texts
from ..onnx_io import load_graph
from ..paths import kernel_template_files
from .lowering import lower_graph, packed_key, weight_symbols, weight_uses
from .render import render


def _io(graph, names):
    return [{"tensor": t, "ctype": c_type(graph.info(t).dtype), "dtype": graph.info(t).dtype,
             "shape": list(graph.info(t).shape), "bytes": graph.info(t).nbytes} for t in names]


def run_function(graph, plan, name, source, selection=tactics.REFERENCE):
    """What the run function does: its kernel calls, in order, with their C arguments
    (``calls``: {node, code}), the weights they read, and the API's inputs and outputs."""
    steps, _ = lower_graph(graph, name, source, selection)
    offsets = {b["tensor"]: b["offset"] for b in plan["buffers"] if not b.get("scratch")}
    scratch = {b["node"]: b["offset"] for b in plan["buffers"] if b.get("scratch")}
    views = plan["views"]
    weights, packed = weight_symbols(graph, name, steps)

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
            args = [packed[packed_key(t, step.call.packed[role])] if role in step.call.packed
                    else pointer(t, True) for role, t in step.call.inputs]
            args += [pointer(t, False) for _, t in step.call.outputs]
            if step.call.scratch_bytes:
                args.append(f"a + {scratch[node.name]}u")
            calls.append({"node": node, "code": f"{step.kernel.name}({', '.join(args)});"})
        elif node.outputs[0] in graph.outputs:  # a view that must land in the caller's buffer
            n = graph.info(node.outputs[0]).nbytes
            calls.append({"node": node, "code": f"memcpy({pointer(node.outputs[0], False)}, "
                                                  f"{pointer(node.inputs[0], True)}, {n}u);"})
    for k, out in enumerate(graph.outputs):  # outputs that are constants or graph inputs
        if out in weights or out in graph.inputs:
            calls.append({"node": None, "code": f"memcpy(outputs[{k}], {pointer(out, True)}, "
                                                 f"{graph.info(out).nbytes}u);"})
    raw, packed_uses = weight_uses(graph, steps)
    used_weights = [(weights[t], c_type(graph.info(t).dtype), graph.info(t).size, t) for t in raw]
    used_weights += [(packed[packed_key(t, spec)], c_type(graph.info(t).dtype),
                      packing.packed_size(spec), f"{t}, packed") for t, spec in packed_uses]
    return dict(name=name, NAME=name.upper(), source=source, plan=plan,
                inputs=_io(graph, graph.inputs), outputs=_io(graph, graph.outputs),
                calls=calls, weights=used_weights)


def model_sources(graph, plan, name, source, selection=tactics.REFERENCE):
    """``<name>.h`` and ``<name>.c``: the API and the run function (structure + plan)."""
    values = run_function(graph, plan, name, source, selection)
    return {"h": render("model.h.mako", **values), "c": render("model.c.mako", **values)}


def kernel_sources(graph, name, source, selection=tactics.REFERENCE):
    """``<name>_kernels.c`` and ``.h``: one specialized function per distinct kernel."""
    _, kernels = lower_graph(graph, name, source, selection)
    bodies = []
    for k in kernels:
        code = render(f"kernels/{k.call.template}.c.mako", signature=k.signature(graph),
                      p=k.call.params)
        bodies.append({"name": k.name, "template": k.call.template, "code": code,
                       "signature": k.signature(graph)})
    values = dict(name=name, source=source, kernels=bodies)
    return {"c": render("model_kernels.c.mako", **values),
            "h": render("model_kernels.h.mako", **values)}


def used_kernel_templates(graph_path, tactics_path, name):
    """The template files a model's kernels are generated from (for SCons' scanner)."""
    graph = load_graph(graph_path, with_values=False)
    _, kernels = lower_graph(graph, name, graph_path, tactics.load(tactics_path))
    return sorted({f for k in kernels for f in kernel_template_files(k.call.template)})


def weights_source(graph, name, source, selection=tactics.REFERENCE):
    """``<name>_weights.c``: the constants the kernels read, as const arrays (placed in
    flash), each as it is or packed for the kernel that reads it."""
    steps, _ = lower_graph(graph, name, source, selection)
    symbols, packed = weight_symbols(graph, name, steps)
    raw, packed_uses = weight_uses(graph, steps)

    def array(symbol, tensor, values, shape):
        return {"symbol": symbol, "ctype": c_type(values.dtype), "size": values.size,
                "tensor": tensor, "shape": shape, "body": c_array_body(values)}
    arrays = [array(symbols[t], t, graph.constants[t], list(graph.constants[t].shape))
              for t in raw]
    arrays += [array(packed[packed_key(t, spec)], f"{t}, packed {spec['kind']}",
                     packing.pack(graph.constants[t], spec), [packing.packed_size(spec)])
               for t, spec in packed_uses]
    return render("model_weights.c.mako", name=name, source=source, arrays=arrays)


def _load_plan(path):
    with open(path) as f:
        return json.load(f)


def run_model(graph_path, plan_path, tactics_path, h_path, c_path, name, source):
    graph = load_graph(graph_path, with_values=False)
    files = model_sources(graph, _load_plan(plan_path), name, source, tactics.load(tactics_path))
    write_texts({h_path: files["h"], c_path: files["c"]})


def run_kernels(graph_path, tactics_path, c_path, h_path, name, source):
    graph = load_graph(graph_path, with_values=False)
    selection = tactics.load(tactics_path)
    files = kernel_sources(graph, name, source, selection)
    write_texts({c_path: files["c"], h_path: files["h"]})
    return len(lower_graph(graph, name, source, selection)[1])


def run_weights(graph_path, tactics_path, c_path, name, source):
    """The weights file; returns its bytes of constants."""
    graph = load_graph(graph_path)
    if any(v is None for v in graph.constants.values()):
        raise OnnxccError("weights are missing", where=graph_path)
    text = weights_source(graph, name, source, tactics.load(tactics_path))
    write_texts({c_path: text})
    return sum(v.nbytes for v in graph.constants.values())


def run_footprint_main(graph_path, c_path, name):
    """The smallest program that runs the model, linked to measure its footprint."""
    graph = load_graph(graph_path, with_values=False)
    write_texts({c_path: render("footprint_main.c.mako", name=name, NAME=name.upper(),
                                num_inputs=len(graph.inputs), num_outputs=len(graph.outputs))})
