"""The generated C files, each from its own inputs (see the package docstring)."""

import json
import os
import re

import numpy as np

from onnxcc import ops
from onnxcc.core.cgen import c_array_body, c_float, c_type
from onnxcc.core.collector import paused
from onnxcc.core.errors import OnnxccError
from onnxcc.core.files import write_files, write_texts
from onnxcc.core.onnx_io import load_graph
from onnxcc.core.paths import kernel_template_files
from onnxcc.ops.common import packing
from onnxcc.plan import patches as patching
from onnxcc.plan.problem import align_up
from onnxcc.tactics import stage as tactics

from . import vmath
from .lowering import lower_graph, packed_key, weight_symbols, weight_uses
from .render import render


def _io(graph, names):
    """The header's view of inputs or outputs; ``quant``: (scale literal, zero point) of an
    integer one quantized per tensor (real = scale * (q - zero point)), else None."""
    def quant(t):
        q = graph.info(t).quant
        if not q or len(set(q["scale"])) != 1 or len(set(q["zero_point"])) != 1:
            return None
        return c_float(q["scale"][0]), int(q["zero_point"][0])
    return [{"tensor": t, "ctype": c_type(graph.info(t).dtype), "dtype": graph.info(t).dtype,
             "shape": list(graph.info(t).shape), "bytes": graph.info(t).nbytes,
             "quant": quant(t)} for t in names]


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
EXACT_FLOAT_TEMPLATES = {"quantize", "dequantize", "qbinary", "qavgpool2d", "qsoftmax"}


def _exact_float(call):
    return call.template in EXACT_FLOAT_TEMPLATES or bool(call.params.get("residual"))


def kernel_sources(graph, plan, name, source, float_unit=True):
    """``<name>_kernels.c`` and ``.h``: one specialized function per distinct kernel
    (``float_unit``: the core's, Cpu.float_unit: without one, the int8 kernels compute
    their float32 steps in integers)."""
    _, kernels = lower_graph(graph, name, source, plan)
    bodies = []
    for k in kernels:
        signature = k.signature(graph)
        code = render(f"kernels/{k.call.template}.c.mako", signature=signature,
                      p=k.call.params, model=name, float_unit=float_unit)
        unread = unread_parameters(signature, code)
        if unread:
            raise OnnxccError(f"internal kernel bug: template {k.call.template} does not read "
                              f"its operand '{unread[0]}' (node '{k.node.name}', op {k.node.op})",
                              where=source, hint="its results would be wrong; build with "
                              "another opt= or tactic= for the node, and report it")
        bodies.append({"name": k.name, "template": k.call.template, "code": code,
                       "signature": signature})
    values = dict(name=name, source=source, kernels=bodies,
                  exact_float=any(_exact_float(k.call) for k in kernels),
                  math_functions=vmath.functions("".join(b["code"] for b in bodies)))
    return {"c": render("model_kernels.c.mako", **values),
            "h": render("model_kernels.h.mako", **values)}


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def unread_parameters(signature, code):
    """The parameters of the function ``signature`` that its body in ``code`` never names
    (C comments aside): a kernel handed an operand (input, output, scratch) that it does
    not read computes without it, and gcc only warns."""
    code = _C_COMMENT.sub(" ", code)
    start = code.index("{", code.index(signature) + len(signature))
    depth = 0
    for end in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[end], 0)
        if depth == 0:
            break
    body = code[start:end + 1]
    names = re.findall(r"(\w+)\s*(?:,|$)", signature[signature.index("(") + 1:-1])
    return [n for n in names if n != "void" and not re.search(rf"\b{n}\b", body)]


def used_kernel_templates(graph_path, tactics_path, plan_path=None):
    """The template files a model's kernels may be generated from, whichever kernels the
    memory plan picks (for SCons' scanner); with the plan at ``plan_path`` when it exists,
    its patches too."""
    plan = _load_plan(plan_path) if plan_path and os.path.exists(plan_path) else None
    graph = planned_graph(graph_path, tactics_path, plan)
    templates = set()
    for node in graph.nodes:
        if node.op not in ops.ALIASES | {"Identity"}:
            templates |= ops.possible_templates(node, graph)
    return sorted({f for t in templates for f in kernel_template_files(t)})


#: how the weights reach the library (``weights_format=``): ``bin``, one binary file of
#: every array that an assembler file includes (``.incbin``): seconds for a model of tens
#: of megabytes; ``c``, C array literals, for a toolchain without a GNU assembler (and for
#: sanitize=1: AddressSanitizer guards only C arrays)
WEIGHTS_FORMATS = ("bin", "c")


def check_weights_format(fmt):
    if fmt not in WEIGHTS_FORMATS:
        raise OnnxccError(f"weights_format={fmt} is not one of {', '.join(WEIGHTS_FORMATS)}",
                          hint="bin: a binary file included by an assembler file (fast to "
                               "build); c: C array literals")
    return fmt


