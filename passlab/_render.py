"""Small rendering helpers shared by every displayable object: aligned text tables,
escaped HTML tables, and `Displayable`, the one display mixin whose
`_repr_mimebundle_` never raises.

This module knows nothing about passes or traces; it sits at the bottom of the import
graph so that data classes can render themselves without importing the views layer.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import hashlib
import html
import re
import shutil
import subprocess
import sys
import threading
import traceback
from collections import OrderedDict
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

CSS = """
table.passlab-table { border-collapse: collapse; font: 12px/1.4 ui-monospace, SFMono-Regular,
  Menlo, Consolas, monospace; }
table.passlab-table caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.passlab-table th, table.passlab-table td { padding: 2px 8px; border: none; border-bottom:
  1px solid rgba(128,128,128,.25); text-align: left; white-space: nowrap; vertical-align: top;
  line-height: 1.4; }
table.passlab-table th { position: sticky; top: 0; font-weight: 600;
  background: var(--jp-layout-color2, Canvas); color: inherit; }
table.passlab-table tbody tr { background: transparent; }
table.passlab-table tr.user td { background: rgba(46,160,67,.15); font-weight: 600; }
table.passlab-table tr.off td { opacity: .5; text-decoration: line-through; }
table.passlab-table tr.failed td { background: rgba(248,81,73,.2); }
table.passlab-table tr.inner td { font-style: italic; }
table.passlab-table tr.same td { color: color-mix(in srgb, currentColor 72%, transparent); }
/* (0,2,2): beats JupyterLab's `:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td`
   (0,2,1), which right-aligns every cell of an output table, names included */
table.passlab-table :is(th, td):not(.num) { text-align: left; }
table.passlab-table :is(th, td).num { text-align: right; font-variant-numeric: tabular-nums; }
table.passlab-table td.passlab-wrap { white-space: normal; }
.passlab-error { border-left: 4px solid #d73a49; padding: 4px 8px;
  font: 12px monospace; white-space: pre-wrap; }
.passlab-note { font: 12px sans-serif; color: color-mix(in srgb, currentColor 72%, transparent);
  padding: 2px 0; }
"""

#: Rows beyond this are elided in text and HTML tables, with a "shown N of M" note.
MAX_ROWS = 2000


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a view renders or a trace is read or
    written, as it was before after.

    Rendering allocates many short-lived strings and tuples, and each burst lets the
    collector rescan every object the process holds (232,000 after `import tvm`, which
    imports torch; 345,000 with Swin-T's Explorer open): a full collection takes 100-400
    ms, more than a first view's whole budget, and a report met a thousand collections
    (1 s of 5-6 s); loading Swin-T's saved trace (a JSON graph of 800,000 nodes) lost 1.5
    s of 12.5 s to them. What a view or a trace file leaves behind holds no cycle; one made
    meanwhile is collected after, outside the user's wait. Nests; a collector the user
    disabled stays disabled."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def esc(value: Any) -> str:
    """HTML-escape anything that came from IR, files or users."""
    return html.escape(str(value), quote=True)


def human_bytes(n: int) -> str:
    """A memory size in binary units: "512 B", "2.5 KiB", "1.2 MiB"."""
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def shape_text(shape: Sequence[Any] | None) -> str:
    """A tensor shape as analyses print it: `4x32`, `scalar` for `()`, `?` when
    unknown."""
    return "?" if shape is None else "x".join(map(str, shape)) or "scalar"


def shown_note(shown: int, total: int, what: str = "rows") -> str:
    return f"shown {shown} of {total} {what}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], max_rows: int = MAX_ROWS) -> str:
    """A plain, aligned table: numeric columns (see `numeric_columns`) right-aligned,
    the others (pass, tensor and function names) left-aligned."""
    cells = [[str(c) for c in r] for r in rows[:max_rows]]
    widths = [len(h) for h in header]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    numeric = numeric_columns(len(header), cells)

    def line(r: Sequence[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(list(header)), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    if len(rows) > max_rows:
        out.append(f"... {shown_note(max_rows, len(rows))}")
    return "\n".join(out)


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    classes: Sequence[str] | None = None,
    caption: str = "",
    max_rows: int = MAX_ROWS,
    attrs: Sequence[dict[str, str]] | None = None,
    wrap: Collection[int] = (),
) -> str:
    """An escaped HTML table with the passlab stylesheet inline; numeric columns (see
    `numeric_columns`) are right-aligned, names left-aligned. The cells of the
    columns in `wrap` (their indices) may wrap at their names' token boundaries (after
    `/`, `.`, `_` and `,`: a source path, a kernel or a list of them), so that the table
    fits a narrow box without cutting a name."""
    body = []
    numeric = numeric_columns(len(header), [[str(c) for c in r] for r in rows[:max_rows]])
    for i, r in enumerate(rows[:max_rows]):
        cls = classes[i] if classes else ""
        extra = "".join(f' {k}="{esc(v)}"' for k, v in (attrs[i] if attrs else {}).items())
        tds = "".join(
            f'<td class="num">{esc(c)}</td>' if num
            else f'<td class="passlab-wrap">{breakable(c)}</td>' if k in wrap
            else f"<td>{esc(c)}</td>"
            for k, (c, num) in enumerate(zip(r, numeric))
        )
        body.append(f'<tr class="{esc(cls)}"{extra}>{tds}</tr>')
    note = ""
    if len(rows) > max_rows:
        note = f'<div class="passlab-note">{esc(shown_note(max_rows, len(rows)))}</div>'
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    head = "".join(f'<th class="num">{esc(h)}</th>' if num else f"<th>{esc(h)}</th>"
                   for h, num in zip(header, numeric))
    return (
        f"<style>{CSS}</style><table class=\"passlab-table\">{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{note}"
    )


_BREAK_AFTER = re.compile(r"([/._,])(?=.)")


def breakable(value: Any) -> str:
    """`value` escaped, with a `<wbr>` (a line break where one is needed, copied as
    nothing) after each `/`, `.`, `_` and `,`."""
    return _BREAK_AFTER.sub(r"\1<wbr>", esc(value))


def error_panel(exc: BaseException, what: str, *, style: bool = True) -> str:
    """The one HTML panel for a view that could not be drawn: "could not display
    `what`: the exception". `style=False` leaves out the stylesheet, for a page that
    carries it once (the static report)."""
    lines = traceback.format_exception_only(type(exc), exc)
    css = f"<style>{CSS}</style>" if style else ""
    return (
        f'{css}<div class="passlab-error">could not display {esc(what)}: '
        f"{esc(''.join(lines).strip())}</div>"
    )


def error_text(exc: BaseException, what: str) -> str:
    return f"<{what}: could not display: {exc!r}>"


class Displayable:
    """The one display mixin (as rich's `JupyterMixin`): a `_repr_mimebundle_` with
    text/plain from `to_text()` and text/html from `to_html()`.

    Only the mimetypes a front end asks for are computed (`include`/`exclude`), and
    display never raises into the notebook: an error becomes a one-line text and a short
    HTML panel. A class whose notebook view differs from its full conversion (a first
    view of a long diff) overrides `_display_text` / `_display_html`.

    Examples
    --------
    >>> class Hello(Displayable):
    ...     def to_text(self): return "hello"
    ...     def to_html(self): return "<b>hello</b>"
    >>> Hello()._repr_mimebundle_(include={"text/plain"})
    {'text/plain': 'hello'}
    """

    __slots__ = ()

    def to_text(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no to_text()")

    def to_html(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no to_html()")

    def _display_text(self) -> str:
        return self.to_text()

    def _display_html(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        what = type(self).__name__
        bundle: dict[str, str] = {}
        for mime, render, fallback in (("text/plain", self._display_text, error_text),
                                       ("text/html", self._display_html, error_panel)):
            if (include and mime not in include) or (exclude and mime in exclude):
                continue
            try:
                bundle[mime] = render()
            except Exception as exc:  # noqa: BLE001 - display must never raise into the notebook
                bundle[mime] = fallback(exc, what)
        return bundle


#: Cells that stand for a missing number and do not make a column text.
PLACEHOLDERS = frozenset({"", "-", "?"})
_UNITS = (" B", " KiB", " MiB", " GiB", " ms", " s")


def numeric_columns(n: int, cells: Sequence[Sequence[str]]) -> list[bool]:
    """Which of `n` columns to right-align: those with a number ("12", "2.5 KiB",
    ">=1.0 MiB", "40%") and otherwise only placeholders (`PLACEHOLDERS`). One rule
    per column, so that a name column is left-aligned even if a name looks numeric.

    >>> numeric_columns(3, [["FuseOps", "1.20", "2.5 KiB"], ["x", "0.5", "-"]])
    [False, True, True]
    """
    out = []
    for i in range(n):
        col = [r[i] for r in cells if i < len(r)]
        out.append(any(_is_num(c) for c in col)
                   and all(_is_num(c) or c in PLACEHOLDERS for c in col))
    return out


def _is_num(s: str) -> bool:
    s = s.replace(",", "").replace("\u00a0", " ").removeprefix(">=")
    for unit in _UNITS:
        if s.endswith(unit):
            s = s[: -len(unit)]
            break
    try:
        float(s.rstrip("%x"))
        return True
    except ValueError:
        return False


# ----------------------------------------------------------------------- graph layout
#: Seconds one layout may take before it is abandoned (huge graphs: show a table).
LAYOUT_TIMEOUT = 60

NO_LAYOUT = ("no graph layout program found: install Graphviz's `dot` (apt-get install "
             "graphviz) or the pip package graphviz-pure for pictures")

#: A graph with more edges than this is laid out with Graphviz's work bounded
#: (:data:`BOUNDED_LAYOUT`); a smaller one with dot's defaults (curved edges, fewer
#: crossings), which cost little there: a complete DAG of 14 nodes (91 edges) takes 0.07 s.
BOUNDED_OVER_EDGES = 100
#: Graphviz graph attributes that keep dot's work about linear in the edges on dense DAGs
#: (dot's defaults iterate network simplex and crossing minimisation until nothing
#: improves: DenseNet-121's fused graph, 250 nodes and 784 edges, took minutes; a layered
#: DAG of 1,662 edges 17 s of CPU against 0.04 s at 232): no network-simplex iterations
#: past the first feasible solution for the x positions (``nslimit``), a tenth of the
#: crossing-minimisation passes (``mclimit``) and no second round of it (``remincross``),
#: a small search for the entering edge (``searchsize``), straight edges
#: (``splines=line``: routing splines around every node is the other super-linear part).
#: The ranks keep dot's own network simplex: bounding it (``nslimit1=0``) fails on
#: clusters ("trouble in init_rank"), and it is not what grows.
BOUNDED_LAYOUT = (("nslimit", "0"), ("mclimit", "0.1"), ("remincross", "false"),
                  ("searchsize", "10"), ("splines", "line"))


def layout_attrs(edges: int) -> str:
    """The DOT graph attributes (`a=b, c=d`) that bound a layout of `edges` edges, or
    "" for a graph small enough for dot's defaults."""
    if edges <= BOUNDED_OVER_EDGES:
        return ""
    return ", ".join(f"{k}={v}" for k, v in BOUNDED_LAYOUT)


def layout_program() -> str | None:
    """Path of a program that turns DOT into SVG: Graphviz's `dot`, else the
    pip-installable `graphviz-pure` (also looked up beside the running Python, for a
    virtual environment that is not activated), else None."""
    here = str(Path(sys.executable).parent)
    for name in ("dot", "graphviz-pure"):
        exe = shutil.which(name) or shutil.which(name, path=here)
        if exe:
            return exe
    return None


@functools.lru_cache(maxsize=8)
def _engine(exe: str) -> str:
    """What laid a drawing out: the program and its version line (part of a layout's
    key: two engines may place nodes differently)."""
    try:
        done = subprocess.run([exe, "-V"], capture_output=True, text=True, timeout=30,
                              check=False)
        return f"{Path(exe).name}: {(done.stderr or done.stdout).strip()[:200]}"
    except (OSError, subprocess.SubprocessError):
        return Path(exe).name


class LayoutCache:
    """Layouts by key, least recently used first out past `limit` characters of SVG;
    safe to share between threads (a report lays several graphs out at once)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._svgs: OrderedDict[str, str] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            svg = self._svgs.get(key)
            if svg is not None:
                self._svgs.move_to_end(key)
            return svg

    def put(self, key: str, svg: str) -> None:
        with self._lock:
            old = self._svgs.pop(key, None)
            self._size += len(svg) - (len(old) if old is not None else 0)
            self._svgs[key] = svg
            while self._size > self.limit and len(self._svgs) > 1:
                self._size -= len(self._svgs.popitem(last=False)[1])

    def clear(self) -> None:
        with self._lock:
            self._svgs.clear()
            self._size = 0


#: Every layout this process made, by :func:`layout_key` (64 Mi characters of SVG at
#: most): the report, the Explorer and ``to_svg`` draw the same graph once.
LAYOUTS = LayoutCache(64 << 20)
#: Where layouts are also kept on disk while a view of a saved trace renders (an object
#: with ``get(key) -> str | None`` and ``put(key, svg)``: the views' store beside the trace
#: file, :class:`passlab.io._layout_store.LayoutStore`); None: memory only.
_STORE: contextvars.ContextVar[Any] = contextvars.ContextVar("passlab_layout_store",
                                                             default=None)


@contextlib.contextmanager
def layout_store(store: Any) -> Iterator[None]:
    """Layouts made inside the block are read from and written to `store` too (see
    `_STORE`); None: memory only. Per thread of control (a context variable)."""
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)


def layout_key(source: str, exe: str | None = None) -> str:
    """The key of the layout of DOT `source` by the layout program `exe` (default:
    `layout_program`): a SHA-256 of the program, its version and the source."""
    exe = exe or layout_program() or ""
    return hashlib.sha256(f"{_engine(exe) if exe else ''}\0{source}".encode()).hexdigest()


def dot_to_svg(source: str) -> str:
    """Lay out DOT source as SVG (the `<svg>` element, which is also a file of its own:
    no XML prolog or doctype), or take the layout made before of the same source by the
    same program (`LAYOUTS`, and the store of `layout_store`); `RuntimeError`
    naming what to install when no layout program exists, or what failed.

    The program runs as a subprocess with a timeout (`LAYOUT_TIMEOUT`). The
    `graphviz` Python package is not used for this: it runs only a program named
    `dot` (its `DOT_BINARY`, a module constant: pointing it at `graphviz-pure` would
    change it for the whole process) and its `pipe` takes no timeout, so a runaway
    layout could not be stopped."""
    exe = layout_program()
    if exe is None:
        raise RuntimeError(NO_LAYOUT)
    key = layout_key(source, exe)
    svg = LAYOUTS.get(key)
    if svg is not None:
        return svg
    store = _STORE.get()
    svg = store.get(key) if store is not None else None
    if svg is None:
        svg = _lay_out(exe, source)
        if store is not None:
            store.put(key, svg)
    LAYOUTS.put(key, svg)
    return svg


def _lay_out(exe: str, source: str) -> str:
    try:
        done = subprocess.run([exe, "-Tsvg"], input=source, capture_output=True, text=True,
                              timeout=LAYOUT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"graph layout took over {LAYOUT_TIMEOUT} s; the graph is too "
                           "large to lay out quickly: filter it (region=) or collapse it") from None
    if done.returncode != 0:
        raise RuntimeError(f"{Path(exe).name} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    svg = done.stdout
    return svg[max(svg.find("<svg"), 0):]  # the element: no XML prolog or doctype


# ------------------------------------------------------------------------ CSV exports
#: First characters that make a spreadsheet read a text cell as a formula ("CSV
#: injection"): pass and function names come from IR and user code.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """`value`, with a `'` in front when it is text a spreadsheet would take for a
    formula; numbers and other values unchanged.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("-x"), csv_cell(-1), csv_cell("FuseOps")
    ("'=HYPERLINK(1)", "'-x", -1, 'FuseOps')
    """
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def to_csv(frame: Any, path: Any) -> Path:
    """Write a pandas DataFrame as CSV with every text cell, column name and index label
    passed through `csv_cell`: the one way passlab writes CSV."""
    safe = frame.map(csv_cell)
    safe.columns = [csv_cell(c) for c in safe.columns]
    safe.index = safe.index.map(csv_cell).rename(frame.index.name)
    # RFC 4180 line ends: then a cell holding a lone "\r" is quoted too, not a row break
    safe.to_csv(path, lineterminator="\r\n")
    return Path(path)
