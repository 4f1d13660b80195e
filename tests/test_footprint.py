"""Footprint measurement: categories of real ELFs, binutils `size` parity, stack, fit
check, size gate, and their tables."""

import json
import os
import shutil
import subprocess

import pytest

from onnxcc import footprint
from onnxcc.core.errors import OnnxccError
from onnxcc.footprint import fit, size_gate
from onnxcc.core.report import format_gate, format_table

# (id, compiler, flags, binutils prefix, has TLS)
TOOLCHAINS = [
    ("host", "gcc", [], "", True),
    ("cortex-m4", "arm-none-eabi-gcc",
     ["-mcpu=cortex-m4", "-mthumb", "--specs=rdimon.specs"], "arm-none-eabi-", False),
    ("rv32", "riscv64-unknown-elf-gcc",
     ["-march=rv32imafc", "-mabi=ilp32f", "--specs=picolibc.specs", "--oslib=semihost",
      "--crt0=semihost"], "riscv64-unknown-elf-", True),
]

# A fake model "m" laid out like a real build: glue, kernels, weights, runtime, footprint main.
SOURCES = {
    "m.c": r"""
int onnxcc_check(const void *const *inputs, void *const *outputs, void *arena);
void m_kconv_f32(const float *x, const float *w, float *y);
void m_kexp_f32(const float *x, float *y);
extern const float m_w_a[64];
int m_run(const void *const *inputs, void *const *outputs, void *arena)
{
    volatile int guard[6];
    guard[0] = onnxcc_check(inputs, outputs, arena);
    if (guard[0]) return guard[0];
    m_kconv_f32((const float *)inputs[0], m_w_a, (float *)arena);
    m_kexp_f32((const float *)arena, (float *)outputs[0]);
    return guard[5];
}
""",
    "m_kernels.c": r"""
#include <math.h>
void m_kconv_f32(const float *x, const float *w, float *y)
{
    volatile float acc[100];
    for (int i = 0; i < 100; i++) acc[i] = x[i % 16] * w[i % 64];
    for (int i = 0; i < 32; i++) y[i] = acc[i] + acc[99 - i];
}
void m_kexp_f32(const float *x, float *y)
{
    volatile float t[20];
    for (int i = 0; i < 20; i++) t[i] = expf(x[i]);
    for (int i = 0; i < 8; i++) y[i] = t[i] + t[19 - i];
}
""",
    "m_weights.c": r"""
const float m_w_a[64] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17};
""",
    "onnxcc_runtime.c": r"""
int onnxcc_check(const void *const *inputs, void *const *outputs, void *arena)
{
    return !inputs || !outputs || !arena;
}
""",
    "main.c": r"""
int m_run(const void *const *inputs, void *const *outputs, void *arena);
static float m_footprint_arena[128];
static float m_footprint_input0[16];
static float m_footprint_output0[8];
static float m_footprint_output1[4];
int counter = 3;
int main(void)
{
    const void *inputs[] = {m_footprint_input0};
    void *outputs[] = {m_footprint_output0, m_footprint_output1};
    counter += m_run(inputs, outputs, m_footprint_arena);
    return (int)m_footprint_output0[0] + counter;
}
""",
}
LIBRARY = ["m.c", "m_kernels.c", "m_weights.c", "onnxcc_runtime.c"]

# Sections that exercise every Berkeley rule: read-only NOBITS (text), writable+exec (text),
# writable NOBITS (bss), init arrays (data), TLS data/bss where the target has TLS.
EDGES = r"""
__asm__(".section .ro_nobits,\"a\",%nobits\n.space 64\n"
        ".section .ramfunc,\"awx\",%progbits\n.space 12\n"
        ".section .w_nobits,\"aw\",%nobits\n.space 40\n"
        ".text\n");
int d = 5;
int b[50];
const int r[30] = {1};
static void init(void) { d++; }
__attribute__((section(".init_array"), used)) static void (*init_p)(void) = init;
TLS
int main(void) { return d + b[1] + r[2] TLSUSE; }
"""


def _tool(toolchain):
    _, cc, flags, prefix, tls = toolchain
    if not shutil.which(cc):
        pytest.skip(f"{cc} not installed")
    return cc, flags, prefix, tls


def _run(cmd, cwd):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return done.stdout


