"""The pip package and the onnxcc command: a wheel built from the checkout, installed into a
fresh virtual environment, compiles and verifies a model from a folder that is not the
checkout; SCons and CMake firmware trees take onnxcc from the installed package."""

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from conftest import REPO
from onnx import numpy_helper

sys.path.insert(0, os.path.join(REPO, "site_scons"))
from onnxcc import cli  # noqa: E402
from onnxcc.build.options import OPTIONS, VERBS  # noqa: E402


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment with the wheel of this checkout installed (its Python
    packages at requirements.txt's versions)."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"  # a copy: building writes its egg-info beside the package
    src.mkdir()
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, item), src / item)
    shutil.copytree(os.path.join(REPO, "site_scons"), src / "site_scons",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    run = dict(capture_output=True, text=True, timeout=900)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp / "dist"), str(src)], **run)
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = (tmp / "dist").glob("onnxcc-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
    r = subprocess.run([str(tmp / "venv" / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", "-c", os.path.join(REPO, "requirements.txt"),
                        str(wheel)], **run)
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp / "work"  # not the checkout, nor beside it
    work.mkdir()
    shutil.copy(os.path.join(REPO, "models", "kws.onnx"), work / "kws.onnx")
    return tmp / "venv" / "bin", work


@pytest.mark.slow
@pytest.mark.emulated
def test_the_installed_command_verifies_from_any_folder(installed):
    bin_dir, work = installed
    r = subprocess.run([str(bin_dir / "onnxcc"), "verify", "kws.onnx", "--target", "cortex-m4",
                        "-o", "out"], cwd=work, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[verify] kws on armv7: 1 output(s)" in r.stdout and "MISMATCH" not in r.stdout
    assert (work / "out" / "armv7" / "kws" / "libkws.a").is_file()
    r = subprocess.run([str(bin_dir / "onnxcc"), "build", "missing.onnx"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "missing.onnx: no such model file" in r.stderr


@pytest.mark.slow
def test_an_scons_tree_takes_the_tool_from_the_installed_package(installed):
    bin_dir, work = installed
    tree = work / "firmware"
    tree.mkdir()
    shutil.copy(work / "kws.onnx", tree / "kws.onnx")
    (tree / "SConstruct").write_text(
        "from onnxcc.build.tool import generate as onnxcc\n"
        "env = Environment(tools=['default', onnxcc])\n"
        "lib, include = env.OnnxModel('kws', 'kws.onnx', target='x86_64')\n")
    r = subprocess.run([str(bin_dir / "python"), "-m", "SCons", "-Q"], cwd=tree,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tree / "build" / "x86_64" / "kws" / "libkws.a").is_file()


def _cmake_run(build):
    r = subprocess.run(["cmake", "--build", str(build), "--target", "run"], capture_output=True,
                       text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "firmware: all outputs match onnxruntime" in r.stdout, \
        r.stdout + r.stderr
    return r.stdout


def _scaled_weights(path, factor):
    """The model at ``path`` with its largest weight tensor scaled: another model, same shapes."""
    model = onnx.load(str(path))
    w = max(model.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * factor, w.name))
    onnx.save(model, str(path))


@pytest.mark.slow
@pytest.mark.emulated
def test_a_cmake_tree_adds_models_from_the_installed_package(installed):
    """examples/cmake_firmware, copied outside the checkout: onnxcc_add_model() and
    onnxcc::kws alone give the firmware its model, include folder and CPU flags; it runs in
    qemu and matches onnxruntime; a changed .onnx file is compiled again and relinked."""
    bin_dir, work = installed
    tree = work / "cmake_tree"
    for folder in ("firmware", "cmake_firmware"):
        shutil.copytree(os.path.join(REPO, "examples", folder), tree / "examples" / folder,
                        ignore=shutil.ignore_patterns("build"))
    (tree / "models").mkdir()
    for model in ("kws.onnx", "fc_autoencoder.onnx"):
        shutil.copy(os.path.join(REPO, "models", model), tree / "models" / model)
    cmake_dir = subprocess.run([str(bin_dir / "onnxcc"), "--cmake-dir"], capture_output=True,
                               text=True, check=True).stdout.strip()
    assert cmake_dir.startswith(str(bin_dir.parent))  # the installed package's, not the checkout's
    build = work / "cmake_build"
    r = subprocess.run(["cmake", "-S", str(tree / "examples" / "cmake_firmware"), "-B", str(build),
                        f"-Donnxcc_DIR={cmake_dir}"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    first = _cmake_run(build)
    lib = next(build.glob("onnxcc/armv7/kws/libkws.a"))
    before = lib.read_bytes()
    _scaled_weights(tree / "models" / "kws.onnx", 0.5)
    second = _cmake_run(build)
    assert "onnxcc: kws (cortex-m4)" in second and "onnxcc: autoencoder" not in second
    assert lib.read_bytes() != before
    scores = [line for line in (first, second) for line in line.splitlines() if line.startswith("kws: scores")]
    assert scores[0] != scores[1]
    # a bad model stops CMake's configure with onnxcc's one line
    (tree / "models" / "kws.onnx").write_bytes(b"not a model")
    r = subprocess.run(["cmake", str(build)], capture_output=True, text=True, timeout=900)
    assert r.returncode != 0 and "onnxcc_add_model(kws):" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.unit
def test_every_build_option_and_verb_is_a_flag_and_a_verb_of_the_command():
    parser = cli.parser()
    verbs = parser._subparsers._group_actions[0].choices
    assert set(verbs) == {v for v, _ in VERBS} | set(cli.EXTRA_VERBS) | {"targets"}
    flags = {a.dest for a in verbs["verify"]._actions}
    assert {o.name for o in OPTIONS} <= flags
    args = parser.parse_args(["profile", "m.onnx", "--target", "armv7", "--no-fuse", "-o", "b"])
    # only what differs from the defaults reaches SCons
    assert cli._scons_arguments(args) == ["model=m.onnx", "build_dir=b", "target=armv7", "fuse=0"]
    args = parser.parse_args(["quantize", "m.onnx", "--calibration", "data"])
    assert "quantize=int8" in cli._scons_arguments(args)


@pytest.mark.unit
def test_build_files_ask_the_command_for_targets_and_its_own_files(capsys):
    assert cli.main(["targets", "cortex-m4"]) == 0
    assert capsys.readouterr().out == "armv7\n"
    assert cli.main(["targets", "z80"]) == 2
    assert capsys.readouterr().err.startswith("onnxcc: error: unknown target 'z80'")
    for flag, found in (("--cmake-dir", "onnxccConfig.cmake"), ("--make-include", "")):
        with pytest.raises(SystemExit):
            cli.main([flag])
        path = os.path.join(capsys.readouterr().out.strip(), found)
        assert os.path.isfile(path.rstrip(os.sep)), path


def test_scons_from_elsewhere_reads_the_model_where_the_user_stands(tmp_path):
    """``scons -C <checkout> model=net.onnx`` from the folder holding net.onnx; a folder
    given as the model is one line."""
    shutil.copy(os.path.join(REPO, "models", "tiny_cnn.onnx"), tmp_path / "net.onnx")
    scons = [sys.executable, "-m", "SCons", "-C", REPO, "-Q", f"build_dir={tmp_path / 'b'}"]
    r = subprocess.run(scons + ["model=net.onnx"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "b" / "x86_64" / "net" / "libnet.a").is_file()
    r = subprocess.run(scons + ["model=."], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("a folder, not a model file (pass model=path/to/net.onnx)")


def test_export_gives_an_ide_the_sources_and_the_flags(tmp_path, monkeypatch):
    """`onnxcc export --sources DIR`: the folder compiles with the target's compiler alone,
    with the flags its README gives, warning-free."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(REPO, "models", "tiny_cnn.onnx"), "tiny.onnx")
    assert cli.main(["export", "tiny.onnx", "--target", "cortex-m4", "--sources", "ide"]) == 0
    ide = tmp_path / "ide"
    assert sorted(p.name for p in ide.iterdir()) == [
        "README.txt", "onnxcc_runtime.c", "onnxcc_runtime.h", "tiny.c", "tiny.h", "tiny_kernels.c",
        "tiny_kernels.h", "tiny_weights.c"]
    command = next(line.strip() for line in (ide / "README.txt").read_text().splitlines()
                   if line.strip().startswith("arm-none-eabi-gcc"))
    sources = sorted(p.name for p in ide.glob("*.c"))
    r = subprocess.run(command.replace("*.c", " ".join(sources)).split() + ["-Wall", "-Wextra", "-Werror"],
                       cwd=ide, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in ide.glob("*.o")) == [s[:-2] + ".o" for s in sources]
    assert cli.main(["export", "missing.onnx", "--sources", "ide"]) == 2
