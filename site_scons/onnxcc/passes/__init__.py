"""Optimization passes: each module holds one function Graph -> Graph (in place).

``optimize`` runs them in the order that lets each see the previous one's result.
"""

from .accumulator_bits import accumulator_bits
from .fold_batchnorm import fold_batchnorm
from .fold_constants import fold_constants
from .fuse_activations import fuse_activations
from .fuse_channel_scale import fuse_channel_scale
from .fuse_elementwise import fuse_elementwise
from .fuse_layer_norm import fuse_layer_norm
from .fuse_matmul_add import fuse_matmul_add
from .fuse_residual_qadd import fuse_residual_qadd
from .legacy_broadcast import legacy_broadcast
from .params_to_attrs import params_to_attrs
from .pow_square import pow_square
from .qdq_to_qlinear import qdq_to_qlinear
from .quantize_before_reshape import quantize_before_reshape
from .remove_noops import remove_noops


def optimize(graph, where, fuse=True):
    legacy_broadcast(graph)
    remove_noops(graph)
    quantize_before_reshape(graph)
    qdq_to_qlinear(graph)
    fold_constants(graph, where)
    params_to_attrs(graph, where)
    pow_square(graph)
    fuse_matmul_add(graph)
    fold_batchnorm(graph)
    if fuse:
        fuse_layer_norm(graph)
        fuse_activations(graph)
        fuse_elementwise(graph)
        fuse_channel_scale(graph)
        fuse_residual_qadd(graph)
    graph.drop_unused_constants()
    accumulator_bits(graph)
    return graph
