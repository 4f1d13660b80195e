"""SCons tool ``onnxcc``: one build rule per compiler stage.

    env.Tool('onnxcc', toolpath=['path/to/onnxcc/site_scons/site_tools'])
    lib, include = env.OnnxModel('kws', 'models/kws.onnx', target='armv7')
    env.Program('firmware.elf', sources, CPPPATH=[include], LIBS=[lib, 'm'])

``OnnxModel`` returns an :class:`OnnxModelNodes` (``lib``, ``include``, the Make/CMake
fragments, ``size``, ``verify`` ...) that unpacks as ``lib, include``; ``OnnxSharedArena``
declares one arena for several models; ``OnnxSizeGate`` the CI size gate.

Every stage's outputs are files that SCons signs by content, so a stage runs again only
when what it reads changed: a weights-only edit re-generates the weights file and re-links,
without re-planning memory or re-generating kernels. The compiler itself is the ``onnxcc``
package beside this folder; its ``build`` package holds the builders, this module only
adds them to an environment.
"""

import importlib.metadata
import importlib.util
import os
import sys

import SCons.Errors

# SCons runs a tool module as sys.modules[<tool name>], and this tool is named like the
# compiler package beside it: whether it is loaded by onnxcc's own SConstruct or, with
# toolpath=, by another project's, sys.modules["onnxcc"] is this module at this point (again
# each time the tool is loaded). Put the package back under its name, from its own folder;
# its submodules are then found through the package's path, whatever sys.path holds (SCons
# restores sys.path after loading a tool).
_SITE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if getattr(sys.modules.get("onnxcc"), "__path__", None) is None:
    _spec = importlib.util.spec_from_file_location(
        "onnxcc", os.path.join(_SITE, "onnxcc", "__init__.py"))
    sys.modules["onnxcc"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["onnxcc"])

# (plain Python: these load without onnxcc's dependencies)
from onnxcc.core.paths import REPO_ROOT  # noqa: E402

try:
    from onnxcc.build.firmware import OnnxSharedArena, OnnxSizeGate
    from onnxcc.build.model import OnnxModel
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
            f"onnxcc: {problem} (run ./setup.sh, or pip install -r {REPO_ROOT}/requirements.txt "
            "into the Python that runs SCons)")
    env.AddMethod(OnnxModel, "OnnxModel")
    env.AddMethod(OnnxSharedArena, "OnnxSharedArena")
    env.AddMethod(OnnxSizeGate, "OnnxSizeGate")
    env.SetDefault(ONNXCC_REPO=REPO_ROOT)
    env["ONNXCC_PYTHON_DEPS"] = _python_deps()


def exists(env):
    """Whether onnxcc can build here: the compiler package and the Python packages its
    stages run (onnx, onnxruntime, numpy, Mako, pyelftools) import in SCons' Python."""
    return _unusable() is None