def weight_arrays(graph, name, vector_bytes=0):
    """The constants the kernels read (``graph``'s nodes carry their tactics), each as it is
    or packed for the kernel that reads it: [{symbol, ctype, tensor, note, shape, values
    (flat, as stored), align (what the kernel needs), bin_align}]. ``bin_align`` adds the
    target's vector width (``vector_bytes``) for arrays at least that long, as GCC aligns
    a C array there: a kernel's vector loads never straddle two cache lines."""
    symbols, packed = weight_symbols(graph, name)
    raw, packed_uses = weight_uses(graph)

    def array(symbol, tensor, note, values, shape, align=1):
        values = np.ascontiguousarray(values).reshape(-1)
        natural = max(align, values.dtype.itemsize)
        wide = vector_bytes if vector_bytes and values.nbytes >= vector_bytes else 1
        return {"symbol": symbol, "ctype": c_type(values.dtype), "size": values.size,
                "bytes": values.nbytes, "tensor": tensor, "note": note, "shape": shape,
                "values": values, "align": align, "bin_align": max(natural, wide)}
    arrays = [array(symbols[t], t, "", graph.constants[t], list(graph.constants[t].shape))
              for t in raw]
    arrays += [array(packed[packed_key(t, spec)], t, f" packed {spec['kind']}",
                     packing.pack(graph.constants[t], spec), [packing.packed_size(spec)],
                     packing.alignment(spec))
               for t, spec in packed_uses]
    return arrays


def weights_source(graph, name, source, section=""):
    """``<name>_weights.c``: the constants the kernels read (weight_arrays), as const arrays
    (placed in flash), in the linker section ``section`` when one is named (e.g. one a
    firmware maps to external flash)."""
    arrays = [dict(a, body=c_array_body(a["values"])) for a in weight_arrays(graph, name)]
    return render("model_weights.c.mako", name=name, source=source, arrays=arrays,
                  section=section)


def weights_binary(graph, name, source, section="", vector_bytes=0):
    """``(<name>_weights.bin as a list of pieces, <name>_weights.S)``: the bytes of every constant the kernels
    read (weight_arrays), each at its alignment, little-endian (as every target stores
    them), zeros between; and the assembler file that defines each array's symbol over its
    bytes (``.incbin``), with its ELF type and size, in one read-only section: ``section``
    when one is named, else ``.rodata.<name>_weights``. The section's bytes are exactly the
    binary file's."""
    arrays = weight_arrays(graph, name, vector_bytes)
    parts, at = [], 0
    for a in arrays:
        a["offset"] = align_up(at, a["bin_align"])
        parts.append(bytes(a["offset"] - at))
        parts.append(np.ascontiguousarray(a["values"], a["values"].dtype.newbyteorder("<")).data)
        at = a["offset"] + a["bytes"]
    asm = render("model_weights.S.mako", name=name, source=source, arrays=arrays,
                 section=section or f".rodata.{name}_weights", named=bool(section),
                 blob=f"{name}_weights.bin", blob_bytes=at)
    return parts, asm


def _load_plan(path):
    with open(path) as f:
        return json.load(f)


def planned_graph(graph_path, tactics_path, plan=None, with_values=False):
    """The optimized graph at ``graph_path``, its nodes annotated with the tactics at
    ``tactics_path`` and, given ``plan`` (a loaded plan.json), run in its patches: the graph
    every step after the plan reads (weights loaded only ``with_values``)."""
    graph = tactics.annotate(load_graph(graph_path, with_values), tactics.load(tactics_path))
    return patching.apply(graph, plan) if plan is not None else graph


@paused()
def run_model(graph_path, plan_path, tactics_path, h_path, c_path, name, source):
    plan = _load_plan(plan_path)
    graph = planned_graph(graph_path, tactics_path, plan)
    files = model_sources(graph, plan, name, source)
    write_texts({h_path: files["h"], c_path: files["c"]})


@paused()
def run_kernels(graph_path, plan_path, tactics_path, c_path, h_path, name, source):
    plan = _load_plan(plan_path)
    graph = planned_graph(graph_path, tactics_path, plan)
    files = kernel_sources(graph, plan, name, source, tactics.load(tactics_path).cpu.float_unit)
    write_texts({c_path: files["c"], h_path: files["h"]})
    return len(lower_graph(graph, name, source, plan)[1])


@paused()
def run_weights(graph_path, tactics_path, plan_path, outputs, name, source, section="",
                fmt="bin"):
    """The weights files (packed for the kernels the plan runs): ``outputs`` is
    ``[<name>_weights.c]`` (``fmt`` c) or ``[<name>_weights.S, <name>_weights.bin]``
    (bin); returns their bytes of constants."""
    selection = tactics.load(tactics_path)
    graph = planned_graph(graph_path, tactics_path, _load_plan(plan_path), with_values=True)
    if any(v is None for v in graph.constants.values()):
        raise OnnxccError("weights are missing", where=graph_path)
    if check_weights_format(fmt) == "c":
        write_files({outputs[0]: weights_source(graph, name, source, section)})
    else:
        blob, asm = weights_binary(graph, name, source, section, selection.cpu.simd_bytes)
        write_files({outputs[0]: asm, outputs[1]: blob})
    return sum(v.nbytes for v in graph.constants.values())


def run_footprint_main(graph_path, c_path, name, pools, io_in_arena):
    """The smallest program that runs the model, linked to measure its footprint."""
    graph = load_graph(graph_path, with_values=False)
    write_texts({c_path: render("footprint_main.c.mako", name=name, NAME=name.upper(),
                                num_inputs=len(graph.inputs), num_outputs=len(graph.outputs),
                                pools=pools, io_in_arena=io_in_arena)})
