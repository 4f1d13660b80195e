"""The firmware examples, as the README tells a user to run them: a plain Makefile tree and
an SCons tree, each running two models on the Cortex-M4 board in QEMU through one shared
arena and checking the outputs against onnxruntime."""

import json
import os
import re
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

from conftest import REPO, SCONS, readme_sample

pytestmark = pytest.mark.emulated

EXTFLASH = 0x21000000  # where examples/firmware/firmware.ld maps section .model_weights


def make_run(build):
    return subprocess.run(["make", "-C", os.path.join(REPO, "examples", "firmware"), "run",
                           f"BUILD={build}", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)


def check_firmware_elf(elf_path, models_dir):
    """The shared arena is the larger model arena; the autoencoder's weights are in external
    flash and the keyword spotter's in internal flash."""
    arenas = [json.loads((models_dir / "armv7" / name / "plan.json").read_text())["arena_bytes"]
              for name in ("kws", "autoencoder")]
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        syms = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name}
        weights_section = elf.get_section_by_name(".model_weights")
        assert syms["shared_arena"]["st_size"] == max(arenas)
        ae_weights = [s for n, s in syms.items() if n.startswith("autoencoder_w_")]
        kws_weights = [s for n, s in syms.items() if n.startswith("kws_w_")]
        assert ae_weights and kws_weights
        assert all(elf.get_section(s["st_shndx"]).name == ".model_weights" for s in ae_weights)
        assert weights_section["sh_addr"] == EXTFLASH
        assert all(s["st_value"] < 0x400000 for s in kws_weights)  # internal flash (SSRAM1)


@pytest.mark.slow
def test_make_firmware_runs_and_matches_onnxruntime(tmp_path):
    build = tmp_path / "build"
    r = make_run(build)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "kws: 12 outputs match onnxruntime" in r.stdout
    assert "autoencoder: 640 outputs match onnxruntime" in r.stdout
    assert "firmware: all outputs match onnxruntime" in r.stdout
    check_firmware_elf(build / "firmware.elf", build / "onnxcc")
    # what the README shows it prints is what it prints
    shown = readme_sample("make -C examples/firmware run")
    assert len(shown) >= 5 and all(line in r.stdout.splitlines() for line in shown), \
        "README's firmware output is stale:\n" + r.stdout

    # the firmware really compares: one wrong expected value and it fails, naming it
    expected = build / "expected.c"
    text = expected.read_text()
    first = re.search(r"const float autoencoder_expected\[\d+\] = \{\n    ([^,]+)f,", text)
    wrong = f"{float(first.group(1)) + 0.5:.9g}"
    expected.write_text(text[:first.start(1)] + wrong + text[first.end(1):])
    r = make_run(build)
    assert r.returncode != 0
    assert "autoencoder: MISMATCH at output 0" in r.stdout and "firmware: FAILED" in r.stdout
    assert "kws: 12 outputs match onnxruntime" in r.stdout
    # onnxcc_model runs onnxcc again only when a model's flags (or file, or onnxcc) changed
    assert "onnxcc build" not in r.stdout
    flags = build / "onnxcc" / "armv7" / "autoencoder.flags"
    flags.write_text(flags.read_text().replace("--weights-section .model_weights", ""))
    r = subprocess.run(["make", "-C", os.path.join(REPO, "examples", "firmware"),
                        f"BUILD={build}", f"{build}/firmware.elf"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--weights-section .model_weights" in flags.read_text()
    assert "--name autoencoder" in r.stdout and "--name kws" not in r.stdout


def test_scons_firmware_runs_and_matches_onnxruntime(tmp_path):
    build = tmp_path / "build"
    r = subprocess.run(SCONS + ["-C", os.path.join(REPO, "examples", "scons_firmware"), "-Q",
                                "run", f"build_dir={build}"],
                       capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "firmware: all outputs match onnxruntime" in r.stdout
    check_firmware_elf(build / "firmware.elf", build / "onnxcc")
    # the arena onnxcc generated is the one the firmware links
    assert (build / "onnxcc" / "armv7" / "shared_arena" / "shared_arena.h").is_file()
