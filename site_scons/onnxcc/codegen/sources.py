"""The generated C files, each from its own inputs (see the package docstring)."""

import json
import os

from .. import ops, packing, tactics
from ..cgen import c_array_body, c_type
from ..errors import OnnxccError
from ..files import write_texts
from ..memory import patches as patching
from ..onnx_io import load_graph
from ..paths import kernel_template_files
from .lowering import lower_graph, packed_key, weight_symbols, weight_uses
from . import vmath
from .render import render


def _io(graph, names):
    return [{"tensor": t, "ctype": c_type(graph.info(t).dtype), "dtype": graph.info(t).dtype,
             "shape": list(graph.info(t).shape), "bytes": graph.info(t).nbytes} for t in names]


def _pools(plan):
    return [{"name": p["name"], "NAME": p["name"].upper(), "bytes": p["bytes"]}
            for p in plan["pools"]]


def _at(base, offset, const, ctype):
    """``base`` (a byte pointer expression) plus ``offset``, as a pointer to ``ctype``."""
    q = "const " if const else ""
    if offset:
        return f"({q}{ctype} *)((const uint8_t *){base} + {offset}u)" if const \
            else f"({ctype} *)((uint8_t *){base} + {offset}u)"
    return f"({q}{ctype} *){base}"


def run_function(graph, plan, name, source):
    """What the run function does: its kernel calls, in order, with their C arguments
    (``calls``: {node, code}), the weights they read, and the API's inputs and outputs.
    ``graph``'s nodes carry their tactics (tactics.annotate)."""
    steps, _ = lower_graph(graph, name, source, plan)
    weights, packed = weight_symbols(graph, name)
    io_in_arena = plan["io"] == "arena"

    def pointer(tensor, const):
        if graph.info(tensor).size == 0:
            return "NULL"  # an empty tensor: never read, and no memory of its own
        ctype = c_type(graph.info(tensor).dtype)
        where = plan["tensors"].get(tensor)
        if where is None:  # a constant
            return weights[tensor]
        if "pool" in where:
            return f"({'const ' if const else ''}{ctype} *)(pool_{where['pool']} + {where['offset']}u)"
        if "constant" in where:
            return _at(weights[where["constant"]], where["offset"], True, ctype)
        if "input" in where:
            return _at(f"inputs[{where['input']}]", where["offset"], True, ctype)
        return _at(f"outputs[{where['output']}]", where["offset"], const, ctype)

    calls = []
    for step in steps:
        node = step.node
        if step.kernel is not None:
            args = [packed[packed_key(t, step.call.packed[role])] if role in step.call.packed
                    else pointer(t, True) for role, t in step.call.inputs]
            args += [pointer(t, False) for _, t in step.call.outputs]
            if step.call.scratch_bytes:
                scratch = step.plan["scratch"]
                args.append(f"pool_{scratch['pool']} + {scratch['offset']}u")
            calls.append({"node": node, "code": f"{step.kernel.name}({', '.join(args)});"})
        elif step.plan["code"] == "copy" and graph.info(node.outputs[0]).size:
            # a view that must land in its own buffer
            n = graph.info(node.outputs[0]).nbytes
            calls.append({"node": node, "code": f"memcpy({pointer(node.outputs[0], False)}, "
                                                  f"{pointer(node.inputs[0], True)}, {n}u);"})
        else:
            why = ("its outputs are empty" if all(graph.info(o).size == 0 for o in node.outputs if o)
                   else "its inputs were written into their slices" if node.op == "Concat"
                   else "a view of its input")
            calls.append({"node": node, "code": f"/* no code: {why} */"})
    if not io_in_arena:
        for k, out in enumerate(graph.outputs):  # outputs that are constants or graph inputs
            if (out in weights or out in graph.inputs) and graph.info(out).size:
                calls.append({"node": None, "code": f"memcpy(outputs[{k}], {pointer(out, True)}, "
                                                     f"{graph.info(out).nbytes}u);"})
    raw, packed_uses = weight_uses(graph)
    used_weights = [(weights[t], c_type(graph.info(t).dtype), graph.info(t).size, t, "")
                    for t in raw]
    used_weights += [(packed[packed_key(t, spec)], c_type(graph.info(t).dtype),
                      packing.packed_size(spec), t, " packed") for t, spec in packed_uses]
    accessors = []
    if io_in_arena:
        for kind, names in (("input", graph.inputs), ("output", graph.outputs)):
            for k, t in enumerate(names):
                where = plan["tensors"][t]
                accessors.append({"kind": kind, "k": k, "tensor": t, "pool": where["pool"],
                                  "offset": where["offset"], "ctype": c_type(graph.info(t).dtype)})
    return dict(name=name, NAME=name.upper(), source=source, plan=plan,
                inputs=_io(graph, graph.inputs), outputs=_io(graph, graph.outputs),
                calls=calls, weights=used_weights, pools=_pools(plan), io_in_arena=io_in_arena,
                accessors=accessors)


