"""onnxcc: an ONNX model -> dependency-free C, one SCons build rule per stage.

The packages are layers, bottom first; a module imports only from its own package and from
the layers below it (tests/test_layers.py checks): a thing two stages share moves down.
"""

__version__ = "0.1.0"

LAYERS = (
    "core",       # graph IR, ONNX I/O, errors, files, C types and text, quantization math
    "target",     # target and toolchain descriptions, host CPU detection
    "ops",        # operator families: lowering to kernel calls, tactics, cost models
    "passes",     # graph rewrites and the optimize stage
    "importer",   # import stage: model file -> checked, normalized graph
    "quantize",   # quantize stage: float model + data set -> QDQ model (onnxruntime's tools)
    "tactics",    # tactics stage: one implementation per node
    "plan",       # plan stage: schedule, in-place forwarding, arena placement, patches
    "codegen",    # generate stage: kernel calls -> C sources and weights
    "footprint",  # ELF sizes, stack, memory fit, size gate
    "verbs",      # verify, validate, bench, profile, autotune, report, integration
    "build",      # the SCons builders, scanners, emitters and toolchain environments
    "cli",        # the onnxcc command: the command-line build as verbs and flags
)
