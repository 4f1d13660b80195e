"""Footprint measurement: categories of real ELFs, binutils `size` parity, stack, size gate."""

import json
import os
import shutil
import subprocess

import pytest

from onnxcc import footprint
from onnxcc.errors import OnnxccError

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
    """{symbol: size} of defined symbols with a size, as binutils nm prints them."""
    out = _run([prefix + "nm", "-S", "--defined-only", str(path)], cwd=os.path.dirname(path))
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4:
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


@pytest.fixture(scope="module", params=TOOLCHAINS, ids=[t[0] for t in TOOLCHAINS])
def model_elf(request, tmp_path_factory):
    """The fake model's footprint ELF built with one toolchain: (elf, su paths, prefix)."""
    cc, flags, prefix, _ = _tool(request.param)
    work = tmp_path_factory.mktemp(request.param[0])
    for name, text in SOURCES.items():
        (work / name).write_text(text)
    common = [cc, *flags, "-O1", "-ffunction-sections", "-fdata-sections"]
    _run([*common, "-fstack-usage", "-c", *LIBRARY, "main.c"], cwd=work)
    objects = [name[:-2] + ".o" for name in LIBRARY] + ["main.o"]
    _run([*common, "-Wl,--gc-sections", "-o", "m_footprint.elf", *objects, "-lm"], cwd=work)
    sus = [str(work / (name[:-2] + ".su")) for name in LIBRARY]
    return work / "m_footprint.elf", sus, prefix


# --------------------------------------------------------------------------- measure

def test_categories_of_a_real_model(model_elf):
    elf, sus, prefix = model_elf
    sizes = footprint.measure(str(elf), "m", sus)
    nm = _nm_sizes(prefix, elf)
    flash, ram = sizes["flash"], sizes["ram"]

    assert list(sizes) == ["model", "flash", "ram", "elf"]
    assert list(flash) == ["kernels", "runtime", "model", "weights", "libc", "total"]
    assert list(ram) == ["arena", "io", "data", "bss", "stack", "total", "stack_exact"]
    assert sizes["model"] == "m"
    assert flash["kernels"] == nm["m_kconv_f32"] + nm["m_kexp_f32"] > 0
    assert flash["model"] == nm["m_run"] > 0
    assert flash["runtime"] == nm["onnxcc_check"] > 0
    assert flash["weights"] == 64 * 4
    assert flash["libc"] > 0
    assert ram["arena"] == 128 * 4
    assert ram["io"] == (16 + 8 + 4) * 4
    json.dumps(sizes)   # JSON-able


def test_categories_add_up_and_match_size(model_elf):
    elf, sus, prefix = model_elf
    sizes = footprint.measure(str(elf), "m", sus)
    flash, ram, elf_sizes = sizes["flash"], sizes["ram"], sizes["elf"]
    assert elf_sizes == _size(prefix, elf)
    assert flash["total"] == elf_sizes["text"] + elf_sizes["data"]
    assert sum(flash[k] for k in footprint.FLASH_KEYS[:-1]) == flash["total"]
    assert ram["total"] == elf_sizes["data"] + elf_sizes["bss"] + ram["stack"]
    assert sum(ram[k] for k in footprint.RAM_KEYS[:-1]) == ram["total"]
    assert ram["data"] == elf_sizes["data"]
    assert ram["bss"] == elf_sizes["bss"] - ram["arena"] - ram["io"] >= 0


def test_stack_of_a_real_model(model_elf):
    elf, sus, _ = model_elf
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
    elf, sus, _ = model_elf
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
    elf, sus, prefix = model_elf
    stripped = tmp_path / "stripped.elf"
    _run([prefix + "strip", "-o", str(stripped), str(elf)], cwd=tmp_path)
    with pytest.raises(OnnxccError, match="no symbol table"):
        footprint.measure(str(stripped), "m", sus)


# --------------------------------------------------------------------------- stack

