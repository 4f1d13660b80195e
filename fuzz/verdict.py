"""The second look the differential fuzzer (graphs.py) takes at a mismatch with
onnxruntime, before it counts as onnxcc's failure: is onnxcc at least as close as
onnxruntime to a float64 evaluation (float graphs), or within the jitter onnxruntime itself
shows when its inputs move a few ulps, or at least as close as onnxruntime to the graph's
QDQ specification evaluated in float64 (int8 graphs)? Either verdict is counted apart,
never as a pass (docs/trust.md)."""

import os

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from onnxcc.verbs import verify
from onnxcc.core.onnxruntime_session import session as onnxruntime_session
from onnxcc.target import load_target, run_captured

#: seconds a harness may run when it is run again
HARNESS_TIMEOUT = 60


def _outputs_of(case, target):
    """(onnxcc's outputs as arrays, onnxruntime's, their (rtol, atol), the model, its inputs)
    of a verified case, from its harness and verify's files."""
    out = case["out"]
    name = os.path.basename(out)  # the C name
    proc = run_captured(load_target(target).run_command(
        os.path.join(out, "verify", f"{name}_harness")), HARNESS_TIMEOUT)
    _, got, _ = verify.parse_outputs(proc.stdout)
    expected, _, tolerances = verify.load_expected(os.path.join(out, "verify", "expected.npz"))
    mine = [np.frombuffer(got.get(k, b""), e.dtype).reshape(e.shape) for k, e in enumerate(expected)]
    model = onnx.load(case["model"])
    return mine, expected, tolerances, model, verify.random_inputs(model, {}, case["seed"])


def reproduces(case, target):
    """Whether the harness, run again, is still off its expected outputs. Every verdict
    below judges a second run: a mismatch that goes away when the harness runs again is
    nondeterminism (memory read before it is written, a race), never ill-conditioning."""
    try:
        mine, expected, tolerances, _, _ = _outputs_of(case, target)
        exact = verify.load_expected(os.path.join(case["out"], "verify", "expected.npz"))[1]
    except Exception:  # noqa: BLE001 (no second run to judge: the mismatch stands)
        return True
    return not all(c.ok for c in verify.compare(expected, [m.tobytes() for m in mine], tolerances, exact))


def within_quantization_jitter(case, target, samples=12, ulps=16):
    """Whether onnxcc's outputs of an int8 graph lie within what onnxruntime itself gives
    when its float inputs move by a few ulps. A float op between a DequantizeLinear and a
    QuantizeLinear that onnxcc rounds differently in the last bit (another libm, another
    summation order) flips the integer of a value that sits on a rounding boundary by one:
    a jump that the slightest change of the input also makes onnxruntime take. A wrong or
    dropped op is far outside that envelope, and still fails."""
    try:
        mine, expected, tolerances, model, inputs = _outputs_of(case, target)
        session = onnxruntime_session(model)
        names = [i.name for i in session.get_inputs()]
        rng = np.random.default_rng(0)
        low = [e.astype(np.float64) for e in expected]
        high = [e.astype(np.float64) for e in expected]
        for _ in range(samples):
            feeds = {n: (x * (1 + rng.integers(-ulps, ulps + 1, x.shape) * np.finfo(np.float32).eps)
                         ).astype(x.dtype) if x.dtype == np.float32 else x
                     for n, x in zip(names, inputs)}
            for k, y in enumerate(session.run(None, feeds)):
                low[k], high[k] = np.minimum(low[k], y), np.maximum(high[k], y)
    except Exception:  # noqa: BLE001 (no verdict: the mismatch stands)
        return False
    return all(bool(np.all((m >= lo - atol - rtol * np.abs(lo)) & (m <= hi + atol + rtol * np.abs(hi))))
               for m, lo, hi, (rtol, atol) in zip(mine, low, high, tolerances))


def closer_to_the_specification(case, target):
    """Whether onnxcc's outputs of an int8 graph are at least as close as onnxruntime's to
    the graph's specification: its QDQ form evaluated in float64 (every DequantizeLinear,
    float op and QuantizeLinear as ONNX defines them, with no float32 rounding in between).
    onnxruntime's optimizer replaces the float ops between a DequantizeLinear and a
    QuantizeLinear by its own integer kernels (QGemm, QLinearSoftmax, lookup tables), which
    round elsewhere: a chain of ill-conditioned ops (Tanh into Asin near 1) then moves its
    outputs by several quanta while onnxcc, which keeps the float ops, moves by one.
    ``within_one_quantum``: per element, and no farther than onnxruntime anywhere."""
    try:
        mine, expected, tolerances, model, inputs = _outputs_of(case, target)
        exact = _float64_outputs(model, inputs)
        quanta = _output_quanta(model)
    except Exception:  # noqa: BLE001 (no verdict: the mismatch stands)
        return False
    return all(within_one_quantum(m, e, x, q) if q is not None else closer_than(m, e, x, rtol, atol)
               for m, e, x, q, (rtol, atol) in zip(mine, expected, exact, quanta, tolerances))


def closer_than(mine, theirs, exact, rtol, atol):
    """For a float output computed after the last DequantizeLinear (no quantum to count
    in): onnxcc is off the specification (beyond the tolerance) on no more elements than
    onnxruntime is, and by no more than onnxruntime's worst error. A value that lands in
    another quantum upstream moves the float ops after it by a bounded amount; onnxruntime's
    fused integer kernels move many."""
    mine, theirs = np.asarray(mine, np.float64), np.asarray(theirs, np.float64)
    if mine.shape != theirs.shape or mine.shape != np.shape(exact) or not mine.size:
        return False
    limit = atol + rtol * np.abs(exact)
    mine_error, their_error = np.abs(mine - exact), np.abs(theirs - exact)
    return bool(np.count_nonzero(mine_error > limit) <= np.count_nonzero(their_error > limit)
                and mine_error.max() <= their_error.max())


