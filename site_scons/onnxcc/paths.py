"""Where the compiler's own files are: the repository this package sits in."""

import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATES_DIR = os.path.join(REPO_ROOT, "templates")
KERNEL_TEMPLATES_DIR = os.path.join(TEMPLATES_DIR, "kernels")
RUNTIME_DIR = os.path.join(REPO_ROOT, "runtime")
TARGETS_DIR = os.path.join(REPO_ROOT, "targets")
TOOLCHAINS_DIR = os.path.join(REPO_ROOT, "toolchains")


def kernel_template(template):
    return os.path.join(KERNEL_TEMPLATES_DIR, f"{template}.c.mako")
