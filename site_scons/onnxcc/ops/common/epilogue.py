"""Elementwise ops fused into the kernel before them: a kernel's epilogue.

A node's ``onnxcc_epilogue`` attribute is the chain the optimizer fused after it,
``[[op, attrs], ...]``, applied in order to each result before it is stored. A unary op
(``unary.EXPRESSIONS``) rewrites the value; a binary op (``BINARY``) combines it with an
element of a second tensor -- a residual, a per-channel scale -- which the optimizer
appended to the node's inputs, in chain order; its attrs say on which side the value is.

A kernel walks its output with its own loop counters, its *coordinates*, each spanning
some output dimensions (a convolution: image, channel, pixel). A second operand can be
fused when its offset is linear in those coordinates (``operand_strides``); the kernel
then indexes it as ``sum(coordinate * stride)``.
"""

from onnxcc.core.cgen import c_float
from onnxcc.ops.unary import (EXPRESSIONS, epilogue_of,  # noqa: F401 (shared with kernels)
                              epilogue_tag, expression_code)

from .broadcast import broadcast_strides
from .tiling import epilogue_cost

#: the arithmetic ops with a C operator: fused binary epilogue steps and the float32
#: ``binary`` kernel
BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def operands_of(node):
    """The tensors the node's binary epilogue ops read, in chain order."""
    count = sum(1 for op, _ in epilogue_of(node) if op in BINARY)
    return node.inputs[len(node.inputs) - count:] if count else []


def own_inputs(node):
    """The node's inputs without its epilogue's operands."""
    return node.inputs[:len(node.inputs) - len(operands_of(node))]


def binary_entry(op, value_first):
    """The chain entry of a fused binary op; ``value_first``: value OP operand."""
    return [op, {"value_first": bool(value_first)}]


def bias_first(chain, operand, strides, starts_sums=False):
    """The chain a kernel applies when its op has a bias: the bias (``operand``, of
    ``strides`` over the kernel's coordinates) added first. ``starts_sums``: a kernel's
    sums may start from it instead (sums_start): an input the kernel never writes."""
    attrs = {"operand": operand, "value_first": True, "strides": strides}
    return [["Add", dict(attrs, starts_sums=True) if starts_sums else attrs]] + chain


def sums_start(chain, lane_axis, lanes, whole=True):
    """(start, rest): a kernel's sums begin at ``start(coords)``, a C expression at a
    result's (first) coordinates, and ``rest`` of the chain runs on them after. The
    leading bias of bias_first(starts_sums) is the start where each accumulator loads it
    as one expression (broadcast along the lanes, or whole vectors: ``whole``), which
    saves the add after the sum; else the sums start at zero and the whole chain runs."""
    after = after_sums(chain)
    if after is chain:
        return (lambda coords: "(vf){0}" if lanes > 1 else "0.0f"), chain
    attrs = chain[0][1]
    along = attrs["strides"][lane_axis] if lanes > 1 else 0
    if along not in (0, 1) or (along == 1 and not whole):
        return (lambda coords: "(vf){0}"), chain

    def start(coords):
        at = operand_at(attrs, coords)
        if lanes == 1:
            return at
        return f"(vf){{0}} + {at}" if along == 0 else f"*(const vfu *)&{at}"
    return start, after


def after_sums(chain):
    """The chain without a leading bias that may start the sums (bias_first): what a
    kernel that starts them there applies after them, and its cost counts."""
    return chain[1:] if chain and chain[0][1].get("starts_sums") else chain


def operand_at(attrs, coords):
    """The C element of a binary epilogue op's operand at the kernel coordinates."""
    index = " + ".join(f"({c}) * {s}u" for c, s in zip(coords, attrs["strides"]) if s)
    return f"{attrs['operand']}[{index or '0'}]"


def operand_strides(spans, out_shape, operand_shape):
    """Per coordinate, the operand's element stride; None when its offset is not linear in
    the coordinates. ``spans``: the [first, end) output dimensions of each coordinate,
    walked row-major."""
    if len(operand_shape) > len(out_shape):
        return None
    strides = broadcast_strides(operand_shape, out_shape)
    result = []
    for lo, hi in spans:
        dims = [(out_shape[d], strides[d]) for d in range(lo, hi) if out_shape[d] != 1]
        inner = dims[-1][1] if dims else 0
        step = inner
        for size, stride in reversed(dims):
            if stride != step:
                return None
            step *= size
        result.append(inner)
    return result


def kernel_epilogue(node, graph, spans):
    """(chain for the kernel's params, [(role, tensor)] of its operands): each binary
    entry names its operand's role (e0, e1, ...) and strides over ``spans``."""
    out_shape = graph.info(node.outputs[0]).shape
    operands = iter(operands_of(node))
    chain, inputs = [], []
    for op, attrs in epilogue_of(node):
        if op not in BINARY:
            chain.append([op, attrs])
            continue
        tensor = next(operands)
        role = f"e{len(inputs)}"
        strides = operand_strides(spans, out_shape, graph.info(tensor).shape)
        chain.append([op, dict(attrs, operand=role, strides=strides)])
        inputs.append((role, tensor))
    return chain, inputs


