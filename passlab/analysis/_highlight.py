"""TVMScript (and LLVM IR) syntax highlighting for HTML views, one line at a time so that
diffs can highlight just the lines they show.

Tokens become `<span class="tok-X">` where X is Pygments' short class name (`k`
keyword, `nf` function name, `s2` string, `mi` number, `c1` comment, `nd`
decorator, `o` operator), so Pygments styles apply too; `CSS` colours them for
light pages and, under JupyterLab's dark theme (`body[data-jp-theme-light="false"]`) or
a dark colour scheme, for dark ones. Every piece of text is escaped: names in IR are user
data.

Why not Pygments' lexer itself: its Python lexer measured ~3.7 ms per printed TIR line on
these machines (200 lines of a first diff view: 0.7 s, against a 100 ms budget). TVMScript
needs a handful of token kinds, which one compiled regular expression finds much faster.
LLVM IR (the diffs of LLVM's own passes) is tokenized by Pygments' `LlvmLexer`, measured at
~0.03 ms per line here, with the same short class names (`kt` types, `nv` local values,
`vg` globals, `nl` labels).
"""

from __future__ import annotations

import bisect
import functools
import html
import re
from collections.abc import Sequence

__all__ = ["CSS", "line_html", "block_html", "llvm_line_html"]

# Token class -> (light colour, dark colour); the rest inherit the text colour. Light
# colours are >= 4.5:1 on white, dark ones >= 4.5:1 on JupyterLab's dark background.
_COLOURS = {
    "k": ("#8250df", "#d2a8ff"),    # keywords: def, return, with, for
    "kn": ("#8250df", "#d2a8ff"),   # from/import
    "kc": ("#0550ae", "#79c0ff"),   # True/False/None
    "ow": ("#8250df", "#d2a8ff"),   # in, and, not
    "nf": ("#6639ba", "#e2c5ff"),   # function names after def
    "nd": ("#953800", "#ffa657"),   # decorators: @R.function, @T.prim_func
    "nb": ("#0550ae", "#79c0ff"),   # builtins
    "s": ("#0a3069", "#a5d6ff"), "s1": ("#0a3069", "#a5d6ff"), "s2": ("#0a3069", "#a5d6ff"),
    "sa": ("#0a3069", "#a5d6ff"), "se": ("#0a3069", "#a5d6ff"),
    "mi": ("#0550ae", "#79c0ff"), "mf": ("#0550ae", "#79c0ff"), "m": ("#0550ae", "#79c0ff"),
    "c": ("#57606a", "#8b949e"), "c1": ("#57606a", "#8b949e"), "ch": ("#57606a", "#8b949e"),
    "o": ("#cf222e", "#ff7b72"),    # operators
    # LLVM IR (Pygments' LlvmLexer)
    "kt": ("#116329", "#7ee787"),   # types: i32, float, <4 x float>, ptr
    "nv": ("#953800", "#ffa657"),   # local values: %x, %12
    "vg": ("#6639ba", "#e2c5ff"),   # globals and functions: @f
    "nl": ("#0550ae", "#79c0ff"),   # block labels
}


def _css() -> str:
    light = " ".join(f".tok-{k} {{ color: {a}; }}" for k, (a, _) in _COLOURS.items())
    dark = " ".join(
        f'body[data-jp-theme-light="false"] .tok-{k}, .pl-dark .tok-{k} {{ color: {b}; }}'
        for k, (_, b) in _COLOURS.items())
    media = " ".join(f".tok-{k} {{ color: {b}; }}" for k, (_, b) in _COLOURS.items())
    return (f"{light}\n{dark}\n@media (prefers-color-scheme: dark) {{ "
            f'body:not([data-jp-theme-light]) {media.replace(".tok-", "body:not([data-jp-theme-light]) .tok-")} }}')


CSS = _css()


_KEYWORDS = ("def|return|with|for|in|if|elif|else|while|lambda|and|or|not|is|as|assert|"
             "from|import|class|pass|break|continue|yield")
_TOKEN = re.compile(
    r"(?P<c1>#.*)"
    r"|(?P<s2>\"(?:[^\"\\]|\\.)*\"?|'(?:[^'\\]|\\.)*'?)"
    r"|(?P<nd>@[\w.]+)"
    rf"|(?P<k>\b(?:{_KEYWORDS})\b)"
    r"|(?P<kc>\b(?:True|False|None)\b)"
    r"|(?P<mf>\b\d+\.\d*(?:[eE][-+]?\d+)?|\b\d+[eE][-+]?\d+\b)"
    r"|(?P<mi>\b\d+\b)"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<o>[-+*/%=<>!&|^~]+)"
)


