"""Per-function differences between two IR snapshots.

Functions are matched by global name (`GlobalVar.name_hint`). Only the functions a diff
shows are printed, each at most once (see `passlab.analysis._printing`), and only
when their text is first asked for.
"""

from __future__ import annotations

import dataclasses
import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from passlab import _tvm
from passlab._render import Displayable
from passlab._sequence import NamedSequence
from passlab._tvm import printing as _printing
from passlab.analysis import _diff_render as _render
from passlab.analysis._diff_layout import gaps as _gaps
from passlab.errors import unknown
from passlab.recording.trace import Changes

__all__ = ["diff", "llvm_diff", "ModuleDiff", "FunctionDiff", "MAX_LINES", "FIRST_VIEW",
           "REGION_BINDINGS"]

#: Diff lines shown per function before the rest is cut with a "shown N of M" note.
MAX_LINES = 5000
#: Functions a first view (notebook display, explorer pane, report) renders; the others
#: are listed by name. Printing is the cost of a diff, and lowered TIR passes touch every
#: kernel: a first view stays fast by printing only what it shows.
FIRST_VIEW = 8
#: Top-level bindings of a Relax function that a first view prints (its first binding
#: region): a 32-layer forward has ~840-2,400 bindings, and printing it whole costs more
#: than the first view's budget (see :meth:`ModuleDiff.first_screen`).
REGION_BINDINGS = 100
#: Lines of ``to_text()`` kept in the plain-text notebook/terminal representation.
_PLAIN_LINES = 400
_MODES = ("side-by-side", "unified")

Status = Literal["added", "removed", "modified", "renamed", "unchanged"]


