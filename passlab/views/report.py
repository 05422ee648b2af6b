"""A static HTML report of a whole trace: one self-contained file that works offline.

The page holds the pass list (filters: changed only, stage, name search, inner steps;
arrow keys or j/k move the selection), the diff of every changed main-chain pass, the
fused graph and buffer table of the key snapshots, the pipeline with the user's passes
marked, and, when the build failed, the failing pass and its error. Diffs and snapshots
are JSON data blocks (large ones gzip-compressed) that the page unpacks only when shown,
so a report of a big model opens at once. Every string from IR, files or users is
HTML-escaped; CSS and JavaScript are inline, nothing is fetched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab._render import CSS as TABLE_CSS
from passlab._render import error_panel, esc
from passlab.analysis import ir_text
from passlab.analysis.diff import diff
from passlab.analysis.explain import CSS as EXPLAIN_CSS
from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace
from passlab.views import _embed, _snapshots
from passlab.views._report_runtime import runtime_section

__all__ = ["write_report", "render_report"]


#: Changed functions printed per pass diff in a report; the others are named. TIR passes
#: late in a build touch every kernel, and printing is most of a report's cost: a cap keeps
#: a mobilenet report near 2 s instead of 4 s. ``max_functions=None`` prints everything.
REPORT_FUNCTIONS = 24
#: Main-chain passes listed, diffed and explained in a report. A default pipeline runs
#: about a hundred; past this many (a crafted trace of 20,000 main-chain steps made a
#: 20 MB report in 78 s) the rest is named in one row, so that what a report writes and
#: how long it takes are bounded whatever the trace. ``full=True`` writes them all.
REPORT_PASSES = 400
#: Diff lines rendered per pass diff in a report, across its functions: the first screen,
#: as in the Explorer (a 32-layer forward rewritten by a finalize pass is 8,800 lines, and
#: intra-line marks are much of a large report's time); the functions past it are named.
#: ``full=True`` renders them all. The 7B-shaped transformer: 19.3 -> 16.0 s loaded.
REPORT_LINES = 400


def write_report(trace: Trace, path: str | Path, *, title: str | None = None,
                 max_functions: int | None = REPORT_FUNCTIONS, full: bool = False,
                 profile: Any = None) -> Path:
    """Write the static report of ``trace`` to ``path`` and return the path.

    Parameters
    ----------
    trace
        A recorded trace (``build.trace``, or ``err.trace`` of a failed build).
    path
        The HTML file to write; its folder is created if needed.
    title
        Shown at the top and in the browser tab (default "passlab report").
    max_functions
        Print at most this many changed functions per pass diff (default
        :data:`REPORT_FUNCTIONS`; the others are named); None prints them all.
    full
        Write everything: every changed function of every diff, every step's row (no
        summary rows for inner steps) and every main-chain pass past
        :data:`REPORT_PASSES`. The page says what a report without it left out.
    profile
        A :class:`passlab.research.profile.Profile` of the build (``build.profile()``):
        adds a "Run time" section (kernel times, overhead, time per source operator).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import passlab, tempfile, pathlib
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> out = write_report(trace, pathlib.Path(tempfile.mkdtemp()) / "mlp.html")
    >>> "FuseOps" in out.read_text()
    True
    """
    out = Path(path)
    text = render_report(trace, title=title, max_functions=max_functions, full=full,
                         profile=profile)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def render_report(trace: Trace, *, title: str | None = None,
                  max_functions: int | None = REPORT_FUNCTIONS, full: bool = False,
                  profile: Any = None) -> str:
    """The report of ``trace`` as one HTML document (see :func:`write_report`)."""
    title = title or "passlab report"
    failing = trace.failure.step if trace.failure is not None else None
    if full:
        max_functions = None
    last = _last_covered(trace, failing, full)
    snaps = _snapshots.key_snapshots(trace)
    snap_of = {s.step.index: s for s in snaps}
    diff_blocks = _diff_blocks(trace, max_functions, last, None if full else REPORT_LINES)
    explain_blocks = _explain_blocks(trace, failing, last)
    panels = _snapshot_panels(snaps)
    prov = _provenance(trace)
    code_section, code_blocks = _code_section(trace, prov)
    prov_section, prov_block = _provenance_section(trace, prov)
    body = [
        _header(trace, title, last),
        _failure_panel(trace),
        _warnings(trace),
        _passes_section(trace, failing, set(diff_blocks), snap_of, last, full),
        _snapshots_section(panels),
        prov_section,
        runtime_section(profile),
        code_section,
        _pipeline_section(trace),
        "".join(diff_blocks.values()),
        "".join(explain_blocks.values()),
        "".join(block for _, _, block in panels),
        code_blocks,
        prov_block,
        f"<script>{_embed.asset('report.js')}</script>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{TABLE_CSS}{EXPLAIN_CSS}{_embed.asset('report.css')}</style>"
        f'</head><body class="pl-report">{"".join(body)}</body></html>\n'
    )


# ----------------------------------------------------------------------------- header
def _versions() -> str:
    parts = []
    for dist in ("passlab", "apache-tvm"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return ", ".join(parts)


def _last_covered(trace: Trace, failing: Step | None, full: bool) -> int | None:
    """Index of the last step the report covers (its :data:`REPORT_PASSES`-th main-chain
    pass), or None when it covers them all."""
    if full:
        return None
    main = [s for s in trace if _is_main(s, failing)]
    return main[REPORT_PASSES - 1].index if len(main) > REPORT_PASSES else None


def _covers(step: Step, last: int | None, failing: Step | None) -> bool:
    return last is None or step.index <= last or step is failing


def _header(trace: Trace, title: str, last: int | None = None) -> str:
    main = [s for s in trace if s.on_main_chain]
    if last is None:
        changed = sum(1 for s in main if s.changed)
        what = f"; {changed} of {len(main)} main-chain passes changed the module"
    else:  # counting every change set would cost what the cap saves
        changed = sum(1 for s in main[:REPORT_PASSES] if s.changed)
        what = (f"; {changed} of the first {REPORT_PASSES:,} main-chain passes changed the "
                f"module ({len(main):,} in all; full=True reports them all)")
    if len(trace):
        summary = trace.summary().split("\n", 1)[0] + what
    else:
        summary = "Empty trace: no pass was recorded."
    written = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        f'<header class="pl-header"><h1>{esc(title)}</h1>'
        f'<div class="pl-summary-line">{esc(summary)}</div>'
        f'<div class="pl-meta">written {esc(written)} with {esc(_versions())}</div>'
        '<nav class="pl-nav"><a href="#pl-passes">Passes</a> <a href="#pl-snapshots">'
        'Graph and buffers</a> <a href="#snap-provenance">Provenance</a> '
        '<a href="#pl-pipeline">Pipeline</a>'
        + (' <a href="#pl-failure" class="pl-nav-fail">Failure</a>'
           if trace.failure is not None else "")
        + "</nav></header>"
    )


def _failure_panel(trace: Trace) -> str:
    f = trace.failure
    if f is None:
        return ""
    where = (f"in pass {f.step.label} (step #{f.step.index}, stage {f.step.stage})"
             if f.step is not None else f"in {f.where}, after every pass finished")
    button = (f' <button type="button" class="pl-goto" data-step="{f.step.index}">'
              "show the failing pass</button>" if f.step is not None else "")
    notes = [f.note] if f.note else []
    if f.enclosing:
        notes.append("inside " + " > ".join(f.enclosing))
    notes.append("The passes before it are listed below as recorded; their diffs, graphs "
                 "and buffers are kept.")
    return (
        f'<section id="pl-failure" class="pl-failure" role="alert"><h2>Build failed '
        f"{esc(where)}{button}</h2>"
        f'<pre class="pl-fail-msg">{esc(f.error_type)}: {esc(f.message)}</pre>'
        + "".join(f'<div class="pl-note">{esc(n)}</div>' for n in notes) + "</section>"
    )


def _warnings(trace: Trace) -> str:
    if not trace.warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in trace.warnings)
    return f'<section class="pl-warnings"><b>Warnings</b><ul>{items}</ul></section>'


# ------------------------------------------------------------------------- pass list
_COLUMNS = ("#", "pass", "stage", "ms", "changed", "functions", "Relax bindings")


def _is_main(step: Step, failing: Step | None) -> bool:
    return step.on_main_chain or step is failing


def _bindings(step: Step) -> str:
    try:
        row = step.row()
        a, b = row["bindings_before"], row["bindings_after"]
    except Exception:  # an older or newer Step without these columns
        return ""
    if step.after is None:
        return str(a)
    return str(a) if a == b else f"{a} \u2192 {b}"


#: Inner steps (passes run inside other passes) listed one row each up to this many; past
#: it, each top-level pass gets one summary row instead, so that a report grows with the
#: main chain (FoldConstant can run hundreds of inner passes on a CNN with weights).
INNER_ROWS = 300


@dataclass(frozen=True)
class _InnerSummary:
    """Stands for the unlisted inner steps under one top-level step (``index`` < 0)."""

    index: int
    parent: Step
    names: tuple[tuple[str, int], ...]
    total: int


@dataclass(frozen=True)
class _Omitted:
    """Stands for the steps after the last one a report covers (``index`` < 0)."""

    index: int
    after: Step
    steps: int
    main: int


def _omitted(omitted: _Omitted) -> str:
    text = (f"{omitted.steps:,} more steps after #{omitted.after.index} "
            f"{omitted.after.label} ({omitted.main:,} main-chain passes) are not listed, "
            f"diffed or explained: a report covers the first {REPORT_PASSES:,} main-chain "
            "passes; write it with full=True (passlab report --full) for every step, or "
            "open the trace in the Explorer")
    return (f'<tr class="pl-omitted"><td></td><td colspan="{len(_COLUMNS) - 1}">'
            f"{esc(text)}</td></tr>")


def _listed(trace: Trace, failing: Step | None, last: int | None = None,
            full: bool = False) -> list[Any]:
    """The steps that get a row: all of them, or, past :data:`INNER_ROWS` inner steps, the
    main chain, wrappers and the failing pass plus one summary per top-level pass; with
    ``last``, only the steps up to it (and the failing pass), then one row for the rest."""
    steps = [s for s in trace if _covers(s, last, failing)]
    tail: list[Any] = []
    if len(steps) < len(trace) and last is not None:
        rest = [s for s in trace if not _covers(s, last, failing)]
        tail = [_Omitted(-10**9, trace[last], len(rest),
                         sum(1 for s in rest if _is_main(s, failing)))]
    inner = [s for s in steps if s.kind == "inner" and s is not failing]
    if full or len(inner) <= INNER_ROWS:
        return steps + tail
    top: dict[int, int] = {}  # step index -> index of its top-level ancestor
    groups: dict[int, dict[str, int]] = {}
    for s in steps:
        root = s.index if s.parent is None else top.get(s.parent, s.parent)
        top[s.index] = root
    for s in inner:
        counts = groups.setdefault(top[s.index], {})
        counts[s.name] = counts.get(s.name, 0) + 1
    out: list[Any] = []
    for s in steps:
        if s.kind != "inner" or s is failing:
            out.append(s)
        grouped = groups.get(s.index) if s.parent is None else None
        if grouped:  # after a top-level step (and before its own children's rows)
            ranked = tuple(sorted(grouped.items(), key=lambda kv: -kv[1]))
            out.append(_InnerSummary(-1 - s.index, s, ranked, sum(grouped.values())))
    return out + tail


def _inner_summary(summary: _InnerSummary) -> str:
    names = ", ".join(f"{n} \u00d7{k}" for n, k in summary.names[:6])
    more = f", {len(summary.names) - 6} more names" if len(summary.names) > 6 else ""
    text = (f"{summary.total} inner pass calls under {summary.parent.label} are not listed "
            f"({names}{more}); trace.to_text(all_steps=True) and the Explorer list them")
    return (f'<tr class="pl-inner-summary"><td></td><td colspan="{len(_COLUMNS) - 1}">'
            f"{esc(text)}</td></tr>")


def _row(step: Step, failing: Step | None, has_diff: bool, snap: Any) -> str:
    ch = step.functions_changed
    main = _is_main(step, failing)
    classes = ["pl-row"]
    if step.failed:
        classes.append("failing" if step is failing else "failed")
    elif not ch:
        classes.append("same")
    if step.origin == "user":
        classes.append("user")
    if not main:
        classes.append("inner")
    ms = "failed" if step.seconds is None else f"{step.seconds * 1e3:.2f}"
    changed = "failed" if step.failed else ("yes" if ch else "no change")
    attrs = {
        "data-i": step.index, "data-stage": step.stage, "data-kind": step.kind,
        "data-origin": step.origin, "data-name": step.label, "data-main": int(main),
        "data-changed": int(bool(ch)), "data-failed": int(step.failed),
        "data-diff": int(has_diff),
    }
    if snap is not None:
        attrs["data-snap"] = snap.key
    attr_text = "".join(f' {k}="{esc(v)}"' for k, v in attrs.items())
    # The name cell's --d indents it by nesting depth when inner steps are shown.
    name_attr = f' class="pl-name" style="--d:{step.depth}"'
    # the pass's pipeline position, as every pane numbers it (the step index: the title)
    owner = step.owner
    pos = _numbering.positions(owner).get(step.index) if owner is not None else None
    number = "" if pos is None else f"#{pos}"
    cells = ((number, f' class="num" title="step {step.index} of the trace"'),
             (_numbering.name_of(step, owner), name_attr),
             (step.stage, ""), (ms, ' class="num"'), (changed, ""), (ch.summary(), ""),
             (_bindings(step), ' class="num"'))
    tds = "".join(f"<td{attr}>{esc(value)}</td>" for value, attr in cells)
    return f'<tr id="step-{step.index}" class="{" ".join(classes)}"{attr_text}>{tds}</tr>'


def _passes_section(trace: Trace, failing: Step | None, with_diff: set[int],
                    snap_of: dict[int, Any], last: int | None = None,
                    full: bool = False) -> str:
    head = "<h2>Passes</h2>"
    if not len(trace):
        return (f'<section id="pl-passes">{head}<div class="pl-plain pl-empty">This trace '
                "is empty: no pass was recorded, so there is nothing to list, diff or draw."
                "</div></section>")
    stages = list(dict.fromkeys(s.stage for s in trace))
    options = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in stages)
    listed = _listed(trace, failing, last, full)
    n_main = sum(1 for s in listed if isinstance(s, Step) and _is_main(s, failing))
    n_rows = sum(1 for s in listed if isinstance(s, Step))
    toolbar = (
        '<div class="pl-toolbar">'
        '<input type="search" id="pl-search" placeholder="search passes ( / )" '
        'aria-label="search passes by name">'
        f'<select id="pl-stage" aria-label="stage"><option value="">all stages</option>'
        f"{options}</select>"
        '<label><input type="checkbox" id="pl-changed"> changed only</label>'
        '<label><input type="checkbox" id="pl-inner"> show inner steps</label>'
        f'<span id="pl-count" class="pl-note">{n_main} of {n_rows} steps shown</span>'
        '<span class="pl-note pl-keys">\u2191/\u2193 or j/k: previous/next pass</span>'
        "</div>"
    )
    rows = "".join(_row(s, failing, s.index in with_diff, snap_of.get(s.index))
                   if isinstance(s, Step) else _omitted(s) if isinstance(s, _Omitted)
                   else _inner_summary(s) for s in listed)
    ths = "".join(f"<th>{esc(c)}</th>" for c in _COLUMNS)
    table = (f'<div class="pl-list" id="pl-list" tabindex="0" aria-label="pass list">'
             f'<table class="passlab-table pl-passes"><thead><tr>{ths}</tr></thead>'
             f"<tbody>{rows}</tbody></table>"
             '<div class="pl-plain pl-none" hidden>No pass matches these filters.</div></div>')
    detail = ('<div id="pl-detail" class="pl-detail" aria-live="polite"><div class="pl-plain">'
              "Select a pass to see what it changed.</div></div>")
    legend = ('<div class="pl-note pl-legend">grey: no change; green: your passes; red: the '
              "failing pass. Diffs are kept for the changed main-chain passes; inner steps "
              "(passes run inside other passes) are listed only.</div>")
    return f'<section id="pl-passes">{head}{toolbar}{legend}{table}{detail}</section>'


def _explain_blocks(trace: Trace, failing: Step | None,
                    last: int | None = None) -> dict[int, str]:
    """Data blocks with the "Explain" strip (what the pass does, what it changed here) of
    every main-chain step (up to ``last``), by step index; the page shows one above the
    selected diff."""
    from passlab.analysis._explain_steps import explain_step

    out: dict[int, str] = {}
    for s in trace:
        if not _is_main(s, failing) or not _covers(s, last, failing):
            continue
        try:
            markup = explain_step(s, trace.pipeline).to_html(style=False)
        except Exception as exc:
            markup = error_panel(exc, f"the explanation of {s.label}", style=False)
        out[s.index] = _embed.data_block(f"pl-explain-{s.index}", markup)
    return out


def _diff_blocks(trace: Trace, max_functions: int | None, last: int | None = None,
                 max_lines: int | None = None) -> dict[int, str]:
    """Data blocks with the HTML diff of every changed main-chain pass (up to ``last``),
    by step index."""
    steps = [s for s in trace if s.on_main_chain and not s.failed
             and (last is None or s.index <= last) and s.changed]
    if not steps:
        return {}
    diffs: dict[int, Any] = {}
    for s in steps:
        try:
            diffs[s.index] = diff(s)
        except Exception as exc:
            diffs[s.index] = exc
    # print every function the diffs show in parallel threads first (most of the time)
    ir_text.prefetch((d for d in diffs.values() if not isinstance(d, Exception)), max_functions)
    out: dict[int, str] = {}
    for s in steps:
        try:
            d = diffs[s.index]
            if isinstance(d, Exception):
                raise d
            markup = d.to_html(max_functions=max_functions, highlight=False,
                               max_total_lines=max_lines)
            unified = d.to_html("unified", max_functions=max_functions, highlight=False,
                                max_total_lines=max_lines)
        except Exception as exc:
            markup = unified = error_panel(exc, f"the diff of {s.label}", style=False)
        # one block per layout: the page's toggle swaps them (both gzip to a few KiB)
        out[s.index] = (_embed.data_block(f"pl-diff-{s.index}", markup)
                        + _embed.data_block(f"pl-udiff-{s.index}", unified))
    return out


# ------------------------------------------------------------------------- snapshots
def _snapshot_panels(snaps: Sequence[_snapshots.Snapshot]
                     ) -> list[tuple[_snapshots.Snapshot, str, str]]:
    """(snapshot, buffer headline, data block with its graph and buffers) for each."""
    program = _snapshots.layout_program()
    out = []
    steps = {s.key: s.step for s in snaps}
    for s in snaps:
        graph = _snapshots.graph_panel(s.step, program)
        before = steps.get("calltir") if s.key == "memplan" else None  # what planning saved
        headline, bufs = _snapshots.buffers_panel(s.step, compare_with=before)
        markup = f"<h3>Fused graph</h3>{graph}<h3>Buffers</h3>{bufs}"
        out.append((s, headline, _embed.data_block(f"pl-snap-{s.key}", markup)))
    return out


def _snapshots_section(panels: Sequence[tuple[_snapshots.Snapshot, str, str]]) -> str:
    head = "<h2>Fused graph and buffers</h2>"
    if not panels:
        return (f'<section id="pl-snapshots">{head}<div class="pl-plain">No snapshot: no '
                "main-chain pass finished, so there is no module to draw.</div></section>")
    items = []
    for s, headline, _ in panels:
        extra = f' <span class="pl-note">{esc(headline)}</span>' if headline else ""
        items.append(
            f'<details class="pl-snap" id="snap-{esc(s.key)}" data-block="pl-snap-{esc(s.key)}">'
            f"<summary>{esc(s.title)}, step #{s.step.index}{extra}</summary>"
            '<div class="pl-slot"><div class="pl-plain">loading\u2026</div></div></details>'
        )
    intro = ('<div class="pl-note">The module after each pass below, as the graph of '
             "kernels and the tensors between them, and every intermediate tensor with its "
             "live range. Open one to draw it.</div>")
    return f'<section id="pl-snapshots">{head}{intro}{"".join(items)}</section>'


# ------------------------------------------------------------------------ provenance
def _provenance(trace: Trace) -> Any:
    """``passlab.provenance(trace)`` once for the sections that use it, or the exception
    it raised (each section then shows without it)."""
    from passlab.analysis.provenance import provenance

    try:
        return provenance(trace)
    except Exception as exc:  # a view never fails the report
        return exc


def _provenance_section(trace: Trace, prov: Any) -> tuple[str, str]:
    """The input graph beside the fused graph (after FuseTIR, else the last Relax pass),
    linked op <-> kernel for hover (report.js), drawn once into one lazily unpacked
    block. ``prov``: :func:`_provenance`. Returns (section, data block); ("", "") when
    nothing was recorded."""
    from passlab.analysis._provenance_view import provenance_view

    if not any(s.on_main_chain for s in trace):
        return "", ""
    try:
        if isinstance(prov, Exception):
            raise prov
        view = provenance_view(trace, prov=prov)
        summary = (f"{len(view.provenance)} operator calls of {view.provenance.function} "
                   f"\u2192 {len(view.provenance.kernels)} kernels, linked in the graph "
                   f"after {_numbering.ref(view.step)}")
        markup = view.to_html("pl-svg")
    except Exception as exc:  # a view never fails the report
        summary, markup = "could not link the model's operators to kernels", \
            error_panel(exc, "the provenance", style=False)
    intro = ('<div class="pl-note">Which kernels each operator call of the input ended in, '
             "and back: hover an operator or a kernel; a click on a kernel opens its "
             "generated code.</div>")
    section = (f'<section id="pl-provenance"><h2>Provenance</h2>{intro}'
               '<details class="pl-snap" id="snap-provenance" data-block="pl-prov-block">'
               f"<summary>{esc(summary)}</summary>"
               '<div class="pl-slot"><div class="pl-plain">loading\u2026</div></div>'
               "</details></section>")
    return section, _embed.data_block("pl-prov-block", markup)


def _held_ops(prov: Any) -> dict[str, tuple[str, ...]]:
    """Kernel -> the input's operator calls it holds ({} when provenance cannot tell)."""
    if isinstance(prov, Exception):
        return {}
    try:
        return {k: prov.ops_of(k) for k in prov.kernels}
    except Exception:  # the code section shows without it
        return {}


