"""What runs on a worker: one build process per worker thread, watched.

`run_job` is what a worker calls for a job (passlab's own worker processes, or any
`concurrent.futures.Executor`'s). It does not build in its own process: it hands the job
to a *build server* (`passlab.research._sweep_build`), a child Python process it starts
once and reuses (importing TVM costs seconds), and watches it. The server says what it is
doing as it goes (each pass it enters, then "running the model" and each VM call, then
"timing", then "writing files"), so a job that kills it (a segfault in TVM or in a kernel,
`os._exit` in a user pass) becomes a "crashed" row that says where, and one that overruns
its timeout a "timeout" row; the next job starts a fresh server.

Nothing outlives its caller. A build server runs in its own process group (so that a
compiler it started dies with it), asks the kernel for SIGKILL when its worker dies
(`PR_SET_PDEATHSIG`), watches its worker from a thread where that is missing, and stops
itself a few seconds after a job's timeout. `work` is the main loop of passlab's own
worker processes: it reads jobs from a pipe whose other end only the caller holds, so
the caller's death is an end of file there, noticed while idle and while a job runs; a
parent-death signal and a watchdog thread back that up; every way out kills the build
server's process group first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, ClassVar

from passlab.research._sweep_jobs import empty_row

__all__ = ["run_job", "work", "die_with", "child_env", "kill_group", "stop_servers", "ended"]

_PR_SET_PDEATHSIG = 1

_SERVE = ("import sys; from passlab.research._sweep_build import serve; "
          "serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))")


def die_with(parent: int, cleanup: Callable[[], None] | None = None) -> None:
    """End this process when `parent` (the process that started it) ends, whatever the
    parent does: the kernel's parent-death signal on Linux, and a watchdog thread
    everywhere. Without `cleanup` the signal is SIGKILL (delivered even while a C++
    pass holds the GIL); with it, SIGTERM, whose handler runs `cleanup` and exits (for
    a worker, which waits in system calls and has build processes to take down)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the caller

    def leave(*_: object) -> None:
        if cleanup is not None:
            cleanup()
        os._exit(1)

    if cleanup is not None:
        signal.signal(signal.SIGTERM, leave)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        sig = signal.SIGKILL if cleanup is None else signal.SIGTERM
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog alone
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        leave()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        leave()

    threading.Thread(target=watch, name="passlab-parent-watchdog", daemon=True).start()


