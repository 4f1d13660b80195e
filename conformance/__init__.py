"""ONNX's own backend tests run through onnxcc: ``python -m conformance`` (see README.md).

``cases`` writes each test case (model + test_data_set_N folders) from the installed onnx
package, ``runner`` verifies batches of them through the SCons pipeline in parallel,
``report`` classifies every result and writes the report.
"""
