"""onnxruntime as onnxcc's second opinion: verify's expected outputs and the constants
folding computes where onnx's reference evaluator cannot. One session setup for both, so
they compute the same thing: one thread (the same sums in the same order every run),
quiet, and float activations where onnxruntime would quantize them on its own.
"""


def session(model, optimize=True):
    """An onnxruntime InferenceSession of ``model`` (a ModelProto) on the CPU; with
    ``optimize`` False, without its graph optimizations (each node as the specification
    says, no fusions)."""
    import onnxruntime as ort  # imported late: most builds never need it
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    # a DequantizeLinear of constant weights into a MatMul becomes MatMulNBits, which by
    # default quantizes the activations too (accuracy level 4): level 1 keeps them float,
    # as the specification (and onnxcc) computes
    options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "1")
    # onnxruntime trails onnx: a model saved by a newer onnx may carry an IR version it
    # does not know yet although it uses nothing new; IR 10 covers every opset up to 21
    model.ir_version = min(model.ir_version, 10)
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
