"""Files written where others may write too, never through a link.

A sweep's `out/` folder may be shared, or prepared by someone else; so may the folder a
dump or an index page goes to. `Folder` opens a folder below a root the caller
chose, one component at a time with `O_NOFOLLOW` (a link on the way is refused, naming
it), and holds it open: everything after that is relative to the open folder, so renaming
or replacing a folder on the path later changes nothing. Every file is written under a
fresh name created with `O_EXCL | O_NOFOLLOW` in the same folder and renamed over its
final name with `os.replace`, which replaces whatever has that name (a link too) and
never writes to a link's target; a link already at the final name is refused, naming it,
so that a planted link is reported, not silently replaced. Files that another function
writes by path (`trace.save`, `write_report`) are written inside a private folder made
here (mode 0700, opened by descriptor) and renamed into place the same way.

POSIX only (`dir_fd`); where `/proc/self/fd` is missing (macOS) the private folder is
handed to those functions by its path.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from passlab.errors import UnsafePathError

__all__ = ["Folder", "write_file", "write_new", "refuse_link"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def refuse_link(path: Path | str) -> UnsafePathError:
    """The error for a link found where a result goes."""
    try:
        target = f" (to {os.readlink(path)!r})"
    except OSError:
        target = ""
    return UnsafePathError(f"{path} is a symbolic link{target}: passlab never writes or reads "
                           "results through links; remove the link, or choose another folder")


def _not_plain(path: Path, what: str) -> UnsafePathError:
    return UnsafePathError(f"{path} is {what}, not a plain file passlab wrote; remove it, or "
                           "choose another folder")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _check_part(part: str) -> None:
    if part in ("", ".", "..") or "/" in part or "\0" in part:
        raise ValueError(f"{part!r} is not a single folder name")


class Folder:
    """`root` / `parts`, opened without following a link below `root`.

    `root` is the caller's choice and is opened as given (links included); each of
    `parts` must be a real folder (`create=True` makes the missing ones). Raises
    `UnsafePathError` naming the first part that is a link or not a
    folder, `FileNotFoundError` for a missing part when `create` is False.
    """

    def __init__(self, root: str | os.PathLike, parts: Sequence[str] = (), *,
                 create: bool = False) -> None:
        self.path = Path(root).joinpath(*parts)
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        here = Path(root)
        try:
            for part in parts:
                _check_part(part)
                here = here / part
                if create:
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC,
                                    dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    if os.path.islink(here):
                        raise refuse_link(here) from None
                    raise _not_plain(here, "not a folder") from None
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        self.fd: int | None = fd

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _dir(self) -> int:
        if self.fd is None:
            raise ValueError(f"the folder {self.path} is closed")
        return self.fd

    # ------------------------------------------------------------------ reading
    def lstat(self, name: str) -> os.stat_result | None:
        """The entry `name` itself (a link is not followed), or None when absent."""
        _check_part(name)
        try:
            return os.stat(name, dir_fd=self._dir(), follow_symlinks=False)
        except FileNotFoundError:
            return None

    def check(self, name: str) -> bool:
        """Whether `name` is a plain file (False when absent); a link or anything else
        at that name raises `UnsafePathError`."""
        st = self.lstat(name)
        if st is None:
            return False
        if stat.S_ISLNK(st.st_mode):
            raise refuse_link(self.path / name)
        if not stat.S_ISREG(st.st_mode):
            raise _not_plain(self.path / name, _kind(st.st_mode))
        return True

    def read(self, name: str, limit: int | None = None) -> bytes | None:
        """The bytes of the plain file `name`, or None when it is absent or larger than
        `limit`; a link raises `UnsafePathError`."""
        _check_part(name)
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0),
                         dir_fd=self._dir())
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise refuse_link(self.path / name) from None
            raise
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise _not_plain(self.path / name, _kind(st.st_mode))
            if limit is not None and st.st_size > limit:
                return None
            return f.read()

    # ------------------------------------------------------------------ writing
    def write(self, name: str, data: bytes) -> Path:
        """Put `data` at `name` (whole or not at all); returns its path."""
        _check_part(name)
        tmp = f".passlab-{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666,
                     dir_fd=self._dir())
        try:
            with open(fd, "wb") as f:
                f.write(data)
            self._replace(self._dir(), tmp, name)
        except BaseException:
            _unlink(tmp, self._dir())
            raise
        return self.path / name

    def produce(self, name: str, make: Callable[[Path], Any]) -> Path:
        """Put at `name` the file that `make(path)` writes: `path` lies in a private
        folder made here, so whatever `make` does by path stays inside it."""
        _check_part(name)
        private = f".passlab-{secrets.token_hex(8)}.d"
        os.mkdir(private, 0o700, dir_fd=self._dir())
        try:
            inner = os.open(private, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC,
                            dir_fd=self._dir())
            try:
                proc = Path(f"/proc/self/fd/{inner}")
                where = proc if proc.is_dir() else self.path / private
                make(where / name)
                st = os.stat(name, dir_fd=inner, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    raise _not_plain(self.path / name, f"{_kind(st.st_mode)} (as written)")
                self._replace(inner, name, name)
            finally:
                for left in os.listdir(inner):
                    _unlink(left, inner)
                os.close(inner)
        finally:
            try:
                os.rmdir(private, dir_fd=self._dir())
            except OSError:
                pass
        return self.path / name

    def _replace(self, src_dir: int, src: str, name: str) -> None:
        """Rename `src` (in `src_dir`) over `name` here, refusing a link or a
        non-file at `name`. A link planted after the check is replaced, never followed."""
        st = self.lstat(name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise refuse_link(self.path / name)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _not_plain(self.path / name, _kind(st.st_mode))
        os.replace(src, name, src_dir_fd=src_dir, dst_dir_fd=self._dir())


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def write_file(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` through `Folder` (its folder is the caller's
    choice and is created if missing; a link at `path` itself is refused)."""
    path = Path(path)
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    with Folder(parent) as folder:
        folder.write(path.name, data)
    return path


def write_new(path: Path, text: str) -> None:
    """Create `path` and write `text`: never an existing file, never through a link
    (for files in a folder this process has just made)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(path, flags, 0o666)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)
