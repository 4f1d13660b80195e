"""DFT along one axis: forward (real or complex input, one-sided or full), inverse, and
inverse one-sided (a real signal from half a spectrum). The twiddle factors are tables
computed here; the kernel sums directly (O(n^2) per transform)."""

import math

from . import KernelCall, unsupported
from .layout import _prod


def lower_dft(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    x_shape, y_shape = graph.info(x).shape, graph.info(y).shape
    a = node.attrs
    axis = a.get("axis", 1 if graph.opset < 20 else -2) % len(x_shape)
    if axis == len(x_shape) - 1:
        raise unsupported(node, "a transform along the real/imaginary axis")
    inverse, onesided = bool(a.get("inverse", 0)), bool(a.get("onesided", 0))
    n = x_shape[axis]
    length = int(a.get("dft_length", 2 * (n - 1) if inverse and onesided else n))
    p = {"outer": _prod(x_shape[:axis]), "inner": _prod(x_shape[axis + 1:-1]), "n": n,
         "length": length, "bins": y_shape[axis], "x_complex": x_shape[-1] == 2,
         "y_complex": y_shape[-1] == 2, "inverse": inverse, "onesided": onesided,
         "cos": [math.cos(2 * math.pi * k / length) for k in range(length)],
         "sin": [math.sin(2 * math.pi * k / length) for k in range(length)]}
    kind = ("irfft" if inverse and onesided else "idft" if inverse
            else "rfft" if onesided else "dft")
    tag = f"{kind}_f32_{p['outer']}x{n}x{p['inner']}_l{length}"
    return KernelCall("dft", tag, p, [("x", x)], [("y", y)])


LOWERINGS = {"DFT": lower_dft}