# ---------------------------------------------------------------------- generated code
#: Lines of TIR and of generated code shown per kernel in the report.
CODE_LINES = 400


def _capped(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= CODE_LINES:
        return esc(text)
    return esc("\n".join(lines[:CODE_LINES])) + f"\n\u2026 shown {CODE_LINES} of {len(lines)} lines"


def _code_section(trace: Trace, prov: Any = None) -> tuple[str, str]:
    """The generated code of every kernel next to its lowered TIR (the codegen step's
    input), one lazily unpacked block per kernel; a click on a kernel in a fused graph
    opens its block. Returns (section, data blocks)."""
    code = trace.code
    if code is None:
        return "", ""
    step = next(s for s in reversed(tuple(trace)) if s.code is not None)
    funcs = _tvm.functions(step.after) if step.after is not None else {}
    kind = code.main_kind
    held = _held_ops(prov if prov is not None else _provenance(trace))
    items, blocks = [], []
    for name in code.kernels:
        try:
            text = code.kernel(name, kind)
            func = funcs.get(name)
            tir = ir_text.function_text(func, name) if func is not None else ""
        except Exception as exc:  # a view never fails the report
            blocks.append(_embed.data_block(f"pl-code-{name}",
                                            error_panel(exc, "the generated code", style=False)))
        else:
            markup = (f'<div class="pl-code-cols"><div><h4>TIR (lowered, input of codegen)</h4>'
                      f'<pre class="pl-code">{_capped(tir)}</pre></div><div><h4>{esc(kind)}</h4>'
                      f'<pre class="pl-code">{_capped(text or "(no function of this kernel found)")}'
                      "</pre></div></div>")
            blocks.append(_embed.data_block(f"pl-code-{name}", markup))
        ops = held.get(name)
        holds = (f' <span class="pl-note">holds the input\u2019s {esc(", ".join(ops))}</span>'
                 if ops else "")
        items.append(f'<details class="pl-snap pl-kernel-code" id="code-{esc(name)}" '
                     f'data-block="pl-code-{esc(name)}"><summary>{esc(name)}{holds}</summary>'
                     '<div class="pl-slot"><div class="pl-plain">loading\u2026</div></div>'
                     "</details>")
    intro = (f'<div class="pl-note">{esc(code.summary())}. Each kernel\u2019s {esc(kind)} '
             "next to its lowered TIR; a click on a kernel in a fused graph opens it.</div>")
    return (f'<section id="pl-code"><h2>Generated code</h2>{intro}{"".join(items)}</section>',
            "".join(blocks))


# -------------------------------------------------------------------------- pipeline
def _pipeline_section(trace: Trace) -> str:
    head = "<h2>Pipeline</h2>"
    pipe = trace.pipeline
    if pipe is None:
        return (f'<section id="pl-pipeline">{head}<div class="pl-plain">No pipeline was '
                "recorded with this trace (it did not come from passlab.build).</div></section>")
    try:
        users = len(pipe.user_passes)
        note = (f"{users} user pass{'es' if users != 1 else ''} (highlighted, marked "
                "\u201c+ user\u201d)" if users else "TVM's default pipeline, unedited")
        table = pipe.to_html()
    except Exception as exc:
        panel = error_panel(exc, "the pipeline", style=False)
        return f'<section id="pl-pipeline">{head}{panel}</section>'
    return (f'<section id="pl-pipeline">{head}<div class="pl-note">{esc(note)}</div>'
            f"{table}</section>")
