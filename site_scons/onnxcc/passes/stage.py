"""Optimize stage: imported graph -> optimized graph (constants folded, BN folded,
activations fused, no-ops gone). The passes live in ``passes/``, one per module."""

from onnxcc.core.collector import paused
from onnxcc.core.onnx_io import load_graph, save_graph

from . import optimize


@paused()
def run(graph_path, graph_out, weights_out, fuse=True, source=None):
    """Optimize the graph at ``graph_path``; errors name ``source`` (the user's model file)."""
    graph = optimize(load_graph(graph_path), source or graph_path, fuse=fuse)
    save_graph(graph, graph_out, weights_out)
    return graph
