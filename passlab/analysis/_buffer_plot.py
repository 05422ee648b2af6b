"""The liveness picture of a `BufferReport`
(`report.plot()`), drawn as hand-written SVG (no plotting library, nothing fetched): one
block per tensor before planning or per storage after it, stacked over the bindings in
program order, optionally above a second report on the same axes (`compare=`).
`passlab.analysis._column_plot` draws the per-pass line with the same helpers.

Every name from IR is escaped; text uses `currentColor` and blocks use mid-tone colours
with translucent fills, so the pictures read on light and dark backgrounds alike. This
module does not import `buffers` (that would be an import cycle):
reports come in as arguments, with the peak's definition in words.
"""

from __future__ import annotations

import bisect
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from passlab import _render
from passlab.analysis._liveness import Tensor

__all__ = ["BufferPlot", "plot", "PALETTE"]
BufferReport: TypeAlias = Any  # passlab.analysis.buffers.BufferReport (see above)

#: Mid-tone colours (Tableau 10) that keep their contrast on white and on near-black.
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#8c8c8c")
_FONT = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
_STYLE = ("<style>.pb-block:hover>path,.pb-tensor:hover>path{stroke-width:2.5}"
          ".pb-block,.pb-tensor{cursor:help}</style>")
_LEFT, _RIGHT, _PLOT_H, _LABELS_H = 70, 16, 200, 46
_TICK_CHAR_W = 6.1  # width of one 10px monospace character
_MAX_ROWS = 60  # rows of the text picture
_MIN_W, _CHAR_W = 640, 6.7  # narrowest picture; width of one 11px monospace character
_PLOT_W = 560  # the columns share this width (each 3 to 60 px)


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _nice_max(top: float) -> tuple[float, float]:
    """(axis maximum, tick step) covering `top` in 1/2/5 steps of its unit."""
    if top <= 0:
        return 1.0, 1.0
    unit = 1 << 20 if top >= 1 << 20 else 1 << 10 if top >= 1 << 10 else 1
    raw = top / unit / 4
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw) * unit
    return step * math.ceil(top / step), step


def _wrap(text: str, width: float) -> list[str]:
    """`text` cut at spaces into lines that fit `width` pixels."""
    room = max(20, int((width - 8) / _CHAR_W))
    # textwrap breaks a word longer than the line in quadratic time: cut such words first
    words = [w[k:k + room - 2] for w in text.split(" ") for k in range(0, max(len(w), 1),
                                                                        room - 2)]
    return textwrap.wrap(" ".join(words), room, subsequent_indent="  ") or [""]


def _title(lines: Sequence[str]) -> str:
    return f"<title>{_render.esc(chr(10).join(lines))}</title>"


def _tick_labels(p: Any, x: Any, base_y: float, cw: float, width: float) -> list[str]:
    """The columns' labels under the axis, level and whole (never rotated or cut): the
    peak's column first, then left to right, each where it overlaps no label placed
    before it; every column names its kernel on hover (a `<title>` over its strip)."""
    out = []
    for c, tick in enumerate(p.ticks):
        if tick:  # the hover strip: the whole column, axis labels included
            out.append(f'<rect x="{_n(x(c))}" y="{_n(base_y)}" width="{_n(cw)}" '
                       f'height="{_n(_LABELS_H - 12)}" fill="transparent">{_title([tick])}</rect>')
    r = p.report
    peak = p.col[r.peak_binding] if r.peak_binding is not None \
        and r.peak_function == p.function else None
    order = sorted(range(len(p.ticks)), key=lambda c: (c != peak, c))
    rows: list[list[tuple[float, float]]] = [[], []]  # two staggered rows of labels
    for c in order:
        tick = p.ticks[c]
        if not tick:
            continue
        half = len(tick) * _TICK_CHAR_W / 2
        cx = min(max(x(c + 0.5), _LEFT + half), width - _RIGHT - half)
        lo, hi = cx - half - 6, cx + half + 6
        row = next((k for k, placed in enumerate(rows)
                    if not any(lo < b and a < hi for a, b in placed)), None)
        if cx - half < 0 or row is None:
            continue
        rows[row].append((lo, hi))
        ty = base_y + 15 + 13 * row
        out.append(f'<line x1="{_n(x(c + 0.5))}" x2="{_n(x(c + 0.5))}" y1="{_n(base_y)}" '
                   f'y2="{_n(ty - 10)}" stroke="currentColor" stroke-opacity=".5"/>'
                   f'<text x="{_n(cx)}" y="{_n(ty)}" text-anchor="middle" '
                   f'font-size="10">{_title([tick])}{_render.esc(tick)}</text>')
    return out


