"""The options of a command-line build, one table for both front ends: SCons' ``name=value``
(build/main.py: the checkout's SConstruct and the package's) and the ``onnxcc`` command's
``--name value`` (cli/). A ``path`` is relative to where the build runs."""

from dataclasses import dataclass

from onnxcc.target import describe_targets, known_boards


@dataclass(frozen=True)
class Option:
    name: str
    help: str
    default: object  # a str; a bool for kind "bool"
    kind: str = "text"  # text, path or bool


OPTIONS = (
    Option("target", f"the CPU to build for (other accepted names in brackets): {describe_targets()}",
           "x86_64"),
    Option("board", "the part you ship on, which sets target= and the memory the fit is checked "
                    f"against (`onnxcc targets` lists them): {', '.join(known_boards())}", ""),
    Option("float_abi", "Arm targets: hard, softfp (floats passed in integer registers, computed "
                        "on the FPU) or soft (no FPU instruction), for a firmware built so "
                        "(default: the target's)", ""),
    Option("model", "the ONNX model to compile", "models/kws.onnx", "path"),
    Option("name", "C name of the model (default: the model file's stem)", ""),
    Option("weights_section", "linker section of the weights (default: with the other constants)",
                              ""),
    Option("weights_format", "bin (a binary file included by an assembler file: fast to build) or c"
                             " (C arrays, for toolchains without a GNU assembler)", "bin"),
    Option("input_shape", "fix symbolic input dimensions: NAME:1x3x96x96[,NAME:...]", ""),
    Option("testdata", "verify with this test_data_set_N folder, .npy or .npz file of inputs "
                       "instead of random inputs", "", "path"),
    Option("seed", "seed of verify's random inputs", "0"),
    Option("data", "validate: the data set (a folder of .npy/.npz files or test_data_set_N folders,"
                   " labels.npy optional)", "", "path"),
    Option("samples", "validate: at most this many samples of data= (0: all)", "0"),
    Option("reference", "validate: the float model to measure against (default: the one "
                        "quantize=int8 started from)", "", "path"),
    Option("quantize", "int8: quantize the float model first (onnxruntime's static quantization: "
                       "int8 activations, symmetric int8 weights) and compile that", ""),
    Option("calibration", "quantize: the data set to calibrate on (a folder of .npy/.npz files or "
                          "test_data_set_N folders; default: testdata=, else random inputs)",
                          "", "path"),
    Option("calibrate", "quantize: calibration method, minmax, entropy or percentile", "minmax"),
    Option("per_channel", "quantize: one weight scale per output channel", True, "bool"),
    Option("keep_float", "quantize: nodes left in float, NAME[,NAME...]", ""),
    Option("io_dtype", "float (the model's) or int8: the caller quantizes the inputs and "
                       "dequantizes the outputs (the header gives their scales and zero points)",
                       "float"),
    Option("flash", "flash of the chip you ship on (e.g. 1M), instead of the target board's", ""),
    Option("ram", "RAM of the chip you ship on (e.g. 256K), instead of the target board's", ""),
    Option("fuse", "fuse elementwise ops into the kernel before them", True, "bool"),
    Option("opt", "speed (fastest kernels by the cost model) or size (smallest kernels)", "speed"),
    Option("tactic", "force kernel tactics: OP:TACTIC or NODE:TACTIC[,...], or a JSON file", ""),
    Option("autotune", "measure the tactics on the target; later builds reuse the choice", False, "bool"),
    Option("planner", "memory placement algorithm: auto, greedy_by_size, greedy_by_conflicts, "
                      "annealing, exact", "auto"),
    Option("schedule", "node order: memory (the one needing least memory) or graph (the model's)",
                       "memory"),
    Option("pools", "memories to plan in, filled in order: NAME[:SIZE],... (e.g. dtcm:64K,sram)",
                    ""),
    Option("io", "where inputs and outputs live: caller (its own buffers) or arena", "caller"),
    Option("patches", "run the first layers patch by patch to fit the RAM: auto (when the arena "
                      "does not fit), off, N (N x N patches) or RxC (e.g. 4x2)", "auto"),
    Option("bands", "run interior blocks in row bands that fit the L2 cache: auto (where it pays, "
                    "on targets with an l2_bytes), off, or N (every block in N bands)", "auto"),
    Option("baseline", "size-baseline writes, size-check reads this JSON file", "", "path"),
    Option("tolerance", "size-check: growth allowed per category, in percent", "0"),
    Option("size_floor", "size-check: a category fails only when it also grows by more than this "
                         "many bytes (totals: by the tolerance alone)", "256"),
    Option("sanitize", "x86_64: build with AddressSanitizer + UBSan into build/x86_64-sanitize/; "
                       "verify fails on any report", False, "bool"),
    Option("verbose", "show full command lines", False, "bool"),
    Option("cache", "shared build cache folder (SCons CacheDir): every stage's outputs, import to "
                    "ELF, are taken from it when their inputs match", "", "path"),
    Option("launcher", "run every C compile through this program (ccache, distcc)", ""),
    Option("build_dir", "where build/<target>/<name>/ goes", "build", "path"),
)

#: what ``scons [options] VERB`` (``onnxcc VERB``) does beyond building the library
VERBS = (
    ("verify", "build, run on the target (natively or in qemu), compare with onnxruntime"),
    ("validate", "run every sample of data= on the target: accuracy, rmse, mae, l2r, cosine "
                 "against the float (and int8) model under onnxruntime, and per layer"),
    ("bench", "the median cost of one inference: ns on the host, instructions in qemu "
              "(Cortex-M, RISC-V)"),
    ("profile", "per node in schedule order: op, tactic, MACs, time or instructions, share, "
                "live arena bytes (profile.json; an instrumented copy, never the library)"),
    ("size-baseline", "write the flash/RAM footprint to baseline=FILE"),
    ("size-check", "fail when a category grew beyond baseline=FILE by more than tolerance= "
                   "and size_floor=, or the total by more than tolerance="),
)
