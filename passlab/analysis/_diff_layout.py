"""Where the lines of a diff go: the unchanged regions no hunk shows (folded, with a
count), long unchanged signatures (elided to their first parameters and a count), and the
old and new lines of a replaced block paired by what they bind, not by position.

Works on any object with the attributes of `FunctionDiff` (duck-typed).
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

__all__ = ["FOLD_ROWS", "SIGNATURE_KEEP", "SIGNATURE_MIN_MORE", "PAIR_CELLS", "bound_var", "gaps", "elide_signature",
           "pair_lines"]

#: Unchanged lines a fold carries for "click to open"; a longer region shows its count only.
FOLD_ROWS = 400
#: Parameters an elided (unchanged, long) signature keeps before "... N more parameters",
#: and the fewest it elides (a short signature reads better whole).
SIGNATURE_KEEP = 3
SIGNATURE_MIN_MORE = 4

# a Relax binding: `lv3 = ...` or `gv: R.Tensor((4, 8), dtype="float32") = ...` (the type
# may hold `=` without spaces, the binding's ` = ` has them)
_BIND = re.compile(r"\s*([A-Za-z_]\w*)(?::.*?)? = ")
_NOT_BOUND = frozenset({"return", "with", "if", "for", "while", "def", "class", "assert",
                        "cls"})
_DEF = re.compile(r"\s*def\s+\w+\(")
_OPEN, _CLOSE = "([{", ")]}"


def bound_var(line: str) -> str | None:
    """The variable a Relax binding line defines (`lv3` in `lv3 = R.call_tir(...)`,
    `gv` in `gv: R.Tensor(...) = lv1`), or None for any other line."""
    m = _BIND.match(line)
    if m is None or m.group(1) in _NOT_BOUND:
        return None
    return m.group(1)


def gaps(fd: Any) -> tuple[tuple[int, int, int, int], ...]:
    """`(hunk, i1, i2, j1)` for every run of unchanged lines no hunk shows: old lines
    `[i1, i2)` (new lines from `j1`), just before hunk number `hunk` (the number of
    hunks for the run after the last one)."""
    groups = fd._groups
    out, prev_i, prev_j = [], 0, 0
    for k, group in enumerate(groups):
        if group[0][1] > prev_i:
            out.append((k, prev_i, group[0][1], prev_j))
        prev_i, prev_j = group[-1][2], group[-1][4]
    if groups and len(fd._before_lines) > prev_i:
        out.append((len(groups), prev_i, len(fd._before_lines), prev_j))
    return tuple(out)


def elide_signature(line: str) -> tuple[str, str, str, int] | None:
    """`(head, rest, tail, n)` of a `def` line with at least `SIGNATURE_KEEP +
    SIGNATURE_MIN_MORE` parameters: `head` ends after the kept parameters, `rest` holds the `n` others,
    `tail` starts at the closing parenthesis; None for any other line."""
    m = _DEF.match(line)
    if m is None:
        return None
    return _elided(line, m.end())


@functools.lru_cache(maxsize=256)
def _elided(line: str, start: int) -> tuple[str, str, str, int] | None:
    # a function's signature is the same line in every diff of the function (the
    # 7B-shaped transformer's forward takes hundreds of parameters: a 15,000-character line,
    # scanned character by character)
    depth, quote, commas = 0, "", []
    pos = start
    close = -1
    while pos < len(line):
        c = line[pos]
        if quote:
            if c == "\\":
                pos += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                close = pos
                break
            depth -= 1
        elif c == "," and depth == 0:
            commas.append(pos)
        pos += 1
    if close < 0:
        return None
    bounds = [start - 1, *commas, close]
    params = sum(1 for a, b in zip(bounds, bounds[1:]) if line[a + 1:b].strip())
    if params < SIGNATURE_KEEP + SIGNATURE_MIN_MORE:
        return None
    cut = commas[SIGNATURE_KEEP - 1] + 1
    while cut < close and line[cut] == " ":
        cut += 1
    return line[:cut], line[cut:close], line[close:], params - SIGNATURE_KEEP


#: Old x new lines of a replaced block above which lines pair by bound name only (the
#: similarity alignment is quadratic).
PAIR_CELLS = 40_000
_WORD = re.compile(r"\w+|[^\w\s]")
_ALIKE = 0.5  # shared tokens (of the longer line) for two lines to be one changed line


def _key(line: str) -> tuple[str, str]:
    var = bound_var(line)
    return ("var", var) if var is not None else ("line", line.strip())


def _by_name(ka: list[tuple[str, str]], kb: list[tuple[str, str]]
             ) -> list[tuple[int | None, int | None]]:
    """Rows for a block too large to align: lines binding the same name pair up."""
    out: list[tuple[int | None, int | None]] = []
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend((i1 + k, j1 + k) for k in range(i2 - i1))
        else:
            out.extend((i, None) for i in range(i1, i2))
            out.extend((None, j) for j in range(j1, j2))
    return out


def pair_lines(old: list[str], new: list[str]) -> list[tuple[int | None, int | None]]:
    """The rows of a replaced block, in order: `(i, j)` puts an old and a new line on one
    row as one changed line, `(i, None)` / `(None, j)` a line with no counterpart.

    Lines pair by content, not position: the order-keeping alignment that maximises the
    distinct tokens the paired lines share (two lines pair when they bind the same name or
    share half the distinct tokens of the longer one; the same name counts extra), so a binding whose
    operand was renamed sits beside its old self however many lines were removed before
    it. Memoized: a block's rows are counted for a first screen's budget, then laid out
    (a report pairs each block about four times)."""
    return list(_pairs(tuple(old), tuple(new), PAIR_CELLS))


@functools.lru_cache(maxsize=4096)
def _pairs(old: tuple[str, ...], new: tuple[str, ...],
           cells: int) -> tuple[tuple[int | None, int | None], ...]:
    ka, kb = [_key(x) for x in old], [_key(x) for x in new]
    if len(old) * len(new) > cells:
        return tuple(_by_name(ka, kb))
        return _by_name(ka, kb)
    # distinct tokens: set intersection runs in C (a Counter's was most of a first view)
    ta = [frozenset(_WORD.findall(x)) for x in old]
    tb = [frozenset(_WORD.findall(x)) for x in new]
    sa = [len(c) for c in ta]
    sb = [len(c) for c in tb]
    n, m = len(old), len(new)
    # best[i][j]: the best score of old[:i] against new[:j]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, up = best[i], best[i - 1]
        for j in range(1, m + 1):
            score = max(up[j], row[j - 1])
            longest = max(sa[i - 1], sb[j - 1])
            same = ka[i - 1] == kb[j - 1] and ka[i - 1][0] == "var"
            if longest and (same or min(sa[i - 1], sb[j - 1]) >= _ALIKE * longest):
                shared = len(ta[i - 1] & tb[j - 1]) / longest
                if shared >= _ALIKE or same:
                    score = max(score, up[j - 1] + shared + (0.5 if same else 0.0))
            row[j] = score
    pairs: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i > 0 and j > 0:
        if best[i][j] == best[i - 1][j]:
            pairs.append((i - 1, None))
            i -= 1
        elif best[i][j] == best[i][j - 1]:
            pairs.append((None, j - 1))
            j -= 1
        else:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
    pairs.extend((k, None) for k in range(i - 1, -1, -1))
    pairs.extend((None, k) for k in range(j - 1, -1, -1))
    pairs.reverse()
    return tuple(pairs)
