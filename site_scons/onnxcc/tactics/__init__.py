"""Tactics stage (``stage.py``): one implementation per node, chosen by the ops' cost
models (or forced, or tuned), recorded in ``tactics.json``."""
