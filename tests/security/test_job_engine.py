"""The job engine of sweep and attribute: it never writes through a link planted in a
shared `out/` folder, leaves no process behind when its caller is killed, and never turns
workers that cannot start into an empty table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pytest

import passlab
from passlab.errors import SweepError, UnsafePathError, WorkerError
from passlab.io._files import Folder, write_file
from passlab.research._sweep_jobs import empty_row
from passlab.research._sweep_records import write_record
from passlab.research.sweep import job_folder

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_workers(monkeypatch):
    """Fails the test if a worker or build process is started (refusals come first)."""
    from passlab.research import _jobs, _supervise

    def started(*_a, **_k):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(_jobs, "_Worker", started)
    monkeypatch.setattr(_supervise, "_Server", started)


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


# ------------------------------------------------------------- links (fast)
def test_links_where_a_job_writes_are_refused_before_building(tmp_path, no_workers):
    """Before: 3 of 4 files landed outside `out/` through the links (job.json.tmp,
    report.html, outputs.npz) and job.json became the planted link."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.mkdir()
    folder = job_folder(out, "mlp", "default")
    for name in ("job.json", "job.json.tmp", "report.html", "outputs.npz", "trace.zip"):
        (victim / name).write_text(f"precious {name}\n")
        plant(folder / name, victim / name)
    with pytest.raises(SweepError, match=(
            rf"^out: {folder / 'job.json'} is a symbolic link \(to '{victim / 'job.json'}'\):"
            r" passlab never writes or reads results through links; remove the link, or "
            r"choose another folder \(a sweep never writes through links in its out folder\)$")):
        passlab.sweep(["mlp"], {"default": "fused"}, workers=1, out=out, progress=False)
    assert {p.name: p.read_text() for p in victim.iterdir()} == {
        n: f"precious {n}\n" for n in ("job.json", "job.json.tmp", "report.html",
                                       "outputs.npz", "trace.zip")}
    (folder / "job.json").unlink()  # the next link is named the same way
    with pytest.raises(SweepError, match=rf"out: {folder / 'trace.zip'} is a symbolic link"):
        passlab.sweep(["mlp"], {"default": "fused"}, out=out, progress=False)


def test_a_linked_job_folder_is_refused(tmp_path, no_workers):
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.mkdir()
    model_folder = job_folder(out, "mlp", "default").parent
    plant(model_folder, victim)
    with pytest.raises(SweepError, match=rf"^out: {model_folder} is a symbolic link \(to "
                                         rf"'{victim}'\)"):
        passlab.sweep(["mlp"], {"default": "fused"}, out=out, progress=False)
    assert list(victim.iterdir()) == []


def test_the_writer_replaces_names_and_never_follows_links(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "a").mkdir()
    plant(tmp_path / "a" / "linked", tmp_path)
    with pytest.raises(UnsafePathError, match=rf"^{tmp_path / 'a' / 'linked'} is a symbolic "
                                              r"link"):
        Folder(tmp_path, ["a", "linked", "b"], create=True)
    with Folder(tmp_path, ["a", "b"], create=True) as folder:
        assert folder.write("x.json", b"{}") == tmp_path / "a" / "b" / "x.json"
        plant(tmp_path / "a" / "b" / "y.json", victim)
        for write in (lambda: folder.write("y.json", b"{}"),
                      lambda: folder.produce("y.json", lambda p: p.write_text("{}"))):
            with pytest.raises(UnsafePathError, match=r"y\.json is a symbolic link"):
                write()
        with pytest.raises(UnsafePathError, match=r"y\.json is a symbolic link"):
            folder.read("y.json")

        def plant_meanwhile(path):  # a link planted after the check: replaced, not followed
            path.write_text("mine")
            (tmp_path / "a" / "b" / "y.json").unlink()
            plant(tmp_path / "a" / "b" / "y.json", victim)

        folder.lstat = lambda name: None  # the check misses it (a race)
        folder.produce("y.json", plant_meanwhile)
        assert (tmp_path / "a" / "b" / "y.json").read_text() == "mine"
        assert not (tmp_path / "a" / "b" / "y.json").is_symlink()
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["x.json", "y.json"]
    index = tmp_path / "index.html"
    plant(index, victim)
    with pytest.raises(UnsafePathError, match="index.html is a symbolic link"):
        write_file(index, b"<html>")
    assert victim.read_text() == "precious"