def _size(prefix, path):
    """(text, data, bss) printed by binutils size."""
    out = _run([prefix + "size", str(path)], cwd=os.path.dirname(path)).splitlines()
    assert out[0].split()[:3] == ["text", "data", "bss"]
    text, data, bss = out[1].split()[:3]
    return {"text": int(text), "data": int(data), "bss": int(bss)}


def _nm_sizes(prefix, path):
    """{symbol: size} of defined symbols with a size, as binutils nm prints them (summed
    over the local symbols of one name)."""
    out = _run([prefix + "nm", "-S", "--defined-only", str(path)], cwd=os.path.dirname(path))
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = sizes.get(parts[3], 0) + int(parts[1], 16)  # locals may repeat
    return sizes


@pytest.fixture(scope="module", params=TOOLCHAINS, ids=[t[0] for t in TOOLCHAINS])
def model_elf(request, tmp_path_factory):
    """The fake model's footprint ELF built with one toolchain: (elf, su paths, prefix,
    the footprint program's own objects, the command of a relocatable link)."""
    cc, flags, prefix, _ = _tool(request.param)
    work = tmp_path_factory.mktemp(request.param[0])
    for name, text in SOURCES.items():
        (work / name).write_text(text)
    common = [cc, *flags, "-O1", "-ffunction-sections", "-fdata-sections"]
    _run([*common, "-fstack-usage", "-c", *LIBRARY, "main.c"], cwd=work)
    objects = [name[:-2] + ".o" for name in LIBRARY] + ["main.o"]
    _run([*common, "-Wl,--gc-sections", "-o", "m_footprint.elf", *objects, "-lm"], cwd=work)
    sus = [str(work / (name[:-2] + ".su")) for name in LIBRARY]
    relocatable = [cc, *(f for f in flags if not f.startswith("--")), "-nostdlib", "-r"]
    return work / "m_footprint.elf", sus, prefix, [str(work / "main.o")], relocatable


# --------------------------------------------------------------------------- measure

def test_categories_of_a_real_model(model_elf):
    elf, sus, prefix, program = model_elf[:4]
    sizes = footprint.measure(str(elf), "m", sus, program)
    nm = _nm_sizes(prefix, elf)
    flash, ram = sizes["flash"], sizes["ram"]

    assert list(sizes) == ["model", "flash", "ram", "elf", "symbols"]
    assert list(flash) == ["kernels", "runtime", "model", "weights", "libc", "other", "total"]
    assert list(ram) == ["arena", "io", "data", "bss", "stack", "total", "stack_exact"]
    assert sizes["model"] == "m"
    assert flash["kernels"] == nm["m_kconv_f32"] + nm["m_kexp_f32"] > 0
    assert flash["model"] == nm["m_run"] > 0
    assert flash["runtime"] == nm["onnxcc_check"] > 0
    assert flash["weights"] == 64 * 4
    assert flash["libc"] > 0
    # libc is exactly its symbols, listed one by one; main is the program's own
    symbols = sizes["symbols"]
    assert flash["libc"] == sum(symbols["libc"].values())
    # (a second entry point inside a function gets only its own bytes, often none)
    assert all(size <= nm[s] for s, size in symbols["libc"].items()), symbols["libc"]
    assert symbols["runtime"] == {"onnxcc_check": nm["onnxcc_check"]}
    assert symbols["other"]["main"] == nm["main"] and "main" not in symbols["libc"]
    assert list(symbols["libc"]) == sorted(symbols["libc"])
    if prefix:   # statically linked: the libm function a kernel calls is there
        assert "expf" in symbols["libc"]
    assert ram["arena"] == 128 * 4
    assert ram["io"] == (16 + 8 + 4) * 4
    json.dumps(sizes)   # JSON-able


def test_categories_add_up_and_match_size(model_elf):
    elf, sus, prefix, program = model_elf[:4]
    sizes = footprint.measure(str(elf), "m", sus, program)
    flash, ram, elf_sizes = sizes["flash"], sizes["ram"], sizes["elf"]
    assert elf_sizes == _size(prefix, elf)
    assert flash["total"] == elf_sizes["text"] + elf_sizes["data"]
    assert sum(flash[k] for k in footprint.FLASH_KEYS[:-1]) == flash["total"]
    assert flash["other"] >= sum(sizes["symbols"]["other"].values())
    assert ram["total"] == elf_sizes["data"] + elf_sizes["bss"] + ram["stack"]
    assert sum(ram[k] for k in footprint.RAM_KEYS[:-1]) == ram["total"]
    assert ram["data"] == elf_sizes["data"]
    assert ram["bss"] == elf_sizes["bss"] - ram["arena"] - ram["io"] >= 0


