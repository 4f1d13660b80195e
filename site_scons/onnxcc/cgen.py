"""Small helpers that spell values and names in C."""

import math
import re

import numpy as np

C_TYPES = {
    "float32": "float", "float64": "double",
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
    "bool": "uint8_t",
}


def c_type(dtype):
    return C_TYPES[np.dtype(dtype).name]


def c_float(value):
    """A float32 literal that round-trips exactly (9 significant digits)."""
    v = float(np.float32(value))
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    text = f"{v:.9g}"
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def c_ident(text):
    """``text`` made into a C identifier: other characters become '_', never a leading digit."""
    ident = re.sub(r"\W", "_", text, flags=re.ASCII)
    return ident if ident and not ident[0].isdigit() else "_" + ident


def c_array_body(values, per_line=8):
    """Comma-separated initializer lines for a flat array of numbers."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind == "f":
        items = [c_float(v) for v in flat.tolist()]
    elif flat.dtype.kind == "b":
        items = [str(int(v)) for v in flat.tolist()]
    else:
        items = [str(v) for v in flat.tolist()]
        if flat.dtype == np.int64:
            items = [f"INT64_C({v})" for v in items]
    return "\n".join("    " + ", ".join(items[i:i + per_line]) + ","
                     for i in range(0, len(items), per_line))
