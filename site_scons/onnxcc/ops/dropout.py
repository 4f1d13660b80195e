"""Dropout: the optimizer removes it at inference; in training mode it is random."""

from . import unsupported


def lower_dropout(node, graph):
    raise unsupported(node, "training mode (random dropout)")


LOWERINGS = {"Dropout": lower_dropout}
