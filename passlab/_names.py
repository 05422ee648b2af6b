"""Helpful errors for names a user typed: what was wrong and what would be right."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UnknownNameError(KeyError, ValueError):
    """A pass, stage, model or target name that does not exist.

    Subclasses both ``KeyError`` (it is a failed lookup) and ``ValueError`` (it is bad
    input), so either ``except`` clause catches it.
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
    """Up to ``n`` choices that look like ``name`` (case-insensitive, substring-aware)."""
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
    """Build the error for an unknown ``kind`` called ``name``."""
    choices = tuple(dict.fromkeys(choices))
    close = close_matches(str(name), choices)
    msg = f"unknown {kind} {name!r}"
    if close:
        msg += f"; did you mean {', '.join(repr(c) for c in close)}?"
    shown = ", ".join(choices[:40]) + (", ..." if len(choices) > 40 else "")
    msg += f" Known {kind} names: {shown}."
    if extra:
        msg += " " + extra
    return UnknownNameError(msg, str(name), choices, close)
