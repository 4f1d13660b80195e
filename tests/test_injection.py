"""No model text can put code into generated C or build files.

Model files are untrusted: a model whose tensor, node and graph names, doc strings,
metadata, file name and ``name=`` carry comment closers, newlines, line splices, trigraphs,
quotes, preprocessor lines, non-ASCII, control characters, 10 KB names and names that
sanitize alike still builds warning-free, matches onnxruntime, and leaves no model text
raw in any generated file (see core/ctext.py)."""

import codecs
import os
import re
import subprocess
import textwrap

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from conftest import REPO, SCONS, run_scons, save_graph
from onnxcc.codegen.lowering import weight_symbols
from onnxcc.core.ctext import (
    COMMENT_LIMIT, C_KEYWORDS, Namespace, build_word, c_comment, c_ident, c_string)
from onnxcc.core.errors import OnnxccError

MARKER = "ONNXCC_INJECTED_MARKER"
#: closes the comment it lands in and defines a constructor that runs before main
PAYLOAD = ('*/ __attribute__((constructor)) static void pwn(void) '
           '{ __builtin_printf("' + MARKER + '\\n"); } /*')

HOSTILE = [
    PAYLOAD,
    "/* opens a comment",
    "// a line comment",
    "new\nline",
    "carriage\rreturn",
    "splice\\\n#define float int",
    "trigraphs ??/ ??= ??( ??) ??' ??< ??! ??> ??-",
    "\"double\" 'single' quotes",
    "#define int float",
    "#include \"/etc/passwd\"",
    "%s %n %d %%",
    "\u6a21\u578b\u5f20\u91cf",  # CJK
    "\U0001f642\U0001f680",  # emoji
    "\u202eevil\u202c \u200f",  # RTL override, RLM
    "\x01\x07\x08\x0b\x0c\x1b[31m\x7f",  # control characters (no NUL)
    "L" * 10240,
    "a.b", "a_b", "a-b",  # sanitize alike
    "int", "memcpy", "main",  # a C keyword, libc, the program's entry
    "${name} <%text> % for x in y:",  # Mako's own syntax
    "$(shell touch pwned) # ; \"x\"",  # Make / CMake syntax
]

HOSTILE_STEM = "evil*?? \"q\" $(x) #;\n\u6a21\u578b"

#: texts that are harmless in C as they are (they may appear, e.g. "int" in code)
PLAIN = re.compile(r"[A-Za-z0-9_.\- ]*")
#: texts a comment may carry as they are: printable ASCII without '*', '?' and '\'
INERT_IN_COMMENT = re.compile(r"[ -)+->@-\[\]-~]*")


def hostile_model(path):
    """A small model that carries every HOSTILE text as a node name, a weight name and
    (prefixed) an output name, plus in its graph name, doc strings and metadata: output k
    is input + weight k (Add) or input * weight k (Mul), so none is fused away."""
    x = "in " + PAYLOAD
    nodes, inits, outputs = [], [], []
    for k, text in enumerate(HOSTILE):
        out = f"out{k} {text}"
        nodes.append(helper.make_node("Add" if k % 2 else "Mul", [x, text], [out], name=text,
                                      doc_string=PAYLOAD))
        inits.append(numpy_helper.from_array(
            np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3) * (k + 1), text))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 3]))
    graph = helper.make_graph(nodes, PAYLOAD, [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                                                             [2, 3])],
                              outputs, initializer=inits, doc_string=PAYLOAD)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name=PAYLOAD, doc_string=PAYLOAD)
    model.ir_version = 8
    helper.set_model_props(model, {PAYLOAD: PAYLOAD, "splice\\\n": "??/\n#define x"})
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return str(path)


def generated_texts(folder):
    """{path: text} of every generated C, header, assembler and build file under ``folder``."""
    texts = {}
    for d, _, files in os.walk(folder):
        for f in files:
            if f.endswith((".c", ".h", ".S", ".mk", ".cmake")) or f == "CMakeLists.txt":
                with open(os.path.join(d, f), "rb") as fh:
                    texts[os.path.join(d, f)] = fh.read().decode("ascii")  # ASCII only
    return texts


def code_of(c_text):
    """C text without its comments and string literals: what the compiler acts on."""
    return re.sub(r'/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', " ", c_text, flags=re.S)


def assert_nothing_raw(texts):
    """No hostile text where it could act: none at all in build files, none outside comments
    in C, and in comments none that has a character a comment cannot carry as it is."""
    assert texts
    for path, text in texts.items():
        is_c = path.endswith((".c", ".h", ".S"))  # (a .S is preprocessed as C)
        code = code_of(text) if is_c else text
        for hostile in HOSTILE + [PAYLOAD.replace("*/ ", "")]:
            if not PLAIN.fullmatch(hostile):
                assert hostile not in code, (path, hostile[:40])
            if not INERT_IN_COMMENT.fullmatch(hostile):
                assert hostile not in text, (path, hostile[:40])
        assert "??" not in text, path
        assert "\\\n" not in text, path  # no line splice
        assert "\r" not in text, path
        if is_c:
            comments = re.findall(r"/\*(.*?)\*/", text, flags=re.S)
            assert not any("/*" in c for c in comments), path
            for word in ("constructor)", "pwn(", "$(shell", "#define float ", "#define int "):
                assert word not in code, (path, word)
            assert all(len(line) < 4000 for line in text.splitlines()), path  # 10 KB name capped
        else:
            for line in text.splitlines():
                if not line.startswith("#"):
                    assert "$(shell" not in line, (path, line)


