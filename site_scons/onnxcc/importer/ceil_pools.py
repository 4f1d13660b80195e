"""MaxPool / AveragePool / LpPool with ceil_mode=1 as onnxruntime and the ONNX spec count them.

The spec (and onnxruntime, onnx's reference evaluator, PyTorch) drops a last window that
would start in the right padding: with ceil_mode, an output exists only where its window
starts inside the input or its left padding. onnx's shape inference (1.23) does not drop
it, so a [1, 3, 29] input, kernel 2, stride 3, pads [1, 0] infers 11 outputs where
onnxruntime computes 10. Before shape inference, each such node is rewritten into the same
windows with ceil_mode=0, each axis' right padding set to end where its last window
ends; then inference, planning and the kernels all see onnxruntime's count. Padding never
counts in a max or a p-norm (LpPool's padding adds nothing), nor in an average without
count_include_pad; with it, the divisor is the window clipped to the padded input. On an
axis where onnx counts one window more, the last
real one ends inside the padded input (ceil((size + pads - span) / stride) > out - 1), so
the cut padding keeps its divisor; on another axis a ceil window may reach past the
padding, whose divisor the longer padding would change: that one case is refused.
"""

import onnx
from onnx import helper

from onnxcc.core.errors import OnnxccError
from onnxcc.core.onnx_io import weights_set_aside

POOLS = ("MaxPool", "AveragePool", "LpPool")


def _ints(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return list(a.ints)
    return default


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def spec_outputs(size, kernel, stride, dilation, begin, end):
    """Outputs along one axis with ceil_mode: ceil, less a window starting in the right padding."""
    span = (kernel - 1) * dilation + 1
    out = -(-(size + begin + end - span) // stride) + 1
    return out - 1 if (out - 1) * stride >= size + begin else out


def _rewrite(node, shape, where):
    """Whether ``node`` (input ``shape``) had a window to drop; if so it is rewritten."""
    spatial = len(shape) - 2
    if spatial < 1 or _attr(node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return False
    k = _ints(node, "kernel_shape", None)
    s = _ints(node, "strides", [1] * spatial)
    d = _ints(node, "dilations", [1] * spatial)
    pads = _ints(node, "pads", [0] * (2 * spatial))
    if k is None or len(k) != spatial or len(pads) != 2 * spatial \
            or any(v <= 0 for v in shape[2:] + s + d):
        return False  # (invalid: the attribute checks after inference say so)
    ends, dropped = [], False
    for i in range(spatial):
        span, begin = (k[i] - 1) * d[i] + 1, pads[i]
        out = spec_outputs(shape[2 + i], k[i], s[i], d[i], begin, pads[spatial + i])
        dropped |= out != -(-(shape[2 + i] + begin + pads[spatial + i] - span) // s[i]) + 1
        ends.append(max(0, (out - 1) * s[i] - begin + span - shape[2 + i]))  # floor counts out
    if not dropped:
        return False
    if _attr(node, "count_include_pad", 0) and any(e > p for e, p in zip(ends, pads[spatial:])):
        raise OnnxccError(
            f"node '{node.name}' (op {node.op_type}): ceil_mode=1 and count_include_pad=1 with a "
            f"window starting in the right padding on one axis and a last window reaching past "
            f"the padding on another is not supported", where=where)
    for a in list(node.attribute):
        if a.name in ("ceil_mode", "pads"):
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute("pads", pads[:spatial] + ends))
    return True


def _shapes(model):
    """Static shapes inference finds (not strict: a declared shape that disagrees with
    onnx's count is what this module is fixing)."""
    with weights_set_aside(model):
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    shapes = {}
    g = inferred.graph
    for v in list(g.input) + list(g.value_info) + list(g.output):
        dims = v.type.tensor_type.shape.dim
        if v.type.HasField("tensor_type") and v.type.tensor_type.HasField("shape") \
                and all(x.HasField("dim_value") for x in dims):
            shapes[v.name] = [x.dim_value for x in dims]
    return shapes


#: rounds of shape inference: a round rewrites every pool not downstream of another one
#: rewritten in it, so this bounds pools in a row that each drop a window (a real network
#: has a few; a crafted chain of thousands would cost a whole-graph inference each)
MAX_ROUNDS = 16


def _subgraphs(node):
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute)


def _round(model, pending, shapes, where, nested):
    """Rewrite the ``pending`` pools (indices into the graph's nodes, removed from it as
    they are decided) whose input shape ``shapes`` knows and is not downstream of a pool
    rewritten in this round (its shape is stale); the indices rewritten. ``nested``:
    whether any node has a subgraph (else no round walks the attributes of every node
    after a rewrite). (Indices, not the node objects' ids: protobuf hands out a new
    wrapper at each access, and a freed one's id comes back for another node.)"""
    stale, done = set(), []
    for k, node in enumerate(model.graph.node):  # (topological: the checker ran)
        inputs_stale = any(i in stale for i in node.input) or (
            stale and nested and _subgraphs(node))  # (a subgraph may read a stale tensor)
        if k in pending and not inputs_stale and node.input[0] in shapes:
            pending.discard(k)
            if _rewrite(node, shapes[node.input[0]], where):
                done.append(k)
                inputs_stale = True
        if inputs_stale:
            stale.update(node.output)
    return done


def count_as_onnxruntime(model, where):
    """Rewrite ``model``'s ceil_mode pools (in place) whose last window onnx would keep and
    onnxruntime drops, upstream first (a rewrite changes the shapes after it); the nodes
    rewritten."""
    nodes = model.graph.node
    pending = {k for k, n in enumerate(nodes) if n.domain in ("", "ai.onnx")
               and n.op_type in POOLS and _attr(n, "ceil_mode", 0)}
    done = _recount(model, pending, where, bool(pending) and any(map(_subgraphs, nodes)))
    return [nodes[k] for k in done]


def _recount(model, pending, where, nested):
    """The rounds of count_as_onnxruntime: the indices of the pools rewritten."""
    done = []
    for _ in range(MAX_ROUNDS):
        if not pending:
            return done
        try:
            shapes = _shapes(model)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
            return done  # (the strict inference after says what is wrong)
        before = len(pending)
        rewritten = _round(model, pending, shapes, where, nested)
        done += rewritten
        if rewritten:
            del model.graph.value_info[:]  # shapes downstream change: infer again
        elif len(pending) == before:
            return done  # (the rest have no static input shape: nothing to count)
    if pending:
        first = model.graph.node[min(pending)]
        raise OnnxccError(
            f"more than {MAX_ROUNDS} ceil_mode pools in a row each drop a window that would "
            f"start in the right padding (first left: '{first.name}', op "
            f"{first.op_type}); onnxcc recounts at most {MAX_ROUNDS} in a row",
            where=where, hint="export the pools with ceil_mode=0 and explicit right pads")
    return done


def hint(rewritten):
    """What a shape conflict after rewriting ``rewritten`` nodes means."""
    names = ", ".join(f"'{n.name}' ({n.op_type})" for n in rewritten)
    return (f"with ceil_mode=1, {names} count(s) one output less than onnx's shape inference, "
            f"as onnxruntime and the ONNX spec do (no window starts in the right padding); "
            f"the model declares onnx's count")