def test_stack_of_a_real_model(model_elf):
    elf, sus, _, _ = model_elf[:4]
    frames = {}
    for path in sus:
        for line in open(path):
            where, size, _ = line.split("\t")
            frames[where.rsplit(":", 1)[1]] = int(size)
    sizes = footprint.measure(str(elf), "m", sus)
    callees = max(frames["m_kconv_f32"], frames["m_kexp_f32"], frames["onnxcc_check"])
    assert callees == frames["m_kconv_f32"] >= 256   # its 100-float scratch (less x86 red zone)
    assert sizes["ram"]["stack"] == frames["m_run"] + callees
    assert sizes["ram"]["stack_exact"] is True


@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=[t[0] for t in TOOLCHAINS])
def test_berkeley_rules_match_size(toolchain, tmp_path):
    cc, flags, prefix, tls = _tool(toolchain)
    source = EDGES.replace("TLSUSE", "+ tl[3] + tli" if tls else "")
    source = source.replace("TLS", "__thread int tl[100];\n__thread int tli = 3;" if tls else "")
    (tmp_path / "edges.c").write_text(source)
    _run([cc, *flags, "-O1", "-c", "edges.c"], cwd=tmp_path)
    _run([cc, *flags, "-O1", "-o", "edges.elf", "edges.o"], cwd=tmp_path)
    for path in (tmp_path / "edges.o", tmp_path / "edges.elf"):
        assert footprint.elf_size(str(path)) == _size(prefix, path), path


@pytest.mark.unit
def test_section_kind_rules():
    from elftools.elf.constants import SH_FLAGS as F
    assert footprint.section_kind(0, "SHT_PROGBITS") is None
    assert footprint.section_kind(F.SHF_ALLOC | F.SHF_EXECINSTR, "SHT_PROGBITS") == "text"
    assert footprint.section_kind(F.SHF_ALLOC, "SHT_PROGBITS") == "text"
    assert footprint.section_kind(F.SHF_ALLOC, "SHT_NOBITS") == "text"
    assert footprint.section_kind(F.SHF_ALLOC | F.SHF_WRITE | F.SHF_EXECINSTR,
                                  "SHT_PROGBITS") == "text"
    assert footprint.section_kind(F.SHF_ALLOC | F.SHF_WRITE, "SHT_INIT_ARRAY") == "data"
    assert footprint.section_kind(F.SHF_ALLOC | F.SHF_WRITE | F.SHF_TLS,
                                  "SHT_PROGBITS") == "data"
    assert footprint.section_kind(F.SHF_ALLOC | F.SHF_WRITE | F.SHF_TLS,
                                  "SHT_NOBITS") == "bss"


def test_bad_elf_files(tmp_path, model_elf):
    elf, sus, _, _ = model_elf[:4]
    text = tmp_path / "notes.txt"
    text.write_text("not an elf\n")
    truncated = tmp_path / "truncated.elf"
    truncated.write_bytes(elf.read_bytes()[:80])
    for path, words in ((tmp_path / "missing.elf", "not found"), (text, "not an ELF"),
                        (tmp_path, "directory"), (truncated, "corrupt")):
        with pytest.raises(OnnxccError, match=words) as info:
            footprint.measure(str(path), "m", sus)
        assert info.value.where == str(path)
        assert "\n" not in str(info.value)


def test_stripped_elf_is_an_error(tmp_path, model_elf):
    elf, sus, prefix, _ = model_elf[:4]
    stripped = tmp_path / "stripped.elf"
    _run([prefix + "strip", "-o", str(stripped), str(elf)], cwd=tmp_path)
    with pytest.raises(OnnxccError, match="no symbol table"):
        footprint.measure(str(stripped), "m", sus)


# --------------------------------------------------------------------------- stack