def assert_built_clean(r):
    text = r.stdout + r.stderr
    assert r.returncode == 0, text[-3000:]
    assert "warning:" not in text, text[-3000:]
    assert "Traceback" not in text
    assert MARKER not in text.splitlines()  # the constructor never ran (it prints this line)
    assert "[verify]" in text
    assert all(line.isprintable() for line in text.splitlines())  # no model text as control


@pytest.fixture(scope="module")
def hostile_build(tmp_path_factory):
    """One SCons run of the hostile model, whose file name is hostile too: verify, the
    Make/CMake fragments and the bench program (built, not run)."""
    tmp = tmp_path_factory.mktemp("inject")
    model = hostile_model(tmp / (HOSTILE_STEM + ".onnx"))
    out = tmp / "build" / "x86_64" / c_ident(HOSTILE_STEM)
    r = run_scons(f"build_dir={tmp / 'build'}", f"model={model}", "verify", str(out / "CMakeLists.txt"),
                  str(out / "bench" / f"{c_ident(HOSTILE_STEM)}_bench"), cwd=REPO)
    return r, tmp


@pytest.mark.slow
def test_hostile_names_verify_and_stay_escaped(hostile_build):
    r, tmp = hostile_build
    assert_built_clean(r)
    assert not (tmp / "pwned").exists()
    texts = generated_texts(tmp / "build")
    for kind in (".mk", ".cmake", "CMakeLists.txt", "harness.c", "bench.c", "_footprint.c",
                 "_weights.S", "_kernels.c"):
        assert any(p.endswith(kind) for p in texts), kind
    assert_nothing_raw(texts)
    # the file stem made into a C name: each character that is not a letter, digit or _ is _
    name = c_ident(HOSTILE_STEM)
    assert name == "evil_____q____x_______"
    header = texts[str(tmp / "build" / "x86_64" / name / f"{name}.h")]
    assert f"int {name}_run(" in header
    assert f"#define {name.upper()}_OUTPUT{len(HOSTILE) - 1}_BYTES 24u" in header


def test_names_that_sanitize_alike_get_their_own_symbols(hostile_build):
    _, tmp = hostile_build
    weights = next(t for p, t in generated_texts(tmp / "build").items()
                   if p.endswith("_weights.S"))
    symbols = re.findall(r"^\t\.size (\w+), 24$", weights, flags=re.M)
    assert len(symbols) == len(set(symbols)) == len(HOSTILE)


@pytest.mark.slow
def test_hostile_name_option(tmp_path):
    """``name=`` text that is no identifier becomes one; a 10 KB name= is capped."""
    model = hostile_model(tmp_path / "m.onnx")
    for name, c_name in ((PAYLOAD, c_ident(PAYLOAD, 128)), ("int", "int_"),
                         ("N" * 10240, c_ident("N" * 10240, 128))):
        r = run_scons(f"build_dir={tmp_path / 'build'}", f"model={model}", f"name={name}",
                      *(["verify"] if name == PAYLOAD else []), cwd=REPO)
        if name == PAYLOAD:
            assert_built_clean(r)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        header = (tmp_path / "build" / "x86_64" / c_name / f"{c_name}.h").read_text("ascii")
        assert f"int {c_name}_run(" in header and f"#define {c_name.upper()}_NUM_INPUTS 1u" in header
    assert len(c_ident("N" * 10240, 128)) == 128
    assert_nothing_raw(generated_texts(tmp_path / "build"))


