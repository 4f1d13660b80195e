"""cache=DIR, a build cache shared by clones and machines (SCons CacheDir): a second clean
clone takes every stage's outputs, import to ELF, from the cache and runs none of them.
That needs every stage's signature free of the clone's absolute path."""

import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO, SCONS, in_qemu, run_scons

#: what a clean clone has: the files git tracks (and new ones it would), as they are now
def clean_clone(dest):
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src):  # (a deleted file is still listed until committed)
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))
    return dest


RETRIEVED = re.compile(r"^Retrieved `([^']+)' from cache$", re.M)
#: lines a stage prints when it runs (verify's run and the size table are not stages with
#: outputs to cache: they run, or print, on every build)
STAGE_LINE = re.compile(r"^\[(?!verify\]|report\])[a-z]+\]|gcc|ranlib", re.M)
#: files of a build folder that are not outputs of a stage
#: files a build writes that no stage produces: SCons' signatures, verify's report, the
#: compiler's import-graph cache (onnxcc/build/module_deps.py)
NOT_STAGE_OUTPUTS = {".sconsign.dblite", "report.json", "module_deps.json"}


def outputs(build):
    return {p.relative_to(build.parent).as_posix() for p in build.rglob("*")
            if p.is_file() and p.name not in NOT_STAGE_OUTPUTS}


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7", "x86-baremetal")])
@pytest.mark.slow
def test_second_clone_takes_every_stage_from_the_cache(tmp_path, target):
    cache = tmp_path / "shared-cache"
    first = clean_clone(tmp_path / "first")
    second = clean_clone(tmp_path / "elsewhere" / "second")
    args = [f"cache={cache}", f"target={target}", "model=models/kws.onnx", "verify"]

    r = run_scons(*args, cwd=first)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[import] kws" in r.stdout and not RETRIEVED.search(r.stdout)

    r = run_scons(*args, cwd=second)
    assert r.returncode == 0, r.stdout + r.stderr
    built = outputs(second / "build")
    assert {f"build/{target}/kws/{f}" for f in ("imported.onnx", "plan.json", "kws_kernels.c",
            "kws_weights.o", "libkws.a", "size.json", "footprint/kws_footprint",
            "verify/kws_harness")} <= built
    assert set(RETRIEVED.findall(r.stdout)) == built
    assert not STAGE_LINE.findall(r.stdout), r.stdout
    assert "[verify] kws on" in r.stdout  # verify still runs the program
    for f in built:
        assert (second / f).read_bytes() == (first / f).read_bytes(), f

    # no output, in the clone or in the cache, names the folder it was built in
    leaks = [p for p in list((first / "build").rglob("*")) + list(cache.rglob("*"))
             if p.is_file() and p.name != ".sconsign.dblite"
             and str(first).encode() in p.read_bytes()]
    assert not leaks


def test_cache_option_is_listed_in_help():
    r = run_scons("-h")
    assert re.search(r"^cache: shared build cache", r.stdout, re.M), r.stdout
    assert re.search(r"^launcher: ", r.stdout, re.M)


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")
def test_ccache_launcher_compiles_outside_the_signature(tmp_path):
    """launcher=ccache runs every compile through ccache (the .su files the report reads
    still appear), and a build without it takes the cache= entries of one with it."""
    repo = clean_clone(tmp_path / "repo")
    env = dict(os.environ, CCACHE_DIR=str(tmp_path / "ccache"))

    def scons(*args):
        r = subprocess.run(SCONS + ["-Q", f"cache={tmp_path / 'cache'}", "model=models/kws.onnx",
                                    *args], cwd=repo, env=env, capture_output=True, text=True,
                           timeout=900, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout + r.stderr
        return r

    r = scons("launcher=ccache", "verbose=1")
    assert re.search(r"^ccache gcc .*-fstack-usage", r.stdout, re.M), r.stdout
    assert len(list((repo / "build" / "x86_64" / "kws").glob("*.su"))) == 3  # (the weights: none)
    stats = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True,
                           text=True).stdout
    assert int(re.search(r"^cache_miss\t(\d+)", stats, re.M).group(1)) >= 4

    shutil.rmtree(repo / "build")
    r = scons()  # no launcher: the same signatures, so everything comes from the cache
    assert set(RETRIEVED.findall(r.stdout)) == outputs(repo / "build")
    assert not STAGE_LINE.findall(r.stdout), r.stdout


def test_the_cache_is_kept_in_the_build_folder_not_the_source_tree(tmp_path):
    """A build keeps its import-graph cache under its build_dir; nothing is written into
    the compiler's own folders."""
    before = set(glob.glob(os.path.join(REPO, "site_scons", "**", "*.json"), recursive=True))
    r = subprocess.run(SCONS + ["-Q", f"build_dir={tmp_path}", "model=models/tiny_cnn.onnx",
                                str(tmp_path / "x86_64" / "tiny_cnn" / "plan.json")],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / ".onnxcc" / "module_deps.json").is_file()
    assert set(glob.glob(os.path.join(REPO, "site_scons", "**", "*.json"), recursive=True)) <= before
