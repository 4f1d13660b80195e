"""Where the compiler's own files are: in the package (templates, the C runtime, target and
toolchain files: the same folders in a checkout and in an installed wheel), and the
checkout it may sit in (its SConstruct, models and harnesses)."""

import os
import re

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the checkout (site_scons/onnxcc's grandparent); an installed package has none
REPO_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
TEMPLATES_DIR = os.path.join(PACKAGE_DIR, "templates")
KERNEL_TEMPLATES_DIR = os.path.join(TEMPLATES_DIR, "kernels")
RUNTIME_DIR = os.path.join(PACKAGE_DIR, "runtime")
TARGETS_DIR = os.path.join(PACKAGE_DIR, "targets")
TOOLCHAINS_DIR = os.path.join(PACKAGE_DIR, "toolchains")
BOARDS_DIR = os.path.join(PACKAGE_DIR, "boards")


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
