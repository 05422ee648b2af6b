"""`Profile.plot()`: kernel times per run as sorted horizontal bars, hand-written SVG.

Colours are JupyterLab's theme variables with light-theme fallbacks, so the chart reads
in a light and a dark notebook and in a static page alike; text uses `currentColor`.
"""

from __future__ import annotations

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
    """Bars `(label, seconds per run, kind, tooltip)`; kind "kernel", "noisy" or
    "other" (overhead, gap, the kernels beyond the top ones)."""

    title: str
    bars: tuple[tuple[str, float, str, str], ...]

    @classmethod
    def of(cls, prof: Any, top: int) -> ProfilePlot:
        bars = []
        for k in prof.kernels[:top]:
            tip = (f"{k.kernel}: {seconds_text(k.total_s)} per run, {k.calls} calls, "
                   f"{k.share:.1%}, spread {k.spread:.0%}; sources: "
                   f"{', '.join(k.sources) or '-'}; passes: {', '.join(k.passes) or '-'}")
            bars.append((k.kernel, k.total_s, "noisy" if k.noisy else "kernel", tip))
        rest = prof.kernels[top:]
        if rest:
            s = sum(k.total_s for k in rest)
            bars.append((f"{len(rest)} other kernels", s, "other", seconds_text(s)))
        bars.append(("runtime overhead", prof.overhead_s, "other",
                     f"VM, builtins, allocations: {seconds_text(prof.overhead_s)}"))
        bars.append(("gap", prof.gap_s, "other",
                     f"end to end minus kernels and overhead: {seconds_text(prof.gap_s)}"))
        return cls(prof.summary(), tuple(bars))

    def to_text(self) -> str:
        lines = [self.title]
        top = max((abs(v) for _, v, _, _ in self.bars), default=0.0) or 1.0
        for label, v, kind, _ in self.bars:
            n = round(40 * abs(v) / top)
            lines.append(f"  {label[:32]:<32} {'#' * n:<40} {seconds_text(v):>9}"
                         + (" noisy" if kind == "noisy" else ""))
        return "\n".join(lines)

    def to_html(self) -> str:
        return f'<div style="overflow-x:auto;max-width:100%">{self.to_svg()}</div>'

    def to_svg(self) -> str:
        esc = _render.esc
        top = max((abs(v) for _, v, _, _ in self.bars), default=0.0) or 1.0
        height = _TOP + len(self.bars) * _ROW_H + 10
        width = _LABEL_W + _BAR_W + 100
        parts = [f'<text x="4" y="16" font-weight="600">{esc(self.title[:160])}</text>']
        for i, (label, v, kind, tip) in enumerate(self.bars):
            y = _TOP + i * _ROW_H
            w = max(1.0, _BAR_W * abs(v) / top)
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
