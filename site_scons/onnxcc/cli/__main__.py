"""python -m onnxcc.cli: the onnxcc command."""

import sys

from onnxcc.cli import main

sys.exit(main())
