"""`Profile.plot()`: kernel times per run as sorted horizontal bars, hand-written SVG.

Colours are JupyterLab's theme variables with light-theme fallbacks, so the chart reads
in a light and a dark notebook and in a static page alike; text uses `currentColor`.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

from passlab import _render

_FONT = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
_BAR = "var(--jp-brand-color1, #1976d2)"
_NOISY = "var(--jp-warn-color1, #f57c00)"
_OTHER = "var(--jp-border-color1, #9e9e9e)"
_LABEL_W, _BAR_W, _ROW_H, _TOP = 260, 380, 18, 30


def seconds_text(seconds: float) -> str:
    """Seconds in the unit that suits them: "12.3 us", "4.56 ms", "1.23 s"."""
    a = abs(seconds)
    if a >= 1:
        return f"{seconds:.3g} s"
    if a >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


@dataclass(frozen=True)
class ProfilePlot(_render.Displayable):
    """Bars `(label, seconds per run, kind, tooltip)`, each a non-negative time; kind
    "kernel", "noisy" or "other" (overhead, unattributed, the kernels beyond the top
    ones)."""

    title: str
    bars: tuple[tuple[str, float, str, str], ...]

    @classmethod
    def of(cls, prof: Any, top: int) -> ProfilePlot:
        """The kernels (the `top` slowest, the rest as one bar), the runtime's own work
        and the unattributed rest: every bar a non-negative time; a negative rest (the
        parts measured longer than the run, within or beyond its noise) is said in the
        title's last line, never drawn."""
        bars = []
        for k in prof.kernels[:top]:
            alone = "" if k.alone_s is None else f", alone {seconds_text(k.alone_s)} per call"
            tip = (f"{k.kernel}: {seconds_text(k.total_s)} per run in place, {k.calls} calls, "
                   f"{k.share:.1%}{alone}; sources: "
                   f"{', '.join(k.sources) or '-'}; passes: {', '.join(k.passes) or '-'}")
            bars.append((k.kernel, k.total_s, "noisy" if k.noisy else "kernel", tip))
        rest = prof.kernels[top:]
        if rest:
            s = sum(k.total_s for k in rest)
            bars.append((f"{len(rest)} other kernels", s, "other", seconds_text(s)))
        notes = []
        for label, value, tip in (
                ("runtime overhead", prof.overhead_s,
                 "the runtime's own work (the program with empty kernels: interpreter, "
                 "builtins, allocations)"),
                ("unattributed", prof.unattributed_s,
                 "the instrumented run minus the kernels and the runtime's own work")):
            if math.isnan(value):
                continue
            if value >= 0:
                bars.append((label, value, "other", f"{tip}: {seconds_text(value)}"))
            else:
                notes.append(f"{label} {seconds_text(value)} (not drawn: below zero)")
        title = prof.sentence()
        return cls(title + ("\n" + "; ".join(notes) if notes else ""), tuple(bars))

    def to_text(self) -> str:
        lines = self.title.split("\n")
        top = max((v for _, v, _, _ in self.bars), default=0.0) or 1.0
        for label, v, kind, _ in self.bars:
            n = round(40 * max(0.0, v) / top)
            lines.append(f"  {label[:32]:<32} {'#' * n:<40} {seconds_text(v):>9}"
                         + (" noisy" if kind == "noisy" else ""))
        return "\n".join(lines)

    def to_html(self) -> str:
        return f'<div style="overflow-x:auto;max-width:100%">{self.to_svg()}</div>'

    def to_svg(self) -> str:
        esc = _render.esc
        top = max((v for _, v, _, _ in self.bars), default=0.0) or 1.0
        lines = [part for line in self.title.split("\n")
                 for part in textwrap.wrap(line, 100) or [""]]
        head = _TOP + 14 * (len(lines) - 1)
        height = head + len(self.bars) * _ROW_H + 10
        width = _LABEL_W + _BAR_W + 100
        bold = ' font-weight="600"'
        parts = [f'<text x="4" y="{16 + 14 * i}"{bold if i == 0 else ""}>'
                 f"{esc(line[:160])}</text>" for i, line in enumerate(lines)]
        for i, (label, v, kind, tip) in enumerate(self.bars):
            y = head + i * _ROW_H
            w = max(1.0, _BAR_W * max(0.0, v) / top)
            colour = {"kernel": _BAR, "noisy": _NOISY}.get(kind, _OTHER)
            parts.append(
                f'<g class="pp-bar pp-{kind}"><title>{esc(tip)}</title>'
                f'<text x="{_LABEL_W - 6}" y="{y + 13}" text-anchor="end">{esc(label[:36])}'
                f'</text><rect x="{_LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{_ROW_H - 5}"'
                f' style="fill:{colour}"/><text x="{_LABEL_W + w + 4:.1f}" y="{y + 13}">'
                f"{seconds_text(v)}{' noisy' if kind == 'noisy' else ''}</text></g>")
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="passlab-profile-plot" '
                f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
                f'style="{_FONT};font-size:11px;display:block" role="img" '
                f'fill="currentColor">{"".join(parts)}</svg>')

    def __repr__(self) -> str:
        return f"<ProfilePlot: {len(self.bars)} bars>"