def _su(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


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
    elf, sus, _ = model_elf
    extra = _su(tmp_path, "dyn.su", ["k.c:1:6:m_kvla_f32\t8\tdynamic"])
    sizes = footprint.measure(str(elf), "m", [*sus, extra])
    assert sizes["ram"]["stack_exact"] is False
    assert "stack >=" in footprint.format_table(sizes)


# --------------------------------------------------------------------------- fits, table

SIZES = {
    "model": "kws",
    "flash": {"kernels": 5120, "runtime": 1024, "model": 512, "weights": 102400,
              "libc": 54784, "total": 163840},
    "ram": {"arena": 32768, "io": 4096, "data": 256, "bss": 1024, "stack": 600,
            "total": 38744, "stack_exact": True},
    "elf": {"text": 163584, "data": 256, "bss": 37888},
}


def test_check_fits():
    footprint.check_fits(SIZES, 163840, 38744, "m4")        # exactly full fits
    footprint.check_fits(SIZES, 0, 0, "m4")                  # 0: no limit
    with pytest.raises(OnnxccError) as info:
        footprint.check_fits(SIZES, 128 * 1024, 0, "cortex-m4")
    message = str(info.value)
    assert "model kws does not fit cortex-m4: flash 160.0 KiB > 128.0 KiB" in message
    assert "ram" not in info.value.message
    with pytest.raises(OnnxccError, match=r"ram 37.8 KiB > 32.0 KiB") as info:
        footprint.check_fits(SIZES, 0, 32 * 1024, "m4")
    assert "flash" not in info.value.message
    with pytest.raises(OnnxccError, match=r"flash .*, ram "):
        footprint.check_fits(SIZES, 1, 1, "m4")
    with pytest.raises(OnnxccError, match=r"flash 163840 B > 163839 B"):
        footprint.check_fits(SIZES, 163839, 0, "m4")          # same when rounded


def test_format_table():
    table = footprint.format_table(SIZES)
    lines = table.splitlines()
    assert lines[0].split() == ["flash", "bytes", "KiB", "%"]
    assert lines[1].split() == ["kernels", "5120", "5.0", "3.1"]
    assert lines[6].split() == ["total", "163840", "160.0"]
    assert lines[7].split() == ["ram", "bytes", "KiB", "%"]
    assert lines[8].split() == ["arena", "32768", "32.0", "84.6"]
    assert lines[-1].split() == ["total", "38744", "37.8"]
    assert len(lines) == 14


# --------------------------------------------------------------------------- size gate

def _grown(section, key, value):
    sizes = json.loads(json.dumps(SIZES))
    sizes[section][key] = value
    return sizes


def test_compare_equal_passes():
    ok, lines = footprint.compare(SIZES, SIZES, 1.0)
    assert ok
    assert lines[-1] == "size gate passed"
    row = next(line for line in lines if line.startswith("flash.kernels"))
    assert row.split() == ["flash.kernels", "5120", "5120", "+0", "+0.0%"]
    assert not any("stack_exact" in line for line in lines)


def test_compare_tolerance_edge():
    ok, _ = footprint.compare(SIZES, _grown("flash", "kernels", 5120 + 51), 1.0)
    assert ok                                       # +0.996%
    ok, _ = footprint.compare(_grown("ram", "stack", 1000), _grown("ram", "stack", 1010), 1.0)
    assert ok                                       # exactly +1%: not beyond
    ok, _ = footprint.compare(_grown("ram", "stack", 1000), _grown("ram", "stack", 1001), 0.1)
    assert ok                                       # exactly +0.1%, no float drift
    ok, lines = footprint.compare(_grown("ram", "stack", 1000),
                                  _grown("ram", "stack", 1011), 1.0)
    assert not ok
    row = next(line for line in lines if line.startswith("ram.stack"))
    assert row.split()[:5] == ["ram.stack", "1000", "1011", "+11", "+1.1%"]
    assert "GREW" in row
    assert "ram.stack" in lines[-1] and "FAILED" in lines[-1]


def test_compare_zero_to_some_fails_and_shrinking_passes():
    ok, lines = footprint.compare(_grown("flash", "runtime", 0), SIZES, 1000.0)
    assert not ok
    assert any(line.startswith("flash.runtime") and "new" in line and "GREW" in line
               for line in lines)
    ok, _ = footprint.compare(SIZES, _grown("flash", "weights", 0), 0)
    assert ok
    ok, _ = footprint.compare(_grown("ram", "io", 0), _grown("ram", "io", 0), 0)
    assert ok


def test_baseline_round_trip(tmp_path):
    path = tmp_path / "sizes" / "kws.json"
    footprint.write_baseline(str(path), SIZES)
    text = path.read_text()
    assert text.endswith("}\n")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert set(data) == {"model", "flash", "ram"}
    baseline = footprint.read_baseline(str(path))
    assert baseline == {"model": "kws", "flash": SIZES["flash"], "ram": SIZES["ram"]}
    assert footprint.compare(baseline, SIZES, 0) == footprint.compare(SIZES, SIZES, 0)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"flash": {"total": 1}}',
                                  '{"flash": {"total": 1}, "ram": {"total": "big"}}',
                                  '{"flash": {"total": 1}, "ram": {"total": -1}}', ""])
def test_malformed_baseline(tmp_path, text):
    path = tmp_path / "baseline.json"
    path.write_text(text)
    with pytest.raises(OnnxccError, match="malformed size baseline") as info:
        footprint.read_baseline(str(path))
    assert info.value.where == str(path)
    assert f"size-baseline baseline={path}" in info.value.hint
    assert "\n" not in str(info.value)


def test_missing_baseline(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(OnnxccError, match="not found") as info:
        footprint.read_baseline(str(path))
    assert info.value.where == str(path)
    assert "scons" in info.value.hint and "size-baseline" in info.value.hint
