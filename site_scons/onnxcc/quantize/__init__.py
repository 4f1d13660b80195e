"""quantize=int8: a float model becomes a QDQ model, by onnxruntime's quantization tools."""