# ------------------------------------------------------------------ liveness picture
@dataclass(frozen=True)
class _Block:
    name: str
    bytes: int | None
    size: str
    first: int
    last: int
    colour: str
    tip: tuple[str, ...]
    inside: tuple[Tensor, ...] = ()
    peak: bool = False


@dataclass(frozen=True)
class _Panel:
    label: str
    report: BufferReport
    function: str
    blocks: tuple[_Block, ...]
    columns: int
    col: tuple[int, ...]  # column of each binding (the return is the last binding)
    ticks: tuple[str, ...]  # label of each column ("" for none)
    timeline: tuple[int, ...]  # live bytes per column


def _tensor_tip(t: Tensor) -> tuple[str, ...]:
    name = t.name + (f" ({', '.join(t.aliases)})" if t.aliases else "")
    size = _render.human_bytes(t.bytes) if t.bytes is not None else f"{t.size} B (symbolic)"
    last = t.last_use if t.last_use is not None else t.defined
    return (f"tensor {name}: {size}, {t.shape_text} {t.dtype}",
            f"producer: {t.producer or '-'}",
            f"consumers: {', '.join(t.consumers) or '-'}",
            f"live: bindings {t.defined}-{last}" + (f", in storage {t.storage}"
                                                     if t.storage else ""))


def _blocks(report: BufferReport, function: str) -> tuple[_Block, ...]:
    tensors = [t for t in report.tensors if t.function == function]
    storages = [a for a in report.storages if a.function == function]
    if not storages:  # before planning: every tensor is its own block
        peak = {t.name for t in report.peak_tensors if t.function == function}
        return tuple(_Block(t.name, t.bytes, t.size, t.defined,
                            t.last_use if t.last_use is not None else t.defined,
                            PALETTE[k % len(PALETTE)], _tensor_tip(t), (), t.name in peak)
                     for k, t in enumerate(tensors))
    peak = {a.name for a in report.peak_storages if a.function == function}
    out = []
    for k, a in enumerate(storages):
        own = [t for t in tensors if t.storage == a.name]
        solo = [t for t in tensors if t.storage is None and t.name == a.name]
        size = _render.human_bytes(a.bytes) if a.bytes is not None else f"{a.size} B (symbolic)"
        tip: tuple[str, ...] = (f"storage {a.name}: {size}, live: bindings "
                                f"{a.first_use}-{a.last_use}",
                                f"holds: {', '.join(t.name for t in own) or a.name}")
        if solo:  # an output's alloc_tensor: the storage is the tensor
            tip = ("(its own storage) " + _tensor_tip(solo[0])[0],) + _tensor_tip(solo[0])[1:]
        out.append(_Block(a.name, a.bytes, a.size, a.first_use or 0,
                          a.last_use if a.last_use is not None else a.first_use or 0,
                          PALETTE[k % len(PALETTE)], tip, tuple(own), a.name in peak))
    return tuple(out)


