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