@functools.lru_cache(maxsize=20000)
def _tokens(line: str) -> tuple[tuple[str, str], ...]:
    """(short class, text) pieces of one line; cached, since unchanged lines repeat across
    the diffs of a trace."""
    out: list[tuple[str, str]] = []
    pos, after_def = 0, False

    def add(kind: str, text: str) -> None:
        # runs of one kind become one piece: plain names and spaces are most of a TIR
        # line, and every piece costs a span and an escape
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))

    for m in _TOKEN.finditer(line):
        if m.start() > pos:
            add("", line[pos:m.start()])
        kind = m.lastgroup or ""
        if kind == "name":
            kind = "nf" if after_def else ""
        after_def = kind == "k" and m.group() in ("def", "class")
        add(kind, m.group())
        pos = m.end()
    if pos < len(line):
        add("", line[pos:])
    return tuple(out)


def _span(cls: str, text: str) -> str:
    return f'<span class="{cls}">{html.escape(text)}</span>' if cls else html.escape(text)


@functools.lru_cache(maxsize=20000)
def _plain_html(line: str) -> str:
    return "".join(_span(f"tok-{k}" if k else "", t) for k, t in _tokens(line))


def line_html(line: str, marks: Sequence[tuple[int, int]] = (), mark_class: str = "pl-hl"
              ) -> str:
    """One line of TVMScript as escaped, highlighted HTML; the character ranges in
    `marks` (start, stop) also get `mark_class` (the changed spans of a diff)."""
    if not marks:
        return _plain_html(line)
    return _marked_html(line, _tokens(line), marks, mark_class)


_LLVM_CLASSES = frozenset({"c", "k", "kt", "m", "s", "nl", "nv", "vg"})


@functools.lru_cache(maxsize=1)
def _llvm_lexer() -> object | None:
    try:
        from pygments.lexers import LlvmLexer
    except ImportError:  # no Pygments: LLVM IR shows uncoloured
        return None
    return LlvmLexer(stripnl=False, ensurenl=False)


@functools.lru_cache(maxsize=20000)
def _llvm_tokens(line: str) -> tuple[tuple[str, str], ...]:
    lexer = _llvm_lexer()
    if lexer is None:
        return (("", line),) if line else ()
    from pygments.token import STANDARD_TYPES

    out: list[tuple[str, str]] = []
    for ttype, text in lexer.get_tokens(line):  # type: ignore[attr-defined]
        while ttype not in STANDARD_TYPES:
            ttype = ttype.parent
        kind = STANDARD_TYPES[ttype]
        kind = kind if kind in _LLVM_CLASSES else ""
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return tuple(out)


@functools.lru_cache(maxsize=20000)
def _llvm_plain_html(line: str) -> str:
    return "".join(_span(f"tok-{k}" if k else "", t) for k, t in _llvm_tokens(line))


def llvm_line_html(line: str, marks: Sequence[tuple[int, int]] = (),
                   mark_class: str = "pl-hl") -> str:
    """One line of LLVM IR as escaped, highlighted HTML (as `line_html` for TVMScript)."""
    if not marks:
        return _llvm_plain_html(line)
    return _marked_html(line, _llvm_tokens(line), marks, mark_class)


def _marked_html(line: str, tokens: Sequence[tuple[str, str]],
                 marks: Sequence[tuple[int, int]], mark_class: str) -> str:
    starts, ends = _merged(marks)
    out, pos = [], 0
    for kind, text in tokens:
        end = pos + len(text)
        tok = f"tok-{kind}" if kind else ""
        # cut the token where a mark starts or stops inside it
        lo, hi = bisect.bisect_right(starts, pos), bisect.bisect_left(starts, end)
        cuts = [pos, *(c for k in range(max(lo - 1, 0), min(hi + 1, len(starts)))
                       for c in (starts[k], ends[k]) if pos < c < end), end]
        cuts.sort()
        for a, b in zip(cuts, cuts[1:]):
            if a == b:
                continue
            k = bisect.bisect_right(starts, a) - 1
            marked = k >= 0 and a < ends[k]
            out.append(_span(f"{tok} {mark_class}".strip() if marked else tok, line[a:b]))
        pos = end
    return "".join(out)


def _merged(marks: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, non-overlapping (starts, ends) of the marked ranges."""
    starts: list[int] = []
    ends: list[int] = []
    for a, b in sorted(marks):
        if starts and a <= ends[-1]:
            ends[-1] = max(ends[-1], b)
        else:
            starts.append(a)
            ends.append(b)
    return starts, ends


def block_html(text: str) -> str:
    """Several lines (a whole function) highlighted, joined by newlines: for `<pre>`."""
    return "\n".join(line_html(line) for line in text.split("\n"))
