"""Where the compiler's own files are: the repository this package sits in."""

import os
import re

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
TEMPLATES_DIR = os.path.join(REPO_ROOT, "templates")
KERNEL_TEMPLATES_DIR = os.path.join(TEMPLATES_DIR, "kernels")
RUNTIME_DIR = os.path.join(REPO_ROOT, "runtime")
TARGETS_DIR = os.path.join(REPO_ROOT, "targets")
TOOLCHAINS_DIR = os.path.join(REPO_ROOT, "toolchains")


def kernel_template(template):
    return os.path.join(KERNEL_TEMPLATES_DIR, f"{template}.c.mako")


def kernel_template_files(template):
    """A kernel template and the template libraries it uses (``<%namespace file=...>``)."""
    files, todo = [], [kernel_template(template)]
    while todo:
        path = todo.pop()
        if path in files:
            continue
        files.append(path)
        with open(path) as f:
            todo += [os.path.join(TEMPLATES_DIR, lib)
                     for lib in re.findall(r'<%namespace[^>]*\bfile="/?([^"]+)"', f.read())]
    return files
