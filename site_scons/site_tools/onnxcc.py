"""SCons tool ``onnxcc`` for a checkout: ``env.Tool('onnxcc', toolpath=['<checkout>/site_scons/site_tools'])``.

The compiler is the ``onnxcc`` package beside this folder; onnxcc/build/tool.py is the tool
(an installed package gives it without a toolpath: ``from onnxcc.build.tool import generate``).
"""

import importlib.util
import os
import sys

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

from onnxcc.build.tool import exists, generate  # noqa: E402,F401 (SCons calls them)