def child_env() -> dict[str, str]:
    """The environment of a worker or build process: it finds what this process finds
    (passlab from a source tree, test folders), and TVM's runtime uses one thread (jobs
    run in parallel; a spinning pool per process would fight over the same cores)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("TVM_NUM_THREADS", "1")
    return env


def kill_group(pid: int) -> None:
    """SIGKILL to the process group `pid` leads (a build server and what it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def spawn_piped(program: str, *, new_session: bool = False
                ) -> tuple[subprocess.Popen, Connection, Connection]:
    """`python -c program DOWN UP PARENT_PID` with two pipes: (the process, the
    connection it reads from, the one it writes to). Only this process holds the write
    end of the first, so the child sees an end of file when this process dies."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", program, str(down_r), str(up_w), str(os.getpid())],
            pass_fds=(down_r, up_w), env=child_env(), stdin=subprocess.DEVNULL,
            start_new_session=new_session)
    except BaseException:
        for fd in (down_r, down_w, up_r, up_w):
            os.close(fd)
        raise
    os.close(down_r)
    os.close(up_w)
    return proc, Connection(down_w, readable=False), Connection(up_r, writable=False)


class _Server:
    """One build server (a child Python process, leader of its own process group) and
    the two pipes to it."""

    #: The servers this process started and has not ended (for `stop_servers`).
    live: ClassVar[set[_Server]] = set()

    def __init__(self) -> None:
        # its own session: a terminal's Ctrl-C goes to the caller, which decides, and
        # the whole group (a compiler the build started too) can be killed at once
        self.proc, self.down, self.up = spawn_piped(_SERVE, new_session=True)
        self.ready = False
        _Server.live.add(self)

    def end(self) -> str:
        """Kill the server's process group, reap it and say how it ended. After an end
        of file on its pipe the server has already exited (the kernel closes a process's
        files after fixing its exit status), so the status is its own."""
        kill_group(self.proc.pid)
        code = self.proc.wait()
        self.down.close()
        self.up.close()
        _Server.live.discard(self)
        return ended(code)


def ended(code: int) -> str:
    """How a child process ended, from its return code ("was killed by signal SIGSEGV")."""
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def stop_servers() -> None:
    """Kill every build server this process started (and their process groups)."""
    for server in list(_Server.live):
        kill_group(server.proc.pid)


class CallerGone(Exception):
    """The caller closed its end of the worker's pipe (it ended or was killed)."""


class _Where:
    """What the build server said it was doing last, as the end of an error message."""

    def __init__(self) -> None:
        self.kind, self.value = "load", ""
        self.built: dict[str, Any] = {}  # the row as it stood when the build finished

    def update(self, kind: str, value: Any) -> None:
        if kind == "built":
            self.built = dict(value)
            return
        if kind == "kernel" and self.kind not in ("phase", "kernel"):
            return
        self.kind, self.value = kind, str(value)

    def __str__(self) -> str:
        if self.kind == "load":
            return "while loading the model and the pipeline (before the first pass)"
        if self.kind == "pass":
            return f"while running pass {self.value!r}"
        if self.kind == "kernel":
            what = "" if self.value.startswith("vm.") else "kernel "
            return f"while running the model, in {what}{self.value!r} (the build had finished)"
        return {"full": "while building the full pipeline (this variant is re-run from it)",
                "run": "while running the model (the build had finished)",
                "profile": "while timing the model (the build had finished)",
                "save": "while writing the job's files (the build had finished)"}.get(
                    self.value, f"while {self.value}")


_LOCAL = threading.local()  # one build server per worker thread, reused across jobs


def run_job(job: dict[str, Any], watch: Connection | None = None,
            report: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run one job in this thread's build server; always returns a row (as a dict, with
    `outputs`: the flattened results, or None). `watch` is a pipe that becomes readable
    when the caller goes away (then the server is killed and `CallerGone` raised);
    `report` gets `("server", pid)` for each build server started."""
    server = getattr(_LOCAL, "server", None)
    if server is None or server.proc.poll() is not None:
        server = _LOCAL.server = _Server()
        if report is not None:
            report(("server", server.proc.pid))
    row = empty_row(job["model"], job["pipeline"])

    def lost() -> str:
        _LOCAL.server = None
        return server.end()

    def readable(timeout: float | None) -> bool:
        ready = wait([server.up] + ([watch] if watch is not None else []), timeout)
        if watch is not None and watch in ready:
            lost()
            raise CallerGone
        return server.up in ready

    if not server.ready:
        try:
            readable(None)
            server.up.recv()  # ("ready", None): TVM is imported, the clock may start
            server.ready = True
        except EOFError:
            return row | dict(status="crashed", outputs=None,
                              error=f"the build process could not start ({lost()})")
    server.down.send(job)
    deadline = None if job["timeout"] is None else time.monotonic() + job["timeout"]
    where = _Where()
    start = time.perf_counter()

    def ended_as(status: str, error: str) -> dict[str, Any]:
        # after the build finished, its figures and files stay in the row
        return row | dict(build_s=time.perf_counter() - start) | where.built | dict(
            status=status, error=error, outputs=None)

    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not readable(left):
            lost()
            return ended_as("timeout", f"timed out after {job['timeout']:g} s {where}")
        try:
            kind, value = server.up.recv()
        except EOFError:
            why = lost()
            if server.proc.returncode == -signal.SIGALRM and job["timeout"] is not None:
                # the server's own backstop (see _sweep_build.GRACE_S) ended it
                return ended_as("timeout", f"timed out after {job['timeout']:g} s {where}")
            return ended_as("crashed", f"the build process {why} {where}")
        if kind == "done":
            return value
        where.update(kind, value)


def work(fd_in: int, fd_out: int, parent: int) -> None:
    """The main loop of one of passlab's worker processes: jobs in on `fd_in`, rows
    out on `fd_out`, until the caller closes the pipe or goes away."""
    down = Connection(fd_in, writable=False)
    up = Connection(fd_out, readable=False)
    die_with(parent, cleanup=stop_servers)
    try:
        up.send(("ready", None))
        while True:
            try:
                job = down.recv()
            except EOFError:
                return
            row = run_job(job, watch=down, report=up.send)
            up.send(("done", row))
    except (CallerGone, OSError):  # the caller went away (a broken pipe when answering)
        return
    finally:
        stop_servers()
