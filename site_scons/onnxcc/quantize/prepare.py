"""The float model as onnxruntime's quantizer should see it: its own pre-processing
(BatchNormalization folded into Conv, constants folded, shapes inferred), then what that
leaves undone (a BatchNormalization after a Gemm)."""

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization.shape_inference import quant_pre_process


def fold_gemm_batchnorm(model):
    """Gemm -> BatchNormalization becomes one Gemm (scaled weights and bias)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers[i] = consumers.get(i, 0) + 1
    for bn in [n for n in g.node if n.op_type == "BatchNormalization"]:
        gemm = producers.get(bn.input[0])
        if (gemm is None or gemm.op_type != "Gemm" or len(gemm.input) < 3
                or consumers.get(gemm.output[0]) != 1
                or not all(i in inits for i in list(gemm.input[1:3]) + list(bn.input[1:5]))):
            continue
        trans_b = any(a.name == "transB" and a.i for a in gemm.attribute)
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale, beta, mean, var = (numpy_helper.to_array(inits[i]).astype(np.float64)
                                  for i in bn.input[1:5])
        k = scale / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[gemm.input[1]]).astype(np.float64)
        b = numpy_helper.to_array(inits[gemm.input[2]]).astype(np.float64)
        w = w * (k[:, None] if trans_b else k[None, :])
        inits[gemm.input[1]].CopyFrom(numpy_helper.from_array(w.astype(np.float32), gemm.input[1]))
        inits[gemm.input[2]].CopyFrom(numpy_helper.from_array(
            ((b - mean) * k + beta).astype(np.float32), gemm.input[2]))
        gemm.output[0] = bn.output[0]
        g.node.remove(bn)
    used = {i for n in g.node for i in n.input}
    for init in [i for i in g.initializer if i.name not in used]:
        g.initializer.remove(init)
    return model


def prepare(source, out):
    """Write the pre-processed float model of the file ``source`` to ``out``."""
    # (no symbolic shape inference: it needs sympy, and ONNX's own infers these models)
    quant_pre_process(source, out, skip_symbolic_shape=True)
    model = fold_gemm_batchnorm(onnx.load(out))
    keep = {"", "ai.onnx"}  # the pre-processing lists every domain onnxruntime knows
    used = {n.domain for n in model.graph.node}
    imports = [o for o in model.opset_import if o.domain in keep | used]
    del model.opset_import[:]
    model.opset_import.extend(imports)
    onnx.save(model, out)
