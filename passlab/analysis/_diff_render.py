"""Text and HTML rendering of `passlab.analysis.diff` results.

Works on any object with the attributes of `FunctionDiff` (duck-typed, so this module
needs nothing from `diff.py`). Every string that comes from IR goes through
`html.escape`: function names and TVMScript are user data, not markup.
"""

from __future__ import annotations

import difflib
import html
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from passlab._render import breakable
from passlab._tvm import ir_types as _ir_types
from passlab.analysis import _diff_layout as _layout
from passlab.analysis._diff_layout import bound_var
from passlab.analysis._highlight import CSS as TOKEN_CSS
from passlab.analysis._highlight import line_html, llvm_line_html

__all__ = ["CSS", "IDENTICAL_NOTE", "rows", "hunk_header", "text_block", "html_block",
           "wrap_html", "error_html", "row_total", "anchor_id", "unshown_html", "shown_lines",
           "bound_var", "graph_level"]

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_MAX_TOKENS = 200

IDENTICAL_NOTE = "structurally changed, but both versions print identically"

# Colours are translucent overlays and text inherits the page colour, so the same rules
# read on light and dark notebook themes without a theme switch. Dimmed text is the page
# colour at 75% (--pl-dim), counts are the theme's status colour pulled halfway to the
# page colour: both stay >= 4.5:1 in JupyterLab Light and Dark, on the row tints too.
CSS = """
.passlab-diff {
  --pl-dim: color-mix(in srgb, var(--jp-content-font-color1, currentColor) 75%, transparent);
  font-family: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo,
  Consolas, monospace); font-size: var(--jp-code-font-size, 12px); line-height: 1.4;
  color: inherit; background: transparent; }
.passlab-diff .pl-summary, .passlab-diff summary, .passlab-diff .pl-note {
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, sans-serif); }
.passlab-diff .pl-summary { margin: 4px 0 8px 0; }
.passlab-diff details { border: 1px solid rgba(128,128,128,0.35); border-radius: 4px;
  margin: 6px 0; }
.passlab-diff summary { cursor: pointer; padding: 3px 6px; background: rgba(128,128,128,0.12); }
.passlab-diff summary code { font-weight: 600; background: transparent; color: inherit; }
.passlab-diff .pl-status { display: inline-block; min-width: 5.5em; color: var(--pl-dim); }
.passlab-diff .pl-kind { color: var(--pl-dim); }
.passlab-diff .pl-count-add { color: color-mix(in srgb, var(--jp-success-color1, #2da44e) 50%,
  var(--jp-content-font-color1, currentColor)); }
.passlab-diff .pl-count-del { color: color-mix(in srgb, var(--jp-error-color1, #e5534b) 50%,
  var(--jp-content-font-color1, currentColor)); }
.passlab-diff .pl-scroll { overflow-x: auto; }
.passlab-diff table.pl-t { border-collapse: collapse; width: 100%; table-layout: auto;
  margin: 0; border: none; font-size: inherit; }
.passlab-diff table.pl-t tr, .passlab-diff table.pl-t tr:hover { background: transparent; }
.passlab-diff table.pl-t td { padding: 0 6px; vertical-align: top; border: none;
  text-align: left; background: transparent; color: inherit; line-height: 1.4; }
.passlab-diff table.pl-t td.pl-code { white-space: pre-wrap; overflow-wrap: anywhere; }
.passlab-diff table.pl-sbs { table-layout: fixed; }
.passlab-diff table.pl-sbs col.pl-c-ln { width: calc(5ch + 12px); }
.passlab-diff table.pl-sbs td.pl-code { white-space: pre-wrap; overflow-wrap: break-word; }
.passlab-diff table.pl-t td.pl-ln { text-align: right; color: var(--pl-dim); user-select: none;
  width: 1%; white-space: nowrap; }
.passlab-diff table.pl-t td.pl-sign { width: 1%; user-select: none; color: var(--pl-dim); }
.passlab-diff table.pl-t td.pl-add, .passlab-diff table.pl-t tr.pl-add > td {
  background: rgba(46,160,67,0.18); }
.passlab-diff table.pl-t td.pl-del, .passlab-diff table.pl-t tr.pl-del > td {
  background: rgba(248,81,73,0.18); }
.passlab-diff table.pl-t td.pl-empty { background: rgba(128,128,128,0.08); }
.passlab-diff table.pl-t td.pl-move, .passlab-diff table.pl-t tr.pl-move > td {
  background: rgba(56,139,253,0.16); }
.passlab-diff table.pl-t tr.pl-hunk > td { background: rgba(56,139,253,0.12);
  color: var(--pl-dim); }
.passlab-diff .pl-add .pl-hl { background: rgba(46,160,67,0.45); border-radius: 2px; }
.passlab-diff .pl-del .pl-hl { background: rgba(248,81,73,0.45); border-radius: 2px; }
/* a changed fragment is in the text colour: token colours fall under 4.5:1 on its tint */
.passlab-diff table.pl-t .pl-hl, .passlab-diff table.pl-t .pl-hl span { color: inherit; }
.passlab-diff .pl-note { padding: 4px 8px; font-style: italic; color: var(--pl-dim);
  overflow-wrap: anywhere; }  /* prose naming long functions: never wider than the pane */
/* folds: unchanged lines no hunk shows, and the parameters of a long unchanged signature;
   a (visually hidden, focusable) checkbox opens them, so the HTML needs no script */
.passlab-diff table.pl-t tr.pl-fold-head > td { background: rgba(128,128,128,0.10);
  color: var(--pl-dim); font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  padding: 1px 6px; }
.passlab-diff label.pl-fold, .passlab-diff label.pl-more { cursor: pointer; }
.passlab-diff input.pl-fold-open, .passlab-diff input.pl-more-open { position: absolute;
  clip-path: inset(50%); overflow: hidden; width: 1px; height: 1px; margin: 0; }
.passlab-diff label:has(> input:focus-visible) { outline: 2px solid
  var(--jp-brand-color1, #1976d2); }
.passlab-diff tbody.pl-fold > tr.pl-folded { display: none; }
.passlab-diff tbody.pl-fold:has(> tr > td > label > input.pl-fold-open:checked)
  > tr.pl-folded { display: table-row; }
.passlab-diff label.pl-more { color: var(--pl-dim); border: 1px dashed rgba(128,128,128,0.6);
  border-radius: 3px; padding: 0 3px; }
.passlab-diff .pl-rest { display: none; }
.passlab-diff td:has(> label.pl-more > input:checked) > .pl-rest { display: inline; }
.passlab-diff td:has(> label.pl-more > input:checked) > label.pl-more { display: none; }
.passlab-diff.passlab-error { border-left: 4px solid #e5534b; padding: 4px 8px; }
"""

