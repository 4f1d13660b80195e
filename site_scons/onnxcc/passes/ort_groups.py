"""Which QDQ groups onnxruntime fuses on x86, and on which codes (docs/int8.md, "Where
onnxruntime itself differs"): the rules qdq_to_qlinear follows so that its integer
kernels compute what onnxruntime computes."""

#: the attribute the importer gives a float op that was a QOperator node: onnxruntime runs
#: that op's own integer kernel, so its group is always fused
QOPERATOR_ATTR = "onnxcc_qoperator"
#: the attribute of a QLinearAdd / QLinearMul / QLinearGlobalAveragePool that computes its
#: group's float ops (dequantize, the op, quantize) where onnxruntime does not fuse it
FLOAT_STEPS = "onnxcc_float_steps"
#: the attribute of an int8 QLinearAdd / QLinearMul that onnxruntime fuses after turning
#: its codes into uint8 (code + 128, zero point + 128): where the zero points enter float
#: arithmetic, the kernel computes with those codes too
U8_CODES = "onnxcc_u8_codes"
#: the groups whose fused arithmetic differs from their float ops': computed as onnxruntime
#: does, fused or not (Conv and Gemm, fused or not, round the exact sum alike but at rare
#: float ties, so they are always fused)
ORT_ARITHMETIC = {"Softmax", "Add", "Mul", "GlobalAveragePool"}


def ort_type(graph, producers, consumers, name, reader=None):
    """The element type onnxruntime computes the int8 activation ``name`` in on x86: its
    QDQS8ToU8 transform makes a QuantizeLinear -> DequantizeLinear pair uint8 (the
    QuantizeLinear's only reader a DequantizeLinear, its output not a graph output);
    anything else keeps its type. ``reader``: the DequantizeLinear reading a group's
    input (None: ``name`` is a group's output)."""
    dtype = graph.info(name).dtype
    if dtype != "int8":
        return dtype
    sole = graph.sole_reader(name, consumers)
    producer = producers.get(name)
    # (its EnsureUniqueDQForNodeUnit first gives each reader of a DequantizeLinear a
    # copy of its own: a DequantizeLinear read twice leaves its QuantizeLinear unpaired)
    paired = (sole is not None and sole.op == "DequantizeLinear"
              and sole is (reader or sole) and len(consumers.get(sole.outputs[0], [])) <= 1
              and producer is not None and producer.op == "QuantizeLinear")
    return "uint8" if paired else dtype


def ort_types(graph, producers, consumers, node, y):
    """The element types onnxruntime sees in the group of ``node`` (its
    DequantizeLinear inputs, the QuantizeLinear writing ``y``): it fuses the group only
    when there is one (a constant's DequantizeLinear keeps its type)."""
    types = {ort_type(graph, producers, consumers, y)}
    for name in node.inputs:
        dq = producers.get(name)
        if dq is not None and dq.op == "DequantizeLinear":
            types.add(graph.info(dq.inputs[0]).dtype if graph.is_constant(dq.inputs[0])
                      else ort_type(graph, producers, consumers, dq.inputs[0], dq))
    return types