@dataclass(frozen=True, eq=False)
class FunctionDiff(Displayable):
    """How one function differs between two snapshots.

    `name` is the function's name after (before, for a removed one); `old_name` its
    name before (`None` if added). `before`/`after` are the TVM functions, or, for a
    generated function changed by one of LLVM's passes (`kind` "llvm"), its LLVM IR text.
    """

    name: str
    status: Status
    kind: str
    old_name: str | None = None
    before: Any = field(default=None, repr=False)
    after: Any = field(default=None, repr=False)
    context: int = 3
    callees_renamed: tuple[tuple[str, str], ...] = ()
    """For a caller that changed only because functions it calls were renamed: the
    `(old, new)` names; its diff then has no lines (`before` is printed with the new
    names)."""
    head: tuple[int, int, int, int] | None = None
    """For a first view of a huge Relax function (`ModuleDiff.first_screen`): only
    its first binding region is printed and diffed, `(bindings printed before, after,
    bindings before, after)`; None: the whole function."""

    @cached_property
    def before_text(self) -> str:
        """TVMScript of the function before ("" if it was added)."""
        if self.before is None:
            return ""
        if isinstance(self.before, str):  # LLVM IR: already text
            return self.before
        name = self.old_name or self.name
        if self.head is not None:
            return _printing.head_text(self.before, name, self.head[0])
        return _printing.function_text(self.before, name)

    @cached_property
    def after_text(self) -> str:
        """TVMScript of the function after ("" if it was removed)."""
        if self.after is None:
            return ""
        if isinstance(self.after, str):  # LLVM IR: already text
            return self.after
        if self.head is not None:
            return _printing.head_text(self.after, self.name, self.head[1])
        return _printing.function_text(self.after, self.name)

    def first_region(self, bindings: int = REGION_BINDINGS) -> FunctionDiff:
        """This diff printing only the first `bindings` top-level bindings of a Relax
        function that has many more (about 1.5 times or more, on either side), and the
        matching region on the other side (up to the last binding name both sides
        share once); `self` otherwise. The result's `head` says what it prints."""
        if self.head is not None or self.kind != "relax" or self.callees_renamed:
            return self
        if not (prints_by_region(self.before, bindings) or prints_by_region(self.after, bindings)):
            return self
        count = _printing.binding_count
        nb = count(self.before) if self.before is not None else 0
        na = count(self.after) if self.after is not None else 0
        ka, kb = min(bindings, na), min(bindings, nb)
        if nb and na:
            # the region of the input that became this one: up to the last name of this
            # region that both sides bind once (within 3x as many bindings of the input)
            once_a = _once(_printing.binding_names(self.after, ka))
            names_b = _printing.binding_names(self.before, 3 * bindings)
            once_b = _once(names_b)
            anchor = next((n for n in reversed(once_a) if n in once_b), None)
            if anchor is not None and (once_b[anchor] + 1 < len(names_b) or nb <= len(names_b)):
                kb = once_b[anchor] + 1
        if not all(_printing.can_head(f, k) for f, k in ((self.before, kb), (self.after, ka))
                   if f is not None):
            return self
        return dataclasses.replace(self, head=(kb, ka, nb, na))

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
        # autojunk off: TIR repeats lines (T.reads, loop heads) past difflib's 1% "popular"
        # cut on long kernels, which would leave equal lines unmatched. Lines match by
        # their text without indentation: a pass that wraps a body in a new loop (or
        # takes a block out of `with R.dataflow():`) changes one line and re-indents the
        # others, which then show as unchanged (re-indented) lines, not as the whole body
        # removed and added again.
        matcher = difflib.SequenceMatcher(None, [x.strip() for x in self._before_lines],
                                          [x.strip() for x in self._after_lines],
                                          autojunk=False)
        return tuple(tuple(g) for g in matcher.get_grouped_opcodes(self.context))

    @cached_property
    def lines_reindented(self) -> int:
        """Lines that changed only their indentation (shown as unchanged lines, in their
        new place; counted neither as added nor removed)."""
        a, b = self._before_lines, self._after_lines
        n = 0
        for group in self._groups:
            for tag, i1, i2, j1, _ in group:
                if tag == "equal":
                    n += sum(a[i1 + k] != b[j1 + k] for k in range(i2 - i1))
        for _, i1, i2, j1 in _gaps(self):
            n += sum(a[i1 + k] != b[j1 + k] for k in range(i2 - i1))
        return n

    @cached_property
    def _moved(self) -> tuple[frozenset[int], frozenset[int]]:
        """Old and new line indices of bindings that only moved: a removed line whose
        exact text is also an added line elsewhere (a reorder without a change of data
        flow keeps every binding's text)."""
        removed: dict[str, list[int]] = {}
        added: list[tuple[int, str]] = []
        a, b = self._before_lines, self._after_lines
        for group in self._groups:
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    continue
                for i in range(i1, i2):
                    if _is_binding(a[i]):
                        removed.setdefault(a[i], []).append(i)
                added.extend((j, b[j]) for j in range(j1, j2) if _is_binding(b[j]))
        old_moved, new_moved = set(), set()
        for j, text in added:
            hits = removed.get(text)
            if hits:
                old_moved.add(hits.pop(0))
                new_moved.add(j)
        return frozenset(old_moved), frozenset(new_moved)

    @cached_property
    def _counts(self) -> tuple[int, int]:
        added = removed = 0
        for group in self._groups:
            for tag, i1, i2, j1, j2 in group:
                if tag != "equal":
                    removed += i2 - i1
                    added += j2 - j1
        moved = len(self._moved[0])
        return added - moved, removed - moved

    @property
    def lines_moved(self) -> int:
        """Bindings whose line moved unchanged (counted neither as added nor removed)."""
        return len(self._moved[0])

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
        return (self.status == "modified" and not self.callees_renamed
                and self.before_text == self.after_text)

    def to_text(self, *, line_numbers: bool = False, max_lines: int = MAX_LINES) -> str:
        """A `git diff`-style block: header, `---`/`+++` lines and hunks."""
        return _render.text_block(self, line_numbers, max_lines)

    def to_html(self, mode: str = "side-by-side", *, max_lines: int = MAX_LINES) -> str:
        """Self-contained HTML: `mode` is `"side-by-side"` or `"unified"`."""
        return _render.wrap_html(_render.html_block(self, _check_mode(mode), max_lines))

    def _display_text(self) -> str:
        return _plain(self.to_text())

    def __repr__(self) -> str:
        old = f"{self.old_name!r} -> " if self.status == "renamed" else ""
        return f"<FunctionDiff {old}{self.name!r}: {self.status} {self.kind} function>"