def model_sources(graph, plan, name, source):
    """``<name>.h`` and ``<name>.c``: the API and the run function (structure + plan)."""
    values = run_function(graph, plan, name, source)
    return {"h": render("model.h.mako", **values), "c": render("model.c.mako", **values)}


#: integer kernels that reproduce onnxruntime's float32 steps (docs/int8.md): their
#: arithmetic must stay IEEE float32 whatever the target's flags allow
EXACT_FLOAT_TEMPLATES = {"quantize", "dequantize", "qadd", "qavgpool2d", "qsoftmax"}


def _exact_float(call):
    return call.template in EXACT_FLOAT_TEMPLATES or bool(call.params.get("residual"))


def kernel_sources(graph, plan, name, source):
    """``<name>_kernels.c`` and ``.h``: one specialized function per distinct kernel."""
    _, kernels = lower_graph(graph, name, source, plan)
    bodies = []
    for k in kernels:
        code = render(f"kernels/{k.call.template}.c.mako", signature=k.signature(graph),
                      p=k.call.params, model=name)
        bodies.append({"name": k.name, "template": k.call.template, "code": code,
                       "signature": k.signature(graph)})
    values = dict(name=name, source=source, kernels=bodies,
                  exact_float=any(_exact_float(k.call) for k in kernels),
                  math_functions=vmath.functions("".join(b["code"] for b in bodies)))
    return {"c": render("model_kernels.c.mako", **values),
            "h": render("model_kernels.h.mako", **values)}


def used_kernel_templates(graph_path, tactics_path, plan_path=None):
    """The template files a model's kernels may be generated from, whichever kernels the
    memory plan picks (for SCons' scanner); with the plan at ``plan_path`` when it exists,
    its patches too."""
    graph = tactics.annotate(load_graph(graph_path, with_values=False), tactics.load(tactics_path))
    if plan_path and os.path.exists(plan_path):
        graph = patching.apply(graph, _load_plan(plan_path))
    templates = set()
    for node in graph.nodes:
        if node.op not in ops.ALIASES | {"Identity"}:
            templates |= ops.possible_templates(node, graph)
    return sorted({f for t in templates for f in kernel_template_files(t)})


def weights_source(graph, name, source, section=""):
    """``<name>_weights.c``: the constants the kernels read, as const arrays (placed in
    flash), each as it is or packed for the kernel that reads it (``graph``'s nodes carry
    their tactics), in the linker section ``section`` when one is named (e.g. one a
    firmware maps to external flash)."""
    symbols, packed = weight_symbols(graph, name)
    raw, packed_uses = weight_uses(graph)

    def array(symbol, tensor, note, values, shape, align=1):
        return {"symbol": symbol, "ctype": c_type(values.dtype), "size": values.size,
                "tensor": tensor, "note": note, "shape": shape, "body": c_array_body(values),
                "align": align}
    arrays = [array(symbols[t], t, "", graph.constants[t], list(graph.constants[t].shape))
              for t in raw]
    arrays += [array(packed[packed_key(t, spec)], t, f" packed {spec['kind']}",
                     packing.pack(graph.constants[t], spec), [packing.packed_size(spec)],
                     packing.alignment(spec))
               for t, spec in packed_uses]
    return render("model_weights.c.mako", name=name, source=source, arrays=arrays,
                  section=section)


def _load_plan(path):
    with open(path) as f:
        return json.load(f)


def _annotated(graph_path, tactics_path, with_values=False):
    return tactics.annotate(load_graph(graph_path, with_values), tactics.load(tactics_path))


def run_model(graph_path, plan_path, tactics_path, h_path, c_path, name, source):
    plan = _load_plan(plan_path)
    graph = patching.apply(_annotated(graph_path, tactics_path), plan)
    files = model_sources(graph, plan, name, source)
    write_texts({h_path: files["h"], c_path: files["c"]})


def run_kernels(graph_path, plan_path, tactics_path, c_path, h_path, name, source):
    plan = _load_plan(plan_path)
    graph = patching.apply(_annotated(graph_path, tactics_path), plan)
    files = kernel_sources(graph, plan, name, source)
    write_texts({c_path: files["c"], h_path: files["h"]})
    return len(lower_graph(graph, name, source, plan)[1])


def run_weights(graph_path, tactics_path, plan_path, c_path, name, source, section=""):
    """The weights file (packed for the kernels the plan runs); returns its bytes of
    constants."""
    graph = patching.apply(_annotated(graph_path, tactics_path, with_values=True), _load_plan(plan_path))
    if any(v is None for v in graph.constants.values()):
        raise OnnxccError("weights are missing", where=graph_path)
    write_texts({c_path: weights_source(graph, name, source, section)})
    return sum(v.nbytes for v in graph.constants.values())


def run_footprint_main(graph_path, c_path, name, pools, io_in_arena):
    """The smallest program that runs the model, linked to measure its footprint."""
    graph = load_graph(graph_path, with_values=False)
    write_texts({c_path: render("footprint_main.c.mako", name=name, NAME=name.upper(),
                                num_inputs=len(graph.inputs), num_outputs=len(graph.outputs),
                                pools=pools, io_in_arena=io_in_arena)})
