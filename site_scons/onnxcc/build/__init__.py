"""The SCons side: the builders of every stage, their scanners and emitters, the
toolchain environments, and the Python-import dependencies of each stage."""
