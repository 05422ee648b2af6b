"""The Explorer's Profile pane, the Python half: the kernel times of the explored build
(a `Profile`) as a table sorted by the column the user
clicked, a "Profile" button when the Explorer holds a build it can time, the graph's
"time" colour (each kernel's time per run) and its legend. No Jupyter here.

The front end (`static/explorer/profile.js`) sends a header click as `profile_sort`,
a row click as `profile_kernel` (the Explorer then shows that kernel in the graph pane)
and the button as `profile_run`. Every name from IR is escaped here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from passlab import _render

__all__ = ["SORTS", "ProfileView", "sorted_kernels", "pane_html", "time_legend",
           "check_sort"]


@dataclass(frozen=True)
class _Column:
    header: str
    key: Callable[[Any], Any]
    descending: bool  # the first click's order: largest first for figures, a-z for names
    numeric: bool


def _opt(v: float | None) -> float:
    return -1.0 if v is None else v


#: The sortable columns: ``profile_sort`` is one of these keys, "-" in front for
#: descending ("-total": slowest first, the default).
SORTS: dict[str, _Column] = {
    "kernel": _Column("kernel", lambda k: k.kernel, False, False),
    "calls": _Column("calls", lambda k: k.calls, True, True),
    "median": _Column("per call", lambda k: k.median_s, True, True),
    "total": _Column("per run", lambda k: k.total_s, True, True),
    "share": _Column("share", lambda k: k.share, True, True),
    "ratio": _Column("in place / alone", lambda k: _opt(k.in_place_ratio), True, True),
    "gflops": _Column("GFLOP/s", lambda k: _opt(k.gflops), True, True),
    "gbps": _Column("GB/s", lambda k: _opt(k.gbps), True, True),
    "sources": _Column("sources", lambda k: ", ".join(k.sources), False, False),
    "passes": _Column("passes", lambda k: ", ".join(k.passes), False, False),
}
DEFAULT_SORT = "-total"


def check_sort(value: str) -> str:
    """`value` when it names a column (`"total"`, `"-total"`...), else ValueError
    listing the keys."""
    if value.lstrip("-") not in SORTS:
        raise ValueError(f"profile_sort {value!r} names no column; use one of "
                         f"{', '.join(SORTS)}, with '-' in front for descending "
                         f"(default {DEFAULT_SORT!r})")
    return value


def sorted_kernels(profile: Any, sort: str = DEFAULT_SORT) -> list[Any]:
    """The profile's kernels in `sort` order (ties by kernel name)."""
    key = SORTS[check_sort(sort).lstrip("-")].key
    rows = sorted(profile, key=lambda k: k.kernel)  # stable: ties stay by name
    return sorted(rows, key=key, reverse=sort.startswith("-"))


def seconds_text(seconds: float) -> str:
    # passlab.research's own (imported when used: the Explorer opens without research)
    from passlab.research._profile_plot import seconds_text as text

    return text(seconds)


