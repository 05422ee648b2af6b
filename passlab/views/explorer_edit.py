"""The Explorer's Edit pane, the Python half: the pipeline to change with a control per
pass, the pending edits and Run, the last A/B result and the history, as HTML for the
front end (`static/explorer/edit.js`). No Jupyter here; every name is escaped.

The session it draws (edits, re-runs, A/B results) is `passlab.research.edit_session`,
whose names are importable from here too.
"""

from __future__ import annotations

import html
from typing import Any

from passlab.errors import first_line
from passlab.pipeline import EDIT_ACTIONS as ACTIONS
from passlab.pipeline import Edit, Pipeline, known_passes
from passlab.research.edit_session import ABResult, EditSession, HistoryEntry, built_what

__all__ = ["ACTIONS", "Edit", "EditSession", "HistoryEntry", "ABResult", "known_passes",
           "pane_html", "built_what"]


# ---------------------------------------------------------------------- the pane
def _button(text: str, title: str, **data: Any) -> str:
    attrs = "".join(f' data-{k}="{html.escape(str(v))}"' for k, v in data.items())
    return (f'<button type="button" class="plx-edit-btn"{attrs} title="{html.escape(title)}">'
            f"{html.escape(text)}</button>")


def pane_html(session: EditSession) -> str:
    """The Edit pane: pending edits and Run, the last result, the pipeline with a control
    per pass, the insert bar and the history. Every name is escaped; the buttons carry
    `data-edit`/`data-pos`/`data-show` for the front end (edit.js)."""
    try:
        pipe = session.pipeline
    except Exception as exc:  # noqa: BLE001 - e.g. a registered pass renamed since
        session.pending = ()
        session.message = f"the pending edits no longer apply ({first_line(exc)}): cleared"
        pipe = session.pipeline
    parts = []
    if session.message:
        parts.append(f'<div class="plx-warn plx-edit-message">{html.escape(session.message)}</div>')
    last = session.history[-1]
    if last.result is not None:
        parts.append(last.result.to_html())
    parts += [_insert_html(session, pipe), _pipeline_html(session, pipe),
              _history_html(session)]
    # the pending edits and Run stay above the body's own scroll box
    return (f'<div class="plx-edit">{_pending_html(session, pipe)}'
            f'<div class="plx-edit-body">{"".join(parts)}</div></div>')


def _pending_html(session: EditSession, pipe: Pipeline) -> str:
    shown = session.current.label
    items, at = [], session.current.pipeline
    for e in session.pending:
        items.append(f"<li>{html.escape(e.to_text(at))}</li>")
        at = at.apply_edit(e, session.registered)
    run = ('<button type="button" class="plx-edit-run" data-edit="run"'
           + ("" if session.pending else " disabled") + ">Run</button>")
    if not items:
        body = ('<div class="plx-note">No pending edits: use the buttons of a pass below, '
                "or insert one, then Run.</div>")
    else:
        body = (f'<ol class="plx-edit-pending">{"".join(items)}</ol>'
                + _button("undo last", "drop the last pending edit", edit="undo")
                + _button("clear", "drop every pending edit", edit="clear"))
    return (f'<div class="plx-edit-top"><div class="plx-edit-title">Editing from '
            f"{html.escape(shown)}: {len(session.pending)} pending edit"
            f"{'s' if len(session.pending) != 1 else ''} {run}</div>{body}</div>")


def _insert_html(session: EditSession, pipe: Pipeline) -> str:
    opts = []
    if session.registered:
        opts.append('<optgroup label="registered">' + "".join(
            f'<option value="{html.escape(n)}">{html.escape(n)}</option>'
            for n in session.registered) + "</optgroup>")
    opts.append('<optgroup label="TVM">' + "".join(
        f'<option value="{html.escape(n)}">{html.escape(n)}</option>'
        for n in known_passes() if n not in session.registered) + "</optgroup>")
    anchors = "".join(f'<option value="{i}">#{i} {html.escape(e.name)}</option>'
                      for i, e in enumerate(pipe))
    return ('<div class="plx-edit-insert"><b>Insert</b> '
            '<input type="search" class="plx-edit-filter" placeholder="filter passes" '
            'aria-label="filter passes"> '
            f'<select class="plx-edit-pass" aria-label="pass to insert">{"".join(opts)}</select> '
            '<select class="plx-edit-where" aria-label="before or after">'
            '<option value="after">after</option><option value="before">before</option>'
            '</select> '
            f'<select class="plx-edit-anchor" aria-label="where">{anchors}</select> '
            '<button type="button" class="plx-edit-btn" data-edit="insert">insert</button>'
            "</div>")


def _pipeline_html(session: EditSession, pipe: Pipeline) -> str:
    known = {id(e) for e in session.current.pipeline}
    out, pos, relax = [], 0, len(pipe.stages)
    for si, stage in enumerate(pipe.all_stages):
        rows = []
        for e in stage.passes:
            cls = ["plx-edit-row"] + (["off"] if not e.enabled else []) + \
                (["user"] if e.origin == "user" else []) + \
                (["pending"] if id(e) not in known else [])
            toggle = (_button("disable", "do not run this pass", edit="disable", pos=pos)
                      if e.enabled else _button("enable", "run this pass", edit="enable", pos=pos))
            rows.append(
                f'<div class="{" ".join(cls)}" data-pos="{pos}"><span class="plx-i">#{pos}</span>'
                f'<span class="plx-edit-name">{html.escape(e.name)}</span>'
                f'<span class="plx-edit-note">{html.escape(e.note)}</span>'
                f'<span class="plx-edit-tools">{toggle}'
                + _button("\u2191", "move up", edit="up", pos=pos)
                + _button("\u2193", "move down", edit="down", pos=pos)
                + _button("\u2715", "remove", edit="remove", pos=pos)
                + _button("+", "insert the chosen pass after this one", edit="anchor", pos=pos)
                + "</span></div>")
            pos += 1
        kind = "Relax" if si < relax else "TIR"
        head = f"{html.escape(stage.name)} <small>({kind}, {len(stage.passes)} passes)</small>"
        body = "".join(rows) or '<div class="plx-note">(empty)</div>'
        opened = " open" if si < relax or any("pending" in r or " user" in r for r in rows) else ""
        out.append(f'<details class="plx-edit-stage"{opened}><summary>{head}</summary>'
                   f"{body}</details>")
    return f'<div class="plx-edit-pipeline">{"".join(out)}</div>'


def _history_html(session: EditSession) -> str:
    rows = []
    for i, h in enumerate(session.history):
        if h.build is None:
            state = "failed"
        elif i == session.shown:
            state = "shown"
        else:
            state = _button("show", "show this run's trace in the Explorer", show=i)
        rows.append(f"<tr><td>{html.escape(h.label)}</td><td>{state}</td></tr>")
    return ('<table class="plx-edit-history"><caption>Runs (explorer.history)</caption>'
            f'{"".join(rows)}</table>')