@dataclass(frozen=True, eq=False)
class ModuleDiff(NamedSequence[FunctionDiff], Displayable):
    """The functions that differ between two snapshots, sorted by name.

    A sequence of `FunctionDiff`; index it by position or by function name (old or
    new name of a renamed one). `title` names the step(s) compared, if any.
    """

    functions: tuple[FunctionDiff, ...]
    title: str = ""

    def _items(self) -> tuple[FunctionDiff, ...]:
        return self.functions

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return any(item in (fd.name, fd.old_name) for fd in self.functions)
        return any(item is fd for fd in self.functions)

    def _by_name(self, name: str) -> FunctionDiff:
        for fd in self.functions:
            if name in (fd.name, fd.old_name):
                return fd
        raise unknown("function", name, [fd.name for fd in self.functions],
                      extra="This diff lists only changed functions unless all_functions=True.")

    def _names(self, status: str) -> tuple[str, ...]:
        return tuple(fd.name for fd in self.functions
                     if fd.status == status and not fd.callees_renamed)

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
        """Names of functions in both snapshots whose code differs (callers that only
        call renamed functions by their new names are `callers_updated`)."""
        return self._names("modified")

    @property
    def callers_updated(self) -> tuple[str, ...]:
        """Functions that changed only because functions they call were renamed."""
        return tuple(fd.name for fd in self.functions if fd.callees_renamed)

    @property
    def renamed(self) -> tuple[tuple[str, str], ...]:
        """`(old, new)` names of functions that moved to a new name unchanged."""
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
        callers = len(self.callers_updated)
        return (f"{changed} {noun} changed: {len(self.added)} added, {len(self.removed)} "
                f"removed, {len(self.modified)} modified, {len(self.renamed)} renamed"
                + (f" ({callers} caller{'s' if callers != 1 else ''} only call"
                   f"{'s' if callers == 1 else ''} renamed functions)" if callers else ""))

    def _split(self, max_functions: int | None) -> tuple[tuple[FunctionDiff, ...], str]:
        """The functions to render, and a note naming the others (printing nothing)."""
        if max_functions is None or len(self.functions) <= max_functions:
            return self.functions, ""
        shown, rest = self.functions[:max_functions], self.functions[max_functions:]
        names = ", ".join(f"{fd.name} ({fd.status})" for fd in rest[:40])
        more = f", ... {len(rest) - 40} more" if len(rest) > 40 else ""
        return shown, (f"shown {len(shown)} of {len(self.functions)} changed functions; not "
                       f"printed: {names}{more}. to_html(max_functions=None) shows all.")

    def print_jobs(self, max_functions: int | None = None) -> tuple[tuple[Any, ...], ...]:
        """The `(function, name)` pairs (`(function, name, bindings)` for a printed
        region) that `to_text`/`to_html` with this `max_functions` print: for
        `passlab._tvm.printing.prefetch`."""
        shown, _ = self._split(max_functions)
        jobs: list[tuple[Any, ...]] = []
        for fd in shown:
            for func, name, side in ((fd.before, fd.old_name or fd.name, 0),
                                     (fd.after, fd.name, 1)):
                if func is not None and not isinstance(func, str):  # LLVM IR: text
                    jobs.append((func, name) if fd.head is None else
                                (func, name, fd.head[side]))
        return tuple(jobs)

    def first_screen(self, max_functions: int | None = FIRST_VIEW,
                     bindings: int = REGION_BINDINGS) -> ModuleDiff:
        """This diff as a first view prints it: each of the first `max_functions`
        functions that is a huge Relax function cut to its first binding region
        (`FunctionDiff.first_region`), so that a 32-layer forward rewritten by
        LegalizeOps or VMShapeLower prints ~100 bindings, not 2,400 lines; `self` when
        nothing is cut. `to_html()` of the whole diff prints everything."""
        shown = self.functions if max_functions is None else self.functions[:max_functions]
        cut = tuple(fd.first_region(bindings) for fd in shown)
        if all(a is b for a, b in zip(cut, shown)):
            return self
        return dataclasses.replace(self, functions=cut + self.functions[len(shown):])

    @property
    def regions(self) -> bool:
        """Whether some function prints only its first binding region (`FunctionDiff.head`)."""
        return any(fd.head is not None for fd in self.functions)

    def _counts(self, shown: Sequence[FunctionDiff]) -> tuple[int, int, str]:
        added = sum(fd.lines_added for fd in shown)
        removed = sum(fd.lines_removed for fd in shown)
        scope = "" if len(shown) == len(self.functions) else " in the shown functions"
        if any(fd.head is not None for fd in shown):
            scope = " in the printed regions"
        return added, removed, scope

    def to_text(self, *, line_numbers: bool = False, max_lines: int = MAX_LINES,
                max_functions: int | None = None) -> str:
        """Unified diff of every listed function (or the first `max_functions`), like
        `git diff`; "no changes" if none."""
        if self.unchanged:
            return "no changes"
        shown, note = self._split(max_functions)
        added, removed, scope = self._counts(shown)
        head = f"{self._summary()} (+{added} -{removed} lines{scope})"
        blocks = [fd.to_text(line_numbers=line_numbers, max_lines=max_lines) for fd in shown]
        return "\n".join([head, *blocks] + ([note] if note else []))

    def to_html(self, mode: str = "side-by-side", *, max_lines: int = MAX_LINES,
                max_functions: int | None = None, highlight: bool = True,
                anchors: str = "", max_total_lines: int | None = None) -> str:
        """Self-contained HTML (inline CSS, no scripts or external resources) of every
        changed function, or of the first `max_functions` (the others are named).
        `highlight=False` leaves the token colours to the page (the static report
        colours a diff when it is shown).

        Every function's block carries `data-fn`/`data-status`/`data-kind`; with
        `anchors` (an id prefix, unique on the page) it also gets an `id`, and the
        functions not printed are listed in a hidden `<ul class="pl-unshown">` and,
        in the Relax functions the graph draws (not fused ones), the variable a binding
        defines is a `<span class="pl-var" data-var=...>` (the Explorer links it to the
        graph).

        `max_total_lines` bounds the diff lines of all the functions together (a first
        screen): each function shows what is left of it, and the functions after it ran
        out are named, not rendered (highlighting is most of a large diff's cost)."""
        mode = _check_mode(mode)
        title = f"<b>{html.escape(self.title)}</b>: " if self.title else ""
        if self.unchanged:
            return _render.wrap_html(f'<div class="pl-summary">{title}no changes</div>')
        shown, note = self._split(max_functions)
        caps = [max_lines] * len(shown)
        if max_total_lines is not None:
            left, caps = max_total_lines, []
            for fd in shown:
                if left <= 0:
                    break
                caps.append(min(max_lines, left))
                left -= min(_render.row_total(fd, mode == "side-by-side"), caps[-1])
            if len(caps) < len(shown):
                rest = self.functions[len(caps):]
                names = ", ".join(f"{fd.name} ({fd.status})" for fd in rest[:40])
                more = f", ... {len(rest) - 40} more" if len(rest) > 40 else ""
                note = (f"shown {len(caps)} of {len(self.functions)} changed functions (the "
                        f"first {max_total_lines} diff lines); not printed: {names}{more}.")
                shown = shown[:len(caps)]
        added, removed, scope = self._counts(shown)
        summary = (f'<div class="pl-summary">{title}{self._summary()} '
                   f'(<span class="pl-count-add">+{added}</span> '
                   f'<span class="pl-count-del">-{removed}</span> lines{scope})</div>')
        blocks = "".join(
            _render.html_block(fd, mode, cap, highlight,
                               _render.anchor_id(anchors, k, fd.name) if anchors else "")
            for k, (fd, cap) in enumerate(zip(shown, caps)))
        tail = f'<div class="pl-note">{html.escape(note)}</div>' if note else ""
        if anchors:
            tail += _render.unshown_html(self.functions[len(shown):])
        return _render.wrap_html(summary + blocks + tail)

    # a notebook shows a first view: printing is the cost, so only FIRST_VIEW functions
    def _display_text(self) -> str:
        return _plain(self.to_text(max_functions=FIRST_VIEW))

    def _display_html(self) -> str:
        return self.to_html(max_functions=FIRST_VIEW)

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


