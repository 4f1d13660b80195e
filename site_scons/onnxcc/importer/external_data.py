"""External data of a user's model: read only from regular files inside the model's folder.

A model file is untrusted, and so is every ``location`` it names: an absolute path, a
``..``, a symbolic link that resolves out of the folder, a directory or a device would let
a model read any file of the build host into the generated C. Each external tensor is
checked -- location, offset, length against the file's size, bytes against the tensor's
limit -- before one byte is read; then its bytes are read here and put into the tensor as
``raw_data`` (onnx's own loader is not used: it would read first and complain later, with
its own exception types).
"""

import os
import stat

from onnx import TensorProto

from onnxcc.core.errors import OnnxccError
from onnxcc.core.limits import MAX_TENSOR_BYTES, model_tensors


def external_tensors(model):
    """Every tensor of ``model`` whose data is in a side file."""
    return [t for t in model_tensors(model) if t.data_location == TensorProto.EXTERNAL]


def _number(entries, key, tensor, where, default):
    text = entries.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OnnxccError(f"tensor '{tensor.name}': external data {key} '{text}' is not a "
                          "byte count", where=where, hint="re-export the model")
    return value


def _side_file(tensor, location, folder, where):
    """The real path of ``location``, which must be a regular file inside ``folder``."""
    def refuse(why):
        return OnnxccError(f"tensor '{tensor.name}': external data file '{location}' {why}",
                           where=where, hint="external data must be a file in the model's folder, "
                                             "named relative to it")
    if not location:
        raise refuse("is not named (no location)")
    if "\0" in location:
        raise refuse("has a NUL character in its name")
    if os.path.isabs(location) or location.startswith(("/", "\\")):
        raise refuse("is an absolute path")
    if ".." in location.replace("\\", "/").split("/"):
        raise refuse("leaves the model's folder ('..')")
    real = os.path.realpath(os.path.join(folder, location))
    if os.path.commonpath([real, folder]) != folder:
        raise refuse("resolves outside the model's folder (a symbolic link)")
    try:
        info = os.stat(real)
    except OSError:
        raise refuse("does not exist") from None
    if not stat.S_ISREG(info.st_mode):
        raise refuse("is not a regular file (a directory or a device)")
    return real, info.st_size


def load_external_data(model, model_path):
    """Check every external tensor of ``model`` (loaded with ``load_external_data=False``
    from ``model_path``) and read its bytes into it."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(model_path)))
    for tensor in external_tensors(model):
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        path, size = _side_file(tensor, location, folder, model_path)
        offset = _number(entries, "offset", tensor, model_path, 0)
        length = _number(entries, "length", tensor, model_path, max(size - offset, 0))
        if offset + length > size:
            raise OnnxccError(f"tensor '{tensor.name}': external data file '{location}' is too "
                              f"short ({size} bytes; the tensor needs bytes {offset} to "
                              f"{offset + length})", where=model_path,
                              hint="copy the complete side file next to the model")
        if length > MAX_TENSOR_BYTES:
            raise OnnxccError(f"tensor '{tensor.name}': {length} bytes of external data, more "
                              f"than the limit of {MAX_TENSOR_BYTES}", where=model_path)
        with open(path, "rb") as f:
            f.seek(offset)
            tensor.raw_data = f.read(length)
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT
