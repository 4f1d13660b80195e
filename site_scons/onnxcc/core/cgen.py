"""Small helpers that spell values and types in C (model text: core/ctext.py)."""

import functools
import math

import numpy as np

from .errors import OnnxccError

C_TYPES = {
    "float32": "float", "float64": "double",
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
    "bool": "uint8_t",
}


@functools.cache
def c_type(dtype):
    """The C type of numpy dtype ``dtype`` (asked for every tensor)."""
    name = np.dtype(dtype).name
    if name not in C_TYPES:
        raise OnnxccError(f"element type {'string' if name == 'object' else name} is not supported",
                          hint=f"onnxcc supports {', '.join(sorted(C_TYPES))}")
    return C_TYPES[name]


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


def c_array_body(values, per_line=8):
    """Comma-separated initializer lines for a flat array of numbers."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind == "b":
        items = [str(int(v)) for v in flat.tolist()]
    elif flat.dtype.kind == "f" or flat.dtype in (np.int64, np.uint64):
        items = [c_literal(v, flat.dtype) for v in flat.tolist()]
    else:
        items = [str(v) for v in flat.tolist()]
    return "\n".join("    " + ", ".join(items[i:i + per_line]) + ","
                     for i in range(0, len(items), per_line))


def c_literal(value, dtype):
    """``value`` as a C constant of element type ``dtype``."""
    name = np.dtype(dtype).name
    if name == "float32":
        return c_float(value)
    if name == "float64":
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            return {"nan": "(double)NAN", "inf": "(double)INFINITY", "-inf": "(double)-INFINITY"}[str(v)]
        text = repr(v)
        return text if "e" in text or "." in text else text + ".0"
    if name == "bool":
        return "1" if value else "0"
    v = int(value)
    if name == "int64" and v == -2**63:
        return "INT64_MIN"  # its magnitude is no int64 literal
    if name in ("int64", "uint64"):
        return f"INT64_C({v})" if name == "int64" else f"UINT64_C({v})"
    return f"{v}u" if name.startswith("uint") else str(v)


class CNumbers:
    """How C spells the constants and math functions of one element type."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype).name
        self.ctype = c_type(self.dtype)
        self.is_float = self.dtype in ("float32", "float64")
        self.is_signed = self.is_float or self.dtype.startswith("int")

    def lit(self, value):
        return c_literal(value, self.dtype)

    def fn(self, name):
        """The <math.h> function ``name`` for this type: expf for float, exp for double."""
        return name + "f" if self.dtype == "float32" else name
