"""passlab._progress: one meaning of ``progress=`` everywhere (None: a bar only in Jupyter
or on a terminal; True: always; False: never), drawn by tqdm, counted even when not
drawn."""

from __future__ import annotations

import io

import pytest

from passlab import _progress
from passlab._progress import bar, wanted


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("PASSLAB_PROGRESS", raising=False)


def test_default_draws_only_on_a_terminal(monkeypatch, no_env):
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert wanted(None) is False
    with bar(None, total=4, desc="jobs") as b:
        for _ in range(4):
            b.update()
    assert b.n == 4 and not b.shown
    assert pipe.getvalue() == ""  # nothing at all on a pipe or a log file

    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert wanted(None) is True
    with bar(None, total=4, desc="jobs", unit="job") as b:
        for k in range(4):
            b.update(failed=k == 2, note=f"job {k}")
    last = term.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("jobs: 100%") and " 4/4 [" in last
    assert last.endswith("job 3, 1 failed]"), last
    assert b.failures == 1


def test_true_false_callable_and_the_environment(monkeypatch, no_env):
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert wanted(True) and not wanted(False) and not wanted(print)
    with bar(True, total=2, desc="asked") as b:
        b.goto(2, note="done")
    assert "asked: 100%" in pipe.getvalue() and " 2/2 [" in pipe.getvalue()

    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    monkeypatch.setenv("PASSLAB_PROGRESS", "0")
    assert wanted(None) is False and wanted(True) is True  # an explicit True still wins
    with bar(None, total=1, desc="quiet") as b:
        b.update()
    assert term.getvalue() == ""
    monkeypatch.setattr("sys.stderr", pipe)
    monkeypatch.setenv("PASSLAB_PROGRESS", "1")
    assert wanted(None) is True and wanted(False) is False


def test_goto_never_moves_back_and_delay_hides_quick_work(monkeypatch, no_env):
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    with bar(None, total=10, desc="slow to show", delay=60.0) as b:
        b.goto(5)
        b.goto(3, note="late")
        b.redraw()  # still inside its delay: draws nothing
        assert b.n == 5
        b.goto(10)
    assert term.getvalue() == ""  # finished within the delay: never drawn


def test_no_kernel_here():
    assert _progress.in_jupyter() is False
