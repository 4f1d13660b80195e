"""Each stage depends on the compiler modules it runs, computed from the import graph
(onnxcc/build/module_deps.py): the static graph must hold every module Python really imports
(a module missing from it would leave stale outputs), and no more."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from onnxcc.build import module_deps
from onnxcc.plan import stage as planner
from onnxcc.core.report import human_bytes

pytestmark = pytest.mark.unit

# the modules the SCons tool's stages call into (site_tools/onnxcc.py)
STAGE_MODULES = ["onnxcc.importer.stage", "onnxcc.passes.stage", "onnxcc.tactics.stage", "onnxcc.verbs.autotune",
                 "onnxcc.plan.stage", "onnxcc.codegen.stage", "onnxcc.verbs.integration",
                 "onnxcc.footprint", "onnxcc.verbs.verify", "onnxcc.verbs.bench"]


def imported_by_python(module):
    """The onnxcc modules a fresh interpreter has loaded after importing ``module``."""
    code = ("import importlib, sys; sys.path.insert(0, 'site_scons'); "
            f"importlib.import_module({module!r}); "
            "print(' '.join(m for m in sys.modules if m.split('.')[0] == 'onnxcc'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("module", STAGE_MODULES)
def test_import_graph_is_what_python_imports(module):
    assert module_deps.closure(module) == imported_by_python(module)


def test_registry_folder_and_relative_imports_are_followed():
    importer = module_deps.closure("onnxcc.importer.stage")
    # ops/__init__ imports its folder with pkgutil: every operator module is in
    assert {"onnxcc.ops.conv.tactics", "onnxcc.ops.recurrent", "onnxcc.ops.dft"} <= importer
    planner = module_deps.closure("onnxcc.plan.stage")
    # `from .memory import liveness, schedule as scheduling`: the submodules and the package
    assert {"onnxcc.plan", "onnxcc.plan.liveness", "onnxcc.plan.schedule"} <= planner


def test_report_code_is_apart_from_the_compiler():
    report = module_deps.closure("onnxcc.footprint")
    assert "onnxcc.importer.stage" not in report and "onnxcc.ops" not in report
    files = module_deps.files_of(["onnxcc.footprint"])
    assert module_deps.module_file("onnxcc.footprint") in files
    assert len(files) < 10


def _a_stage(path):
    return planner.summary(_a_helper(path))


def _a_helper(path):
    return human_bytes(len(path))


def test_functions_name_the_modules_they_reach():
    # planner through a module name, report through a function, via a helper beside it
    assert module_deps.modules_used_by(_a_stage) == {"onnxcc.plan.stage", "onnxcc.core.report"}


def test_import_statements_are_cached_by_the_text_of_the_module(tmp_path, monkeypatch):
    cache = tmp_path / ".onnxcc" / "module_deps.json"

    def new_process():
        monkeypatch.setattr(module_deps, "_CACHE", {"entries": None, "changed": False, "file": None})
        module_deps.keep_cache_in(tmp_path)
    new_process()
    path = module_deps.module_file("onnxcc.plan.stage")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fresh = module_deps._statements(path, text)
    assert [1, None, ["liveness"]] in fresh
    module_deps._save_cache()
    assert json.loads(cache.read_text())[os.path.join("plan", "stage.py")][1] == fresh
    # the next process reads the file instead of parsing; an edited module is parsed again
    new_process()
    assert module_deps._statements(path, text) == fresh and not module_deps._CACHE["changed"]
    edited = module_deps._statements(path, text + "\nfrom . import report\n")
    assert edited == fresh + [[1, None, ["report"]]] and module_deps._CACHE["changed"]
    # a cache file that is not ours is ignored
    cache.write_text("[1, 2]")
    new_process()
    assert module_deps._statements(path, text) == fresh
