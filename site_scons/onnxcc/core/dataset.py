"""Data a user gives: the inputs of one run (verify's ``testdata=``) or a data set of many
(``calibration=``, ``data=``).

One reader for all of them. A *sample* is one array per model input, in input order. It
comes from a ``test_data_set_N`` folder (input_K.pb files), a ``.npy`` file (a model with
one input) or a ``.npz`` file (the inputs by name, or arr_0, arr_1, ... in input order).
An array whose shape is the input's with a leading count (``[N, *shape]``, or ``[N,
*shape[1:]]`` for an input of batch 1) holds N samples. A data set is such a file or
folder, or a folder of them (taken in name order); its ``labels.npy``, when there is one,
holds one class index per sample.
"""

import glob
import os
import re
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from onnxcc.core.errors import OnnxccError

#: what a data file or folder may be, for the lines that refuse something else
KINDS = ("a test_data_set_N folder (input_K.pb, output_K.pb), a .npy file (the one "
         "input) or a .npz file (the inputs by name, or arr_0, arr_1, ... in order)")
LABELS = "labels.npy"
NUMPY = (".npy", ".npz")


@dataclass(frozen=True)
class Input:
    """A model input as data must match it."""
    name: str
    dtype: str   # numpy's name: float32, int8, ...
    shape: tuple


def files(path):
    """The files read for ``path`` (whose edits must rebuild what reads it): a test data
    folder's .pb files, a .npy or .npz file, or every one of those in a folder of them."""
    if os.path.isdir(path):
        found = sorted(glob.glob(os.path.join(path, "*.pb")))
        for entry in _entries(path):
            found += files(entry) if os.path.isdir(entry) else [entry]
        labels = os.path.join(path, LABELS)
        return found + ([labels] if os.path.isfile(labels) else [])
    if os.path.isfile(path) and path.endswith(NUMPY):
        return [path]
    what = "no such data folder or file" if not os.path.exists(path) else \
        "not a test data folder, .npy or .npz file"
    raise OnnxccError(what, where=path, hint=f"give {KINDS}, or a folder of them")


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _entries(folder):
    """A folder's sample files and test_data_set folders, in name order (2 before 10)."""
    names = sorted(os.listdir(folder), key=_natural)
    return [os.path.join(folder, n) for n in names if n != LABELS and not n.startswith(".")
            and (n.endswith(NUMPY) or (n.startswith("test_data_set")
                                        and os.path.isdir(os.path.join(folder, n))))]


def is_test_case(path):
    """Whether ``path`` is one test_data_set_N folder (its input_K.pb and output_K.pb; a
    model without inputs has output_K.pb alone)."""
    return os.path.isdir(path) and bool(glob.glob(os.path.join(path, "input_*.pb"))
                                        or glob.glob(os.path.join(path, "output_*.pb")))


def numbered_tensors(folder, kind):
    """{K: array} of a folder's ``<kind>_K.pb`` files."""
    arrays = {}
    for p in glob.glob(os.path.join(folder, f"{kind}_*.pb")):
        index = os.path.basename(p)[len(kind) + 1:-3]
        if not index.isdigit():
            continue
        t = onnx.TensorProto()
        try:
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            arrays[int(index)] = numpy_helper.to_array(t)
        except Exception as e:  # protobuf and onnx raise many types
            raise OnnxccError(f"not a TensorProto file ({type(e).__name__})", where=p,
                              hint="write it with onnx.numpy_helper.from_array(x)"
                                   ".SerializeToString()") from None
    return arrays


def read_folder(folder, names):
    """Inputs and expected outputs (empty: none given) of a test_data_set_N folder;
    ``names``: (the model's input names, its output names)."""
    inputs, outputs = numbered_tensors(folder, "input"), numbered_tensors(folder, "output")
    for kind, arrays, named in (("input", inputs, names[0]), ("output", outputs, names[1])):
        if kind == "output" and not arrays:
            break  # onnxruntime computes them
        if sorted(arrays) != list(range(len(named))):
            given = ", ".join(f"{kind}_{j}.pb" for j in sorted(arrays)) or f"no {kind}_K.pb"
            raise OnnxccError(f"has {given} for the model's {len(named)} {kind}(s) "
                              f"({', '.join(named)})", where=folder,
                              hint=f"give {kind}_0.pb to {kind}_{len(named) - 1}.pb"
                              + (", or no output_K.pb at all for onnxruntime's outputs"
                                 if kind == "output" else ""))
    return [inputs[k] for k in range(len(inputs))], [outputs[k] for k in range(len(outputs))]


