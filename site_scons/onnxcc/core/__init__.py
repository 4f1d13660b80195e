"""Below every stage: the graph IR and ONNX I/O, errors, atomic files, C types and text,
quantization arithmetic, MAC counts, the onnxruntime session and the size tables."""
