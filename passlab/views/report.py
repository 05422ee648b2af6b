"""A static HTML report of a whole trace: one self-contained file that works offline.

The report is the Explorer's front end over state Python writes into the page: the same
pass list (filters, arrow keys or j/k), the same panes (diff with find-in-IR, fused graph
with change marks, overlays and the kernel panel, buffers, provenance, pipeline), driven
by a static model instead of a kernel (`static/report/`). The panes it keeps are
rendered by the Explorer's pane renderer into JSON data blocks (large ones
gzip-compressed) that the page unpacks only when shown, so a report of a big model opens
at once (`passlab.views._report_state`). Above it: the header, the failure, the
warnings and what the report left out; below it the run time, when profiled. Every
string from IR, files or users is HTML-escaped; CSS and JavaScript are inline, nothing
is fetched.
"""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from passlab._progress import Bar, ProgressArg, bar
from passlab._render import CSS as TABLE_CSS
from passlab._render import esc, no_cycle_collection
from passlab.analysis._highlight import CSS as TOKEN_CSS
from passlab.analysis.explain import CSS as EXPLAIN_CSS
from passlab.recording.trace import Step, Trace
from passlab.views import _bundle, _snapshots
from passlab.views._report_runtime import runtime_section
from passlab.views._report_state import REPORT_PHASES, Bounds, llvm_kept, report_data
from passlab.views.export import script_text

__all__ = ["write_report", "render_report"]

#: The page's front end (the Explorer's, over a static model) and its styles.
JS_ENTRY = ("report/main.js",)
CSS_PARTS = ("explorer/base.css", "explorer/graph.css", "explorer/ir.css",
             "explorer/provenance.css", "explorer/edit.css", "explorer/profile.css",
             "report/page.css")

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
                 profile: Any = None, progress: ProgressArg = None) -> Path:
    """Write the static report of `trace` to `path` and return the path.

    Parameters
    ----------
    trace
        A recorded trace (`build.trace`, or `err.trace` of a failed build).
    path
        The HTML file to write; its folder is created if needed.
    title
        Shown at the top and in the browser tab (default "passlab report").
    max_functions
        Print at most this many changed functions per pass diff (default
        `REPORT_FUNCTIONS`; the others are named); None prints them all.
    full
        Write everything: every changed function of every diff, every step's row (no
        summary rows for inner steps) and every main-chain pass past
        `REPORT_PASSES`. The page says what a report without it left out.
    profile
        A `passlab.research.profile.Profile` of the build `trace` comes from
        (`build.profile()`): adds a "Run time" section (kernel times, overhead, time per
        source operator). A profile of another build is refused (ValueError).
    progress
        None (default): a bar of the report's phases in Jupyter or on a terminal once it
        has taken a second; True: also when standard error is not a terminal; False:
        none.

    Returns
    -------
    pathlib.Path
        `path`.

    Examples
    --------
    >>> import passlab, tempfile, pathlib
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> out = write_report(trace, pathlib.Path(tempfile.mkdtemp()) / "mlp.html")
    >>> "FuseOps" in out.read_text()
    True
    """
    out = Path(path)
    with bar(progress, total=len(REPORT_PHASES), desc="report", unit="phase",
             delay=1.0 if progress is None else 0.0) as shown:
        text = render_report(trace, title=title, max_functions=max_functions, full=full,
                             profile=profile, shown=shown)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        shown.goto(len(REPORT_PHASES), note=f"{out.name}, {len(text) / 1e6:.1f} MB")
    return out


def render_report(trace: Trace, *, title: str | None = None,
                  max_functions: int | None = REPORT_FUNCTIONS, full: bool = False,
                  profile: Any = None, shown: Bar | None = None) -> str:
    """The report of `trace` as one HTML document (see `write_report`); `shown`, a
    progress bar of its `REPORT_PHASES`."""
    if profile is not None:  # a profile of another build would be joined by kernel name
        from passlab.research.profile import check_belongs

        check_belongs(profile, trace, "write_report")
    with no_cycle_collection():
        return _render_report(trace, title, max_functions, full, profile, shown)


