"""The temporary file a save writes beside its target, and what a killed save left.

`trace.save` writes the archive under a fresh name in the target's folder and renames it
over the target, so a crash never leaves a half-written trace under the target's name.
A process killed mid-write (SIGKILL, the machine going down) still leaves its temporary
file behind. Each one is therefore locked (`flock`) by the process writing it, for as
long as it writes it: the kernel lets go of the lock when that process ends, however it
ends. Every save first removes the files of this pattern in its folder that nobody holds
locked, the leftovers of saves that died, and leaves alone those that another living
save is writing. Only names of this pattern are touched (`.passlab-save-*.tmp`, never
followed through a link), so the temporary files of other writers are not.

Where `fcntl` is missing (Windows) nothing is locked and nothing is removed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["PREFIX", "SUFFIX", "fresh", "remove_stale"]

PREFIX, SUFFIX = ".passlab-save-", ".tmp"
_OPEN = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
         | getattr(os, "O_CLOEXEC", 0))


def remove_stale(folder: Path) -> list[str]:
    """Remove the temporary files of saves that died in `folder` (unlocked files of the
    pattern); returns their names. Best effort: a file that cannot be read or removed is
    left."""
    if fcntl is None:
        return []
    try:
        names = [e.name for e in os.scandir(folder)
                 if e.name.startswith(PREFIX) and e.name.endswith(SUFFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = folder / name
        try:
            fd = os.open(path, _OPEN)
        except OSError:  # gone meanwhile, a link, unreadable
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a living save holds it
                continue
            # still the file that was locked (not replaced meanwhile): a dead save's
            if os.path.samestat(st, os.stat(path, follow_symlinks=False)):
                os.unlink(path)
                removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def fresh(folder: Path) -> tuple[int, str]:
    """A new temporary file in `folder`, open for writing and locked by this process
    until the descriptor is closed: `(fd, path)`. The leftovers of dead saves are
    removed first."""
    remove_stale(folder)
    while True:
        fd, tmp = tempfile.mkstemp(prefix=PREFIX, suffix=SUFFIX, dir=folder)
        if fcntl is None:
            return fd, tmp
        # another save's clean-up may have taken the file between its creation and this
        # lock (then removed it): a new one is made
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.stat(tmp, follow_symlinks=False)):
                return fd, tmp
        os.close(fd)
