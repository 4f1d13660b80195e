"""Sliding-window geometry shared by Conv and the pooling ops (1-D and 2-D, NCHW), and
the one rule of when a window kernel may write its output over its input."""

from dataclasses import replace

from onnxcc.ops import in_place, unsupported


def window_reach(outputs, kernel, stride, dilation):
    """Input elements ``outputs`` consecutive windows reach, first to last (padding
    included)."""
    return (outputs - 1) * stride + (kernel - 1) * dilation + 1


def window_count(size, kernel, stride, dilation):
    """Windows that fit in ``size`` elements (padding included): the output size."""
    return (size - (kernel - 1) * dilation - 1) // stride + 1


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
            total = max(0, window_reach(y_shape[2 + i], k[i], s[i], d[i]) - x_shape[2 + i])
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


def is_channelwise(g):
    """Whether output channel k of a convolution of geometry ``g`` (group, c, m) reads
    only input channel k: one group per channel, one output channel per group."""
    return g["group"] == g["c"] == g["m"]


def is_depthwise(g):
    """A channelwise convolution of more than one channel."""
    return is_channelwise(g) and g["c"] > 1


def is_unit_window(g):
    """A 1x1 window, stride 1, no pads: each output pixel reads only its own input pixel."""
    return ((g["kh"], g["kw"], g["sh"], g["sw"]) == (1, 1, 1, 1)
            and (g["pt"], g["pl"], g["pb"], g["pr"]) == (0, 0, 0, 0))


def is_pointwise(g):
    """A dense (one group) convolution of a unit window."""
    return g["group"] == 1 and is_unit_window(g)


def channel_fits_over_x(g):
    """Whether channel k of y, written after channel k of x is read, lands within x's
    channels 0..k (all read): a channel does not grow."""
    return g["oh"] * g["ow"] <= g["h"] * g["w"]


def pointwise_fits_over_x(g):
    """Whether a pointwise convolution that reads a pixel's C inputs before writing its M
    outputs may write y over x. In batch 1, y[k][p] is element k*H*W + p: x's own pixel p
    of channel k or beyond x's end; with batches, M <= C keeps batch b of y at or before
    batch b of x, so again only pixels already read are hit."""
    return is_pointwise(g) and (g["n"] == 1 or g["m"] <= g["c"])


def window_over_x(call, tensor, element_bytes):
    """``call`` (a window kernel whose output channel k reads only input channel k: a
    pooling or a channelwise convolution) writing y over x, or None.

    Straight over x where each element of y lands only on x already read
    (overwrites_only_read_input); else (``in_place="channel"``) each channel of y is
    computed into scratch and then copied over y's channel (channel_fits_over_x)."""
    p = call.params
    if overwrites_only_read_input(p):
        return in_place(call, tensor, ("x",))
    if not channel_fits_over_x(p):
        return None
    return in_place(replace(call, params=dict(p, in_place="channel")), tensor, ("x",),
                    scratch_bytes=element_bytes * p["oh"] * p["ow"])


def pointwise_over_x(call, tensor, element_bytes):
    """``call`` (a pointwise convolution) writing y over x through one pixel of scratch
    (``in_place="pixel"``), or None: see pointwise_fits_over_x."""
    p = call.params
    if not pointwise_fits_over_x(p):
        return None
    return in_place(replace(call, params=dict(p, in_place="pixel")), tensor, ("x",),
                    scratch_bytes=element_bytes * p["c"])


def conv_over_x(call, tensor, element_bytes):
    """``call`` (a direct convolution) writing y over x: a channelwise one through one
    channel of scratch (window_over_x), any other through one pixel (pointwise_over_x);
    None where its rule does not hold."""
    if is_channelwise(call.params):
        return window_over_x(call, tensor, element_bytes)
    return pointwise_over_x(call, tensor, element_bytes)


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
