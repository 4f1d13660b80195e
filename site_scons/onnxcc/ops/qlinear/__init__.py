"""The integer (QLinear*) ops: their lowering, the in-place kernels and the q15 tactics."""
