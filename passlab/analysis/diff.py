"""Per-function differences between two IR snapshots.

Functions are matched by global name (``GlobalVar.name_hint``). Only the functions a diff
shows are printed, each at most once (see :mod:`passlab.analysis._printing`), and only
when their text is first asked for.
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, overload

from passlab._tvm import printing as _printing
from passlab.analysis import _diff_render as _render
from passlab.errors import unknown

__all__ = ["diff", "ModuleDiff", "FunctionDiff", "MAX_LINES", "FIRST_VIEW"]

#: Diff lines shown per function before the rest is cut with a "shown N of M" note.
MAX_LINES = 5000
#: Functions a first view (notebook display, explorer pane, report) renders; the others
#: are listed by name. Printing is the cost of a diff, and lowered TIR passes touch every
#: kernel: a first view stays fast by printing only what it shows.
FIRST_VIEW = 8
#: Lines of ``to_text()`` kept in the plain-text notebook/terminal representation.
_PLAIN_LINES = 400
_MODES = ("side-by-side", "unified")

Status = Literal["added", "removed", "modified", "renamed", "unchanged"]


@dataclass(frozen=True, eq=False)
class FunctionDiff:
    """How one function differs between two snapshots.

    ``name`` is the function's name after (before, for a removed one); ``old_name`` its
    name before (``None`` if added). ``before``/``after`` are the TVM functions.
    """

    name: str
    status: Status
    kind: str
    old_name: str | None = None
    before: Any = field(default=None, repr=False)
    after: Any = field(default=None, repr=False)
    context: int = 3

    @cached_property
    def before_text(self) -> str:
        """TVMScript of the function before ("" if it was added)."""
        if self.before is None:
            return ""
        return _printing.function_text(self.before, self.old_name or self.name)

    @cached_property
    def after_text(self) -> str:
        """TVMScript of the function after ("" if it was removed)."""
        return "" if self.after is None else _printing.function_text(self.after, self.name)

    @cached_property
    def _before_lines(self) -> list[str]:
        return self.before_text.split("\n") if self.before_text else []

    @cached_property
    def _after_lines(self) -> list[str]:
        return self.after_text.split("\n") if self.after_text else []

    @cached_property
    def _groups(self) -> tuple[tuple[tuple[str, int, int, int, int], ...], ...]:
        if self.status == "unchanged":
            return ()
        matcher = difflib.SequenceMatcher(None, self._before_lines, self._after_lines)
        return tuple(tuple(g) for g in matcher.get_grouped_opcodes(self.context))

    @cached_property
    def _counts(self) -> tuple[int, int]:
        added = removed = 0
        for group in self._groups:
            for tag, i1, i2, j1, j2 in group:
                if tag != "equal":
                    removed += i2 - i1
                    added += j2 - j1
        return added, removed

    @property
    def lines_added(self) -> int:
        """Lines in the new text that are not in the old one."""
        return self._counts[0]

    @property
    def lines_removed(self) -> int:
        """Lines in the old text that are not in the new one."""
        return self._counts[1]

    @property
    def _intraline(self) -> bool:
        # A Relax function replaced by a PrimFunc (FuseTIR) shares no code worth marking.
        return type(self.before) is type(self.after)

    @property
    def text_identical(self) -> bool:
        """Structurally changed, yet both versions print the same TVMScript."""
        return self.status == "modified" and self.before_text == self.after_text

    def to_text(self, *, line_numbers: bool = False, max_lines: int = MAX_LINES) -> str:
        """A ``git diff``-style block: header, ``---``/``+++`` lines and hunks."""
        return _render.text_block(self, line_numbers, max_lines)

    def to_html(self, mode: str = "side-by-side", *, max_lines: int = MAX_LINES) -> str:
        """Self-contained HTML: ``mode`` is ``"side-by-side"`` or ``"unified"``."""
        return _render.wrap_html(_render.html_block(self, _check_mode(mode), max_lines))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        old = f"{self.old_name!r} -> " if self.status == "renamed" else ""
        return f"<FunctionDiff {old}{self.name!r}: {self.status} {self.kind} function>"


@dataclass(frozen=True, eq=False)
class ModuleDiff(Sequence[FunctionDiff]):
    """The functions that differ between two snapshots, sorted by name.

    A sequence of :class:`FunctionDiff`; index it by position or by function name (old or
    new name of a renamed one). ``title`` names the step(s) compared, if any.
    """

    functions: tuple[FunctionDiff, ...]
    title: str = ""

    def __len__(self) -> int:
        return len(self.functions)

    def __iter__(self) -> Iterator[FunctionDiff]:
        return iter(self.functions)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return any(item in (fd.name, fd.old_name) for fd in self.functions)
        return any(item is fd for fd in self.functions)

    @overload
    def __getitem__(self, key: int | str) -> FunctionDiff: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[FunctionDiff, ...]: ...

    def __getitem__(self, key: int | str | slice) -> FunctionDiff | tuple[FunctionDiff, ...]:
        if isinstance(key, str):
            for fd in self.functions:
                if key in (fd.name, fd.old_name):
                    return fd
            raise unknown("function", key, [fd.name for fd in self.functions],
                          extra="This diff lists only changed functions unless "
                          "all_functions=True.")
        return self.functions[key]

    def _names(self, status: str) -> tuple[str, ...]:
        return tuple(fd.name for fd in self.functions if fd.status == status)

    @property
    def added(self) -> tuple[str, ...]:
        """Names of functions only in the second snapshot."""
        return self._names("added")

    @property
    def removed(self) -> tuple[str, ...]:
        """Names of functions only in the first snapshot."""
        return self._names("removed")

    @property
    def modified(self) -> tuple[str, ...]:
        """Names of functions in both snapshots whose IR differs."""
        return self._names("modified")

    @property
    def renamed(self) -> tuple[tuple[str, str], ...]:
        """``(old, new)`` names of functions that moved to a new name unchanged."""
        return tuple((fd.old_name or "", fd.name) for fd in self.functions
                     if fd.status == "renamed")

    @property
    def unchanged(self) -> bool:
        """Whether no function was added, removed, modified or renamed."""
        return all(fd.status == "unchanged" for fd in self.functions)

    @property
    def lines_added(self) -> int:
        """Lines added over all listed functions (prints them)."""
        return sum(fd.lines_added for fd in self.functions)

    @property
    def lines_removed(self) -> int:
        """Lines removed over all listed functions (prints them)."""
        return sum(fd.lines_removed for fd in self.functions)

    def _summary(self) -> str:
        changed = sum(fd.status != "unchanged" for fd in self.functions)
        noun = "function" if changed == 1 else "functions"
        return (f"{changed} {noun} changed: {len(self.added)} added, {len(self.removed)} "
                f"removed, {len(self.modified)} modified, {len(self.renamed)} renamed")

    def _split(self, max_functions: int | None) -> tuple[tuple[FunctionDiff, ...], str]:
        """The functions to render, and a note naming the others (printing nothing)."""
        if max_functions is None or len(self.functions) <= max_functions:
            return self.functions, ""
        shown, rest = self.functions[:max_functions], self.functions[max_functions:]
        names = ", ".join(f"{fd.name} ({fd.status})" for fd in rest[:40])
        more = f", ... {len(rest) - 40} more" if len(rest) > 40 else ""
        return shown, (f"shown {len(shown)} of {len(self.functions)} changed functions; not "
                       f"printed: {names}{more}. to_html(max_functions=None) shows all.")

    def _counts(self, shown: Sequence[FunctionDiff]) -> tuple[int, int, str]:
        added = sum(fd.lines_added for fd in shown)
        removed = sum(fd.lines_removed for fd in shown)
        scope = "" if len(shown) == len(self.functions) else " in the shown functions"
        return added, removed, scope

    def to_text(self, *, line_numbers: bool = False, max_lines: int = MAX_LINES,
                max_functions: int | None = None) -> str:
        """Unified diff of every listed function (or the first ``max_functions``), like
        ``git diff``; "no changes" if none."""
        if self.unchanged:
            return "no changes"
        shown, note = self._split(max_functions)
        added, removed, scope = self._counts(shown)
        head = f"{self._summary()} (+{added} -{removed} lines{scope})"
        blocks = [fd.to_text(line_numbers=line_numbers, max_lines=max_lines) for fd in shown]
        return "\n".join([head, *blocks] + ([note] if note else []))

    def to_html(self, mode: str = "side-by-side", *, max_lines: int = MAX_LINES,
                max_functions: int | None = None) -> str:
        """Self-contained HTML (inline CSS, no scripts or external resources) of every
        changed function, or of the first ``max_functions`` (the others are named)."""
        mode = _check_mode(mode)
        title = f"<b>{html.escape(self.title)}</b>: " if self.title else ""
        if self.unchanged:
            return _render.wrap_html(f'<div class="pl-summary">{title}no changes</div>')
        shown, note = self._split(max_functions)
        added, removed, scope = self._counts(shown)
        summary = (f'<div class="pl-summary">{title}{self._summary()} '
                   f'(<span class="pl-count-add">+{added}</span> '
                   f'<span class="pl-count-del">-{removed}</span> lines{scope})</div>')
        blocks = "".join(_render.html_block(fd, mode, max_lines) for fd in shown)
        tail = f'<div class="pl-note">{html.escape(note)}</div>' if note else ""
        return _render.wrap_html(summary + blocks + tail)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _mimebundle(self, include, exclude)

    def __repr__(self) -> str:
        title = f" {self.title!r}" if self.title else ""
        if self.unchanged:
            return f"<ModuleDiff{title}: no changes>"
        return (f"<ModuleDiff{title}: {len(self.added)} added, {len(self.removed)} removed, "
                f"{len(self.modified)} modified, {len(self.renamed)} renamed>")


def _check_mode(mode: str) -> str:
    if mode not in _MODES:
        raise unknown("mode", mode, _MODES)
    return mode


def _mimebundle(obj: FunctionDiff | ModuleDiff, include: Any, exclude: Any) -> dict[str, str]:
    """Text and HTML forms; a display hook must never raise, so errors become a panel."""
    bundle: dict[str, str] = {}
    first = {"max_functions": FIRST_VIEW} if isinstance(obj, ModuleDiff) else {}
    try:
        lines = obj.to_text(**first).split("\n")
        if len(lines) > _PLAIN_LINES:
            lines = lines[:_PLAIN_LINES] + [
                f"... {len(lines) - _PLAIN_LINES} more lines; .to_text() has all of them"]
        bundle["text/plain"] = "\n".join(lines)
    except Exception as err:  # noqa: BLE001 - display hooks never raise
        bundle["text/plain"] = f"<{type(obj).__name__}: could not render: {err!r}>"
    try:
        bundle["text/html"] = obj.to_html(**first)
    except Exception as err:  # noqa: BLE001
        bundle["text/html"] = _render.error_html(f"{type(err).__name__}: {err}")
    if include:
        bundle = {k: v for k, v in bundle.items() if k in include}
    if exclude:
        bundle = {k: v for k, v in bundle.items() if k not in exclude}
    return bundle


def _module(obj: Any, role: str) -> tuple[Any, str | None]:
    """The IRModule an argument stands for, and its label (a Step's name)."""
    if _printing.is_module(obj):
        return obj, None
    if hasattr(obj, "before") and hasattr(obj, "after"):
        side = "before" if role == "a" else "after"
        mod = getattr(obj, side)
        label = str(getattr(obj, "label", None) or getattr(obj, "name", None) or "") or None
        if _printing.is_module(mod):
            return mod, label
        failed = " (did the pass fail?)" if mod is None and side == "after" else ""
        raise TypeError(f"diff(): step {label!r} given as {role!r} has no IRModule in "
                        f".{side}{failed}; got {type(mod).__name__}")
    raise TypeError(f"diff() takes tvm.IRModule or Step objects (with .before and .after "
                    f"IRModules) for {role!r}, not {type(obj).__name__}")


def diff(
    a: Any,
    b: Any = None,
    *,
    function: str | None = None,
    all_functions: bool = False,
    hide_renames: bool = True,
    context: int = 3,
) -> ModuleDiff:
    """Compare two IR snapshots function by function.

    Parameters
    ----------
    a, b
        ``tvm.IRModule`` snapshots, or pipeline steps (objects with ``.before`` and
        ``.after`` modules). ``diff(step)`` compares a step's input with its output; a step
        given as ``a`` stands for its input and as ``b`` for its output, so
        ``diff(first, last)`` spans every step from ``first`` to ``last``.
    function
        Only this function (by its global name in either snapshot).
    all_functions
        Also list functions that did not change (status ``"unchanged"``).
    hide_renames
        Report a function that reappears unchanged under another name as ``"renamed"``
        rather than as one removed and one added function.
    context
        Unchanged lines shown around each change.

    Returns
    -------
    ModuleDiff
        The differing functions, sorted by name. A function is unchanged when it is the
        same object or structurally equal (free variables mapped, tensor bytes skipped).

    Examples
    --------
    >>> import tvm, passlab
    >>> from passlab.analysis.diff import diff
    >>> mod = passlab.models.mlp()
    >>> d = diff(mod, tvm.relax.transform.LegalizeOps()(mod))
    >>> d.modified, d.added[:3]
    (('forward',), ('add', 'add1', 'matmul'))
    >>> diff(mod, mod).to_text()
    'no changes'
    """
    if not isinstance(context, int) or isinstance(context, bool) or context < 0:
        raise ValueError(f"context must be a non-negative int, not {context!r}")
    if b is None and _printing.is_module(a):
        raise TypeError("diff() needs two modules: diff(before, after), or one Step alone "
                        "(diff(step) compares step.before with step.after)")
    before, label_a = _module(a, "a")
    after, label_b = _module(a if b is None else b, "b")
    labels = [label for label in dict.fromkeys((label_a, label_b)) if label]
    title = " … ".join(labels)
    old, new = _printing.module_functions(before), _printing.module_functions(after)
    if function is not None and function not in old and function not in new:
        raise unknown("function", function, sorted(set(old) | set(new)))

    result: list[FunctionDiff] = []

    def make(name: str, status: Status, old_name: str | None, f_old: Any, f_new: Any) -> None:
        func = f_new if f_new is not None else f_old
        result.append(FunctionDiff(name, status, _printing.function_kind(func), old_name,
                                   f_old, f_new, context))

    for name in old.keys() & new.keys():
        if function is not None and name != function:
            continue
        same = _printing.same_function(old[name], new[name])
        if not same or all_functions:
            make(name, "unchanged" if same else "modified", name, old[name], new[name])
    removed = sorted(old.keys() - new.keys())
    added = sorted(new.keys() - old.keys())
    renames = _renames(old, new, removed, added, function) if hide_renames else {}
    for name in removed:
        if name in renames:
            make(renames[name], "renamed", name, old[name], new[renames[name]])
        elif function in (None, name):
            make(name, "removed", name, old[name], None)
    taken = set(renames.values())
    for name in added:
        if name not in taken and function in (None, name):
            make(name, "added", None, None, new[name])
    # the graph-level (Relax) functions first: they say what a pass did to the model
    result.sort(key=lambda fd: (fd.kind != "relax", fd.name, fd.old_name or ""))
    return ModuleDiff(tuple(result), title)


def _renames(old: dict[str, Any], new: dict[str, Any], removed: list[str], added: list[str],
             function: str | None) -> dict[str, str]:
    """Old name -> new name for removed functions that reappear unchanged as added ones."""
    if function is not None:
        if function in removed:
            removed = [function]
        elif function in added:
            added = [function]
        else:
            return {}
    if not removed or not added:
        return {}
    buckets: dict[int, list[str]] = {}
    for name in added:
        buckets.setdefault(_printing.structural_key(new[name]), []).append(name)
    found: dict[str, str] = {}
    for name in removed:
        for candidate in buckets.get(_printing.structural_key(old[name]), ()):
            if candidate not in found.values() and _printing.same_function(old[name],
                                                                          new[candidate]):
                found[name] = candidate
                break
    return found