def residual_roles(call, graph):
    """The roles of a kernel call's epilogue operands of its output's own shape (a
    residual): every kernel reads such an element right before it writes the same element
    of y, so y may be written over it."""
    shape = graph.info(call.outputs[0][1]).shape
    return [role for role, t in call.inputs
            if role.startswith("e") and role[1:].isdigit() and graph.info(t).shape == shape]


def _select(mask, a, b):
    """mask ? a : b, lane by lane (vf/vi: the kernel's float and int vector types)."""
    return f"(vf)(((vi)({a}) & ({mask})) | ((vi)({b}) & ~({mask})))"


#: the vector widths of x86 (AVX2's 8 floats, AVX-512's 16), where a Relu or Clip is
#: vmaxps/vminps (vmath.mako's maxps, minps): the selects' compare and blend issue on the
#: multiply-add ports, which a 1x1 convolution's short sums keep busy (docs/speed.md,
#: "1x1 convolutions on AVX2")
X86_MINMAX_LANES = (8, 16)


def _vector_clip(v, lo, hi, lanes=None):
    """Statements clipping vector ``v`` in place (the scalar Clip's NaN behaviour: NaN
    stays NaN; on x86's widths by vmaxps and vminps, which give the same bits)."""
    code = []
    if lanes in X86_MINMAX_LANES:
        if lo is not None:
            code.append(f"{v} = vm_maxps_v{lanes}((vf){{0}} + {c_float(lo)}, {v});")
        if hi is not None:
            code.append(f"{v} = vm_minps_v{lanes}((vf){{0}} + {c_float(hi)}, {v});")
        return " ".join(code)
    if lo is not None:
        code.append(f"{v} = {_select(f'{v} < {c_float(lo)}', f'(vf){{0}} + {c_float(lo)}', v)};")
    if hi is not None:
        code.append(f"{v} = {_select(f'{v} > {c_float(hi)}', f'(vf){{0}} + {c_float(hi)}', v)};")
    return " ".join(code)


def _vector_relu(v, lanes):
    """Relu of vector ``v`` in place: v > 0 ? v : 0 (NaN and -0.0 give 0)."""
    if lanes in X86_MINMAX_LANES:
        return f"{v} = vm_maxps_v{lanes}({v}, (vf){{0}});"
    return f"{v} = (vf)((vi){v} & ({v} > 0.0f));"


def _vector_hard_sigmoid(v, alpha, beta):
    return f"{v} = {v} * {c_float(alpha)} + {c_float(beta)}; {_vector_clip(v, 0.0, 1.0)}"


def _vector_leaky_relu(v, alpha):
    return f"{v} = {_select(f'{v} >= 0.0f', v, f'{v} * {c_float(alpha)}')};"


def _gelu(a):
    return ("gelu_tanh", []) if a.get("approximate", "none") == "tanh" else ("gelu", [])


#: the unary ops computed by the libm-free functions of templates/kernels/lib/vmath.mako:
#: op -> attrs -> (function, [its float arguments after x])
MATH_FUNCTIONS = {
    "Exp": lambda a: ("exp", []), "Log": lambda a: ("log", []),
    "Sigmoid": lambda a: ("sigmoid", []), "Tanh": lambda a: ("tanh", []),
    "Erf": lambda a: ("erf", []), "Softplus": lambda a: ("softplus", []),
    "Softsign": lambda a: ("softsign", []), "Mish": lambda a: ("mish", []),
    "Gelu": _gelu,
    "Swish": lambda a: ("swish", [a.get("alpha", 1.0)]),
    "Elu": lambda a: ("elu", [a.get("alpha", 1.0)]),
    "Celu": lambda a: ("celu", [a.get("alpha", 1.0)]),
    "Selu": lambda a: ("selu", [a.get("alpha", 1.67326319217681884765625),
                                a.get("gamma", 1.05070102214813232421875)]),
}


#: the ops whose vmath function beats libm on floats too (measured on the Cortex-M4 against
#: newlib, benchmarks/activations.py --cortex-m: its expf and erff are cheaper than our
#: branch-free forms there, its tanhf and the log1pf + expf of Softplus and Mish are not)
SCALAR_MATH = {"Tanh", "Softplus", "Mish"}


def math_call(var, op, attrs, lanes):
    """The C call of the vmath function of ``op`` on ``var``: a vector of ``lanes`` floats,
    or (lanes None) a float. Any kernel may call one: the kernels file then defines it
    (codegen/vmath.py)."""
    name, args = MATH_FUNCTIONS[op](attrs)
    suffix = "s" if lanes is None else f"v{lanes}"
    return f"vm_{name}_{suffix}({var}{''.join(', ' + c_float(x) for x in args)})"