def test_two_models_with_one_c_name_are_refused(tmp_path):
    for stem in ("a.b", "a_b"):
        hostile_model(tmp_path / f"{stem}.onnx")
    (tmp_path / "SConstruct").write_text(textwrap.dedent(f"""
        env = Environment(tools=["default", "onnxcc"],
                          toolpath=[{os.path.join(REPO, "site_scons", "site_tools")!r}])
        env.OnnxModel(None, "a.b.onnx")
        env.OnnxModel(None, "a_b.onnx")
        """))
    r = subprocess.run(SCONS + ["-Q", "-n"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in text, text
    assert "a.b.onnx and" in text and "both compile as C name a_b" in text and "name=" in text


def test_an_error_naming_a_hostile_node_is_one_line(tmp_path):
    name = "coin\nscons: *** fake second error\r\u202e"
    graph = helper.make_graph(
        [helper.make_node("RandomUniformLike", ["x"], ["y"], name=name)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    save_graph(tmp_path / "m.onnx", graph)
    r = run_scons(f"build_dir={tmp_path / 'build'}", f"model={tmp_path / 'm.onnx'}", cwd=REPO)
    text = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in text
    errors = [line for line in text.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "RandomUniformLike" in errors[0], text
    assert "coin\\nscons: *** fake second error\\r\\u202e" in errors[0]


@pytest.mark.unit
def test_templates_quote_model_text_only_through_ctext():
    """A template that names a tensor, a node, an op or the model's file does it through
    c_comment or c_string (the build above covers today's templates, this tomorrow's)."""
    model_text = re.compile(r"\bsource\b|\btensor\b|\.name\b|\.op\b|\bdoc_string\b")
    raw = []
    for d, _, files in os.walk(os.path.join(REPO, "site_scons", "onnxcc", "templates")):
        for f in files:
            if f.endswith(".html.mako"):
                continue  # escaped by default (verbs/html_report.py; tests/test_profile.py)
            with open(os.path.join(d, f)) as fh:
                for expr in re.findall(r"\$\{(.*?)\}", fh.read()):
                    if model_text.search(expr) and not re.match(r"c_(comment|string)\(", expr):
                        raw.append((f, expr))
    assert raw == []


# ---- the helpers themselves ----

@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=300))
def test_c_comment_is_inert(text):
    out = c_comment(text)
    assert all(0x20 <= ord(ch) < 0x7F for ch in out)
    assert "*" not in out and "?" not in out and len(out) <= COMMENT_LIMIT
    assert not out.endswith("\\")
    if len(text) <= 20 and text.isascii() and text.isprintable() and not set(text) & set("*?\\"):
        assert out == text  # ordinary names read as they are


@pytest.mark.unit
def test_c_comment_caps_long_texts_apart():
    a, b = c_comment("x" * 10000), c_comment("x" * 9999 + "y")
    assert a != b and a.startswith("x" * 60) and "..." in a
    assert c_comment("\u6a21" * 30).endswith(c_comment("\u6a21" * 30)[-8:])  # no cut escape
    assert c_comment("*/") == "\\x2a/" and c_comment("a\nb") == "a\\x0ab"


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.text())
def test_c_string_round_trips(text):
    out = c_string(text)
    assert out[0] == out[-1] == '"' and all(0x20 <= ord(ch) < 0x7F for ch in out)
    body = out[1:-1]
    assert "?" not in body and '"' not in body
    assert codecs.escape_decode(body.encode("ascii"))[0] == text.encode("utf-8", "surrogatepass")


@pytest.mark.unit
@given(st.text())
def test_c_ident_is_an_identifier(text):
    ident = c_ident(text, 40)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ident) and len(ident) <= 41
    assert ident not in C_KEYWORDS


@pytest.mark.unit
def test_ordinary_names_keep_their_identifiers():
    assert c_ident("kws") == "kws" and c_ident("fc_autoencoder") == "fc_autoencoder"
    assert c_ident("kws-v2") == "kws_v2" and c_ident("1net") == "_1net"
    assert c_ident("int") == "int_" and c_ident("_Bool") == "_Bool_"


@pytest.mark.unit
def test_namespace_keeps_names_apart_and_stable():
    names = ["a.b", "a_b", "a-b", "a_b_2", "int", "x" * 100, "x" * 99 + "y"]
    first = Namespace()
    idents = [first.ident(n, n, 60) for n in names]
    assert len(set(idents)) == len(names)
    assert idents[:3] == ["a_b", "a_b_2", "a_b_3"] and idents[4] == "int_"
    assert all(len(i) <= 60 for i in idents)
    assert first.ident("a-b", "a-b", 60) == "a_b_3"  # asked again: the same
    again = Namespace()
    assert [again.ident(n, n, 60) for n in names] == idents  # deterministic
    prefixed = Namespace("m_w_")
    assert [prefixed.ident(n, n, 20) for n in ("a.b", "a_b", "1", "int")] == \
        ["m_w_a_b", "m_w_a_b_2", "m_w_1", "m_w_int"]


@pytest.mark.unit
def test_weight_symbols_of_names_that_sanitize_alike():
    class Graph:
        constants = {"a.b": None, "a_b": None, "a-b": None, "L" * 5000: None, "L" * 4999 + "M": None}
        nodes = ()
        outputs = ()
    symbols, _ = weight_symbols(Graph(), "m")
    assert len(set(symbols.values())) == len(Graph.constants)
    assert symbols["a.b"] == "m_w_a_b" and symbols["a_b"] == "m_w_a_b_2"
    long_prefix = c_ident("P" * 10240, 128)  # the longest model name: capping keeps it whole
    symbols, _ = weight_symbols(Graph(), long_prefix)
    assert all(s.startswith(long_prefix + "_w_") for s in symbols.values())
    assert len(set(symbols.values())) == len(Graph.constants)


@pytest.mark.unit
@pytest.mark.parametrize("word", ["$(shell id)", "a#b", "a;b", 'a"b', "a b", "a\nb", "${X}", "a\\b"])
def test_build_word_refuses_what_could_act(word):
    with pytest.raises(OnnxccError, match="Make or CMake"):
        build_word(word, "model name")


@pytest.mark.unit
def test_build_word_keeps_plain_words():
    assert build_word("KWS_ARENA_BYTES=123u", "define") == "KWS_ARENA_BYTES=123u"
