"""Resize and Upsample: nearest, linear and cubic, every coordinate transformation mode,
antialiasing, exclude_outside, tf_crop_and_resize's extrapolation.

Resampling is separable: along each resized axis, every output coordinate reads a few
input coordinates ("taps") with weights, and an output element is the sum over the tap
combinations of the product of the weights times the input. The taps depend only on
shapes and attributes, so they are computed here, as the ONNX specification defines
them, and the kernel only walks tables.
"""

import math

import numpy as np

from . import KernelCall, unsupported
from .layout import row_major_strides


def _nearest(ratio, scale, mode):
    if float(ratio).is_integer():
        return [0.0, 1.0]
    pick_right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                  "floor": False, "ceil": True}[mode]
    return [0.0, 1.0] if pick_right else [1.0, 0.0]


def _linear(ratio, scale, antialias):
    if not antialias:
        return [1 - ratio, ratio]
    scale = min(scale, 1.0)
    start = int(math.floor(-1 / scale) + 1)
    taps = [max(0.0, 1 - abs((i - ratio) * scale)) for i in range(start, 2 - start)]
    return [c / sum(taps) for c in taps]


def _cubic(ratio, scale, a, antialias):
    def weight(x):
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        if x < 2:
            return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
        return 0.0
    if not antialias:
        return [weight(1 + ratio), weight(ratio), weight(1 - ratio), weight(2 - ratio)]
    scale = min(scale, 1.0)
    start = int(math.floor(-2 / scale) + 1)
    taps = [weight(scale * (i - ratio)) for i in range(start, 2 - start)]
    return [c / sum(taps) for c in taps]