def _su(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


@pytest.mark.unit
def test_stack_from_generated_su_files(tmp_path):
    sus = [
        _su(tmp_path, "m.su", ["m.c:3:5:m_run\t32\tstatic"]),
        _su(tmp_path, "m_kernels.su", ["m_kernels.c:1:6:m_ka_f32\t96\tstatic",
                                       "m_kernels.c:9:6:m_kb_f32\t200\tdynamic,bounded",
                                       "m_kernels.c:20:6:m_kc_f32.constprop.0\t120\tstatic"]),
        _su(tmp_path, "m_weights.su", []),
        _su(tmp_path, "onnxcc_runtime.su", ["onnxcc_runtime.c:6:5:onnxcc_check\t16\tstatic",
                                            "other.c:1:1:not_called\t5000\tstatic"]),
    ]
    assert footprint.stack_usage("m", sus) == (32 + 200, True)

    sus.append(_su(tmp_path, "more.su", ["onnxcc_runtime.c:9:5:onnxcc_big\t640\tdynamic"]))
    assert footprint.stack_usage("m", sus) == (32 + 640, False)


@pytest.mark.unit
def test_stack_errors(tmp_path):
    kernels = _su(tmp_path, "k.su", ["k.c:1:6:m_ka\t96\tstatic"])
    with pytest.raises(OnnxccError, match="no stack usage entry for m_run"):
        footprint.stack_usage("m", [kernels])
    bad = _su(tmp_path, "bad.su", ["m.c:3:5:m_run 32 static"])
    with pytest.raises(OnnxccError, match="malformed") as info:
        footprint.stack_usage("m", [bad])
    assert info.value.where == f"{bad}:1"
    with pytest.raises(OnnxccError, match="not found"):
        footprint.stack_usage("m", [str(tmp_path / "missing.su")])


def test_dynamic_stack_in_measure_and_table(tmp_path, model_elf):
    elf, sus, _, _ = model_elf[:4]
    extra = _su(tmp_path, "dyn.su", ["k.c:1:6:m_kvla_f32\t8\tdynamic"])
    sizes = footprint.measure(str(elf), "m", [*sus, extra])
    assert sizes["ram"]["stack_exact"] is False
    assert "stack >=" in format_table(sizes)


# --------------------------------------------------------------------------- fits, table

SIZES = {
    "model": "kws",
    "flash": {"kernels": 5120, "runtime": 1024, "model": 512, "weights": 102400,
              "libc": 54600, "other": 184, "total": 163840},
    "ram": {"arena": 32768, "io": 4096, "data": 256, "bss": 1024, "stack": 600,
            "total": 38744, "stack_exact": True},
    "elf": {"text": 163584, "data": 256, "bss": 37888},
}


def _budget(flash, ram, opt="speed", quantized=False, target="m4"):
    return fit.Budget(target, flash, ram, opt, quantized)


@pytest.mark.unit
def test_check_fits():
    fit.check_fits(SIZES, _budget(163840, 38744))        # exactly full fits
    fit.check_fits(SIZES, _budget(0, 0))                  # 0: no limit
    with pytest.raises(OnnxccError) as info:
        fit.check_fits(SIZES, _budget(128 * 1024, 0, target="cortex-m4"))
    message = str(info.value)
    assert message == ("model kws does not fit cortex-m4: flash needs 160.0 KiB, has 128.0 KiB "
                       "(try opt=size, an int8 model, or a part with more flash, given as "
                       "flash=SIZE)")
    with pytest.raises(OnnxccError) as info:
        fit.check_fits(SIZES, _budget(0, 32 * 1024, opt="size", quantized=True))
    assert info.value.message == "model kws does not fit m4: ram needs 37.8 KiB, has 32.0 KiB"
    assert info.value.hint == "try a part with more RAM, given as ram=SIZE"
    with pytest.raises(OnnxccError, match=r"flash needs .*; ram needs ") as info:
        fit.check_fits(SIZES, _budget(1, 1))
    assert "more flash and RAM, given as flash=SIZE ram=SIZE" in info.value.hint
    with pytest.raises(OnnxccError, match=r"flash needs 163840 B, has 163839 B"):
        fit.check_fits(SIZES, _budget(163839, 0))          # same when rounded


def test_check_library(model_elf, tmp_path):
    """The check before any link: the library object's own bytes and the plan's buffers."""
    elf, sus, prefix, _, relocatable = model_elf
    work = elf.parent
    _run([*relocatable, "-o", "libm.o",
          *[name[:-2] + ".o" for name in LIBRARY]], cwd=work)
    lib = footprint.elf_size(str(work / "libm.o"))
    plan = {"pools": [{"name": "arena", "bytes": 512}, {"name": "dtcm", "bytes": 64}],
            "io_bytes": 112}
    flash, ram = fit.library_needs(str(work / "libm.o"), plan, 100)
    assert flash == lib["text"] + lib["data"] > 64 * 4
    assert ram == lib["data"] + lib["bss"] + 512 + 64 + 112 + 100
    assert fit.check_library("m", str(work / "libm.o"), plan, 100, _budget(flash, ram)) == (flash, ram)
    with pytest.raises(OnnxccError) as info:
        fit.check_library("m", str(work / "libm.o"), plan, 100, _budget(flash - 1, 0))
    assert "m does not fit m4: flash needs" in str(info.value)
    assert "before the C library is linked" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.unit
def test_is_quantized(tmp_path):
    path = tmp_path / "tactics.json"
    for ops, quantized in ((["Conv", "Gemm", "Softmax"], False),
                           (["QLinearConv", "QGemm"], True), (["Conv", "QuantizeLinear"], True),
                           (["MatMulInteger"], True)):
        path.write_text(json.dumps({"nodes": [{"op": op} for op in ops]}))
        assert fit.is_quantized(str(path)) is quantized


@pytest.mark.unit
def test_format_table():
    lines = format_table(SIZES).splitlines()
    assert lines[0].split() == ["flash", "bytes", "KiB", "%"]
    assert lines[1].split() == ["kernels", "5120", "5.0", "3.1"]
    assert lines[6].split() == ["other", "184", "0.2", "0.1"]
    assert lines[7].split() == ["total", "163840", "160.0"]
    assert lines[8].split() == ["ram", "bytes", "KiB", "%"]
    assert lines[9].split() == ["arena", "32768", "32.0", "84.6"]
    assert lines[-1].split() == ["total", "38744", "37.8"]
    assert len(lines) == 15


# --------------------------------------------------------------------------- size gate

def _grown(section, key, value, sizes=SIZES):
    sizes = json.loads(json.dumps(sizes))
    sizes[section][key] = value
    return sizes


def _row(result, label):
    return next(row for row in result.rows if row.label == label)


def _line(result, label):
    return next(line for line in format_gate(result) if line.startswith(label + " "))


@pytest.mark.unit
def test_compare_equal_passes():
    result = size_gate.compare(SIZES, SIZES, 1.0)
    assert result.ok
    lines = format_gate(result)
    assert lines[0] == "size gate: model kws, tolerance 1%, floor 256 B per category"
    assert lines[1].split() == ["category", "baseline", "now", "delta", "%", "limit"]
    assert lines[-1] == "size gate passed"
    # the limit: baseline + the larger of 1% (51 B) and the floor
    assert _line(result, "flash.kernels").split() == ["flash.kernels", "5120", "5120", "+0",
                                                       "+0.0%", str(5120 + 256)]
    # a total: baseline + 1% only
    assert _line(result, "flash.total").split()[-1] == str(163840 + 1638)
    assert not any("stack_exact" in line for line in lines)


@pytest.mark.unit
def test_a_total_that_shrank_passes_when_a_tiny_category_grew():
    """The case that failed CI: flash.other grew 36 B (+19.6%) while the total shrank."""
    current = _grown("flash", "other", 184 + 36,
                     _grown("flash", "total", 163840 - 964, _grown("flash", "libc", 54600 - 1000)))
    result = size_gate.compare(SIZES, current, 5)
    assert result.ok, format_gate(result)
    assert _line(result, "flash.other").split() == ["flash.other", "184", "220", "+36", "+19.6%",
                                                     str(184 + 256)]
    # without a floor it is the old verdict
    strict = size_gate.compare(SIZES, current, 5, floor_bytes=0)
    assert strict.failed == ["flash.other"]
    assert _line(strict, "flash.other").endswith("OVER")
    assert "FAILED: flash.other" in format_gate(strict)[-1]


@pytest.mark.unit
def test_a_category_fails_beyond_both_threshold_and_floor():
    # kernels 5120: 5% is 256 B, floor 300: the limit is 5420
    assert size_gate.compare(SIZES, _grown("flash", "kernels", 5420), 5, 300).ok
    result = size_gate.compare(SIZES, _grown("flash", "kernels", 5421), 5, 300)
    assert result.failed == ["flash.kernels"]
    # weights 102400: 1% is 1024 B, more than the floor
    assert size_gate.compare(SIZES, _grown("flash", "weights", 102400 + 1024), 1, 256).ok
    assert not size_gate.compare(SIZES, _grown("flash", "weights", 102400 + 1025), 1, 256).ok


@pytest.mark.unit
def test_totals_use_the_threshold_alone():
    ram = _grown("ram", "total", 38744 + 200)     # +0.5%: under the floor, over 0.1%
    assert size_gate.compare(SIZES, ram, 0.1, 256).failed == ["ram.total"]
    assert size_gate.compare(SIZES, ram, 1, 256).ok
    # exactly +0.1% of 1000: not beyond, no float drift
    assert size_gate.compare(_grown("ram", "total", 1000), _grown("ram", "total", 1001), 0.1).ok


@pytest.mark.unit
def test_compare_new_category_and_shrinking():
    result = size_gate.compare(_grown("flash", "runtime", 0), SIZES, 1000.0)
    assert result.failed == ["flash.runtime"]            # 0 -> 1024: over the floor
    assert "new" in _line(result, "flash.runtime")
    assert size_gate.compare(_grown("flash", "runtime", 0),
                             _grown("flash", "runtime", 256), 0).ok   # 0 -> 256: the floor
    old = json.loads(json.dumps(SIZES))
    del old["flash"]["other"]                             # a baseline from before "other"
    assert size_gate.compare(old, SIZES, 0).ok
    assert size_gate.compare(SIZES, _grown("flash", "weights", 0), 0).ok
    assert size_gate.compare(_grown("ram", "io", 0), _grown("ram", "io", 0), 0).ok


@pytest.mark.unit
def test_compare_bad_numbers():
    with pytest.raises(OnnxccError, match="tolerance .* negative"):
        size_gate.compare(SIZES, SIZES, -1)
    with pytest.raises(OnnxccError, match="floor .* not a number"):
        size_gate.compare(SIZES, SIZES, 1, "lots")


@pytest.mark.unit
def test_baseline_round_trip(tmp_path):
    path = tmp_path / "sizes" / "kws.json"
    size_gate.write_baseline(str(path), SIZES)
    text = path.read_text()
    assert text.endswith("}\n")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert set(data) == {"model", "flash", "ram"}
    baseline = size_gate.read_baseline(str(path))
    assert baseline == {"model": "kws", "flash": SIZES["flash"], "ram": SIZES["ram"]}
    assert format_gate(size_gate.compare(baseline, SIZES, 0)) == \
        format_gate(size_gate.compare(SIZES, SIZES, 0))


@pytest.mark.unit
@pytest.mark.parametrize("text", ["{not json", "[]", '{"flash": {"total": 1}}',
                                  '{"flash": {"total": 1}, "ram": {"total": "big"}}',
                                  '{"flash": {"total": 1}, "ram": {"total": -1}}', ""])
def test_malformed_baseline(tmp_path, text):
    path = tmp_path / "baseline.json"
    path.write_text(text)
    with pytest.raises(OnnxccError, match="malformed size baseline") as info:
        size_gate.read_baseline(str(path))
    assert info.value.where == str(path)
    assert f"baseline={path} size-baseline" in info.value.hint
    assert "\n" not in str(info.value)


@pytest.mark.unit
def test_missing_baseline(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(OnnxccError, match="not found") as info:
        size_gate.read_baseline(str(path))
    assert info.value.where == str(path)
    assert info.value.hint == f"run `scons <the same options> baseline={path} size-baseline` first"


@pytest.mark.unit
def test_a_baseline_of_another_target_or_options_does_not_compare():
    build = {"target": "armv7", "onnxcc": "0.1.0", "options": {"opt": "speed", "io": "caller"}}
    baseline = dict(SIZES, build=build)
    assert size_gate.build_mismatch(baseline, build) is None
    assert size_gate.build_mismatch(baseline, dict(build, onnxcc="0.2.0")) is None  # a new compiler
    assert size_gate.build_mismatch(dict(SIZES), build) is None  # a baseline from before the record
    assert size_gate.build_mismatch(baseline, dict(build, target="riscv32")) == \
        "it was written for target armv7, this build is riscv32"
    assert size_gate.build_mismatch(baseline, dict(build, options={"opt": "size", "io": "caller"})) == \
        "it was written with other options: opt=speed (now size)"