def _panel(report: BufferReport, label: str, function: str | None,
           by_call: bool = False) -> _Panel:
    fn = function or report.peak_function or (report.functions[0] if report.functions else "")
    bindings = dict(report.bindings).get(fn)
    if bindings is None:
        from passlab.errors import unknown

        raise unknown("function", fn, list(report.functions))
    calls = dict(report.binding_calls).get(fn, ("",) * len(bindings))
    blocks = _blocks(report, fn)
    if by_call:  # one column per kernel call: allocations fold onto the call they feed
        at = [i for i, c in enumerate(calls) if c]
        col = tuple(bisect.bisect_left(at, i) for i in range(len(bindings) + 1))
        ticks = tuple(calls[i] for i in at) + ("return",)
    else:
        col = tuple(range(len(bindings) + 1))
        ticks = tuple(calls) + ("return",)
    columns = len(ticks)
    live = [0] * columns
    for b in blocks:
        for c in range(col[b.first], col[b.last] + 1):
            live[c] += b.bytes or 0
    return _Panel(label, report, fn, blocks, columns, col, ticks, tuple(live))


@dataclass(frozen=True)
class BufferPlot(_render.Displayable):
    """The liveness picture of one report, or of two on one x axis (`compare=`).

    `to_svg()` gives the SVG, `to_html()` the same wrapped in a div, `to_text()` a
    text picture of the live bytes per kernel call.
    """

    panels: tuple[_Panel, ...]
    shared_axis: bool = True
    #: the peak's definition in words, before (False) and after (True) planning
    definitions: tuple[tuple[bool, str], ...] = ()
    #: False leaves out the headline and the peak's definition (shown beside it already)
    heading: bool = True

    def __repr__(self) -> str:
        what = " vs ".join(p.label or p.function for p in self.panels)
        return f"<BufferPlot: {what}, {sum(len(p.blocks) for p in self.panels)} blocks>"

    # ----------------------------------------------------------------- headings
    def headline(self) -> list[str]:
        """What the picture says, in words: totals, peaks and (compare) the saving."""
        lines = [_describe(p) for p in self.panels]
        if len(self.panels) == 2:
            lines.append(_saving(*self.panels))
        return lines

    def _notes(self, p: _Panel) -> list[str]:
        r = p.report
        words = dict(self.definitions).get(bool(r.storages), "")
        out = [(words + "; " if self.heading and words else "")
               + ("colour = storage, tensors drawn inside at offset 0 (where TVM's planner "
                  "puts them)" if r.storages else "one colour per tensor")]
        if r.unknown_symbols:
            out.append(f"lower bound drawn: sizes that depend on {', '.join(r.unknown_symbols)} "
                       "count as 0 (dashed lines); buffers(..., bounds={"
                       + ", ".join(f"{s!r}: ..." for s in r.unknown_symbols)
                       + "}) draws them to scale")
        elif r.bounds:
            out.append("drawn with bounds " + ", ".join(f"{k}={v}" for k, v in r.bounds))
        return out

    # --------------------------------------------------------------------- SVG
    def to_svg(self) -> str:
        """The picture as one standalone `<svg>` element."""
        cols = max(p.columns for p in self.panels)
        cw = max(3.0, min(60.0, _PLOT_W / max(cols, 1)))
        width = max(_MIN_W, _LEFT + cols * cw + _RIGHT)
        top = max(max(p.timeline, default=0) for p in self.panels)
        ymax, step = _nice_max(top)
        parts, y = [], 4.0
        heads = self.headline() if len(self.panels) == 2 else []
        for line in (w for h in heads for w in _wrap(h, width)):
            y += 15
            parts.append(f'<text x="4" y="{_n(y)}" font-weight="600">{_render.esc(line)}</text>')
        for k, p in enumerate(self.panels):
            last = k == len(self.panels) - 1
            y = self._draw_panel(parts, p, y + 6, cw, ymax, step,
                                 labels=last or not self.shared_axis, width=width)
        height = y + 4
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="passlab-bufplot" '
                f'width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} '
                f'{_n(height)}" style="{_FONT};font-size:11px;display:block" '
                f'role="img" fill="currentColor">{_STYLE}{"".join(parts)}</svg>')

    def _draw_panel(self, parts: list[str], p: _Panel, y: float, cw: float, ymax: float,
                    step: float, labels: bool, width: float) -> float:
        esc = _render.esc
        lines = [_describe(p)] if len(self.panels) == 1 else [p.label or p.function]
        if not self.heading and len(self.panels) == 1:
            lines = []
        for line in (w for h in lines for w in _wrap(h, width)):
            y += 15
            parts.append(f'<text x="4" y="{_n(y)}" font-weight="600">{esc(line)}</text>')
        for note in (w for n in self._notes(p) for w in _wrap(n, width)):
            y += 14
            parts.append(f'<text x="4" y="{_n(y)}" opacity=".8">{esc(note)}</text>')
        y0, h = y + 22, _PLOT_H  # the plot area: y0 (top) .. y0 + h (zero bytes)
        base_y = y0 + h
        sy = h / ymax

        def x(c: float) -> float:
            return _LEFT + c * cw

        # axes and ticks
        v = 0.0
        while v <= ymax + 1e-9:
            yy = base_y - v * sy
            parts.append(f'<line x1="{_LEFT}" x2="{_n(x(p.columns))}" y1="{_n(yy)}" '
                         f'y2="{_n(yy)}" stroke="currentColor" stroke-opacity=".15"/>'
                         f'<text x="{_LEFT - 4}" y="{_n(yy + 4)}" text-anchor="end">'
                         f"{esc(_render.human_bytes(int(v)))}</text>")
            v += step
        # blocks, stacked in order of their first binding
        level = [0] * p.columns
        for b in sorted(p.blocks, key=lambda b: p.col[b.first]):
            c0, c1 = p.col[b.first], p.col[b.last]
            base = level[c0:c1 + 1]
            size = b.bytes or 0
            for c in range(c0, c1 + 1):
                level[c] += size
            parts.append(self._block(b, base, c0, size, x, base_y, sy, cw, p))
        # the envelope: live bytes per column
        pts = []
        for c, live in enumerate(p.timeline):
            top_y = _n(base_y - live * sy)
            pts += [f"{_n(x(c))},{top_y}", f"{_n(x(c + 1))},{top_y}"]
        parts.append(f'<polyline class="pb-envelope" points="{" ".join(pts)}" fill="none" '
                     f'stroke="currentColor" stroke-width="1.5"/>')
        parts.append(self._peak_marker(p, x, y0, base_y, sy, cw))
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_n(y0)}" y2="{_n(base_y)}" '
                     f'stroke="currentColor"/><line x1="{_LEFT}" x2="{_n(x(p.columns))}" '
                     f'y1="{_n(base_y)}" y2="{_n(base_y)}" stroke="currentColor"/>')
        if not labels:
            return base_y + 8
        parts += _tick_labels(p, x, base_y, cw, width)
        axis = "kernel calls in program order" if self.shared_axis and len(self.panels) == 2 \
            else "bindings in program order (labelled with the kernel they call)"
        parts.append(f'<text x="{_n(x(p.columns / 2))}" y="{_n(base_y + _LABELS_H)}" '
                     f'text-anchor="middle" opacity=".8">{esc(axis)}</text>')
        return base_y + _LABELS_H + 4

    def _block(self, b: _Block, base: list[int], c0: int, size: int, x: Any, base_y: float,
               sy: float, cw: float, p: _Panel) -> str:
        stroke = ' stroke-width="2"' if b.peak else ""
        cls = "pb-block pb-peak" if b.peak else "pb-block"
        head = f'<g class="{cls}" data-name="{_render.esc(b.name)}">{_title(b.tip)}'
        if b.bytes is None:  # symbolic size without bounds: a dashed line where it sits
            y = base_y - base[0] * sy
            return (head + f'<path d="M{_n(x(c0))} {_n(y)}H{_n(x(c0 + len(base)))}" '
                    f'stroke="{b.colour}" stroke-dasharray="4 3" stroke-width="2"/></g>')
        out = [head, f'<path d="{_band(base, c0, 0, size, x, base_y, sy)}" fill="{b.colour}" '
                     f'fill-opacity="{".3" if b.inside else ".6"}" stroke="{b.colour}"{stroke}/>']
        for t in b.inside:  # tensors in a storage, at offset 0, over their own live range
            first = p.col[t.defined]
            last = p.col[t.last_use if t.last_use is not None else t.defined]
            lo, hi = first - c0, last - c0 + 1
            if t.bytes is None or lo < 0 or hi > len(base):
                continue
            out.append(f'<g class="pb-tensor" data-name="{_render.esc(t.name)}">'
                       f'{_title(_tensor_tip(t))}<path d="'
                       f'{_band(base[lo:hi], first, 0, t.bytes, x, base_y, sy)}" '
                       f'fill="{b.colour}" fill-opacity=".75" stroke="{b.colour}"/></g>')
        return "".join(out) + "</g>"

    def _peak_marker(self, p: _Panel, x: Any, y0: float, base_y: float, sy: float,
                     cw: float) -> str:
        r = p.report
        if r.peak_binding is None or r.peak_function != p.function:
            return ""
        c = p.col[r.peak_binding]
        cx, py = x(c + 0.5), base_y - r.peak_bytes * sy
        ge = "" if r.peak_exact else ">= "
        text = f"peak {ge}{_render.human_bytes(r.peak_bytes)}"
        anchor = "end" if c > p.columns * 0.6 else "start"
        dx = -4 if anchor == "end" else 4
        return (f'<g class="pb-peak-marker">{_title([_peak_sum(r)])}'
                f'<line x1="{_n(cx)}" x2="{_n(cx)}" y1="{_n(y0 - 12)}" y2="{_n(base_y)}" '
                f'stroke="currentColor" stroke-dasharray="3 3"/>'
                f'<circle cx="{_n(cx)}" cy="{_n(py)}" r="3"/>'
                f'<text x="{_n(cx + dx)}" y="{_n(y0 - 4)}" text-anchor="{anchor}" '
                f'font-weight="600">{_render.esc(text)}</text></g>')

    def to_html(self) -> str:
        """The SVG in a scrollable div (for notebooks, the explorer and the report)."""
        return (f'<div class="passlab-bufplot-box" style="overflow-x:auto;max-width:100%">'
                f"{self.to_svg()}</div>")

    # -------------------------------------------------------------------- text
    def to_text(self) -> str:
        """Live bytes per kernel call as bars, with the headline."""
        out = self.headline()
        for p in self.panels:
            out += ["", f"{p.label or p.function}: live bytes per binding with a call "
                    "(# = share of the largest)"] + self._notes(p)
            top = max(max(q.timeline, default=0) for q in self.panels) or 1
            peak_col = None if p.report.peak_binding is None or \
                p.report.peak_function != p.function else p.col[p.report.peak_binding]
            rows = [c for c, t in enumerate(p.ticks) if t or c == peak_col]
            for c in rows[:_MAX_ROWS]:
                bar = "#" * round(40 * p.timeline[c] / top)
                mark = "  <- peak" if c == peak_col else ""
                out.append(f"{c:5} {p.ticks[c][:28]:<28} {bar:<40} "
                           f"{_render.human_bytes(p.timeline[c]):>9}{mark}")
            if len(rows) > _MAX_ROWS:
                out.append(f"... {_render.shown_note(_MAX_ROWS, len(rows))}")
        return "\n".join(out)


