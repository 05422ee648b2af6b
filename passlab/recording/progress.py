"""Progress of a long build: one line in a notebook or on a terminal, updated at most ten
times a second. No Jupyter import unless a notebook kernel is already running."""

from __future__ import annotations

import html
import sys
import time
from typing import Any

#: Seconds between two updates of the display.
INTERVAL = 0.1


class Progress:
    """A callable for :func:`passlab.recording.recorder.Recorder`'s ``progress=``: shows the pass
    that runs, how many pass calls were recorded and the time so far."""

    def __init__(self, label: str, stream: Any = None) -> None:
        self.label = label
        self.start = time.perf_counter()
        self._last = 0.0
        self._stream = stream
        self._handle = None
        if stream is None and _in_kernel():
            from IPython.display import HTML, display

            self._html = HTML
            self._handle = display(HTML(self._line("starting")), display_id=True)
        elif stream is None:
            self._stream = sys.stderr

    def _line(self, text: str) -> str:
        return f"{self.label}: {text} ({time.perf_counter() - self.start:.1f} s)"

    def _show(self, text: str, final: bool = False) -> None:
        if self._handle is not None:
            self._handle.update(self._html(
                f'<div style="font:12px monospace">{html.escape(self._line(text))}</div>'))
        elif self._stream is not None:
            end = "\n" if final else ""
            self._stream.write("\r\033[K" + self._line(text) + end)
            self._stream.flush()

    def __call__(self, name: str, count: int) -> None:
        now = time.perf_counter()
        if now - self._last >= INTERVAL:
            self._last = now
            self._show(f"{count} pass calls, running {name}")

    def close(self, summary: str) -> None:
        self._show(summary, final=True)


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})