# (tag, old line number, new line number, old line, new line); which line is set
# depends on the tag (see :func:`rows`), hence Any
Row = tuple[str, "int | None", "int | None", Any, Any]


def _range(start: int, stop: int) -> str:
    """A unified-diff hunk range, as `difflib.unified_diff` writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def hunk_header(group: Sequence[tuple[str, int, int, int, int]]) -> str:
    first, last = group[0], group[-1]
    return f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@"


def rows(fd: Any, paired: bool) -> Iterator[Row]:
    """`(tag, old_no, new_no, old_line, new_line)` for every displayed line.

    `tag` is `hunk` (header in `old_line`), `equal`, `delete`, `insert` or,
    when `paired` (side by side), `replace` for an old and a new line on one row.
    """
    a, b = fd._before_lines, fd._after_lines
    folds = {k: (i1, i2, j1) for k, i1, i2, j1 in _layout.gaps(fd)}

    def fold(k: int) -> Iterator[Row]:
        if k not in folds:
            return
        i1, i2, j1 = folds[k]
        yield ("fold", None, None, i2 - i1, sum(a[i] != b[j1 + i - i1] for i in range(i1, i2)))
        if i2 - i1 <= _layout.FOLD_ROWS:
            for i in range(i1, i2):
                yield ("folded", i + 1, j1 + i - i1 + 1, a[i], b[j1 + i - i1])
        yield ("fold-end", None, None, None, None)

    for number, group in enumerate(fd._groups):
        yield from fold(number)
        yield ("hunk", None, None, hunk_header(group), None)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    yield ("equal", i1 + k + 1, j1 + k + 1, a[i1 + k], b[j1 + k])
            elif paired and tag == "replace":
                for pi, pj in _layout.pair_lines(a[i1:i2], b[j1:j2]):
                    yield ("replace", None if pi is None else i1 + pi + 1,
                           None if pj is None else j1 + pj + 1,
                           None if pi is None else a[i1 + pi], None if pj is None else b[j1 + pj])
            else:
                moved_a, moved_b = fd._moved
                for i in range(i1, i2):
                    yield ("moved-from" if i in moved_a else "delete", i + 1, None, a[i], None)
                for j in range(j1, j2):
                    yield ("moved-to" if j in moved_b else "insert", None, j + 1, None, b[j])
    yield from fold(len(fd._groups))


def fold_label(count: int, reindented: int = 0) -> str:
    """What a fold of `count` unchanged lines says (text form: `... 17 unchanged lines`),
    `reindented` of them only re-indented."""
    more = f" ({reindented} re-indented)" if reindented else ""
    return f"{count} unchanged line{'' if count == 1 else 's'}{more}"


def elided_text(line: str) -> str:
    """An unchanged line as the text form shows it: a long signature elided."""
    cut = _layout.elide_signature(line)
    if cut is None:
        return line
    head, _, tail, n = cut
    return f"{head}... {n} more parameters{tail}"


def region_note(fd: Any) -> str:
    """What a diff of a function's first binding region (`fd.head`) left out; "" for a
    whole function."""
    head = getattr(fd, "head", None)
    if head is None:
        return ""
    kb, ka, nb, na = head
    sides = [f"{k:,} of {n:,} bindings {side}" for k, n, side in
             ((kb, nb, "before"), (ka, na, "after")) if n]
    return (f"first binding region printed ({', '.join(sides)}): the counts are "
            "this region's; show all prints the whole function")


def status_text(fd: Any) -> str:
    return "modified (renamed callee)" if fd.callees_renamed else fd.status


def callee_note(fd: Any) -> str:
    """The one line that stands for the diff of a caller of renamed functions."""
    return ("only calls renamed functions by their new names: "
            + ", ".join(f"{o} -> {n}" for o, n in fd.callees_renamed))


def _header(fd: Any) -> str:
    counts = "" if fd.status == "unchanged" else f", +{fd.lines_added} -{fd.lines_removed}"
    if fd.lines_moved:
        counts += f", {fd.lines_moved} moved"
    if _reindented(fd):
        counts += f", {_reindented(fd)} re-indented"
    old = fd.old_name if fd.old_name is not None else fd.name
    return f"diff a/{old} b/{fd.name} ({fd.kind}, {status_text(fd)}{counts})"


def _reindented(fd: Any) -> int:
    """Lines whose indentation alone changed (`FunctionDiff.lines_reindented`; 0 for
    a duck-typed diff without it)."""
    return getattr(fd, "lines_reindented", 0) if fd.status == "modified" else 0


#: The tooltip of a line whose indentation alone changed.
REINDENT_TITLE = "re-indented: only its indentation changed"


def row_total(fd: Any, paired: bool) -> int:
    """How many lines (side by side: rows) the full diff of `fd` has, hunk headers aside."""
    total = 0
    a, b = fd._before_lines, fd._after_lines
    for group in fd._groups:
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                total += i2 - i1
            elif paired and tag == "replace":
                total += len(_layout.pair_lines(a[i1:i2], b[j1:j2]))
            else:
                total += (i2 - i1) + (j2 - j1)
    return total


def _truncated(fd: Any, shown: int, paired: bool) -> str:
    unit = "rows" if paired else "lines"
    return f"[truncated: shown {shown} of {row_total(fd, paired)} diff {unit}]"


def text_block(fd: Any, line_numbers: bool, max_lines: int) -> str:
    """One function as a `git diff` block."""
    out = [_header(fd)]
    if fd.status == "unchanged":
        return out[0]
    if fd.text_identical:
        return "\n".join(out + [IDENTICAL_NOTE])
    if fd.callees_renamed:
        return "\n".join(out + [callee_note(fd)])
    if fd.status == "renamed":
        out += [f"rename from {fd.old_name}", f"rename to {fd.name}"]
    if region_note(fd):
        out.append(f"({region_note(fd)})")
    out.append("--- /dev/null" if fd.status == "added" else f"--- a/{fd.old_name or fd.name}")
    out.append("+++ /dev/null" if fd.status == "removed" else f"+++ b/{fd.name}")
    body = 0
    for tag, i, j, old, new in rows(fd, paired=False):
        if body >= max_lines:
            out.append(_truncated(fd, max_lines, False))
            break
        if tag == "hunk":
            out.append(old)
            continue
        if tag == "fold":
            out.append(f"... {fold_label(old, new or 0)}")
        if tag in ("fold", "folded", "fold-end"):
            continue
        body += 1
        sign, text = {"equal": (" ", new), "delete": ("-", old), "insert": ("+", new),
                      "moved-from": ("<", old), "moved-to": (">", new)}[tag]
        if tag == "equal":
            text = elided_text(text)
        prefix = f"{i or '':>5} {j or '':>5} " if line_numbers else ""
        out.append(f"{prefix}{sign}{text}")
    return "\n".join(out)


def _common_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071 - characters, not paths


def plain_code(line: str, marks: Sequence[tuple[int, int]] = ()) -> str:
    """A line escaped, with its marks but no token colours (a page that highlights on
    the client, like the static report, renders diffs with this)."""
    if not marks:
        return html.escape(line)
    out, pos = [], 0
    for a, b in sorted(marks):
        out.append(html.escape(line[pos:a]))
        out.append(f'<span class="pl-hl">{html.escape(line[a:b])}</span>')
        pos = b
    out.append(html.escape(line[pos:]))
    return "".join(out)


def _highlight(old: str, new: str, code: Any = line_html) -> tuple[str, str]:
    """Old and new line as highlighted HTML with the changed spans marked.

    Matching runs on tokens (names, numbers, runs of spaces, single symbols) of what is
    left once the common prefix and suffix are cut: far cheaper than a per-character
    match on the ~1,000-character signature lines TIR prints, and token-sized marks are
    easier to read in code anyway.
    """
    pre = _common_prefix(old, new)
    suf = _common_prefix(old[pre:][::-1], new[pre:][::-1])
    mid_a, mid_b = old[pre:len(old) - suf], new[pre:len(new) - suf]
    tok_a, tok_b = _TOKEN.findall(mid_a), _TOKEN.findall(mid_b)
    ops: Sequence[tuple[str, int, int, int, int]]
    if len(tok_a) + len(tok_b) > _MAX_TOKENS:
        ops = [("replace", 0, len(tok_a), 0, len(tok_b))]
    else:
        ops = difflib.SequenceMatcher(None, tok_a, tok_b, autojunk=False).get_opcodes()
    same = pre + suf + sum(len("".join(tok_a[i1:i2])) for tag, i1, i2, _, _ in ops
                           if tag == "equal")
    if same < 0.3 * max(len(old), len(new)):  # mostly different: marks would be noise
        return code(old), code(new)
    starts_a = [pre]
    for t in tok_a:
        starts_a.append(starts_a[-1] + len(t))
    starts_b = [pre]
    for t in tok_b:
        starts_b.append(starts_b[-1] + len(t))
    marks_a = [(starts_a[i1], starts_a[i2]) for tag, i1, i2, _, _ in ops
               if tag != "equal" and i2 > i1]
    marks_b = [(starts_b[j1], starts_b[j2]) for tag, _, _, j1, j2 in ops
               if tag != "equal" and j2 > j1]
    return code(old, marks_a), code(new, marks_b)


def _ln(n: int | None) -> str:
    return f'<td class="pl-ln">{"" if n is None else n}</td>'


def _equal_code(code: Any, line: str) -> str:
    """An unchanged line; a long signature shows its first parameters and a count that
    opens the others (`<label class="pl-more">`)."""
    cut = _layout.elide_signature(line)
    if cut is None:
        return str(code(line))
    head, rest, tail, n = cut
    more = f"{n} more parameters"
    return (f'{code(head)}<label class="pl-more" title="show all parameters">'
            f'<input type="checkbox" class="pl-more-open" aria-label="show {more}">'
            f'\u2026 {more}</label><span class="pl-rest">{code(rest)}</span>{code(tail)}')


def _fold_rows(tag: str, i: Any, j: Any, old: Any, code: Any, unified: bool,
               new: Any = None) -> str:
    """The HTML of a `fold`/`folded`/`fold-end` row of `rows`: a fold is a
    `<tbody class="pl-fold">` whose head opens its hidden `pl-folded` rows."""
    if tag == "fold-end":
        return "</tbody>"
    if tag == "fold":
        label = html.escape(fold_label(old, new or 0))
        if old > _layout.FOLD_ROWS:  # too many to carry: the count only
            return (f'<tbody class="pl-fold"><tr class="pl-fold-head"><td colspan="4">'
                    f"\u22ef {label} (not rendered)</td></tr>")
        return (f'<tbody class="pl-fold"><tr class="pl-fold-head"><td colspan="4">'
                f'<label class="pl-fold" title="show the unchanged lines">'
                f'<input type="checkbox" class="pl-fold-open" aria-label="show {label}">'
                f"\u22ef {label}</label></td></tr>")
    new = old if new is None else new  # a folded line: as it reads after, and before
    cell = f'<td class="pl-code">{_equal_code(code, new)}</td>'
    if unified:
        return f'<tr class="pl-folded">{_ln(i)}{_ln(j)}{_equal_sign(old, new)}{cell}</tr>'
    left = cell if new == old else f'<td class="pl-code">{_equal_code(code, old)}</td>'
    return f'<tr class="pl-folded">{_ln(i)}{left}{_ln(j)}{cell}</tr>'


def _equal_sign(old: str, new: str) -> str:
    """The sign cell of an unchanged line: blank, or "»" with a tooltip for a line whose
    indentation alone changed."""
    if old == new:
        return '<td class="pl-sign"> </td>'
    return f'<td class="pl-sign pl-reindent" title="{REINDENT_TITLE}">\u00bb</td>'


_TAG = re.compile(r"(<[^>]*>)")
_AFTER = re.compile(r"([(\[,])(?![\s)\]])")
_LONG = re.compile(r"[\w.]{16,}")


def soft_breaks(markup: str) -> str:
    """A line of code's HTML with places to wrap (`<wbr>`, copied as nothing) after each
    "(", "[" and "," (not before a space or a closing bracket), and after the "." and "_"
    inside a long name (16 characters or more, 5 from either end): a half-width column of
    a side-by-side diff wraps a long call between its arguments or at a name's parts,
    never inside a word. Only the text between tags is touched (it is escaped: no "<" in
    it)."""
    if "<" not in markup:  # no tags (a report's diffs are not highlighted)
        return _text_breaks(markup)
    parts = _TAG.split(markup)
    for k in range(0, len(parts), 2):
        if parts[k]:
            parts[k] = _text_breaks(parts[k])
    return "".join(parts)


def _long_breaks(m: re.Match[str]) -> str:
    name = m.group(0)
    end = len(name) - 5
    return "".join(c + "<wbr>" if c in "._" and 5 <= i < end else c
                   for i, c in enumerate(name))


def _text_breaks(text: str) -> str:
    return _AFTER.sub(r"\1<wbr>", _LONG.sub(_long_breaks, text))


def _soft(code: Any) -> Any:
    def render(line: str, marks: Sequence[tuple[int, int]] = ()) -> str:
        return soft_breaks(code(line, marks) if marks else code(line))
    return render


def _sbs_rows(fd: Any, max_lines: int, code: Any = line_html) -> Iterator[str]:
    body = 0
    for tag, i, j, old, new in rows(fd, paired=True):
        if tag == "hunk":
            yield f'<tr class="pl-hunk"><td colspan="4">{html.escape(old)}</td></tr>'
            continue
        if tag in ("fold", "folded", "fold-end"):
            yield _fold_rows(tag, i, j, old, code, False, new)
            continue
        if body >= max_lines:
            yield f'<tr><td colspan="4" class="pl-note">{_truncated(fd, body, True)}</td></tr>'
            return
        body += 1
        if tag == "equal":
            right = f'<td class="pl-code">{_equal_code(code, new)}</td>'
            if new != old:  # re-indented: each side as it reads there
                yield (f'<tr class="pl-reindent" title="{REINDENT_TITLE}">{_ln(i)}'
                       f'<td class="pl-code">{_equal_code(code, old)}</td>{_ln(j)}{right}</tr>')
                continue
            left = right
        else:
            if old is not None and new is not None and fd._intraline:
                old_html, new_html = _highlight(old, new, code)
            else:
                old_html = "" if old is None else code(old)
                new_html = "" if new is None else code(new)
            moved_a, moved_b = fd._moved
            del_cls = "pl-move" if i is not None and i - 1 in moved_a else "pl-del"
            add_cls = "pl-move" if j is not None and j - 1 in moved_b else "pl-add"
            left = ('<td class="pl-code pl-empty"></td>' if old is None
                    else f'<td class="pl-code {del_cls}">{old_html}</td>')
            right = ('<td class="pl-code pl-empty"></td>' if new is None
                     else f'<td class="pl-code {add_cls}">{new_html}</td>')
        yield f"<tr>{_ln(i)}{left}{_ln(j)}{right}</tr>"


def _unified_rows(fd: Any, max_lines: int, code: Any = line_html) -> Iterator[str]:
    # Non-equal opcodes are always separated by equal ones, so a change is a run of
    # deletes followed by a run of inserts; pair them up (by content, as side by side
    # does) for the intra-line marks.
    dels: list[Row] = []
    ins: list[Row] = []

    def flush() -> Iterator[str]:
        old_html: dict[int, str] = {}
        new_html: dict[int, str] = {}
        if fd._intraline and dels and ins:
            for pi, pj in _layout.pair_lines([r[3] for r in dels], [r[4] for r in ins]):
                if pi is not None and pj is not None:
                    old_html[pi], new_html[pj] = _highlight(dels[pi][3], ins[pj][4], code)
        for k, (_, i, _, old, _) in enumerate(dels):
            text = old_html.get(k) or code(old)
            yield (f'<tr class="pl-del">{_ln(i)}{_ln(None)}<td class="pl-sign">-</td>'
                   f'<td class="pl-code">{text}</td></tr>')
        for k, (_, _, j, _, new) in enumerate(ins):
            text = new_html.get(k) or code(new)
            yield (f'<tr class="pl-add">{_ln(None)}{_ln(j)}<td class="pl-sign">+</td>'
                   f'<td class="pl-code">{text}</td></tr>')
        dels.clear()
        ins.clear()

    body, truncated = 0, False
    for row in rows(fd, paired=False):
        tag = row[0]
        if tag in ("fold", "folded", "fold-end"):
            yield _fold_rows(tag, row[1], row[2], row[3], code, True, row[4])
            continue
        if tag != "hunk":
            if body >= max_lines:
                truncated = True
                break
            body += 1
        if tag == "delete":
            dels.append(row)
        elif tag == "insert":
            ins.append(row)
        elif tag in ("moved-from", "moved-to"):
            yield from flush()
            out = tag == "moved-from"
            yield (f'<tr class="pl-move">{_ln(row[1])}{_ln(row[2])}<td class="pl-sign" '
                   f'title="{"moved from here" if out else "moved here"}">{"<" if out else ">"}'
                   f'</td><td class="pl-code">{code(row[3] if out else row[4])}</td></tr>')
        else:
            yield from flush()
            if tag == "hunk":
                yield f'<tr class="pl-hunk"><td colspan="4">{html.escape(row[3])}</td></tr>'
            else:
                yield (f'<tr>{_ln(row[1])}{_ln(row[2])}{_equal_sign(row[3], row[4])}'
                       f'<td class="pl-code">{_equal_code(code, row[4])}</td></tr>')
    yield from flush()
    if truncated:
        yield f'<tr><td colspan="4" class="pl-note">{_truncated(fd, body, False)}</td></tr>'


def _summary_counts(fd: Any) -> str:
    if fd.status == "unchanged":
        return ""
    moved = f' <span class="pl-count-move">{fd.lines_moved} moved</span>' if fd.lines_moved else ""
    if _reindented(fd):
        moved += (f' <span class="pl-count-move" title="{REINDENT_TITLE}">'
                  f"{_reindented(fd)} re-indented</span>")
    return (f' <span class="pl-count-add">+{fd.lines_added}</span>'
            f' <span class="pl-count-del">-{fd.lines_removed}</span>{moved}')


def graph_level(fd: Any) -> bool:
    """Whether `fd` is a Relax function the fused graph draws (not a fused "Primitive"
    one, whose local names would point at unrelated nodes of the graph)."""
    func = fd.after if fd.after is not None else fd.before
    return fd.kind == "relax" and not _ir_types.attr(func, "Primitive")


def _clip(marks: Sequence[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of `marks` inside [lo, hi), shifted to start at lo."""
    return [(max(a, lo) - lo, min(b, hi) - lo) for a, b in marks if a < hi and b > lo]


