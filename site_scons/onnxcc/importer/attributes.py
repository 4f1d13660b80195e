"""Structural attributes of the imported graph, validated once at import.

ONNX shape inference accepts some attributes that no kernel can run -- a Conv with group 0,
a stride of 0 or a negative pad -- and a kernel or tactic that trusts them divides by zero
or indexes out of range deep inside a later stage. ``RULES`` says, per op, what must hold;
``validate`` applies it to every node of the shape-inferred graph, so kernels, tactics and
the planner can take the attributes as given.
"""

from onnxcc.core.errors import OnnxccError


def _ints(node, name, default):
    value = node.attrs.get(name, default)
    return list(value) if isinstance(value, (list, tuple)) else value


def _window(node, graph):
    """kernel_shape, strides, dilations and pads of a conv or pool over its input."""
    x = graph.info(node.inputs[0]).shape
    spatial = len(x) - 2 if x and len(x) >= 2 else None
    problems = []
    for name, least in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 0),
                        ("output_padding", 0)):
        value = _ints(node, name, None)
        if value is None:
            continue
        if not isinstance(value, list) or any(v < least for v in value):
            problems.append(f"{name}={value} (each must be >= {least})")
        elif spatial is not None and len(value) != (2 * spatial if name == "pads" else spatial):
            want = 2 * spatial if name == "pads" else spatial
            problems.append(f"{name} has {len(value)} values, the input's {spatial} spatial "
                            f"dimension(s) need {want}")
    return problems


def _empty_output(node, graph):
    """A window that does not fit its input makes an empty output: refused."""
    x, y = graph.info(node.inputs[0]).shape, graph.info(node.outputs[0]).shape
    if x and y and 0 not in x and 0 in y:
        return [f"its output {list(y)} is empty: the input {list(x)} is smaller than the window"]
    return []


def conv(node, graph):
    problems = _window(node, graph) + _empty_output(node, graph)
    group = node.attrs.get("group", 1)
    x = graph.info(node.inputs[0]).shape
    w = graph.info(node.inputs[1]).shape if len(node.inputs) > 1 and node.inputs[1] else None
    if not isinstance(group, int) or group < 1:
        problems.append(f"group={group} (must be >= 1)")
    elif x and w:
        problems += _conv_weight(node, x, w, group)
    return problems


def _conv_weight(node, x, w, group):
    """The weight's shape against the input's channels, the kernel and the group."""
    op = node.op
    if len(w) != len(x):
        return [f"the weight has {len(w)} dimensions, the input {len(x)}"]
    kernel = _ints(node, "kernel_shape", None)
    if kernel is not None and list(kernel) != list(w[2:]):
        return [f"kernel_shape={kernel} is not the weight's window {list(w[2:])}"]
    in_channels = w[1] * group if op == "Conv" else w[0]
    out_channels = w[0] if op == "Conv" else w[1] * group
    if x[1] != in_channels:
        return [f"the input has {x[1]} channels, the weight {list(w)} with group={group} "
                f"takes {in_channels}"]
    if x[1] % group or out_channels % group:
        return [f"group={group} does not divide the {x[1]} input and {out_channels} output "
                "channels"]
    return []


def pool(node, graph):
    problems = _window(node, graph) + _empty_output(node, graph)
    if "kernel_shape" not in node.attrs:
        problems.append("kernel_shape is missing")
    return problems


def _flags(node, *names):
    """Attributes that are booleans (0 or 1)."""
    return [f"{name}={node.attrs[name]} (must be 0 or 1)" for name in names
            if node.attrs.get(name, 0) not in (0, 1)]


def gemm(node, graph):
    """A and B are matrices; C broadcasts to the (M, N) result in one direction."""
    shapes = [graph.info(i).shape if i else None for i in node.inputs]
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else None
    if a is None or b is None:
        return []
    flags = _flags(node, "transA", "transB")
    if flags:
        return flags
    if len(a) != 2 or len(b) != 2:
        return [f"A {list(a)} and B {list(b)} must be matrices"]
    m, k = (a[1], a[0]) if node.attrs.get("transA", 0) else a
    k_b, n = (b[1], b[0]) if node.attrs.get("transB", 0) else b
    if k != k_b:
        return [f"A {list(a)} and B {list(b)} do not agree on the inner dimension"]
    c = shapes[2] if len(shapes) > 2 else None
    if c is not None and (len(c) > 2 or any(d not in (1, want) for d, want in
                                             zip(reversed(c), (n, m)))):
        return [f"C {list(c)} does not broadcast to the result [{m}, {n}]"]
    return []


#: op -> check(node, graph) -> [problem, ...]
RULES = {
    "Conv": conv,
    "ConvTranspose": conv,
    "MaxPool": pool,
    "AveragePool": pool,
    "LpPool": pool,
    "Gemm": gemm,
}


def validate(graph, where):
    """One clear line for the first node whose attributes no kernel can run."""
    for node in graph.nodes:
        rule = RULES.get(node.op)
        if rule is None or not node.inputs or not node.inputs[0]:
            continue
        problems = rule(node, graph)
        if problems:
            raise OnnxccError(f"node '{node.name}' (op {node.op}): {'; '.join(problems)}",
                              where=where, hint="fix the node in the model")