def _peak_sum(r: BufferReport) -> str:
    """"peak X = a + b + c": the entries that add up to the peak."""
    items = [(a.name, a.bytes, a.size) for a in r.peak_storages] if r.planned else \
        [(t.name, t.bytes, t.size) for t in r.peak_tensors]
    parts = [f"{n} {_render.human_bytes(b) if b is not None else s + ' B'}"
             for n, b, s in items[:6]]
    if len(items) > 6:
        parts.append(f"{len(items) - 6} more")
    ge = "" if r.peak_exact else ">= "
    return f"peak {ge}{_render.human_bytes(r.peak_bytes)} = " + (" + ".join(parts) or "0")


def _counts(r: BufferReport) -> tuple[int, str, int]:
    allocs = r.allocations + r.dynamic_allocations
    if allocs:
        return len(allocs), "allocations", r.total_bytes
    return len(r.tensors), "tensors", r.total_bytes


def _total_exact(r: BufferReport) -> bool:
    items = (r.allocations + r.dynamic_allocations) or r.tensors
    return all(x.bytes is not None for x in items)


def _describe(p: _Panel) -> str:
    r = p.report
    n, word, total = _counts(r)
    where = f" after {r.source}" if r.source and not p.label else ""
    ge = "" if _total_exact(r) else ">= "
    head = f"{p.label + ': ' if p.label else ''}{p.function}{where}: {n} {word}, total " \
           f"{ge}{_render.human_bytes(total)}; "
    if r.peak_binding is not None and r.peak_function == p.function:
        return head + _peak_sum(r) + f" (at binding {r.peak_binding})"
    return head + f"live bytes at most {_render.human_bytes(max(p.timeline, default=0))}"