def _source_coordinate(y, mode, scale, in_w, out_w_int, roi):
    """Where output coordinate ``y`` lies in the input (coordinate_transformation_mode)."""
    out_w = scale * in_w
    if mode == "align_corners":
        return 0.0 if out_w == 1 else y * (in_w - 1) / (out_w - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        x = (end - start) * (in_w - 1) / 2 if out_w == 1 else y * (end - start) * (in_w - 1) / (out_w - 1)
        return x + start * (in_w - 1)
    if mode == "pytorch_half_pixel":
        return -0.5 if out_w == 1 else (y + 0.5) / scale - 0.5
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_w / 2 * (1 - out_w_int / out_w)
        return offset + (y + 0.5) / scale - 0.5
    raise ValueError(mode)


def axis_taps(in_w, out_w, scale, a, roi):
    """[(input index, weight), ...] per output coordinate, and the coordinates that fall
    outside the input (tf_crop_and_resize: they take the extrapolation value)."""
    mode = a["mode"]
    taps, outside = [], []
    for y in range(out_w):
        x = _source_coordinate(y, a["coordinate_transformation_mode"], scale, in_w, out_w, roi)
        outside.append(a["coordinate_transformation_mode"] == "tf_crop_and_resize"
                       and (x < 0 or x > in_w - 1))
        ratio = 1.0 if float(x).is_integer() else x - math.floor(x)
        if mode == "nearest":
            coeffs = _nearest(ratio, scale, a["nearest_mode"])
        elif mode == "linear":
            coeffs = _linear(ratio, scale, a["antialias"])
        else:
            coeffs = _cubic(ratio, scale, a["cubic_coeff_a"], a["antialias"])
        n = len(coeffs)
        # the n input coordinates nearest to x, ties to the smaller (in edge-padded terms)
        pad = math.ceil(n / 2)
        xp = x + pad
        frac = xp - math.floor(xp)
        if n % 2 == 0:
            offset = -(n // 2) if frac == 0 else -(n // 2) + 1
        else:
            offset = -((n - 1) // 2) + (0 if frac <= 0.5 else 1)
        first = math.floor(xp) + offset - pad
        indices = list(range(first, first + n))
        if a["exclude_outside"]:
            coeffs = [0.0 if not 0 <= i < in_w else c for i, c in zip(indices, coeffs)]
            total = sum(coeffs) or 1.0
            coeffs = [c / total for c in coeffs]
        merged = {}
        for i, c in zip(indices, coeffs):  # edge padding: outside indices read the border
            i = min(max(i, 0), in_w - 1)
            merged[i] = merged.get(i, 0.0) + c
        taps.append([(i, c) for i, c in sorted(merged.items()) if c != 0.0] or [(0, 0.0)])
    return taps, outside


def _attrs(node, opset):
    a = node.attrs
    old = node.op == "Upsample" or opset < 11  # Upsample and Resize-10: asymmetric, floor
    return {"mode": a.get("mode", "nearest"),
            "coordinate_transformation_mode": "asymmetric" if old else
            a.get("coordinate_transformation_mode", "half_pixel"),
            "nearest_mode": "floor" if old else a.get("nearest_mode", "round_prefer_floor"),
            "cubic_coeff_a": a.get("cubic_coeff_a", -0.75),
            "exclude_outside": a.get("exclude_outside", 0), "antialias": a.get("antialias", 0),
            "extrapolation_value": a.get("extrapolation_value", 0.0),
            "keep_aspect_ratio_policy": a.get("keep_aspect_ratio_policy", "stretch")}


def _scales(node, in_shape, out_shape, a):
    """Scale of every axis, as the coordinate transformation uses it."""
    rank = len(in_shape)
    axes = [ax % rank for ax in node.attrs.get("axes", range(rank))]
    if node.attrs.get("sizes"):
        scales = [out_shape[d] / in_shape[d] for d in range(rank)]
        policy = a["keep_aspect_ratio_policy"]
        if policy != "stretch":
            sizes = dict(zip(axes, node.attrs["sizes"]))
            pick = min if policy == "not_larger" else max
            scale = pick(sizes[d] / in_shape[d] for d in axes)
            scales = [scale if d in axes else 1.0 for d in range(rank)]
        return scales, axes
    scales = [1.0] * rank
    for d, s in zip(axes, node.attrs["scales"]):
        scales[d] = s
    return scales, axes


def _merge_identity_runs(out_shape, x_strides, resized):
    """Neighbouring axes that are not resized walk x contiguously: one loop each run."""
    dims, strides, axes = [], [], []
    for d, (n, s, taps) in enumerate(zip(out_shape, x_strides, resized)):
        if taps is None and axes and axes[-1] is None:
            dims[-1] *= n
            strides[-1] = s
        else:
            dims.append(n)
            strides.append(s)
            axes.append(taps)
    return dims, strides, axes


def lower_resize(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    in_shape, out_shape = graph.info(x).shape, graph.info(y).shape
    a = _attrs(node, graph.opset)
    if a["mode"] not in ("nearest", "linear", "cubic"):
        raise unsupported(node, f"mode '{a['mode']}'")
    scales, axes = _scales(node, in_shape, out_shape, a)
    rank = len(in_shape)
    roi = [0.0] * rank + [1.0] * rank
    given = node.attrs.get("roi") or []
    for k, d in enumerate(axes if given else []):
        roi[d], roi[rank + d] = given[k], given[len(axes) + k]
    resized, outside_any = [], False
    for d in range(rank):
        identity = (math.isclose(scales[d], 1.0) and out_shape[d] == in_shape[d]
                    and math.isclose(roi[d], 0.0) and math.isclose(roi[rank + d], 1.0))
        if identity:
            resized.append(None)
            continue
        taps, outside = axis_taps(in_shape[d], out_shape[d], scales[d], a,
                                  (roi[d], roi[rank + d]))
        count = max(len(t) for t in taps)
        padded = [t + [(0, 0.0)] * (count - len(t)) for t in taps]
        weighted = any(c != 1.0 for t in padded for _, c in t)
        resized.append({"taps": count,
                        "index": [i for t in padded for i, _ in t],
                        "weight": [float(np.float32(c)) for t in padded for _, c in t] if weighted else None,
                        "outside": [int(o) for o in outside] if any(outside) else None})
        outside_any |= any(outside)
    out_dims, x_strides, axes = _merge_identity_runs(out_shape, row_major_strides(in_shape), resized)
    p = {"out_shape": out_dims, "x_strides": x_strides, "axes": axes,
         "extrapolation": float(a["extrapolation_value"]) if outside_any else None}
    tag = (f"{a['mode']}_f32_{'x'.join(map(str, in_shape))}_to_{'x'.join(map(str, out_shape))}")
    return KernelCall("resize", tag, p, [("x", x)], [("y", y)])


LOWERINGS = {"Resize": lower_resize, "Upsample": lower_resize}