def _linked(code: Any) -> Any:
    """`code` (a line renderer) that also wraps the variable a Relax binding defines in
    `<span class="pl-var" data-var=...>` (the Explorer links it to the graph). The line
    is cut at word boundaries, so the pieces tokenize as the whole line would."""

    def render(line: str, marks: Sequence[tuple[int, int]] = ()) -> str:
        var = bound_var(line)
        if var is None:
            return code(line, marks)
        start = len(line) - len(line.lstrip())
        stop = start + len(var)
        parts = [(0, start), (start, stop), (stop, len(line))]
        indent, name, rest = (code(line[a:b], _clip(marks, a, b)) if b > a else ""
                              for a, b in parts)
        return (f'{indent}<span class="pl-var" data-var="{html.escape(var)}">{name}</span>'
                f"{rest}")

    return render


def anchor_id(prefix: str, position: int, name: str) -> str:
    """A unique, markup-safe element id for the `position`-th function of a diff: the
    position keeps it unique, the name (reduced to `[A-Za-z0-9_-]`) keeps it readable."""
    return f"{prefix}-{position}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:48]}"


def _data(fd: Any) -> str:
    """`data-*` attributes naming a function of a diff (the Explorer's function list)."""
    return (f' data-fn="{html.escape(fd.name)}" data-status="{html.escape(status_text(fd))}"'
            f' data-kind="{html.escape(fd.kind)}"'
            + (f' data-old="{html.escape(fd.old_name)}"' if fd.status == "renamed" else ""))


