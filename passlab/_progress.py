"""Progress of long work, drawn by tqdm: a widget in Jupyter, a bar on a terminal, and
nothing when standard error is not a terminal unless the caller asks for it.

Every long operation takes `progress=` with one meaning:

- `None` (the default): a bar in a Jupyter kernel, or on standard error when it is a
  terminal; nothing otherwise (a pipe, a log file, CI). `PASSLAB_PROGRESS=0` in the
  environment turns the default off, `PASSLAB_PROGRESS=1` on even without a terminal.
- `True`: a bar even when standard error is not a terminal.
- `False`: nothing at all.
- a callable: the operation's own callback (see its docstring), no bar.

`bar` returns a `Bar` that is inert when nothing is shown, so callers update
it unconditionally. tqdm is imported only when a bar is drawn.

Examples
--------
>>> from passlab._progress import bar
>>> with bar(False, total=3, desc="jobs") as b:
...     for _ in range(3):
...         b.update()
>>> b.n
3
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Bar", "ProgressArg", "bar", "wanted", "in_jupyter"]

#: What ``progress=`` accepts: see the module docstring.
ProgressArg = bool | Callable[..., Any] | None


def in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (IPython already imported, never imported
    here)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - a half-imported IPython is not a kernel
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def wanted(progress: ProgressArg) -> bool:
    """Whether `progress` asks for a bar here (a callable is not a bar)."""
    if progress is True:
        return True
    if progress is None:
        env = os.environ.get("PASSLAB_PROGRESS", "").strip().lower()
        if env in ("0", "false", "no", "off"):
            return False
        if env in ("1", "true", "yes", "on"):
            return True
        return in_jupyter() or _stderr_is_terminal()
    return False


class Bar:
    """One progress bar, or nothing. `n` counts even when nothing is drawn, so a caller
    may read its own progress back."""

    def __init__(self, tqdm_bar: Any = None, total: int | None = None) -> None:
        self._bar = tqdm_bar
        self.n = 0
        self.total = total
        self.failures = 0

    @property
    def shown(self) -> bool:
        """Whether a bar is drawn."""
        return self._bar is not None

    def update(self, n: int = 1, *, failed: bool = False, note: str | None = None) -> None:
        """Advance by `n`; `failed` counts a failure (shown beside the bar),
        `note` replaces the text after it (the current pass, the last job)."""
        self.n += n
        if failed:
            self.failures += 1
        if self._bar is not None:
            if note is not None or failed:
                self._bar.set_postfix_str(self._postfix(note), refresh=False)
            self._bar.update(n)

    def goto(self, n: int, note: str | None = None, now: bool = False) -> None:
        """Move to `n` done (never backwards), with `note` after the bar; `now`
        redraws at once (before a long step that would leave a stale note showing)."""
        if n > self.n:
            self.update(n - self.n, note=note)
        elif note is not None:
            self.note(note)
        if now:
            self.redraw()

    def set_total(self, total: int) -> None:
        """The total, once it is known (work that first has to find out how much)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self.redraw()

    def note(self, text: str) -> None:
        """Replace the text after the bar without moving it (drawn with the next
        update, at most ten times a second)."""
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(text), refresh=False)
            self._bar.update(0)

    def redraw(self) -> None:
        """Draw now, unless the bar is still waiting out its `delay`."""
        b = self._bar
        if b is not None and b._time() >= b.start_t + b.delay:
            b.refresh()

    def _postfix(self, note: str | None) -> str:
        parts = [note] if note else []
        if self.failures:
            parts.append(f"{self.failures} failed")
        return ", ".join(parts)

    def close(self, note: str | None = None) -> None:
        """Finish the bar (it stays, with `note` as its last text)."""
        if self._bar is not None:
            if note is not None:
                self._bar.set_postfix_str(self._postfix(note), refresh=False)
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bar(progress: ProgressArg, *, total: int | None, desc: str, unit: str = "it",
        delay: float = 0.0) -> Bar:
    """A `Bar` for `progress` (see the module docstring): drawn by `tqdm.auto`
    after `delay` seconds, inert when `progress` does not ask for one here."""
    if not wanted(progress):
        return Bar(None, total)
    kwargs = dict(total=total, desc=desc, unit=unit, delay=delay, dynamic_ncols=True,
                  disable=False)
    if in_jupyter():
        try:
            from tqdm.notebook import tqdm as notebook_tqdm

            return Bar(notebook_tqdm(**kwargs), total)
        except ImportError:  # ipywidgets missing: tqdm's notebook bar needs it
            pass
    from tqdm import tqdm

    return Bar(tqdm(file=sys.stderr, **kwargs), total)
