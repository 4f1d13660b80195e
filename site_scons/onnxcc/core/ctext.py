"""Model text in generated files: identifiers, comments, string literals, build-file words.

Model files are untrusted (downloaded from zoos, sent by customers), and their names, doc
strings and file names are free text. Every piece of model text that reaches a generated
file goes through one of these helpers, so none can end a comment, splice a line, form a
trigraph or become code:

* :func:`c_ident` and :class:`Namespace`: identifiers are derived (ASCII letters, digits and
  '_', no leading digit, no keyword, capped in length) and, within a namespace, unique: two
  texts that sanitize alike ("a.b", "a_b") get two identifiers, the same ones on every build.
* :func:`c_comment`: text for inside ``/* ... */``: printable ASCII only, and none of '*',
  '?' and '\\' as themselves (no comment closer or opener, no trigraph, no line splice),
  capped in length (a long text ends in "..." and a digest of the whole).
* :func:`c_string`: a C string literal in which every byte that is not plain printable ASCII,
  and '"', '\\' and '?', is an octal escape.
* :func:`build_word`: a word of a Make or CMake fragment; text that could act there ('$',
  '#', quotes, ';', whitespace, ...) is refused, not escaped.
"""

import hashlib
import re

from .errors import OnnxccError

#: C11 keywords (and C23's), which no derived identifier may be
C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
    nullptr static_assert thread_local true typeof typeof_unqual
    """.split())

COMMENT_LIMIT = 80
_DIGEST = 8  # hex digits of the digest that ends a capped text


def digest(text):
    """A short, stable digest of ``text`` (any str, even with lone surrogates)."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:_DIGEST]


def _word(text, limit):
    """``text`` with every character but ASCII letters, digits and '_' made '_'; longer than
    ``limit``: its start, then '_' and a digest of the whole text (so long texts that start
    alike stay apart)."""
    word = re.sub(r"\W", "_", text, flags=re.ASCII)
    if limit is not None and len(word) > limit:
        word = f"{word[:limit - _DIGEST - 1]}_{digest(text)}"
    return word


#: longest C name of a model (a longer one is cut, and ends in a digest of the whole)
MODEL_NAME_LIMIT = 128


def model_c_name(text):
    """The C name of a model called ``text`` (its file's stem or name=)."""
    return c_ident(text, MODEL_NAME_LIMIT)


def c_ident(text, limit=None):
    """``text`` made into a C identifier (see _word; one character over ``limit`` at most):
    a leading digit or nothing gets a leading '_', a keyword a trailing '_'."""
    ident = _word(text, limit)
    ident = ident if ident and not ident[0].isdigit() else "_" + ident
    return ident + "_" if ident in C_KEYWORDS else ident


class Namespace:
    """One namespace of C identifiers, all starting with ``prefix`` (a C identifier, e.g.
    ``kws_w_``): each thing (a key: a tensor name, a kernel's parameters) gets one, derived
    from a text, and distinct things never share one. The first to claim an identifier
    keeps it, later ones get '_2', '_3', ...: deterministic when things are named in a
    deterministic order."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self._taken = set()
        self._given = {}

    def ident(self, key, text, limit=None):
        """The identifier of ``key``: the prefix, then ``text`` made a C name of at most
        ``limit`` characters (the same identifier when asked again)."""
        if key not in self._given:
            tail = _word(text, limit) if self.prefix else c_ident(text, limit)
            ident, k = self.prefix + tail, 2
            while ident in self._taken:
                suffix = f"_{k}"
                ident = self.prefix + (tail if limit is None else tail[:limit - len(suffix)]) + suffix
                k += 1
            self._taken.add(ident)
            self._given[key] = ident
        return self._given[key]


def _escape_char(ch):
    """``ch`` as ASCII that means nothing to the C preprocessor inside a comment."""
    code = ord(ch)
    if 0x20 <= code < 0x7F and ch not in "*?\\":
        return ch
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def c_comment(text, limit=COMMENT_LIMIT):
    """``text`` (e.g. a tensor name) as text for inside a ``/* */`` comment: printable ASCII
    with '*', '?', '\\', control and non-ASCII characters as ``\\xNN``/``\\uNNNN``
    escapes (never a whole escape cut), at most ``limit`` characters."""
    text = str(text)
    pieces = [_escape_char(ch) for ch in text[:limit + 1]]  # each piece is 1+ characters
    escaped = "".join(pieces)
    if len(escaped) <= limit:
        return escaped
    kept, room = "", limit - len("...") - _DIGEST
    for piece in pieces:
        if len(kept) + len(piece) > room:
            break
        kept += piece
    return kept + "..." + digest(text)


def c_string(text):
    """``text`` as a C string literal (quotes included): its UTF-8 bytes, each that is not
    printable ASCII, and '"', '\\' and '?', as a three-digit octal escape (which, unlike a
    hex escape, never swallows the character after it)."""
    out = []
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        out.append(ch if 0x20 <= byte < 0x7F and ch not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


_BUILD_WORD = re.compile(r"[A-Za-z0-9_.+,=:/@%-]+")


def build_word(text, what):
    """``text`` unchanged when it can stand as one word in a Make or CMake fragment, as
    itself (no '$', '#', quotes, ';', parentheses, backslash or whitespace); else one clear
    error naming ``what`` it is."""
    text = str(text)
    if not _BUILD_WORD.fullmatch(text):
        raise OnnxccError(f"{what} {text[:COMMENT_LIMIT]!r} cannot be written into a Make or "
                          f"CMake fragment", hint="use letters, digits and _ . + , = : / @ % -")
    return text
