"""Fuzzers that guard onnxcc's correctness and robustness.

    python -m fuzz.graphs      random valid graphs, built for every tactic, compared with onnxruntime
    python -m fuzz.malformed   mutated model files: every failure must be one clear line
    python -m fuzz.coverage    which fast branches the graphs' kernels take (nothing built)

Both run a seeded sample in CI (tests/test_fuzz_*.py) and long campaigns on demand.
"""

import os
import sys

# the compiler package, as SCons finds it: every fuzzer imports onnxcc
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))