def _vector_math(op):
    """The vmath call; on one-lane vectors (a scalar CPU) libm's where that is cheaper."""
    def statement(v, a, lanes):
        if lanes == 1 and op not in SCALAR_MATH:
            return f"{v}[0] = {expression_code(f'{v}[0]', [op, a])};"
        return f"{v} = {math_call(v, op, a, lanes)};"
    return statement


#: unary ops as lane-wise vector code (no libm): op -> (var, attrs, lanes) -> C statements
#: on ``var``, a vector of ``lanes`` floats (the kernel's vf; vi for the selects)
VECTOR_STATEMENTS = {
    "Relu": lambda v, a, lanes: _vector_relu(v, lanes),
    "Clip": lambda v, a, lanes: _vector_clip(v, a.get("min"), a.get("max"), lanes),
    "LeakyRelu": lambda v, a, lanes: _vector_leaky_relu(v, a.get("alpha", 0.01)),
    "HardSigmoid": lambda v, a, lanes: _vector_hard_sigmoid(v, a.get("alpha", 0.2), a.get("beta", 0.5)),
    "HardSwish": lambda v, a, lanes: f"{{ vf h = {v}; {_vector_hard_sigmoid('h', 1 / 6, 0.5)} {v} = {v} * h; }}",
    "Neg": lambda v, a, lanes: f"{v} = -{v};",
    "Reciprocal": lambda v, a, lanes: f"{v} = 1.0f / {v};",
    "Abs": lambda v, a, lanes: f"{v} = (vf)((vi){v} & 0x7fffffff);",
    **{op: _vector_math(op) for op in MATH_FUNCTIONS},
}


def tile_lanes(chain, cpu):
    """The lanes a speed tactic's epilogue runs on (for its cost): the CPU's when every
    unary op in ``chain`` has a vector form, else 1 (floats, with the vmath functions)."""
    return cpu.lanes() if all(op in VECTOR_STATEMENTS or op in BINARY for op, _ in chain) else 1


def tile_epilogue_cost(elements, chain, cpu):
    """What a speed tactic whose sums start from its bias (sums_start) pays for the rest of
    its chain, on the lanes tile_lanes gives."""
    return epilogue_cost(elements, after_sums(chain), tile_lanes(chain, cpu))


def vectorizable(chain, lane_axis):
    """Whether ``vector_epilogue_code`` can apply ``chain`` to whole vectors whose lanes
    walk coordinate ``lane_axis``."""
    return all(op in VECTOR_STATEMENTS if op not in BINARY
               else attrs["strides"][lane_axis] in (0, 1) for op, attrs in chain)


def vector_epilogue_code(var, chain, coords, lane_axis, lanes, valid):
    """C statements applying ``chain`` to vector ``var`` (vf) whose lane 0 is at ``coords``
    and whose first ``valid`` lanes are results; a binary op's operand is loaded (stride 1
    along the lanes; only its ``valid`` elements) or broadcast (stride 0)."""
    statements = []
    for op, attrs in chain:
        if op in BINARY:
            at = operand_at(attrs, coords)
            left, right = (var, "operand") if attrs["value_first"] else ("operand", var)
            if attrs["strides"][lane_axis] == 0:
                load = f"const vf operand = (vf){{0}} + {at};"
            elif valid == lanes:
                load = f"const vf operand = *(const vfu *)&{at};"
            else:
                load = f"vf operand = (vf){{0}}; memcpy(&operand, &{at}, {valid}u * sizeof(float));"
            statements.append(f"{{ {load} {var} = {left} {BINARY[op]} {right}; }}")
        else:
            statements.append(VECTOR_STATEMENTS[op](var, attrs, lanes))
    return " ".join(statements)


def epilogue_code(var, chain, coords=(), dtype="float32", fast=False):
    """C statements applying ``chain`` to ``var`` in place; ``coords``: the C expressions
    of the kernel's coordinates, which index the binary ops' operands; ``dtype``: the
    element type of ``var`` (a typed unary chain). ``fast``: a float32 op of
    ``SCALAR_MATH`` calls its vmath function (the speed tactics' kernels), else libm (the
    reference kernels: opt=size stays as small as it was)."""
    statements = []
    for op, attrs in chain:
        if op in BINARY:
            other = operand_at(attrs, coords)
            left, right = (var, other) if attrs["value_first"] else (other, var)
            statements.append(f"{var} = {left} {BINARY[op]} {right};")
        elif fast and dtype == "float32" and op in SCALAR_MATH:
            statements.append(f"{var} = {math_call(var, op, attrs, None)};")
        else:
            statements.append(f"{var} = {expression_code(var, [op, attrs], dtype)};")
    return " ".join(statements)
