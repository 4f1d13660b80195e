"""Which files of the onnxcc package a piece of code runs: its import graph.

A build stage must depend on the compiler code it executes, and only on that, so that an
edit of the footprint report does not re-import and re-plan every model. The graph is
read from the source (``ast``), not by importing: every ``import`` and ``from ... import``
statement of a module (in functions too), relative or absolute, plus every module of a
package that imports its folder's modules dynamically (``pkgutil.iter_modules``, as
``ops/`` does). Importing ``a.b.c`` runs ``a`` and ``a.b`` too, so packages' ``__init__``
files are part of the set. Each module is parsed once per process.

Parsing the package's hundred modules took a fifth of a build that has nothing to do, so
a build keeps each module's import statements in its build folder (``keep_cache_in``:
``<build_dir>/.onnxcc/module_deps.json``, never in the source tree), under the SHA-256 of
the module's text: a module whose text changed is parsed again.
"""

import ast
import contextlib
import functools
import hashlib
import json
import os
import types

PACKAGE = __name__.partition(".")[0]
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_file(module):
    """The source file of ``module`` (``onnxcc.plan.pools``) in this package, or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = os.path.join(PACKAGE_DIR, *parts[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _parents(module):
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _resolve(module, is_package, level, name):
    """The absolute module name a ``from ... import`` statement names (``level`` dots,
    then ``name``, or None)."""
    if not level:
        return name
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[:len(package) - (level - 1)]
    return ".".join(base + ([name] if name else []))


#: a registry loaded from the package's own folder
def _import_statements(statements):
    """The import statements among ``statements`` and the blocks inside them (functions,
    classes, if, try, with, ...); expressions, the bulk of a module, are not walked."""
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, block, None)
            if isinstance(inner, list):
                yield from _import_statements(inner)


#: the import statements of every module parsed before: {file relative to the package:
#: [SHA-256 of its text, [[level or None for `import`, module or None, [names]], ...]]},
#: and the file they are kept in (None: parsed in every process)
_CACHE = {"entries": None, "changed": False, "file": None}


def keep_cache_in(folder):
    """Keep the parsed import statements in ``folder`` (a build folder) from now on; the
    first folder named in a process is the one kept."""
    if _CACHE["file"] is None:
        _CACHE["file"] = os.path.join(os.path.abspath(folder), ".onnxcc", "module_deps.json")


def _cached_entries():
    if _CACHE["entries"] is None:
        try:
            with open(_CACHE["file"] or "", encoding="utf-8") as f:
                entries = json.load(f)
        except (OSError, ValueError):
            entries = {}
        _CACHE["entries"] = entries if isinstance(entries, dict) else {}
    return _CACHE["entries"]


def _statements(path, text):
    """The import statements of the module at ``path`` (its text ``text``): [level (None:
    ``import a.b``), module, names]."""
    key = os.path.relpath(path, PACKAGE_DIR)
    digest = hashlib.sha256(text.encode()).hexdigest()
    entry = _cached_entries().get(key)
    if isinstance(entry, list) and len(entry) == 2 and entry[0] == digest:
        return entry[1]
    statements = [[None, None, [alias.name for alias in node.names]]
                  if isinstance(node, ast.Import) else
                  [node.level, node.module, [alias.name for alias in node.names]]
                  for node in _import_statements(ast.parse(text, path).body)]
    _cached_entries()[key] = [digest, statements]
    _CACHE["changed"] = True
    return statements


def _save_cache():
    """Write the cache if a module was parsed and a build named its folder (atomically;
    where the folder cannot be written, the next process parses again)."""
    path = _CACHE["file"]
    if not _CACHE["changed"] or path is None:
        return
    _CACHE["changed"] = False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(_CACHE["entries"], f, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)


@functools.cache
def direct_imports(module):
    """The modules of this package that ``module`` imports itself (not transitively)."""
    path = module_file(module)
    is_package = os.path.basename(path) == "__init__.py"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = set()
    for level, name, names in _statements(path, text):
        if level is None:
            found.update(names)
        else:
            base = _resolve(module, is_package, level, name)
            found.add(base)
            # `from .memory import liveness`: a submodule, or just a name (then no file)
            found.update(f"{base}.{alias}" for alias in names)
    return frozenset(m for m in found if module_file(m) and m != module)


@functools.cache
def closure(module):
    """``module`` and every module of this package it imports, directly or not."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen or not module_file(m):
            continue
        seen.add(m)
        todo.extend(direct_imports(m))
        todo.extend(_parents(m))
    _save_cache()
    return frozenset(seen)


def files_of(modules):
    """The sorted source files of ``modules`` and of everything they import."""
    return sorted({module_file(m) for module in modules for m in closure(module)})


def modules_used_by(function):
    """The modules of this package that ``function`` reaches through the global names it
    uses (``importer.run``, ``human_bytes``, ...), following the helper functions of its
    own module that it calls."""
    found, seen, todo = set(), set(), [function]
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for name in _names(fn.__code__):
            obj = fn.__globals__.get(name)
            if isinstance(obj, types.FunctionType) and obj.__globals__ is fn.__globals__:
                todo.append(obj)  # a helper beside it
            elif isinstance(obj, types.ModuleType):
                found.add(obj.__name__)
            elif getattr(obj, "__module__", None):
                found.add(obj.__module__)
    return {m for m in found if module_file(m)}


def _names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # nested functions, comprehensions
            names |= _names(const)
    return names