def _plain(text: str) -> str:
    """The plain-text notebook/terminal form: at most `_PLAIN_LINES` lines."""
    lines = text.split("\n")
    if len(lines) > _PLAIN_LINES:
        lines = lines[:_PLAIN_LINES] + [
            f"... {len(lines) - _PLAIN_LINES} more lines; .to_text() has all of them"]
    return "\n".join(lines)


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
        `tvm.IRModule` snapshots, or pipeline steps (objects with `.before` and
        `.after` modules). `diff(step)` compares a step's input with its output; a step
        given as `a` stands for its input and as `b` for its output, so
        `diff(first, last)` spans every step from `first` to `last`. A step of LLVM's
        own pipeline (`trace.llvm_steps()`) gives the LLVM IR diff of the functions it
        changed (`passlab.analysis.llvm_diff`).
    function
        Only this function (by its global name in either snapshot).
    all_functions
        Also list functions that did not change (status `"unchanged"`).
    hide_renames
        Report a function that reappears unchanged under another name as `"renamed"`
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
    if getattr(a, "llvm", None) is not None and (b is None or getattr(b, "llvm", None)
                                                 is not None):
        return llvm_diff(a, b, function=function, context=context)
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

    removed = sorted(old.keys() - new.keys())
    added = sorted(new.keys() - old.keys())
    renames = _renames(old, new, removed, added, function) if hide_renames else {}
    renamed_old = _callers_renamed(before, old, renames)
    # a step alone: its change set (computed once per step and kept) already says which
    # functions are structurally equal; a late TIR pass rewrites every kernel, and
    # comparing them again cost its first view 50 ms (DenseNet-121's LowerIntrin); for
    # one function, only when the set is known (it would compare every function)
    use_set = b is None and (function is None or getattr(a, "changes_known", False))
    changes = getattr(a, "functions_changed", None) if use_set else None
    modified = set(changes.modified) if isinstance(changes, Changes) else None
    for name in old.keys() & new.keys():
        if function is not None and name != function:
            continue
        same = (name not in modified if modified is not None
                else _printing.same_function(old[name], new[name]))
        if same:
            if all_functions:
                make(name, "unchanged", name, old[name], new[name])
            continue
        f_old = renamed_old.get(name)
        if f_old is not None and _printing.same_function(f_old, new[name]):
            callees = tuple((o, n) for o, n in renames.items()
                            if o in _tvm.called_functions(old[name]))
            result.append(FunctionDiff(name, "modified", _printing.function_kind(new[name]),
                                       name, f_old, new[name], context, callees))
        else:
            make(name, "modified", name, old[name], new[name])
    for name in removed:
        if name in renames:
            make(renames[name], "renamed", name, old[name], new[renames[name]])
        elif function in (None, name):
            make(name, "removed", name, old[name], None)
    taken = set(renames.values())
    for name in added:
        if name not in taken and function in (None, name):
            make(name, "added", None, None, new[name])
    result.sort(key=_reading_order)
    return ModuleDiff(tuple(result), title)