def _num(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _short(names: tuple[str, ...], n: int = 3) -> str:
    return ", ".join(names[:n]) + (f" +{len(names) - n}" if len(names) > n else "")


def _header(sort: str) -> str:
    cells = []
    by, desc = sort.lstrip("-"), sort.startswith("-")
    for key, col in SORTS.items():
        # a click on the sorted column turns its order; on another, its first order
        if key == by:
            nxt = key if desc else f"-{key}"
            aria = "descending" if desc else "ascending"
            arrow = " \u25bc" if desc else " \u25b2"
        else:
            nxt = f"-{key}" if col.descending else key
            aria, arrow = "none", ""
        cls = (' class="num plx-profile-rate"' if key in ("gflops", "gbps") else
               ' class="num"' if col.numeric else "")
        cells.append(f'<th{cls} aria-sort="{aria}"><button type="button" '
                     f'class="plx-profile-sort" data-sort="{_render.esc(nxt)}" '
                     f'title="sort by {_render.esc(col.header)}">'
                     f"{_render.esc(col.header)}{arrow}</button></th>")
    return "<tr>" + "".join(cells) + "</tr>"


def _ci(k: Any) -> str:
    if k.median_s <= 0 or k.ci_low_s != k.ci_low_s:  # NaN: no interval
        return ""
    return f"{max(k.median_s - k.ci_low_s, k.ci_high_s - k.median_s) / k.median_s:.0%}"


def _row(k: Any) -> str:
    """One kernel's row: its median per call with the interval's width beside it (the
    interval on hover), in place / alone (the alone time on hover), and the sources and
    passes cut short (the whole lists on hover), so that the table fits a narrow pane."""
    cls = ["plx-profile-row"] + (["noisy"] if k.noisy else [])
    esc = _render.esc
    ci = _ci(k)
    if k.noisy:
        call_tip = (f"the median's 95% interval ({seconds_text(k.ci_low_s)}-"
                    f"{seconds_text(k.ci_high_s)}) is wider than +-{k.ci_target:.0%}: time it "
                    "again on a quiet machine")
    elif ci:
        call_tip = f"95% interval {seconds_text(k.ci_low_s)}-{seconds_text(k.ci_high_s)}"
    else:
        call_tip = ""
    per_call = (f'<td class="num{" plx-profile-noisy" if k.noisy else ""}" '
                f'title="{esc(call_tip)}">{esc(seconds_text(k.median_s))}'
                + (f'<br><span class="plx-profile-ci">+-{esc(ci)}'
                   f'{" noisy" if k.noisy else ""}</span>' if ci else "") + "</td>")
    ratio_tip = "" if k.alone_s is None else f"alone: {seconds_text(k.alone_s)} per call"
    tds = [f'<td class="plx-profile-name">{esc(k.kernel)}</td>',
           f'<td class="num">{k.calls}</td>', per_call,
           f'<td class="num">{esc(seconds_text(k.total_s))}</td>',
           f'<td class="num">{k.share:.1%}</td>',
           f'<td class="num" title="{esc(ratio_tip)}">{esc(_num(k.in_place_ratio))}</td>',
           f'<td class="num plx-profile-rate">{esc(_num(k.gflops))}</td>',
           f'<td class="num plx-profile-rate">{esc(_num(k.gbps))}</td>']
    for short, full in ((_short(k.sources), k.sources), (_short(k.passes), k.passes)):
        tds.append(f'<td class="plx-profile-clip" title="{esc(", ".join(full))}">'
                   f"{esc(short)}</td>")
    rates = f"{_num(k.gflops) or '-'} GFLOP/s, {_num(k.gbps) or '-'} GB/s"
    return (f'<tr class="{" ".join(cls)}" data-kernel="{esc(k.kernel)}" tabindex="0" '
            f'title="{esc(rates)}; show this kernel in the fused graph">{"".join(tds)}</tr>')


def pane_html(profile: Any, *, sort: str = DEFAULT_SORT, can_run: bool = False,
              message: str = "", static: bool = False) -> str:
    """The Profile pane: the summary, the sortable kernel table (`data-sort` on each
    header's button, `data-kernel` on each row), or without a profile what to do.
    `static`: for a page with no kernel behind it (the report), which says that sorting
    and the link to the graph need one."""
    run = ('<button type="button" class="plx-profile-run" data-profile-run="1" '
           'title="time the entry function and each kernel (build.profile())">'
           f'{"Profile again" if profile is not None else "Profile"}</button>'
           if can_run else "")
    msg = f'<div class="plx-warn plx-profile-message">{_render.esc(message)}</div>' \
        if message else ""
    if profile is None:
        what = ("Press Profile to time this build: each kernel where it runs in the real "
                "run, the run end to end, and each kernel alone on copies of its arguments "
                "(build.profile(), a few seconds)."
                if can_run else
                "This Explorer holds a trace, not a build, so it cannot time anything: open "
                "passlab.Explorer(build) and press Profile, or pass "
                "passlab.Explorer(build, profile=build.profile()).")
        return (f'<div class="plx-profile">{msg}<div class="plx-note">{_render.esc(what)}'
                f"</div>{run}</div>")
    rows = "".join(_row(k) for k in sorted_kernels(profile, sort))
    noisy = sum(1 for k in profile if k.noisy)
    how = ("Sorted by total time per run. Sorting by another column and a row's link to "
           "its kernel in the fused graph need a kernel: "
           "passlab.Explorer(build, profile=build.profile())." if static else
           "Click a header to sort, a row to see its kernel in the fused graph (the "
           "last pass's graph, the kernel panel open).")
    notes = (how
             + (f" {noisy} noisy row{'s' if noisy != 1 else ''} (the median's 95% interval "
                f"wider than +-{profile.ci_target:.0%}) marked." if noisy else ""))
    details = profile.summary()[len(profile.sentence()):].strip()
    idle = ""
    if profile.not_called:
        idle = (f'<div class="plx-note plx-profile-idle">In the library, not called by this '
                f'run: {_render.esc(", ".join(profile.not_called))}</div>')
    return (f'<div class="plx-profile">{msg}<div class="plx-profile-head">'
            f'<div class="plx-profile-summary">{_render.esc(profile.sentence())}</div>{run}'
            f'</div><div class="plx-note plx-profile-details">{_render.esc(details)}</div>'
            f'<div class="plx-note">{_render.esc(notes)}</div>'
            f"<style>{_render.CSS}</style>"
            f'<div class="plx-profile-scroll"><table class="passlab-table plx-profile-table">'
            f"<thead>{_header(sort)}</thead><tbody>{rows}</tbody></table></div>{idle}</div>")


def time_legend(ov: Any) -> str:
    """The legend of the graph's "time" colour (an `_graph_render.Overlay`)."""
    if ov.lo is None or ov.hi is None:
        return ('<div class="plx-graph-legend">colour by time: no call of this graph was '
                "timed (before LegalizeOps the calls are operators, not kernels)</div>")
    from passlab.analysis._graph_render import FILL_RAMP

    fill = ", ".join(FILL_RAMP)
    return ('<div class="plx-graph-legend">colour by time (per run, the profile\'s, log '
            f'scale): <span class="plx-legend-min">{seconds_text(ov.lo)}</span>'
            f'<span class="plx-ramp" title="kernels: time per run" '
            f'style="background: linear-gradient(to right, {fill})"></span>'
            f'<span class="plx-legend-max">{seconds_text(ov.hi)}</span> kernels; '
            "uncoloured: not timed</div>")


class ProfileView:
    """The pane's state in one Explorer (mutable: it is the widget's model): the profile
    of the shown build, the sort, the last message and whether a build can be timed."""

    def __init__(self, profile: Any = None, *, can_run: bool = False) -> None:
        self.profile = profile
        self.sort = DEFAULT_SORT
        self.can_run = can_run
        self.message = ""

    def to_html(self) -> str:
        return pane_html(self.profile, sort=self.sort, can_run=self.can_run,
                         message=self.message)

    def node_times(self, g: Any) -> dict[str, float | None] | None:
        from passlab.analysis.graph import kernel_times

        return kernel_times(g, self.profile)
