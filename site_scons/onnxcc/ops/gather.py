"""Indexing ops, for every element type: Gather, GatherElements, GatherND, the Scatter
family, OneHot and ReverseSequence. The indices (and sequence lengths) are read at run
time; everything about shapes is fixed."""

from onnxcc.core.cgen import c_type

from . import KernelCall, unsupported
from .layout import _prod, row_major_strides
from .unary import dtype_tag

#: ScatterElements / ScatterND reduction -> how an update combines with its target
COMBINE = {
    "none": "{to} = {update}",
    "add": "{to} += {update}",
    "mul": "{to} *= {update}",
    "max": "{to} = {update} > {to} ? {update} : {to}",
    "min": "{to} = {update} < {to} ? {update} : {to}",
}


def lower_gather(node, graph):
    x, indices = node.inputs
    y = node.outputs[0]
    shape = graph.info(x).shape
    axis = node.attrs.get("axis", 0) % len(shape)
    p = {"outer": _prod(shape[:axis]), "n": shape[axis], "count": graph.info(indices).size,
         "inner": _prod(shape[axis + 1:])}
    tag = f"{dtype_tag(graph.info(x).dtype)}_{p['outer']}x{p['n']}x{p['inner']}_k{p['count']}"
    return KernelCall("gather", tag, p, [("x", x), ("indices", indices)], [("y", y)])


def lower_gather_elements(node, graph):
    x, indices = node.inputs
    y = node.outputs[0]
    shape = graph.info(x).shape
    axis = node.attrs.get("axis", 0) % len(shape)
    p = {"shape": list(graph.info(indices).shape), "x_strides": row_major_strides(shape),
         "axis": axis, "n": shape[axis]}
    tag = f"{dtype_tag(graph.info(x).dtype)}_{'x'.join(map(str, shape))}_a{axis}_{'x'.join(map(str, p['shape']))}"
    return KernelCall("gather_elements", tag, p, [("x", x), ("indices", indices)], [("y", y)])


def _nd_geometry(data_shape, indices_shape, batch_dims):
    """Where index tuples point: (batch, count, k, dims, strides, slice) of ScatterND and
    GatherND, strides in elements of the data."""
    k = indices_shape[-1]
    strides = row_major_strides(data_shape)
    return {"batch": _prod(data_shape[:batch_dims]),
            "count": _prod(indices_shape[batch_dims:-1]), "k": k,
            "dims": list(data_shape[batch_dims:batch_dims + k]),
            "strides": strides[batch_dims:batch_dims + k],
            "slice": _prod(data_shape[batch_dims + k:]),
            "batch_stride": _prod(data_shape[batch_dims:])}


def lower_gather_nd(node, graph):
    x, indices = node.inputs
    y = node.outputs[0]
    p = _nd_geometry(graph.info(x).shape, graph.info(indices).shape, node.attrs.get("batch_dims", 0))
    p["index_ctype"] = c_type(graph.info(indices).dtype)
    tag = (f"{dtype_tag(graph.info(x).dtype)}_{'x'.join(map(str, graph.info(x).shape))}"
           f"_b{p['batch']}_k{p['k']}x{p['count']}")
    return KernelCall("gather_nd", tag, p, [("x", x), ("indices", indices)], [("y", y)])


def _combine(node):
    reduction = node.attrs.get("reduction", "none")
    if reduction not in COMBINE:
        raise unsupported(node, f"reduction '{reduction}'")
    return COMBINE[reduction]


def lower_scatter_elements(node, graph):
    data, indices, updates = node.inputs
    y = node.outputs[0]
    shape = graph.info(data).shape
    axis = node.attrs.get("axis", 0) % len(shape)
    p = {"shape": list(graph.info(indices).shape), "y_strides": row_major_strides(shape),
         "axis": axis, "n": shape[axis], "size": graph.info(data).size,
         "dtype": graph.info(data).dtype, "combine": _combine(node)}
    tag = (f"{dtype_tag(p['dtype'])}_{'x'.join(map(str, shape))}_a{axis}_"
           f"{'x'.join(map(str, p['shape']))}_{node.attrs.get('reduction', 'none')}")
    return KernelCall("scatter_elements", tag, p,
                      [("data", data), ("indices", indices), ("updates", updates)], [("y", y)])


def lower_scatter_nd(node, graph):
    data, indices, updates = node.inputs
    y = node.outputs[0]
    p = _nd_geometry(graph.info(data).shape, graph.info(indices).shape, 0)
    p.update(index_ctype=c_type(graph.info(indices).dtype), size=graph.info(data).size,
             dtype=graph.info(data).dtype, combine=_combine(node))
    tag = (f"{dtype_tag(p['dtype'])}_{'x'.join(map(str, graph.info(data).shape))}_k{p['k']}"
           f"x{p['count']}_{node.attrs.get('reduction', 'none')}")
    return KernelCall("scatter_nd", tag, p,
                      [("data", data), ("indices", indices), ("updates", updates)], [("y", y)])


def lower_onehot(node, graph):
    indices, _, values = node.inputs
    y = node.outputs[0]
    shape = graph.info(indices).shape
    axis = node.attrs.get("axis", -1) % (len(shape) + 1)
    p = {"outer": _prod(shape[:axis]), "depth": int(node.attrs["depth"]),
         "inner": _prod(shape[axis:])}
    tag = f"{dtype_tag(graph.info(y).dtype)}_{p['outer']}x{p['depth']}x{p['inner']}"
    return KernelCall("onehot", tag, p, [("indices", indices), ("values", values)], [("y", y)])


def lower_reverse_sequence(node, graph):
    x, lens = node.inputs
    y = node.outputs[0]
    shape = graph.info(x).shape
    time_axis = node.attrs.get("time_axis", 0)
    p = {"time_major": time_axis == 0, "steps": shape[time_axis], "batch": shape[1 - time_axis],
         "inner": _prod(shape[2:])}
    tag = (f"{dtype_tag(graph.info(x).dtype)}_{'t' if p['time_major'] else 'b'}"
           f"{p['steps']}x{p['batch']}x{p['inner']}")
    return KernelCall("reverse_sequence", tag, p, [("x", x), ("sequence_lens", lens)], [("y", y)])


LOWERINGS = {"Gather": lower_gather, "ReverseSequence": lower_reverse_sequence, "GatherElements": lower_gather_elements,
             "GatherND": lower_gather_nd, "ScatterElements": lower_scatter_elements,
             "Scatter": lower_scatter_elements, "ScatterND": lower_scatter_nd,
             "OneHot": lower_onehot}
TYPED_OPS = set(LOWERINGS)
