"""weights_format=bin (the default: one binary file, included by an assembler file) and
weights_format=c (C arrays) build the same model: the same bytes under every weight
symbol, the same ELF symbol sizes and flash accounting, the same outputs on the target."""

import json

import pytest
from elftools.elf.elffile import ELFFile

from conftest import in_qemu, run_scons
from onnxcc.target import load_target, run_captured


def weight_symbols(elf_path, name):
    """{symbol: (bytes, section name)} of the model's weight arrays in a linked ELF."""
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        symbols = {}
        for sym in elf.get_section_by_name(".symtab").iter_symbols():
            if sym.name.startswith(f"{name}_w_"):
                assert sym["st_info"]["type"] == "STT_OBJECT", sym.name
                section = elf.get_section(sym["st_shndx"])
                at = sym["st_value"] - section["sh_addr"]
                symbols[sym.name] = (section.data()[at:at + sym["st_size"]], section.name)
        return symbols


def build(tmp_path, fmt, target, *args):
    folder = tmp_path / fmt
    r = run_scons(f"build_dir={folder}", f"target={target}", "model=models/kws.onnx",
                  f"weights_format={fmt}", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in r.stdout + r.stderr
    return folder / target / "kws"


@pytest.mark.parametrize("target", ["x86_64", *in_qemu("armv7")])
@pytest.mark.slow
def test_bin_and_c_build_the_same_model(tmp_path, target):
    out = {fmt: build(tmp_path, fmt, target, "verify") for fmt in ("bin", "c")}
    assert (out["bin"] / "kws_weights.S").exists() and not (out["bin"] / "kws_weights.c").exists()
    assert (out["c"] / "kws_weights.c").exists() and not (out["c"] / "kws_weights.bin").exists()
    # every weight array: the same bytes and size, in flash (a read-only section)
    arrays = {fmt: weight_symbols(out[fmt] / "footprint" / "kws_footprint", "kws") for fmt in out}
    assert len(arrays["bin"]) > 10
    assert {s: v[0] for s, v in arrays["bin"].items()} == {s: v[0] for s, v in arrays["c"].items()}
    # flash accounting: every category but the bytes between symbols (alignment padding,
    # which depends on the order of the arrays: "other")
    sizes = {fmt: json.loads((out[fmt] / "size.json").read_text())["flash"] for fmt in out}
    assert sizes["bin"]["weights"] == sum(len(data) for data, _ in arrays["bin"].values())
    for category in ("kernels", "runtime", "model", "weights", "libc"):
        assert sizes["bin"][category] == sizes["c"][category], category
    # the same outputs on the target, bit for bit (the harness prints them in hex)
    tgt = load_target(target)
    runs = [run_captured(tgt.run_command(str(out[fmt] / "verify" / "kws_harness")), timeout=300)
            for fmt in ("bin", "c")]
    assert runs[0].returncode == runs[1].returncode == 0
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.strip()


def test_bin_weights_go_to_the_named_section(tmp_path):
    out = build(tmp_path, "bin", "armv7", "weights_section=.extflash")
    arrays = weight_symbols(out / "footprint" / "kws_footprint", "kws")
    assert arrays and {section for _, section in arrays.values()} == {".extflash"}
    assert '.section ".extflash", "a", %progbits' in (out / "kws_weights.S").read_text()
    # the section holds exactly the binary file: every array at its offset there
    with open(out / "footprint" / "kws_footprint", "rb") as f:
        section = ELFFile(f).get_section_by_name(".extflash")
        assert section.data() == (out / "kws_weights.bin").read_bytes()


def test_unknown_weights_format_is_one_line(scons):
    r = scons("model=models/kws.onnx", "weights_format=hex")
    assert r.returncode != 0
    assert "weights_format=hex is not one of bin, c" in r.stderr and "Traceback" not in r.stderr
