"""Helpers shared by operator families: the fused epilogue, windows and in-place rules,
register tiles, broadcasting, convolution geometry, Winograd transforms, weight packing."""