def _saving(a: _Panel, b: _Panel) -> str:
    (na, wa, ta), (nb, wb, tb) = _counts(a.report), _counts(b.report)
    pa, pb = a.report.peak_bytes, b.report.peak_bytes

    def delta(x: int, y: int) -> str:
        d = y - x
        pct = f" ({100 * d / x:+.0f}%)" if x else ""
        return ("no change" if d == 0 else
                f"{'+' if d > 0 else '-'}{_render.human_bytes(abs(d))}{pct}")

    saved = ta - tb
    verdict = (f"{b.label} allocates {_render.human_bytes(saved)} less than {a.label}"
               if saved > 0 else f"{b.label} allocates {_render.human_bytes(-saved)} more "
               f"than {a.label}" if saved < 0 else "same total")
    counts = f"{na} -> {nb} {wa}" if wa == wb else f"{na} {wa} -> {nb} {wb}"
    return f"{verdict}: {counts}, total {delta(ta, tb)}, peak {delta(pa, pb)}"


def _band(base: Sequence[int], c0: int, offset: int, size: int, x: Any, base_y: float,
          sy: float) -> str:
    """Path of a block drawn from column `c0` over `len(base)` columns, sitting at
    `base[i] + offset` bytes in column `c0 + i`: a rectangle when the base is flat,
    a staircase when blocks below it end."""
    lo = [base_y - (b + offset) * sy for b in base]
    hi = [base_y - (b + offset + size) * sy for b in base]
    d = [f"M{_n(x(c0))} {_n(lo[0])}"]
    for i, yy in enumerate(lo):
        if i and yy != lo[i - 1]:
            d.append(f"V{_n(yy)}")
        d.append(f"H{_n(x(c0 + i + 1))}")
    for i in range(len(hi) - 1, -1, -1):
        d.append(f"V{_n(hi[i])}")
        d.append(f"H{_n(x(c0 + i))}")
    return "".join(d) + "Z"


def plot(report: BufferReport, compare: BufferReport | None = None, *,
         function: str | None = None, names: tuple[str, str] | None = None,
         definitions: Any = None) -> BufferPlot:
    """See `BufferReport.plot`; `definitions` maps planned (bool) to the peak's
    definition in words."""
    words = tuple(sorted((definitions or {}).items()))
    if compare is None:
        return BufferPlot((_panel(report, "", function),), definitions=words)
    if not isinstance(compare, type(report)):
        raise TypeError("compare= takes another BufferReport (passlab.buffers(step)), not "
                        f"{type(compare).__name__}")
    if names is None:
        names = (report.source or "A", compare.source or "B")
        if names[0] == names[1]:
            names = (f"A ({names[0]})", f"B ({names[1]})")
    a, b = (_panel(r, n, function, by_call=True) for r, n in zip((report, compare), names))
    if a.ticks == b.ticks:
        return BufferPlot((a, b), definitions=words)
    # different kernels: each keeps its own binding axis (same width, same byte scale)
    return BufferPlot((_panel(report, names[0], function), _panel(compare, names[1], function)),
                      shared_axis=False, definitions=words)
