"""HTML of pass cards and step explanations (the "Explain" strip of the views).

Duck-typed on `Card` and
`Explanation` so that this module imports
neither. Every string is escaped; TVMScript snippets are coloured exactly like diffs:
removed and added lines, and tokens by `passlab.analysis._highlight`.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

from passlab.analysis._highlight import CSS as TOKEN_CSS
from passlab.analysis._highlight import line_html

__all__ = ["CSS", "card_html", "snippet_html", "strip_html"]

# Translucent backgrounds and inherited text colour read on light and dark pages alike;
# token colours (with their dark-theme variants) come from the diff highlighter.
CSS = """
.passlab-explain { font: 13px/1.45 var(--jp-ui-font-family, system-ui, -apple-system,
  "Segoe UI", sans-serif); border: 1px solid rgba(128,128,128,.35);
  border-left: 4px solid rgba(56,139,253,.8); border-radius: 4px; padding: 4px 10px;
  margin: 0 0 6px 0; color: inherit; }
.passlab-explain .ple-head { font-weight: 600; }
.passlab-explain .ple-tag { font-weight: normal; font-size: 11px; padding: 0 5px; margin-left: 6px;
  border: 1px solid rgba(128,128,128,.45); border-radius: 8px; opacity: .85; }
.passlab-explain .ple-here { margin: 2px 0; }
.passlab-explain .ple-here.ple-same { opacity: .8; font-style: italic; }
.passlab-explain .ple-summary { margin: 2px 0; }
.passlab-explain details { margin: 2px 0 4px 0; }
.passlab-explain summary { cursor: pointer; opacity: .85; }
.passlab-explain .ple-details { margin: 4px 0; max-width: 90ch; }
.passlab-explain .ple-meta { font-size: 12px; opacity: .8; margin: 2px 0; }
.passlab-explain code { font-family: var(--jp-code-font-family, ui-monospace, SFMono-Regular,
  Menlo, Consolas, monospace); font-size: 12px; background: transparent; color: inherit; }
.passlab-explain .ple-snippet { font-family: var(--jp-code-font-family, ui-monospace, SFMono-Regular,
  Menlo, Consolas, monospace); font-size: 12px; white-space: pre-wrap; overflow-wrap: break-word;
  border: 1px solid rgba(128,128,128,.3); border-radius: 3px; margin: 4px 0; padding: 2px 0; }
/* a long line wraps at its spaces, indented under its first line */
.passlab-explain .ple-line { display: block; padding: 0 6px 0 calc(6px + 4ch); text-indent: -4ch; }
.passlab-explain .ple-add { background: rgba(46,160,67,.18); }
.passlab-explain .ple-del { background: rgba(248,81,73,.18); }
.passlab-explain .ple-sign { opacity: .7; user-select: none; }
""" + TOKEN_CSS + "\n"


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


# a docstring's inline markup (reStructuredText): ``literal``, :role:`target` and `text`
_LITERAL = re.compile(r"``(.+?)``|:[\w:.-]+:`~?([^`]+)`|`([^`]+)`")


def _prose(text: str) -> str:
    """Text from a card or a docstring, escaped, its inline literals and roles as
    `<code>` (a user's docstring reads `conv2d`, not its backticks)."""
    return _LITERAL.sub(lambda m: f"<code>{next(g for g in m.groups() if g is not None)}</code>",
                        _esc(text))


@functools.lru_cache(maxsize=256)  # a pure function of the text; lexing is the cost
def snippet_html(snippet: str) -> str:
    """A diff-style snippet ("-", "+" or " " before each line) as coloured HTML lines."""
    lines = []
    for raw in snippet.splitlines():
        sign, code = (raw[:1], raw[1:]) if raw[:1] in ("-", "+", " ") else (" ", raw)
        cls = {"-": " ple-del", "+": " ple-add"}.get(sign, "")
        lines.append(f'<span class="ple-line{cls}"><span class="ple-sign">{_esc(sign)}</span>'
                     f"{line_html(code)}</span>")
    return f'<div class="ple-snippet">{"".join(lines)}</div>'


def _card_body(card: Any, open_details: bool) -> str:
    parts = []
    more = []
    if card.details:
        more.append(f'<div class="ple-details">{_prose(card.details)}</div>')
    if card.snippet:
        more.append(snippet_html(card.snippet))
    meta = []
    if card.see_also:
        meta.append("see also " + ", ".join(f"<code>{_esc(s)}</code>" for s in card.see_also))
    if card.doc:
        api = "LLVM pass" if card.stage == "llvm" else "TVM API"
        meta.append(f'{api} <code class="ple-doc">{_esc(card.doc)}</code>')
    meta.append(f"source: {_esc(card.source)}")
    more.append(f'<div class="ple-meta">{" · ".join(meta)}</div>')
    opened = " open" if open_details else ""
    parts.append(f"<details{opened}><summary>what this pass does</summary>{''.join(more)}"
                 "</details>")
    return "".join(parts)


def _head(card: Any, label: str) -> str:
    stage = f'<span class="ple-tag">{_esc(card.stage)}</span>' if card.stage else ""
    # a user pass's card is of stage "user" and from source "user": one tag says it
    source = ("" if card.source == card.stage
              else f'<span class="ple-tag ple-source">{_esc(card.source)}</span>')
    return f'<div class="ple-head">Explain: <code>{_esc(label)}</code>{stage}{source}</div>'


def card_html(card: Any) -> str:
    """A card on its own (`passlab.explain(name)` in a notebook)."""
    return (f'<style>{CSS}</style><div class="passlab-explain" data-pass="{_esc(card.name)}">'
            f"{_head(card, card.name)}"
            f'<div class="ple-summary">{_prose(card.summary)}</div>'
            f"{_card_body(card, open_details=True)}</div>")


def strip_html(expl: Any, style: bool = True) -> str:
    """The "Explain" strip of a step: what changed here, then the card (details folded)."""
    card = expl.card
    same = " ple-same" if expl.kind == "no change" else ""
    css = f"<style>{CSS}</style>" if style else ""
    return (f'{css}<div class="passlab-explain plx-explain" '
            f'data-pass="{_esc(card.name)}" data-kind="{_esc(expl.kind)}">'
            f"{_head(card, expl.ref)}"
            f'<div class="ple-here{same}">{_esc(expl.sentence)}</div>'
            f'<div class="ple-summary">{_prose(card.summary)}</div>'
            f"{_card_body(card, open_details=False)}</div>")