def unshown_html(functions: Sequence[Any]) -> str:
    """A hidden list of the functions a first view did not print (the Explorer lists them
    in its function list, marked "not shown")."""
    items = "".join(f"<li{_data(fd)}>{html.escape(fd.name)}</li>" for fd in functions)
    return f'<ul class="pl-unshown" hidden>{items}</ul>' if items else ""


def shown_lines(fd: Any, paired: bool, max_lines: int) -> Iterator[str]:
    """The code text of every line `html_block` shows for `fd` (one per code cell:
    side by side, both sides of a row), e.g. to count search hits in a function that is
    not printed yet."""
    if fd.status == "unchanged" or fd.callees_renamed or fd.text_identical:
        return
    body = 0
    for tag, _, _, old, new in rows(fd, paired):
        if tag in ("hunk", "fold", "fold-end"):
            continue
        if tag == "folded":  # carried in the HTML, hidden until its fold is opened
            yield from (old, new) if paired else (new,)
            continue
        if body >= max_lines:
            return
        body += 1
        if paired:
            yield from (x for x in (old, new) if x is not None)
        else:
            yield old if tag in ("delete", "moved-from") else new


class _BlockCache:
    """LRU of rendered function blocks keyed by the two functions' C object addresses and
    everything else the block depends on, like the printed text (`passlab._tvm.printing`):
    highlighting is most of what a first view costs, and the same function pair comes
    back (stepping back to a pass, the compare pane, a report after the Explorer). Each
    entry keeps its functions alive, so an address is not reused while it is cached."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[Any, ...], tuple[Any, Any, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> str | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[2]

    def put(self, key: tuple[Any, ...], fd: Any, out: str) -> None:
        with self._lock:
            self._data[key] = (fd.before, fd.after, out)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def stores(self) -> list[tuple[Any, Any, int, Any]]:
        """This cache as `_tvm.forget_unreferenced` reads it: `(before, after, html)`
        entries."""
        return [(self._data, lambda entry: entry, 2, self._lock)]

    def __len__(self) -> int:
        return len(self._data)


#: Rendered blocks kept (a first view renders at most 8; a report some hundreds).
BLOCKS = _BlockCache(512)


def _address(obj: Any) -> int | None:
    if obj is None:
        return None
    chandle = getattr(obj, "__chandle__", None)
    return chandle() if chandle is not None else id(obj)


def html_block(fd: Any, mode: str, max_lines: int, highlight: bool = True,
               anchor: str = "") -> str:
    """One function as a `<details>` block (no `<style>`: see `wrap_html`),
    with `data-*` attributes naming the function; with an `anchor` (an element id),
    also the variables Relax bindings define marked (see `_linked`). Cached by
    the function objects (`BLOCKS`): the same pair renders to the same string."""
    key = (_address(fd.before), _address(fd.after), fd.name, fd.old_name, fd.status,
           fd.kind, fd.context, tuple(fd.callees_renamed), getattr(fd, "head", None), mode,
           max_lines, highlight, anchor, _layout.FOLD_ROWS, _MAX_TOKENS)  # settings too
    out = BLOCKS.get(key)
    if out is None:
        out = _html_block(fd, mode, max_lines, highlight, anchor)
        BLOCKS.put(key, fd, out)
    return out


def _html_block(fd: Any, mode: str, max_lines: int, highlight: bool, anchor: str) -> str:
    # a long name wraps at its . and _ (<wbr>) in a narrow pane
    name, status = breakable(fd.name), html.escape(fd.status)
    if fd.status == "renamed":
        name = f"{breakable(fd.old_name)} → {name}"
    head = (f'<summary><span class="pl-status">{html.escape(status_text(fd))}</span> '
            f'<code>{name}</code> <span class="pl-kind">{html.escape(fd.kind)}</span>'
            f'{_summary_counts(fd)}</summary>')
    attrs = (f' id="{html.escape(anchor)}"' if anchor else "") + _data(fd)
    if fd.status == "unchanged":
        return f'<details class="pl-func pl-unchanged"{attrs}>{head}</details>'
    if fd.callees_renamed:
        body = f'<div class="pl-note">{html.escape(callee_note(fd))}.</div>'
    elif fd.text_identical:
        body = f'<div class="pl-note">{IDENTICAL_NOTE}.</div>'
    else:
        render = _sbs_rows if mode == "side-by-side" else _unified_rows
        table_class = "pl-t pl-sbs" if mode == "side-by-side" else "pl-t pl-unified"
        # LLVM IR (an LLVM pass's diff) is coloured here, whatever `highlight` says: the
        # report's script colours TVMScript only
        code = llvm_line_html if fd.kind == "llvm" else line_html if highlight else plain_code
        if anchor and graph_level(fd):  # an Explorer pane: link bindings to the graph
            code = _linked(code)
        if mode == "side-by-side":  # half-width columns: more places to wrap
            code = _soft(code)
        # side by side: two fixed columns of code, each line wrapped at its spaces (a
        # token is broken only when it is wider than its column); `data-plx-scroll`:
        # the one box that may scroll sideways (a single token wider than the pane)
        cols = ('<colgroup><col class="pl-c-ln"><col><col class="pl-c-ln"><col></colgroup>'
                if mode == "side-by-side" else "")
        body = (f'<div class="pl-scroll" data-plx-scroll><table class="{table_class}">{cols}'
                + "".join(render(fd, max_lines, code)) + "</table></div>")
        if region_note(fd):
            body += f'<div class="pl-note pl-region">{html.escape(region_note(fd))}.</div>'
    return f'<details open class="pl-func pl-{status}"{attrs}>{head}{body}</details>'


def wrap_html(inner: str) -> str:
    return f'<div class="passlab-diff"><style>{CSS}\n{TOKEN_CSS}</style>{inner}</div>'


def error_html(message: str) -> str:
    return (f'<div class="passlab-diff passlab-error"><style>{CSS}</style>'
            f"<b>passlab: could not render this diff</b><br><code>{html.escape(message)}</code></div>")
