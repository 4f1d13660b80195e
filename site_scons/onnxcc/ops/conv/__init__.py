"""Conv (float): the direct kernel, the GEMM tactics, depthwise, in-place and transposed."""
