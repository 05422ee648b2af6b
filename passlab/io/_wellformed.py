"""After loading: TVM's well-formedness checks on every function of a loaded trace, in a
child process, before any view prints or hashes the IR (see `passlab.io.validate`
for the checks before loading)."""

from __future__ import annotations

import os
import signal
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from passlab.errors import TraceFileError

__all__ = ["check_loaded"]


def check_loaded(modules: Sequence[Any], what: Callable[[str], TraceFileError]) -> list[str]:
    """TVM's well-formedness checks on every distinct function of `modules`, in forked
    child processes where the platform has `fork` (one per core for many functions).

    Runs after `check_ir_graph` (so the checkers meet no null and no object of the
    wrong type) and before any view prints or hashes the IR: a graph can be well typed and
    still crash TVM's printer (a TIR loop variable whose type is a Relax tensor type).
    Relax functions go through `relax.analysis.well_formed`, PrimFuncs through
    `tirx.analysis.verify_well_formed` or, for functions with schedulable blocks (which
    that verifier does not support), `s_tir.analysis.verify_well_formed`. The checkers
    are TVM code too and crash on some crafted IR (a `DeclBuffer` of a variable that is
    not a buffer), hence the child: it reports each function it starts on a pipe, so a
    crash names the function, and a crash becomes `what(message)`.

    A function the checker calls ill-formed is printed and hashed in the child too, as a
    view would: if that crashes, the file is refused; if not, the function is returned as
    a note. TVM's own builds produce such functions (GPU kernels use thread variables that
    the TIR verifier calls undefined), so ill-formed alone cannot be a reason to refuse.
    Without `fork` there is no child to crash in, and an ill-formed function is refused.
    """
    funcs = _distinct_functions(modules)
    if not hasattr(os, "fork"):  # no fork (Windows): no child to crash safely in, so refuse
        for where, func in funcs:
            why = _ill_formed(func)
            if why is not None:
                raise what(f"{where} is not well formed ({why})")
        return []
    shares = _shares(len(funcs))
    children = [_start(funcs, share) for share in shares]
    outputs = _collect(children)
    for out, status in outputs:  # a crash first, whichever child it was in
        _check_status(funcs, out, status, what)
    bad: dict[int, str] = {}
    unprintable: dict[int, str] = {}
    for out, _ in outputs:
        for line in out:
            kind, _, rest = line.partition(" ")
            number, _, why = rest.partition(" ")
            if kind in ("bad", "unprintable"):
                (bad if kind == "bad" else unprintable)[int(number)] = why
    if unprintable:  # a view would raise TVM's error: refuse the file here
        n = min(unprintable)
        raise what(f"{funcs[n][0]} is not well formed ({bad.get(n, '?')}) and TVM cannot "
                   f"print or hash it ({unprintable[n]})")
    return [f"{funcs[n][0]} is not well formed by TVM's check ({bad[n]})" for n in sorted(bad)]


def _shares(count: int) -> list[range]:
    """Which functions each child checks: one child, or one per core (up to 4) for many
    functions, interleaved so that each gets some of the large ones."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    k = max(1, min(cores, 4, count // _PER_CHILD))
    return [range(c, count, k) for c in range(k)]


#: Fewer functions than this per child are not worth a fork of their own.
_PER_CHILD = 64


def _start(funcs: Sequence[tuple[str, Any]], share: range) -> tuple[int, int]:
    """Fork a child that checks `funcs[n]` for each `n` of `share`; its pid and the
    pipe it reports on ("at N", "bad N why", "print N", "unprintable N why")."""
    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns about fork in threaded processes
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 2
        try:
            os.close(read)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)  # TVM's crash handler would print a C++ back trace
            code = 0
            for n in share:
                func = funcs[n][1]
                os.write(write, f"at {n}\n".encode())
                why = _ill_formed(func)
                if why is not None:
                    os.write(write, f"bad {n} {' '.join(why.split())[:300]}\n".encode())
                    # what a view would do next: a crash here refuses the file
                    os.write(write, f"print {n}\n".encode())
                    err = _print_and_hash(func)
                    if err is not None:
                        os.write(write, f"unprintable {n} {' '.join(err.split())[:300]}\n"
                                 .encode())
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _collect(children: list[tuple[int, int]]) -> list[tuple[list[str], int]]:
    """Each child's report lines and exit status, its pipe read while the others run (a
    full pipe would stop a child)."""
    def drain(fd: int) -> list[str]:
        with os.fdopen(fd, "rb") as fh:
            return fh.read().decode(errors="replace").splitlines()

    texts: dict[int, list[str]] = {}
    readers = [threading.Thread(target=lambda n=n, fd=fd: texts.__setitem__(n, drain(fd)),
                                daemon=True) for n, (_, fd) in enumerate(children[1:], 1)]
    for r in readers:
        r.start()
    texts[0] = drain(children[0][1])
    for r in readers:
        r.join()
    return [(texts[n], os.waitpid(pid, 0)[1]) for n, (pid, _) in enumerate(children)]


def _check_status(funcs: Sequence[tuple[str, Any]], lines: list[str], status: int,
                  what: Callable[[str], TraceFileError]) -> None:
    """Raise `what(...)` when a child crashed (naming the function it was on) or
    failed."""
    last = lines[-1].split(" ", 2) if lines else ["", "-1"]
    where = funcs[int(last[1])][0] if 0 <= int(last[1]) < len(funcs) else "a function"
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        if last[0] == "print":
            why = next((line.split(" ", 2)[2] for line in lines
                        if line.startswith(f"bad {last[1]} ")), "?")
            raise what(f"{where} is not well formed ({why}) and crashes TVM's printer "
                       f"({sig})")
        raise what(f"{where} crashes TVM's well-formedness check ({sig})")
    if os.WEXITSTATUS(status) != 0:
        raise what(f"checking {where} failed (status {os.WEXITSTATUS(status)})")


def _print_and_hash(func: Any) -> str | None:
    """Print and hash `func` as the views do: None, or the last line of TVM's error."""
    import tvm_ffi

    for work in (func.script, lambda: tvm_ffi.structural_hash(func, True, True)):
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
            lines = [line for line in str(exc).splitlines() if line.strip()]
            return lines[-1] if lines else type(exc).__name__
    return None


def _distinct_functions(modules: Sequence[Any]) -> list[tuple[str, Any]]:
    seen: set[int] = set()
    out = []
    for m, mod in enumerate(modules):
        for gv, func in mod.functions.items():
            if func.__chandle__() not in seen:
                seen.add(func.__chandle__())
                out.append((f"module {m}, function {gv.name_hint!r:.80}", func))
    return out


def _ill_formed(func: Any) -> str | None:
    from tvm import relax, tirx

    try:
        if isinstance(func, relax.Function):
            relax.analysis.well_formed(func)
        elif isinstance(func, tirx.PrimFunc):
            try:
                tirx.analysis.verify_well_formed(func, True)
            except Exception:  # noqa: BLE001 - blocks: the s_tir verifier's business
                from tvm.s_tir import analysis

                analysis.verify_well_formed(func, True)
        return None
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return (lines[-1] if lines else type(exc).__name__)[:300]
