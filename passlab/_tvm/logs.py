"""TVM's C++ log on standard error, sorted while a build runs: the lines TVM 0.27 prints on
every ordinary build (no CUDA toolkit on a CPU machine, a note of the `take` lowering)
are kept as the build's warnings instead of reaching the user's terminal or notebook,
and everything else goes through at once, unchanged.

TVM logs with `LOG(WARNING)` straight to file descriptor 2, below Python's
`sys.stderr`, so the only way to sort it is to point that descriptor at a pipe for the
duration of the build and read the pipe in a thread. The list of benign messages is
TVM-version knowledge and lives here, beside the rest of the adapter.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["BENIGN", "fd2_into_pipe", "sorted_stderr"]

#: Messages TVM 0.27 logs on builds that are fine, with the sentence a reader gets instead.
BENIGN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'Unable to detect CUDA version, default to "-(arch|mcpu)=(\w+)" instead'),
     "TVM found no CUDA toolkit and assumed the GPU architecture {2} (-{1}={2}): the code "
     "is generated, not compiled for a real device"),
    (re.compile(r"Fast mode segfaults when there are out-of-bounds indices"),
     "TVM lowered a gather/take in its fast mode, which does not check indices: an index "
     "out of bounds at run time is undefined behaviour"),
    # GPT-2's GELU (tanh form) computes x ** 3; checked: llvm's pow(-2, 3) is -8
    (re.compile(r"Detected pow\(x, y\) where y >= 3"),
     "TVM warned that pow(x, y) with y >= 3 (as GELU's tanh form computes x ** 3) may "
     "misbehave for x < 0: it computes C's pow, exact for an integral y (pow(-2, 3) = -8) "
     "and NaN for another y, as numpy and torch do"),
)
# "[01:44:27] /project/src/backend/cuda/codegen/target_kind.cc:80: Warning: <message>"
_open = threading.local()  # .counts: the benign lines of each open block, outermost first
_PREFIX = re.compile(r"^\[[\d:]+\] \S+:\d+: (?:Warning: )?")


def _benign(line: str) -> str | None:
    text = _PREFIX.sub("", line.strip())
    for pattern, sentence in BENIGN:
        m = pattern.search(text)
        if m:
            return sentence.format(m.group(0), *m.groups())
    return None


@contextlib.contextmanager
def fd2_into_pipe(pump: Callable[[int, int], None], *, name: str, pipe_bytes: int = 0,
                  join_timeout: float | None = None,
                  restored: threading.Event | None = None) -> Iterator[int | None]:
    """Inside the block, file descriptor 2 (where C++ writes, below `sys.stderr`) is a
    pipe that `pump(read_end, saved)` drains in a daemon thread named `name`; `saved` is a
    descriptor of the previous target (the real stderr, or an enclosing block's pipe).
    Yields `saved`, or None (and captures nothing) where descriptor 2 cannot be
    redirected. On the way out descriptor 2 is put back, which closes the pipe's last
    write end, the reader is joined (at most `join_timeout` seconds) and `restored` is set
    before `saved` is closed. A crash report (faulthandler) goes to the real stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield None
        return
    read_end, write_end = os.pipe()
    if pipe_bytes:  # a larger pipe: a writer of small pieces, a reader of large ones
        try:
            import fcntl

            fcntl.fcntl(write_end, 1031, pipe_bytes)  # F_SETPIPE_SZ (Linux)
        except (ImportError, OSError):
            pass
    reader = threading.Thread(target=pump, args=(read_end, saved), name=name, daemon=True)
    reader.start()
    fault = faulthandler.is_enabled()
    if fault:  # a crash report must reach the real stderr, not a pipe nobody reads then
        faulthandler.enable(file=saved)
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield saved
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)  # closes the pipe's last write end: the reader sees the end
        reader.join(timeout=join_timeout)
        if fault:
            faulthandler.enable(file=sys.__stderr__ or 2)
        if restored is not None:
            restored.set()
        os.close(saved)
        if not reader.is_alive():
            os.close(read_end)


@contextlib.contextmanager
def sorted_stderr() -> Iterator[list[str]]:
    """Inside the block, TVM's benign log lines are collected (deduplicated, with a count
    when repeated) into the list it yields; every other byte written to descriptor 2 is
    passed on to the real standard error as it comes. Does nothing (an empty list) where
    descriptor 2 cannot be redirected. An inner block (a target made during a build) hands
    what it kept to the block around it, so the build's list says everything once."""
    kept: list[str] = []
    counts: dict[str, int] = {}

    def pump(read_end: int, saved: int) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(read_end, 65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            passed = []
            for raw in lines:
                sentence = _benign(raw.decode("utf-8", "replace"))
                if sentence is None:
                    passed.append(raw + b"\n")
                else:
                    counts[sentence] = counts.get(sentence, 0) + 1
            if passed:
                os.write(saved, b"".join(passed))
        if pending:
            os.write(saved, pending)

    stack = _open.__dict__.setdefault("counts", [])
    redirected = False
    try:
        with fd2_into_pipe(pump, name="passlab-stderr", join_timeout=5) as saved:
            if saved is not None:
                stack.append(counts)
                redirected = True
            yield kept
    finally:  # after the reader's end: every line it sorted is counted
        if redirected:
            del stack[next(i for i, c in enumerate(stack) if c is counts)]  # not by ==
            if stack:  # inside another block: that one reports them
                for sentence, n in counts.items():
                    stack[-1][sentence] = stack[-1].get(sentence, 0) + n
            else:
                kept.extend(s if n == 1 else f"{s} (x{n})" for s, n in counts.items())