def _render_report(trace: Trace, title: str | None, max_functions: int | None, full: bool,
                   profile: Any, shown: Bar | None = None) -> str:
    title = title or "passlab report"
    failing = trace.failure.step if trace.failure is not None else None
    if full:
        max_functions = None
    last = _last_covered(trace, failing, full)
    bounds = Bounds(last, failing, max_functions, None if full else REPORT_LINES, full)
    listed, complete, left_out = _listed(trace, bounds)
    data = report_data(trace, listed, complete, bounds, _snapshots.key_snapshots(trace),
                       profile, shown)
    body = [
        _header(trace, title, last),
        _failure_panel(trace),
        _warnings(trace),
        "".join(f'<div class="pl-note pl-left-out">{esc(n)}</div>' for n in left_out),
        '<main id="plx-root" class="pl-explorer" aria-label="passes and panes"></main>',
        runtime_section(profile),
        data.to_html(),
        f"<script>{script_text(_bundle.bundle(JS_ENTRY, fmt='script'))}</script>",
    ]
    css = TABLE_CSS + EXPLAIN_CSS + TOKEN_CSS + _bundle.bundle(CSS_PARTS)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{css}</style>"
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
    """Index of the last step the report covers (its `REPORT_PASSES`-th main-chain
    pass), or None when it covers them all."""
    if full:
        return None
    main = [s for s in trace if _is_main(s, failing)]
    return main[REPORT_PASSES - 1].index if len(main) > REPORT_PASSES else None


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
        + (' <nav class="pl-nav"><a href="#pl-failure" class="pl-nav-fail">Failure</a></nav>'
           if trace.failure is not None else "")
        + "</header>"
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




# ------------------------------------------------------------------------- the list
def _is_main(step: Step, failing: Step | None) -> bool:
    return step.on_main_chain or step is failing


#: Inner steps (passes run inside other passes) listed one row each up to this many; past
#: it the list holds the main chain only (FoldConstant can run hundreds of inner passes
#: on a CNN with weights), and the page says so.
INNER_ROWS = 300


def _listed(trace: Trace, bounds: Bounds) -> tuple[list[Step], bool, list[str]]:
    """The steps that get a row (those up to `bounds.last`, and the failing pass; past
    `INNER_ROWS` inner steps only the main chain), whether every covered step is
    listed, and the notes that say what was left out."""
    failing = bounds.failing
    steps = [s for s in trace if bounds.covers(s)]
    notes = []
    if len(steps) < len(trace) and bounds.last is not None:
        rest = [s for s in trace if not bounds.covers(s)]
        after = trace[bounds.last]
        main = sum(1 for s in rest if _is_main(s, failing))
        notes.append(f"{len(rest):,} more steps after #{after.index} {after.label} ({main:,} "
                     f"main-chain passes) are not listed, diffed or explained: a report "
                     f"covers the first {REPORT_PASSES:,} main-chain passes; write it with "
                     "full=True (passlab report --full) for every step, or open the trace "
                     "in the Explorer")
    # LLVM's passes (the group under codegen) are listed apart: those a report diffs
    llvm = [s for s in steps if s.llvm is not None]
    kept = llvm_kept(llvm, bounds.full)
    if len(kept) < len(llvm):
        notes.append(f"{len(llvm) - len(kept):,} of LLVM's {len(llvm):,} recorded passes are "
                     f"not listed: a report keeps {len(kept)} (the vectorizers' and "
                     "unrolling's first); write it with full=True, or open the trace in the "
                     "Explorer")
        steps = [s for s in steps if s.llvm is None or s in kept]
    inner = [s for s in steps if s.kind == "inner" and s is not failing and s.llvm is None]
    if bounds.full or len(inner) <= INNER_ROWS:
        return steps, True, notes
    counts: dict[str, int] = {}
    for s in inner:
        counts[s.name] = counts.get(s.name, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    names = ", ".join(f"{n} \u00d7{k}" for n, k in ranked[:6])
    more = f", {len(ranked) - 6} more names" if len(ranked) > 6 else ""
    notes.append(f"{len(inner):,} inner pass calls are not listed ({names}{more}): the list "
                 "shows the main chain; write the report with full=True, or see "
                 "trace.to_text(all_steps=True) and the Explorer")
    return [s for s in steps if s.kind != "inner" or s is failing or s.llvm is not None], \
        False, notes
