"""The SCons tool ``onnxcc``: adds OnnxModel, OnnxSharedArena and OnnxSizeGate to an
environment. A firmware's SConstruct takes it from the installed package:

    from onnxcc.build.tool import generate as onnxcc
    env = Environment(tools=["default", onnxcc])

or, from a checkout, ``env.Tool("onnxcc", toolpath=["<checkout>/site_scons/site_tools"])``
(site_tools/onnxcc.py, which loads this module). ``OnnxModel`` returns an
:class:`OnnxModelNodes` (``lib``, ``include``, the Make/CMake fragments, ``size``,
``verify`` ...) that unpacks as ``lib, include``."""

import importlib.metadata

import SCons.Errors

try:
    from .firmware import OnnxSharedArena, OnnxSizeGate
    from .model import OnnxModel
except ImportError as e:  # a missing Python package: exists() says no, generate() which
    _IMPORT_ERROR = e
else:
    _IMPORT_ERROR = None

#: the Python packages (distributions) the stages run, whose versions sign every Python
#: stage: a build cache shared by machines never hands one's outputs to another whose
#: onnx or onnxruntime would have computed different ones
PYTHON_DEPS = ("onnx", "onnxruntime", "numpy", "Mako", "pyelftools")


def _python_deps():
    """``onnx==1.23.2 onnxruntime==...``; ValueError naming the packages not installed."""
    versions, missing = [], []
    for dist in PYTHON_DEPS:
        try:
            versions.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        raise ValueError(f"the Python package(s) {', '.join(missing)} are not installed")
    return " ".join(versions)


def _unusable():
    """Why this tool cannot work in this Python (None: it can)."""
    try:
        _python_deps()
    except ValueError as e:
        return str(e)
    if _IMPORT_ERROR is not None:
        return f"the onnxcc compiler does not import: {_IMPORT_ERROR}"
    return None


def generate(env):
    problem = _unusable()
    if problem:
        # (StopError: SCons prints the one line, without the frame it came from)
        raise SCons.Errors.StopError(
            f"onnxcc: {problem} (pip install onnxcc, or in a checkout ./setup.sh, into the "
            "Python that runs SCons)")
    env.AddMethod(OnnxModel, "OnnxModel")
    env.AddMethod(OnnxSharedArena, "OnnxSharedArena")
    env.AddMethod(OnnxSizeGate, "OnnxSizeGate")
    env["ONNXCC_PYTHON_DEPS"] = _python_deps()


def exists(env):
    """Whether onnxcc can build here: the compiler package and the Python packages its
    stages run (onnx, onnxruntime, numpy, Mako, pyelftools) import in SCons' Python."""
    return _unusable() is None