def llvm_diff(a: Any, b: Any = None, *, function: str | None = None,
              context: int = 3) -> ModuleDiff:
    """The LLVM IR diff of LLVM step `a` (the generated functions it changed, before
    and after) or, with `b` (a later LLVM step of the same trace), from `a`'s input to
    `b`'s output: each function's text before the first of those passes that changed it
    and after the last. `function` keeps one generated function (its symbol). Its
    `FunctionDiff`s have kind "llvm" and hold text, not TVM functions.

    Examples
    --------
    >>> import passlab
    >>> from passlab.analysis import llvm_diff
    >>> trace = passlab.build(passlab.models.mlp(), llvm_passes=True).trace
    >>> d = llvm_diff(trace.llvm_steps()[1])
    >>> d[0].kind, d[0].status
    ('llvm', 'modified')
    """
    steps = _llvm_span(a, b)
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for s in steps:
        for f in s.llvm.functions:
            first.setdefault(f.symbol, f.before)
            last[f.symbol] = f.after
    names = list(first)
    if function is not None:
        if function not in first:
            raise unknown("function", function, names,
                          extra="(the generated functions these LLVM passes changed)")
        names = [function]
    out = []
    for n in names:
        old, new = first[n], last[n]
        if old != new:
            status: Status = "added" if not old else "removed" if not new else "modified"
            out.append(FunctionDiff(n, status, "llvm", n if old else None, old or None,
                                    new or None, context))
    title = steps[0].label if len(steps) == 1 else f"{steps[0].label} … {steps[-1].label}"
    return ModuleDiff(tuple(out), title)