def within_one_quantum(mine, theirs, exact, quantum):
    """Per element |mine - exact| <= one quantum, and max |mine - exact| <= max
    |theirs - exact|: onnxcc may round a value that sits on a boundary the other way, but
    is never farther from the specification than onnxruntime is."""
    mine, theirs = np.asarray(mine, np.float64), np.asarray(theirs, np.float64)
    if mine.shape != theirs.shape or mine.shape != np.shape(exact) or not mine.size:
        return False
    slack = 1e-3 * quantum  # the float32 outputs are multiples of the scale, within rounding
    mine_error, their_error = np.abs(mine - exact), np.abs(theirs - exact)
    return bool(np.all(mine_error <= quantum + slack) and mine_error.max() <= their_error.max() + slack)


def _output_quanta(model):
    """Per graph output, the scale of the DequantizeLinear that produces it when that is one
    constant (a per-tensor scale), else None."""
    producers = {o: n for n in model.graph.node for o in n.output}
    constants = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    quanta = []
    for output in model.graph.output:
        node = producers.get(output.name)
        scale = constants.get(node.input[1]) if node is not None and node.op_type == "DequantizeLinear" else None
        quanta.append(float(scale) if scale is not None and scale.size == 1 else None)
    return quanta


def as_accurate_as_onnxruntime(case, target):
    """Whether onnxcc's outputs, which verify found too far from onnxruntime's, are still as
    close as onnxruntime's to the exact result (float64 evaluation of the same model on the
    same inputs): per element, |onnxcc - exact| <= 2 |onnxruntime - exact| + the tolerance.
    A graph whose float32 result is ill-conditioned (a LayerNormalization of values that
    differ in their last bits, say) puts both far from each other without either being
    wrong; a dropped or wrong op is far from the exact result too, and still fails. Or,
    where the two land on different sides element by element (Acos of a Tanh near 1),
    ``closer_than``: onnxcc off on no more elements and by no more than onnxruntime."""
    try:
        mine, expected, tolerances, model, inputs = _outputs_of(case, target)
        exact = _float64_outputs(model, inputs)
    except Exception:  # noqa: BLE001 (no verdict: the mismatch stands)
        return False
    return all(as_accurate(m, want, truth, rtol, atol) or closer_than(m, want, truth, rtol, atol)
               for m, want, truth, (rtol, atol) in zip(mine, expected, exact, tolerances))


def onnxruntime_overflows(case, target):
    """Whether onnxcc's outputs are off onnxruntime's only where they are not finite, and
    onnxruntime's run holds a value that is not finite in some tensor inside the graph:
    float32 overflowed there, and what the outputs hold after it depends on how each
    engine orders the infinities -- a GRU with a Relu gate whose state grows every step
    is -inf in onnxruntime and onnxcc alike by step 88 and NaN in onnxcc two steps later,
    where a Min then an Atan made onnxruntime's output finite again. Neither result is the
    graph's: discarded, as a graph whose output is not finite is (graphs.py). A finite
    output off onnxruntime's still fails."""
    try:
        mine, expected, tolerances, model, inputs = _outputs_of(case, target)
        for m, e, (rtol, atol) in zip(mine, expected, tolerances):
            off = ~(np.abs(m.astype(np.float64) - e) <= atol + rtol * np.abs(e))
            if np.any(np.isfinite(m[off])):
                return False
        inferred = onnx.shape_inference.infer_shapes(model)
        known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
        inside = [known[o] for n in model.graph.node for o in n.output
                  if o in known and known[o].type.tensor_type.elem_type == TensorProto.FLOAT]
        del model.graph.output[:]
        model.graph.output.extend(inside)
        session = onnxruntime_session(model)
        feeds = dict(zip([i.name for i in session.get_inputs()], inputs))
        return any(not np.all(np.isfinite(y)) for y in session.run(None, feeds))
    except Exception:  # noqa: BLE001 (no verdict: the mismatch stands)
        return False


def as_accurate(mine, theirs, exact, rtol, atol):
    """Per element, |mine - exact| <= 2 |theirs - exact| + atol + rtol |theirs|."""
    mine, theirs = np.asarray(mine, np.float64), np.asarray(theirs, np.float64)
    if mine.shape != theirs.shape or mine.shape != np.shape(exact):
        return False
    return bool(np.all(np.abs(mine - exact) <= 2 * np.abs(theirs - exact) + atol + rtol * np.abs(theirs)))


def _float64_outputs(model, inputs):
    """The outputs of ``model`` evaluated in float64 (onnx's reference evaluator): every
    float32 tensor, input and constant made double."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    for k, init in enumerate(g.initializer):
        if init.data_type == TensorProto.FLOAT:
            g.initializer[k].CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float64), init.name))
    inits = {i.name for i in g.initializer}
    names = [i.name for i in g.input if i.name not in inits]
    feeds = {n: x.astype(np.float64) if x.dtype == np.float32 else x for n, x in zip(names, inputs)}
    return [np.asarray(y, np.float64)
            for y in ReferenceEvaluator(m, new_ops=[LayerNormalization]).run(None, feeds)]


class LayerNormalization(OpRun):
    """LayerNormalization in its input's own precision, for _float64_outputs (onnx's
    reference evaluator computes its statistics in float32, its default stash_type,
    whatever the input)."""
    op_domain = ""

    def _run(self, x, scale, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
        axes = tuple(range(axis % x.ndim, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        inv = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + epsilon)
        y = (x - mean) * inv * scale + (0 if bias is None else bias)
        return y.astype(x.dtype), mean, inv
