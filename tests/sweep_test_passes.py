"""User passes for tests/test_sweep.py: a sweep's worker processes import them by module
and name, so they live in a module, not in the test file's functions."""

from __future__ import annotations

import os
import signal
import time


def count_kernels(mod):
    """Harmless: looks at the module and returns it unchanged."""
    count_kernels.seen = sum(gv.name_hint.startswith("fused_") for gv in mod.get_global_vars())
    return mod


def broken(mod):
    """Raises, as a buggy pass would."""
    raise ValueError("broken on purpose")


def exits(mod):
    """Ends its process without a word, as a C++ abort would."""
    os._exit(3)


def killed(mod):
    """Is killed by the kernel, as the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)


def sleeps(mod):
    """Never finishes in time."""
    time.sleep(600)
    return mod


def few_functions(step):
    """A check by import path: at most 40 functions after every pass."""
    n = len(step.after.functions)
    return None if n <= 40 else f"{n} functions"


def _note_pid() -> None:
    """Append this build process's pid to $PASSLAB_TEST_PIDFILE (the tests check that the
    process is gone afterwards)."""
    path = os.environ.get("PASSLAB_TEST_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")


def kills_parent(mod):
    """Kills the worker process that watches this build (as the OOM killer might pick
    it), then spins as if nothing happened."""
    _note_pid()
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(600)
    return mod


def hangs(mod):
    """Never finishes, and says which process it hangs in."""
    _note_pid()
    time.sleep(600)
    return mod


def segfaults(mod):
    """Builds fine, but kernel ``transpose`` raises SIGSEGV in its process when it runs
    (a call to libc's ``raise(11)`` at the top of its root block)."""
    import tvm
    from tvm import tirx
    from tvm.s_tir import stmt as sst

    found = [gv for gv in mod.get_global_vars() if gv.name_hint == "transpose"]
    if not found:
        return mod
    func = mod[found[0]]
    realize = func.body
    root = realize.block
    crash = tirx.Evaluate(tirx.call_extern("int32", "raise", tirx.const(int(signal.SIGSEGV),
                                                                       "int32")))
    block = sst.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint,
                       tirx.SeqStmt([crash, root.body]), root.init, root.alloc_buffers,
                       root.match_buffers, root.annotations)
    new = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs,
                       global_infos=mod.global_infos)
    new[found[0]] = func.with_body(sst.SBlockRealize(realize.iter_values, realize.predicate,
                                                     block))
    return new


def crashes_once(mod):
    """Kills its build process the first time it runs (as the OOM killer or a ``kill``
    from outside would), then never again: $PASSLAB_TEST_ONCE is the marker file."""
    marker = os.environ["PASSLAB_TEST_ONCE"]
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return mod
    os.kill(os.getpid(), signal.SIGKILL)
    return mod


def hangs_unfused(mod):
    """Hangs (noting its pid) when the module holds no fused function, i.e. when
    FuseOps, before it, was disabled; changes nothing otherwise."""
    if any(gv.name_hint.startswith("fused_") for gv in mod.get_global_vars()):
        return mod
    return hangs(mod)
