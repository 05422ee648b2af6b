"""One numeric column of the per-pass table over the main chain, as a line
(`pass_table(trace).plot("peak")`): stage bands behind it, the passes that moved it
labelled, hand-written SVG sharing the look of `passlab.analysis._buffer_plot`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab.analysis._buffer_plot import (
    _FONT,
    _LEFT,
    _MAX_ROWS,
    _MIN_W,
    _RIGHT,
    PALETTE,
    _n,
    _nice_max,
    _title,
)

__all__ = ["ColumnPlot", "column_plot", "COLUMNS"]

#: Short names for the per-pass table's numeric columns.
COLUMNS = {"peak": "peak_bytes", "ir lines": "ir_lines", "bindings": "bindings_after",
           "prim funcs": "prim_funcs_after", "kernels": "prim_funcs_after"}
_BYTES = {"peak_bytes"}
_MAX_LABELS = 10


@dataclass(frozen=True)
class ColumnPlot(_render.Displayable):
    """One numeric column of the per-pass table over the main chain, as a line."""

    column: str
    rows: tuple[tuple[int, str, str, float | None, bool], ...]  # index, pass, stage, value, exact
    title: str = ""

    def __repr__(self) -> str:
        return f"<ColumnPlot: {self.column} over {len(self.rows)} passes>"

    def _fmt(self, v: float) -> str:
        if self.column in _BYTES:
            return _render.human_bytes(int(v))
        return str(int(v)) if float(v).is_integer() else f"{v:.2f}"

    def moves(self) -> list[tuple[int, str, float | None, float]]:
        """`(step index, pass, value before, value after)` of each pass that changed the
        value, in pipeline order. A change too small to show as shown (6.1 MiB -> 6.1 MiB)
        is not a move; small changes that add up to one are, at the pass that tips it."""
        out: list[tuple[int, str, float | None, float]] = []
        prev: float | None = None
        base: float | None = None  # the value as of the last move (or the first value)
        for i, name, _, v, _ in self.rows:
            if v is None:
                continue
            if base is None:
                base = v
            elif v != prev and self._fmt(v) != self._fmt(base):
                out.append((i, name, prev, v))
                base = v
            prev = v
        return out

    def _labelled(self) -> set[int]:
        moves = self.moves()
        big = sorted(moves, key=lambda m: -abs(m[3] - (m[2] or 0)))[:_MAX_LABELS]
        return {m[0] for m in big}

    def to_text(self) -> str:
        known = [v for *_, v, _ in self.rows if v is not None]
        head = f"{self.column} over {len(self.rows)} passes of the main chain" + (
            f": from {self._fmt(known[0])} to {self._fmt(known[-1])}, at most "
            f"{self._fmt(max(known))}" if known else ": no value")
        lines = [head] + [f"  #{i} {name}: {self._fmt(a) if a is not None else '-'} -> "
                          f"{self._fmt(b)}" for i, name, a, b in self.moves()[:_MAX_ROWS]]
        return "\n".join(lines)

    def to_html(self) -> str:
        return (f'<div class="passlab-colplot-box" style="overflow-x:auto;max-width:100%">'
                f"{self.to_svg()}</div>")

    def to_svg(self, mark: int | None = None) -> str:
        """The line; `mark` (a step index) draws a marker at that pass."""
        esc, n = _render.esc, len(self.rows)
        cw = max(4.0, min(40.0, 900.0 / max(n, 1)))
        width = max(_MIN_W, _LEFT + n * cw + _RIGHT)
        known = [v for *_, v, _ in self.rows if v is not None]
        ymax, step = _nice_max(max(known, default=0)) if self.column in _BYTES else \
            _nice_plain(max(known, default=0))
        y0, h = 46.0, 150.0
        base_y, sy = y0 + h, h / ymax
        parts = [f'<text x="4" y="16" font-weight="600">{esc(self.to_text().splitlines()[0])}'
                 "</text>"]

        def x(c: float) -> float:
            return _LEFT + c * cw

        k, start = 0, 0  # stage bands
        for c in range(1, n + 1):
            if c == n or self.rows[c][2] != self.rows[start][2]:
                stage = self.rows[start][2]
                parts.append(f'<g class="pc-stage">{_title([f"stage {stage}"])}<rect '
                             f'x="{_n(x(start))}" y="{_n(y0 - 14)}" width="{_n((c - start) * cw)}" '
                             f'height="{_n(h + 14)}" fill="{PALETTE[k % len(PALETTE)]}" '
                             f'fill-opacity=".12"/><text x="{_n(x(start) + 3)}" y="{_n(y0 - 4)}" '
                             f'font-size="10" opacity=".8">{esc(stage[: int((c - start) * cw / 6.2)])}'
                             "</text></g>")
                k, start = k + 1, c
        v = 0.0
        while v <= ymax + 1e-9:
            yy = base_y - v * sy
            parts.append(f'<line x1="{_LEFT}" x2="{_n(x(n))}" y1="{_n(yy)}" y2="{_n(yy)}" '
                         f'stroke="currentColor" stroke-opacity=".15"/><text x="{_LEFT - 4}" '
                         f'y="{_n(yy + 4)}" text-anchor="end">{esc(self._fmt(v))}</text>')
            v += step
        segs: list[list[str]] = []
        cur: list[str] = []
        for c, (_, _, _, val, _) in enumerate(self.rows):
            if val is None:
                if cur:
                    segs.append(cur)
                cur = []
                continue
            cur.append(f"{_n(x(c + 0.5))},{_n(base_y - val * sy)}")
        if cur:
            segs.append(cur)
        for seg in segs:
            parts.append(f'<polyline class="pc-line" points="{" ".join(seg)}" fill="none" '
                         f'stroke="{PALETTE[0]}" stroke-width="2"/>')
        labelled = self._labelled()
        for c, (i, name, stage, val, exact) in enumerate(self.rows):
            if val is None:
                continue
            tip = [f"#{i} {name} ({stage}): {'' if exact else '>= '}{self._fmt(val)}"]
            big = i in labelled
            parts.append(f'<g class="pc-point{" pc-moved" if big else ""}">{_title(tip)}'
                         f'<circle cx="{_n(x(c + 0.5))}" cy="{_n(base_y - val * sy)}" '
                         f'r="{3.5 if big else 2}" fill="{PALETTE[1] if big else PALETTE[0]}"/>'
                         "</g>")
            if big:
                parts.append(f'<text transform="translate({_n(x(c + 0.5) + 3)},'
                             f'{_n(base_y + 6)}) rotate(-60)" text-anchor="end" font-size="10">'
                             f"{esc(name[:24])}</text>")
        if mark is not None:
            at = next((k for k, r in enumerate(self.rows) if r[0] == mark), None)
            if at is not None:
                parts.append(f'<line class="pc-mark" x1="{_n(x(at + 0.5))}" x2="{_n(x(at + 0.5))}" '
                             f'y1="{_n(y0 - 14)}" y2="{_n(base_y)}" stroke="currentColor" '
                             'stroke-dasharray="3 3"/>')
        parts.append(f'<line x1="{_LEFT}" x2="{_n(x(n))}" y1="{_n(base_y)}" y2="{_n(base_y)}" '
                     'stroke="currentColor"/>')
        height = base_y + 120
        parts.append(f'<text x="{_n(x(n / 2))}" y="{_n(height - 6)}" text-anchor="middle" '
                     'opacity=".8">passes of the main chain (labelled: the passes that moved '
                     "it most)</text>")
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="passlab-colplot" '
                f'width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} '
                f'{_n(height)}" style="{_FONT};font-size:11px;display:block" role="img" '
                f'fill="currentColor">{"".join(parts)}</svg>')


def _nice_plain(top: float) -> tuple[float, float]:
    if top <= 0:
        return 1.0, 1.0
    raw = top / 4
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return step * math.ceil(top / step), step


def column_plot(rows: Sequence[dict[str, Any]], column: str, title: str = "") -> ColumnPlot:
    """See `passlab.analysis.table.PassTable.plot`."""
    key = COLUMNS.get(column, column)
    numeric = {k for r in rows for k, v in r.items() if isinstance(v, (int, float))
               and not isinstance(v, bool) and k not in ("index", "depth")}
    if rows and key not in numeric:
        from passlab.errors import unknown

        raise unknown("column", column, sorted(numeric | set(COLUMNS)),
                      "plot() draws a numeric column of the per-pass table.")
    main = [r for r in rows if r.get("kind") == "pass"] or list(rows)
    while main and main[-1].get(key) is None:  # e.g. no peak once only TIR is left
        main.pop()
    data = tuple((r["index"], r["name"], r["stage"],
                  None if r.get(key) is None else float(r[key]),
                  bool(r.get("peak_exact", True)) if key == "peak_bytes" else True)
                 for r in main)
    return ColumnPlot(key, data, title)
