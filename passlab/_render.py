"""Small rendering helpers shared by every displayable object: aligned text tables,
escaped HTML tables and a ``_repr_mimebundle_`` that never raises.

This module knows nothing about passes or traces; it sits at the bottom of the import
graph so that data classes can render themselves without importing the views layer.
"""

from __future__ import annotations

import html
import shutil
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CSS = """
.passlab-table { border-collapse: collapse; font: 12px/1.4 ui-monospace, SFMono-Regular,
  Menlo, Consolas, monospace; }
.passlab-table caption { text-align: left; font-weight: 600; padding: 4px 0; }
.passlab-table th, .passlab-table td { padding: 2px 8px; border-bottom: 1px solid
  rgba(128,128,128,.25); text-align: left; white-space: nowrap; }
.passlab-table th { position: sticky; top: 0; background: rgba(128,128,128,.15); }
.passlab-table tr.user td { background: rgba(46,160,67,.15); font-weight: 600; }
.passlab-table tr.off td { opacity: .5; text-decoration: line-through; }
.passlab-table tr.failed td { background: rgba(248,81,73,.2); }
.passlab-table tr.inner td { opacity: .6; }
.passlab-table tr.same td { opacity: .55; }
.passlab-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
.passlab-error { border-left: 4px solid #d73a49; padding: 4px 8px;
  font: 12px monospace; white-space: pre-wrap; }
.passlab-note { font: 12px sans-serif; opacity: .75; padding: 2px 0; }
"""

#: Rows beyond this are elided in text and HTML tables, with a "shown N of M" note.
MAX_ROWS = 2000


def esc(value: Any) -> str:
    """HTML-escape anything that came from IR, files or users."""
    return html.escape(str(value), quote=True)


def human_bytes(n: int) -> str:
    """A memory size in binary units: "512 B", "2.5 KiB", "1.2 MiB"."""
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def shown_note(shown: int, total: int, what: str = "rows") -> str:
    return f"shown {shown} of {total} {what}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], max_rows: int = MAX_ROWS) -> str:
    """A plain, aligned table; columns whose every cell is numeric are right-aligned."""
    cells = [[str(c) for c in r] for r in rows[:max_rows]]
    widths = [len(h) for h in header]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    numeric = [
        bool(cells) and all(_is_num(r[i]) for r in cells if r[i] != "") for i in range(len(header))
    ]

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
) -> str:
    """An escaped HTML table with the passlab stylesheet inline."""
    body = []
    for i, r in enumerate(rows[:max_rows]):
        cls = classes[i] if classes else ""
        extra = "".join(f' {k}="{esc(v)}"' for k, v in (attrs[i] if attrs else {}).items())
        tds = "".join(
            f'<td class="num">{esc(c)}</td>' if _is_num(str(c)) else f"<td>{esc(c)}</td>" for c in r
        )
        body.append(f'<tr class="{esc(cls)}"{extra}>{tds}</tr>')
    note = ""
    if len(rows) > max_rows:
        note = f'<div class="passlab-note">{esc(shown_note(max_rows, len(rows)))}</div>'
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    return (
        f"<style>{CSS}</style><table class=\"passlab-table\">{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{note}"
    )


def error_panel(exc: BaseException, what: str) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return (
        f'<style>{CSS}</style><div class="passlab-error">could not display {esc(what)}: '
        f"{esc(''.join(lines).strip())}</div>"
    )


def mimebundle(obj: Any) -> dict[str, str]:
    """text/plain and text/html for ``obj``; display errors become a short panel."""
    what = type(obj).__name__
    try:
        text = obj.to_text()
    except Exception as exc:  # display must never raise into the notebook
        text = f"<{what}: could not display: {exc!r}>"
    try:
        markup = obj.to_html()
    except Exception as exc:
        markup = error_panel(exc, what)
    return {"text/plain": text, "text/html": markup}


def _is_num(s: str) -> bool:
    try:
        float(s.replace(",", "").rstrip("%x"))
        return True
    except ValueError:
        return False


# ----------------------------------------------------------------------- graph layout
#: Seconds one layout may take before it is abandoned (huge graphs: show a table).
LAYOUT_TIMEOUT = 60

NO_LAYOUT = ("no graph layout program found: install Graphviz's `dot` (apt-get install "
             "graphviz) or the pip package graphviz-pure for pictures")


def layout_program() -> str | None:
    """Path of a program that turns DOT into SVG: Graphviz's ``dot``, else the
    pip-installable ``graphviz-pure`` (also looked up beside the running Python, for a
    virtual environment that is not activated), else None."""
    here = str(Path(sys.executable).parent)
    for name in ("dot", "graphviz-pure"):
        exe = shutil.which(name) or shutil.which(name, path=here)
        if exe:
            return exe
    return None


def dot_to_svg(source: str) -> str:
    """Lay out DOT source as SVG; ``RuntimeError`` naming what to install when no layout
    program exists, or what failed."""
    exe = layout_program()
    if exe is None:
        raise RuntimeError(NO_LAYOUT)
    try:
        done = subprocess.run([exe, "-Tsvg"], input=source, capture_output=True, text=True,
                              timeout=LAYOUT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"graph layout took over {LAYOUT_TIMEOUT} s; the graph is too "
                           "large to lay out quickly: filter it (region=) or collapse it") from None
    if done.returncode != 0:
        raise RuntimeError(f"{Path(exe).name} failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout
