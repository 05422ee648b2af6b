"""Every exception and warning class passlab raises, and the "unknown name" helper.

This module imports nothing of passlab, so every layer can raise these (as httpx keeps
its exceptions in one leaf module). The classes subclass the built-in exception a
caller would expect (`KeyError`/`ValueError` for a bad name, `ValueError` for a bad
file, `RuntimeError` for a failed build), so `except ValueError` keeps working.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "UnknownNameError", "BuildError", "CheckError", "UserPassError", "TraceFileError",
    "ModelFormatError", "UntrustedModelError", "MissingImporterError", "CliError",
    "PartitionWarning",
    "SweepError", "DeviceUnavailableError", "LlvmOptionError",
    "WorkerError", "UnsafePathError",
    "close_matches", "unknown", "error_class", "first_line", "message_of",
]


# ---------------------------------------------------------------------- bad names
class UnknownNameError(KeyError, ValueError):
    """A pass, stage, model or target name that does not exist.

    Subclasses both `KeyError` (it is a failed lookup) and `ValueError` (it is bad
    input), so either `except` clause catches it.
    """

    def __init__(self, message: str, name: str, choices: tuple[str, ...], close: tuple[str, ...]):
        super().__init__(message)
        self.message = message
        self.name = name
        self.choices = choices
        self.close_matches = close

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


def close_matches(name: str, choices: Iterable[str], n: int = 3) -> tuple[str, ...]:
    """Up to `n` choices that look like `name` (case-insensitive, substring-aware)."""
    choices = list(dict.fromkeys(choices))
    lower = {c.lower(): c for c in choices}
    found = [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n, 0.6)]
    for c in choices:
        if len(found) >= n:
            break
        if name and name.lower() in c.lower() and c not in found:
            found.append(c)
    return tuple(found[:n])


def unknown(kind: str, name: str, choices: Iterable[str], extra: str = "") -> UnknownNameError:
    """Build the error for an unknown `kind` called `name`."""
    choices = tuple(dict.fromkeys(choices))
    close = close_matches(str(name), choices)
    msg = f"unknown {kind} {name!r}"
    msg += f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "."
    shown = ", ".join(choices[:40]) + (", ..." if len(choices) > 40 else "")
    msg += f" Known {kind} names: {shown}."
    if extra:
        msg += " " + extra
    return UnknownNameError(msg, str(name), choices, close)


def message_of(exc: BaseException, limit: int = 2000) -> str:
    """An exception's whole message, stripped and cut at `limit` characters (TVM's
    errors carry long C++ back traces)."""
    text = str(exc).strip()
    return text if len(text) < limit else text[:limit] + " ..."


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (its type name when it has none), cut at
    `limit` characters: for one-line errors that quote another error."""
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:limit]


# ------------------------------------------------------------------------ builds
class BuildError(RuntimeError):
    """A build failed. `.trace` keeps every step recorded up to the failure, `.step`
    is the failing pass (None when codegen failed after every pass finished), and
    `.original` the exception TVM or the pass raised.

    When the failing pass raised a Python exception, the error raised is also an
    instance of that exception's class, so `except ValueError` still catches it.
    """

    def __init__(self, message: str, trace: Any, original: BaseException | None = None):
        super().__init__(message)
        self.trace = trace
        self.original = original

    @property
    def failure(self) -> Any:
        return self.trace.failure

    @property
    def step(self) -> Any:
        f = self.trace.failure
        return None if f is None else f.step


_ERROR_CLASSES: dict[type, type] = {}


def error_class(orig: type) -> type:
    """`BuildError` mixed with the original exception's class, where Python allows."""
    if orig in _ERROR_CLASSES:
        return _ERROR_CLASSES[orig]
    cls: type = BuildError
    if issubclass(orig, Exception) and not issubclass(orig, BuildError):
        try:
            cls = type(f"BuildError[{orig.__name__}]", (BuildError, orig), {
                "__init__": BuildError.__init__, "__str__": BaseException.__str__,
                "__module__": __name__})
        except TypeError:  # incompatible layouts (e.g. OSError): plain BuildError
            cls = BuildError
    _ERROR_CLASSES[orig] = cls
    return cls


class CheckError(BuildError):
    """A build finished but broke a check: `.trace` is the whole trace,
    `.violations` the first violating step of each check and `.step` the first of
    those steps."""

    def __init__(self, trace: Any, violations: Sequence[Any]):
        self.violations = tuple(violations)
        lines = [v.to_text() for v in self.violations]
        super().__init__("the build broke " + (
            f"{len(lines)} checks:\n" if len(lines) > 1 else "a check: ") + "\n".join(lines),
            trace)

    @property
    def step(self) -> Any:
        return min((v.step for v in self.violations), key=lambda s: s.index, default=None)


class LlvmOptionError(ValueError):
    """An LLVM option that TVM's target cannot carry (not of the `-name:type=value`
    form, a type or value it does not read, an option that would crash the build) or
    that LLVM does not know: says which and what would be right."""


class UserPassError(TypeError):
    """A user pass returned something other than an IRModule."""


# ------------------------------------------------------------------------- files
class TraceFileError(ValueError):
    """A file that is not a readable passlab trace: says what is wrong and what would
    be right."""


class ModelFormatError(ValueError):
    """The thing given as a model is not one: a file that is not a model, an unknown file
    type, or a model with operators the importer does not support."""


class UntrustedModelError(ModelFormatError):
    """A model file that could only be read by running code from it (a `.pt2` archive
    with pickled weights, objects or compiled libraries), refused because the caller did
    not say `trust=True` (`--trust`)."""


class MissingImporterError(ImportError):
    """The importer for this kind of model needs a package that is not installed."""


class CliError(Exception):
    """A mistake on the command line: printed as one line, exit status 2."""


class SweepError(ValueError):
    """A sweep that cannot start: a pass, check or model that cannot travel to a worker
    process (defined in a notebook cell or `__main__`, a lambda, a local function), or
    a malformed argument. Says which one and what would work."""


class WorkerError(SweepError):
    """The worker processes of a sweep or an attribution could not start, or all died:
    names the cause and the way out. `.partial` (and `.sweep` or `.attribution`)
    holds every row that had finished."""


class UnsafePathError(OSError):
    """A path where passlab would write or read a result is a symbolic link (or not a
    plain file or folder): passlab never writes through links. Names the path."""


# ---------------------------------------------------------------------- warnings
class DeviceUnavailableError(RuntimeError):
    """`build.run()` on a target whose device (or runtime) this machine lacks: the
    code was generated and can be inspected, not run."""


class PartitionWarning(UserWarning):
    """Some of a backend's patterns matched nothing in the model."""