def test_a_record_is_not_written_through_a_link_planted_while_the_job_ran(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    job = dict(model="mlp", pipeline="default", key="k" * 24, timeout=None,
               folder=str(tmp_path / "out" / "j"))
    plant(tmp_path / "out" / "j" / "job.json", victim)
    with pytest.raises(UnsafePathError, match="job.json is a symbolic link"):
        write_record(job, empty_row("mlp", "default"))
    assert victim.read_text() == "precious"
    assert [p.name for p in (tmp_path / "out" / "j").iterdir()] == ["job.json"]  # no .tmp


def test_job_files_refuse_links_planted_while_the_job_ran(tmp_path, mlp_build):
    from passlab.research._sweep_build import _keep, _keep_outputs

    victim = tmp_path / "victim"
    victim.mkdir()
    folder = tmp_path / "out" / "j"
    for name in ("trace.zip", "report.html", "outputs.npz"):
        (victim / name).write_text("precious")
        plant(folder / name, victim / name)
    job = dict(folder=str(folder), out=str(tmp_path / "out"), parts=["j"])
    row = empty_row("mlp", "default") | dict(outputs=[np.ones(2, "float32")])
    _keep(job, mlp_build.trace, row)
    _keep_outputs(job, row)
    assert row["trace"] is None and row["report"] is None
    assert row["error"] == (
        f"files not kept: UnsafePathError: {folder / 'trace.zip'} is a symbolic link (to "
        f"'{victim / 'trace.zip'}'): passlab never writes or reads results through links; "
        "remove the link, or choose another folder; outputs not kept: UnsafePathError: "
        f"{folder / 'outputs.npz'} is a symbolic link (to '{victim / 'outputs.npz'}'): passlab "
        "never writes or reads results through links; remove the link, or choose another "
        "folder")
    assert {p.name: p.read_text() for p in victim.iterdir()} == dict.fromkeys(
        ("trace.zip", "report.html", "outputs.npz"), "precious")
    assert sorted(p.name for p in folder.iterdir()) == ["outputs.npz", "report.html",
                                                         "trace.zip"]  # the links, no leftovers


# ------------------------------------------------------- workers (fast)
class Answers(Executor):
    """An executor that runs nothing: each job gets the next answer, a row (from
    `answer(job)`) or an exception, as a real executor's future would."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def submit(self, fn, job):
        fut = Future()
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            fut.set_exception(answer)
        else:
            fut.set_result(answer(job))
        return fut


def ok(job):
    return empty_row(job["model"], job["pipeline"]) | dict(
        outputs=[np.ones(2)], profile=dict(run_s=2e-3, spread=0.1, kernels={"k": 2e-3},
                                           calls={"k": 1}))


def failed(job):
    return empty_row(job["model"], job["pipeline"]) | dict(status="failed", outputs=None,
                                                           error="broken: ValueError: no")


def test_an_executor_whose_workers_died_is_an_error_that_keeps_the_rows(capsys, monkeypatch):
    """Before: the lost jobs were "crashed" rows, and with all of them lost (a program
    read from standard input) attribute returned an empty table without an error."""
    # a script's main program (pytest's own __main__ differs between plain and xdist runs)
    monkeypatch.setattr("passlab.research._jobs._main_from_stdin", lambda: False)
    pool = Answers(ok, BrokenProcessPool("A process in the process pool was terminated "
                                         "abruptly"), BrokenProcessPool("again"))
    with pytest.raises(WorkerError, match=(
            r"^the executor's worker processes died \(BrokenProcessPool: A process in the "
            r"process pool was terminated abruptly\): a worker died \(the OOM killer, a pass "
            r"that kills its parent\), or a script that starts a process pool with 'spawn' "
            r"lacks the `if __name__ == \"__main__\":` guard; leave executor= out to use "
            r"passlab's own worker processes, where a worker that dies is one \"crashed\" "
            r"row\. 1 of 3 jobs had finished \(the error's \.partial holds them\)$")) as info:
        passlab.sweep(["mlp"], {"default": "fused", "unfused": "build", "again": "build"},
                      executor=pool, progress=True)
    assert [(r.pipeline, r.status) for r in info.value.sweep] == [("default", "ok")]
    assert info.value.partial is info.value.sweep
    err = capsys.readouterr().err
    assert "sweep:  33%|" in err and "1/3" in err and "mlp / default: ok" in err


def test_the_bars_count_jobs_and_failures(capsys):
    result = passlab.sweep(["mlp"], {"default": "fused", "unfused": "build"},
                           executor=Answers(ok, failed), progress=True)
    assert [(r.pipeline, r.status) for r in result] == [("default", "ok"),
                                                        ("unfused", "failed")]
    bar = capsys.readouterr().err.split("\r")[-1]
    assert bar.startswith("sweep: 100%|") and "| 2/2 [" in bar
    assert bar.rstrip().endswith("job/s, mlp / unfused: failed, 1 failed]")
    seen = []
    a = passlab.attribute("mlp", passes=["FuseOps"], repeat=1, executor=Answers(ok, ok),
                          progress=lambda *args: seen.append(args))
    assert seen == [("(full pipeline)", "ok", 1, 2), ("FuseOps", "ok", 2, 2)]
    assert capsys.readouterr().err == ""  # a callable instead of the bar
    assert (a.status, a.run_s, a.kernels, a["FuseOps"].delta_s) == ("ok", 2e-3, 1, 0.0)
    passlab.attribute("mlp", passes=["FuseOps"], repeat=1, executor=Answers(ok, failed),
                      progress=True)
    bar = capsys.readouterr().err.split("\r")[-1]
    assert bar.startswith("attribute: 100%|") and "| 2/2 [" in bar
    assert bar.rstrip().endswith("job/s, without FuseOps: build fails, 1 failed]")


def test_workers_that_cannot_start_are_an_error_naming_the_cause(tmp_path, monkeypatch):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'no passlab here' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(broken))
    with pytest.raises(WorkerError, match=(
            r"^passlab's worker processes could not start: each exited with status 3 before "
            rf"it was ready\. Each is '{broken}' run with this process's sys\.path as "
            r"PYTHONPATH and must import passlab; check that this Python can, or pass "
            r"executor= to run the jobs elsewhere$")) as info:
        passlab.attribute("mlp", passes=["FuseOps"], repeat=1, workers=2, progress=False)
    assert len(info.value.attribution) == 0 and info.value.attribution.status == "interrupted"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "missing"))
    with pytest.raises(WorkerError, match=r"could not start: FileNotFoundError: "):
        passlab.sweep(["mlp"], {"default": "fused"}, workers=1, progress=False)


# ------------------------------------------------------- processes (slow)
def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _running() -> dict[int, list[str]]:
    return {int(p): st for p in os.listdir("/proc") if p.isdigit()
            and (st := _stat(int(p))) is not None and st[0] != "Z"}


def _descendants(root: int) -> set[int]:
    procs = _running()
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += [p for p, st in procs.items() if int(st[1]) == pid and p not in found]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("call", ["sweep", "attribute"])
def test_a_killed_caller_leaves_no_process(call, tmp_path):
    """Before: 3 processes per call 20 s after a `kill -9` of the caller (its pool worker,
    re-parented to init, the build process and multiprocessing's resource tracker)."""
    pids = tmp_path / "pids"
    script = tmp_path / "caller.py"
    script.write_text(textwrap.dedent(f"""
        import passlab, sweep_test_passes as user
        pipe = passlab.Pipeline.default("llvm").insert(user.hangs, after="legalize")
        if {call!r} == "sweep":
            passlab.sweep(["mlp"], {{"a": pipe, "b": pipe.disable("FuseOps")}}, workers=2,
                          progress=False)
        else:
            passlab.attribute("mlp", pipe, passes=["FuseOps"], workers=2, progress=False)
    """))
    env = dict(os.environ, PASSLAB_TEST_PIDFILE=str(pids),
               PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    caller = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True)
    try:
        end = time.monotonic() + 180
        while len(pids.read_text().split() if pids.exists() else ()) < 2:
            assert time.monotonic() < end and caller.poll() is None, "no build started"
            time.sleep(0.2)
        time.sleep(0.5)
        family = _descendants(caller.pid)
        builders = {int(p) for p in pids.read_text().split()}
        assert builders <= family and len(family) == 5  # caller, 2 workers, 2 builds
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait()
        end = time.monotonic() + 10
        left = family
        while left and time.monotonic() < end:
            time.sleep(0.1)
            procs = _running()
            left = {p for p in family if p in procs} | {
                p for p, st in procs.items() if int(st[2]) in (caller.pid, *builders)}
        assert left == set(), f"alive 10 s after the kill: {sorted(left)}"
    finally:
        if caller.poll() is None:
            caller.kill()


@pytest.mark.slow
def test_attribute_from_standard_input(tmp_path):
    """Issue: every spawned worker died at start (FileNotFoundError: '<stdin>') and
    attribute returned an empty table without an error. passlab's own workers import no
    main program, so the program works; a spawn pool given as executor= is a WorkerError
    that says why and what to do."""
    def run(program: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-"], input=textwrap.dedent(program),
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))

    spawned = run("""
        import multiprocessing, passlab
        from concurrent.futures import ProcessPoolExecutor
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        try:
            passlab.attribute("mlp", passes=["FuseOps"], repeat=1, executor=pool,
                              progress=False)
        except passlab.errors.WorkerError as exc:
            print(exc)
            print(len(exc.attribution), exc.attribution.status)
    """)
    assert spawned.stdout.splitlines() == [
        "the executor's worker processes died (BrokenProcessPool: A process in the process "
        "pool was terminated abruptly while the future was running or pending.): this "
        "program was read from standard input (or typed in), and a process pool that starts "
        "its workers with 'spawn' or 'forkserver' imports the main program from its file, so "
        "each worker died at start (FileNotFoundError: '<stdin>' on its stderr): run the "
        "program from a script file whose work is under `if __name__ == \"__main__\":`, or "
        "leave executor= out (passlab's own worker processes import no main program). 0 of "
        "2 jobs had finished (the error's .partial holds them)",
        "0 interrupted"]
    own = run("""
        import passlab
        a = passlab.attribute("mlp", passes=["FuseOps"], repeat=1, workers=1, progress=False)
        print(a.status, [(r.pass_, r.status, r.kernels, r.kernels_without) for r in a])
    """)
    assert own.stdout == "ok [('FuseOps', 'ok', 4, 7)]\n", own.stderr[-2000:]
