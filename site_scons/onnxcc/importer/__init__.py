"""Import stage (``stage.py``): an ONNX model file -> the compiler's graph, checked and
normalized. One module per check or rewrite of the model as the user wrote it."""
