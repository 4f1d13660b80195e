"""Sliding-window geometry shared by Conv and the pooling ops (1-D and 2-D, NCHW)."""

from . import unsupported


def window_2d(node, x_shape, y_shape, kernel_shape):
    """Kernel, strides, dilations and (top, left) pads of a 1-D or 2-D window, as 2-D.

    Output sizes come from shape inference; explicit pads and every auto_pad mode are
    resolved here so that kernels see plain numbers.
    """
    spatial = len(x_shape) - 2
    if spatial not in (1, 2):
        raise unsupported(node, f"a {spatial}-D window", "onnxcc supports 1-D and 2-D windows")
    a = node.attrs
    k = list(kernel_shape)
    s = list(a.get("strides", [1] * spatial))
    d = list(a.get("dilations", [1] * spatial))
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(spatial):
            total = max(0, (y_shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - x_shape[2 + i])
            begin.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
            end.append(total - begin[-1])
    elif auto_pad == "VALID":
        begin, end = [0] * spatial, [0] * spatial
    else:
        pads = list(a.get("pads", [0] * (2 * spatial)))
        begin, end = pads[:spatial], pads[spatial:]
    if spatial == 1:  # a 1-D window is a 2-D one of height 1
        k, s, d, begin, end = [1] + k, [1] + s, [1] + d, [0] + begin, [0] + end
    h, w = (x_shape[2:] if spatial == 2 else (1, x_shape[2]))
    oh, ow = (y_shape[2:] if spatial == 2 else (1, y_shape[2]))
    return {"n": x_shape[0], "c": x_shape[1], "h": h, "w": w, "oh": oh, "ow": ow,
            "kh": k[0], "kw": k[1], "sh": s[0], "sw": s[1], "dh": d[0], "dw": d[1],
            "pt": begin[0], "pl": begin[1], "pb": end[0], "pr": end[1]}


def is_depthwise(g):
    """Whether a convolution of geometry ``g`` (group, c, m) filters each of its channels
    on its own: one group per channel, one output channel per group, more than one."""
    return g["group"] == g["c"] == g["m"] > 1


def window_tag(g):
    tag = f"{g['kh']}x{g['kw']}_s{g['sh']}x{g['sw']}_p{g['pt']}x{g['pl']}"
    if (g["dh"], g["dw"]) != (1, 1):
        tag += f"_d{g['dh']}x{g['dw']}"
    return tag + f"_{g['c']}x{g['h']}x{g['w']}"


def overwrites_only_read_input(g):
    """Whether a window kernel that walks y in order (channel, row, column) and reads only
    the same channel of x may write y straight over x: each element of y must land where
    no later element reads x. Channel k of y starts at or before channel k of x (a channel
    does not grow), so channel 0 is the tightest: checked element by element."""
    h, w, oh, ow = g["h"], g["w"], g["oh"], g["ow"]
    if oh * ow > h * w:
        return False
    last_read = [-1] * (h * w)  # element of x -> the last element of y reading it
    for oy in range(oh):  # (y in order: each element read is last read by the latest)
        for ky in range(g["kh"]):
            iy = oy * g["sh"] - g["pt"] + ky * g["dh"]
            if not 0 <= iy < h:
                continue
            for ox in range(ow):
                for kx in range(g["kw"]):
                    ix = ox * g["sw"] - g["pl"] + kx * g["dw"]
                    if 0 <= ix < w:
                        last_read[iy * w + ix] = oy * ow + ox
    return all(q >= t for q, t in enumerate(last_read))