def _llvm_span(a: Any, b: Any) -> list[Any]:
    """The LLVM steps from `a` to `b` (`a` alone without `b`)."""
    if getattr(a, "llvm", None) is None:
        raise TypeError(f"llvm_diff() takes a step of LLVM's pipeline (trace.llvm_steps()), "
                        f"not {getattr(a, 'label', type(a).__name__)!r}")
    if b is None or b is a:
        return [a]
    if getattr(b, "llvm", None) is None:
        raise TypeError(f"llvm_diff(a, b): b must be an LLVM step too, not "
                        f"{getattr(b, 'label', type(b).__name__)!r}")
    owner = a.owner
    if owner is None or b.owner is not owner:
        raise ValueError("llvm_diff(a, b): both steps must belong to one living trace")
    lo, hi = sorted((a.index, b.index))
    return [s for s in owner if s.llvm is not None and lo <= s.index <= hi]


def prints_by_region(func: Any, bindings: int = REGION_BINDINGS) -> bool:
    """A Relax function so long that a first view prints it by binding region (about
    1.5 times `bindings` top-level bindings or more; see `FunctionDiff.first_region`)."""
    return func is not None and _printing.binding_count(func) > bindings * 3 // 2


def _once(names: Sequence[str]) -> dict[str, int]:
    """Names that occur once in `names`, and where."""
    seen: dict[str, int] = {}
    twice: set[str] = set()
    for k, n in enumerate(names):
        if n in seen:
            twice.add(n)
        seen[n] = k
    return {n: k for n, k in seen.items() if n not in twice}


def _is_binding(line: str) -> bool:
    """A line that binds a variable (`x = ...` / `x: T = ...`), the unit of a move."""
    return " = " in line and not line.lstrip().startswith(("#", "@", "def "))


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """`fused_conv2d1` before `fused_conv2d10`: digit runs compare as numbers."""
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", name) if t)


def _reading_order(fd: FunctionDiff) -> tuple[Any, ...]:
    """The graph-level (Relax) functions first, the modified ones (the entry) before new
    helpers, since they say what a pass did to the model; then kernels in natural order."""
    relax = fd.kind == "relax"
    return (not relax, relax and fd.status != "modified", _natural(fd.name),
            fd.old_name or "")


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
    # a public function renamed with its global_symbol differs in that attribute only
    strip = _tvm.without_symbol
    buckets: dict[int, list[str]] = {}
    for name in added:
        buckets.setdefault(_printing.structural_key(strip(new[name])), []).append(name)
    found: dict[str, str] = {}
    for name in removed:
        for candidate in buckets.get(_printing.structural_key(strip(old[name])), ()):
            if candidate not in found.values() and _printing.same_function(
                    strip(old[name]), strip(new[candidate])):
                found[name] = candidate
                break
    return found


def _callers_renamed(before: Any, old: dict[str, Any], renames: dict[str, str]
                     ) -> dict[str, Any]:
    """The old functions with renamed public callees called by their new names, so that a
    caller that changed only in those calls compares equal (empty when nothing to do)."""
    public = {o: n for o, n in renames.items()
              if old[o].attrs is not None and "global_symbol" in old[o].attrs}
    if not public:
        return {}
    try:
        mod = _tvm.rename_functions(before, public)
    except Exception:  # TVM refused (a name clash): fall back to the plain line diff
        return {}
    return _printing.module_functions(mod)
