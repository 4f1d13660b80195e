"""python -m onnxcc.cli: the onnxcc command."""

import sys

from onnxcc.cli import main

if __name__ == "__main__":
    sys.exit(main())