def read_numpy(path, names):
    """The arrays of a .npy (the model's one input) or .npz file (by input name, or
    arr_0, arr_1, ... in input order), in input order."""
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.ndarray):  # a .npy file
            arrays = {"arr_0": data}
        else:  # a .npz file: a zip file of .npy files
            with data:
                arrays = {key: data[key] for key in data.files}
    except Exception as e:  # numpy and zipfile raise many types
        first = (str(e).split(". ")[0].splitlines() or ["no message"])[0]
        raise OnnxccError(f"numpy.load cannot read it ({type(e).__name__}: {first})",
                          where=path, hint="write it with numpy.save or numpy.savez") from None
    if path.endswith(".npy") and len(names) != 1:
        raise OnnxccError(f"a .npy file holds one array; the model takes {len(names)} inputs "
                          f"({', '.join(names)})", where=path,
                          hint="give a .npz file of them: numpy.savez(path, name=array, ...)")
    numbered = [f"arr_{k}" for k in range(len(names))]
    keys = names if set(arrays) <= set(names) else numbered
    missing, unknown = [k for k in keys if k not in arrays], sorted(set(arrays) - set(keys))
    if missing or unknown:
        held = ", ".join(f"'{k}'" for k in sorted(arrays)) or "nothing"
        raise OnnxccError(f"holds {held}; the model's inputs are "
                          f"{', '.join(repr(n) for n in names)}", where=path,
                          hint="name the arrays as the inputs, or arr_0, arr_1, ... in their "
                               "order (numpy.savez(path, *arrays))")
    return [arrays[k] for k in keys]


def _mismatch(path, k, spec, x):
    return OnnxccError(f"input {k} ('{spec.name}') is {x.dtype.name} of shape {list(x.shape)}; "
                       f"the model takes {spec.dtype} of shape {list(spec.shape)}", where=path,
                       hint="convert it: x.astype(dtype).reshape(shape), with a leading "
                            "count for several samples")


def check_sample(path, arrays, specs):
    """``arrays`` as the one sample the model takes, else one line."""
    for k, (spec, x) in enumerate(zip(specs, arrays)):
        x = np.asarray(x)
        if x.dtype.name != spec.dtype or tuple(x.shape) != tuple(spec.shape):
            raise _mismatch(path, k, spec, x)
    return [np.asarray(x) for x in arrays]


def _split(path, arrays, specs):
    """The samples in one file's arrays: each array is one sample, or N with a leading
    count (the same N for every input)."""
    counts = set()
    for k, (spec, x) in enumerate(zip(specs, arrays)):
        shape, want = tuple(x.shape), tuple(spec.shape)
        if x.dtype.name != spec.dtype:
            raise _mismatch(path, k, spec, x)
        if shape == want:
            counts.add(None)
        elif shape[1:] == want or (want[:1] == (1,) and shape[1:] == want[1:] and shape):
            counts.add(shape[0])
        else:
            raise _mismatch(path, k, spec, x)
    if len(counts) != 1:
        raise OnnxccError("its arrays hold different numbers of samples", where=path,
                          hint="give every input the same leading count")
    n = counts.pop()
    if n is None:
        return [list(arrays)]
    return [[x[i].reshape(spec.shape) for x, spec in zip(arrays, specs)] for i in range(n)]


def samples(path, specs, limit=None):
    """The samples of the data set ``path`` for a model whose inputs are ``specs``
    (:class:`Input`), in order, at most ``limit``; and its labels (None: none given).
    One line when there is none or one does not fit the model."""
    files(path)  # one line when there is no such folder or file
    names = ([s.name for s in specs], [])
    if is_test_case(path):
        entries = [path]
    elif os.path.isdir(path):
        entries = _entries(path)
    else:
        entries = [path]
    found = []
    if not specs and entries == [path] and is_test_case(path):
        return [[]], None  # a model without inputs: its one run
    for entry in entries:
        if limit is not None and len(found) >= limit:
            break
        if os.path.isdir(entry):
            found.append(check_sample(entry, read_folder(entry, names)[0], specs))
        else:
            found += _split(entry, read_numpy(entry, names[0]), specs)
    if not found:
        raise OnnxccError("holds no samples", where=path,
                          hint=f"give {KINDS}, or a folder of them")
    found = found[:limit]
    labels = os.path.join(path, LABELS) if os.path.isdir(path) else None
    if not labels or not os.path.isfile(labels):
        return found, None
    values = np.asarray(read_numpy(labels, ["labels"])[0]).reshape(-1)
    if values.dtype.kind not in "iu" or values.size < len(found):
        raise OnnxccError(f"holds {values.size} {values.dtype.name} values for "
                          f"{len(found)} samples", where=labels,
                          hint="give one integer class index per sample, in sample order")
    return found, values[:len(found)].astype(np.int64)


def model_inputs(model, input_shapes=None):
    """The :class:`Input` list of an ONNX ``model`` (initializers are not inputs);
    ``input_shapes`` fixes symbolic dimensions by name."""
    inits = {i.name for i in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = (input_shapes or {}).get(vi.name) or [d.dim_value for d in t.shape.dim]
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)).name
        specs.append(Input(vi.name, dtype, tuple(int(d) for d in shape)))
    return specs


def random_sample(specs, rng):
    """One sample of seeded random inputs for ``specs`` (what verify feeds when it has no
    data, and calibration without a data set): floats uniform in [-1, 1], booleans, other
    integers in [0, 10)."""
    arrays = []
    for spec in specs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, spec.shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, spec.shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 10, spec.shape).astype(dtype))
    return arrays
