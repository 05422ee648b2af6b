"""Recording an unmodified program: ``passlab record -- CMD`` (and ``PASSLAB_TRACE``) writes
one trace per build or pass run, and changes nothing the program prints or returns.
(The wheel's ``.pth`` path is tested from an installed wheel in test_wheel.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import passlab

ROOT = Path(__file__).resolve().parents[1]
PASSLAB = str(Path(sys.executable).parent / "passlab")

#: The unmodified program: two builds, a line on stdout, exit status 3.
TWO_BUILDS = (Path(__file__).parent / "unmodified_program.py").read_text()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASSLAB_")}
    env.update(extra)
    return env


def _python(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


@pytest.mark.slow
def test_record_two_builds_of_an_unmodified_script(tmp_path):
    (tmp_path / "two_builds.py").write_text(TWO_BUILDS)
    plain = subprocess.run([sys.executable, "two_builds.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, env=_env())
    done = subprocess.run([PASSLAB, "record", "-o", "traces", "--", sys.executable,
                           "two_builds.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=_env())
    assert (plain.returncode, plain.stdout) == (3, "built twice\n")
    assert (done.returncode, done.stdout) == (3, "built twice\n")  # the program's own
    names = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert names == ["001-relax.build-llvm.trace.zip", "002-relax.build-llvm.trace.zip"]
    assert done.stderr.splitlines()[-1] == (
        f"passlab record: 2 new trace(s) in {tmp_path / 'traces'} "
        "(001-relax.build-llvm.trace.zip, 002-relax.build-llvm.trace.zip)")
    first = passlab.load_trace(tmp_path / "traces" / names[0])
    assert len(first) == 79 and first.failure is None
    assert first.find("LegalizeOps").changed


@pytest.mark.slow
def test_a_failing_build_is_recorded_and_its_error_reaches_the_program(tmp_path):
    script = (
        "import tvm, passlab\n"
        "from tvm import relax\n"
        "mod = passlab.models.mlp()\n"
        "mod = relax.transform.LegalizeOps()(mod)\n"  # a pass run by hand: a trace too
        "def broken(mod, ctx):\n"
        "    raise ValueError('my pass broke')\n"
        "pipe = tvm.transform.Sequential([relax.transform.FoldConstant(),\n"
        "    tvm.transform.module_pass(broken, opt_level=0, name='Broken')])\n"
        "try:\n"
        "    relax.build(mod, 'llvm', relax_pipeline=pipe)\n"
        "except Exception as exc:\n"
        "    print('caught', type(exc).__name__)\n")
    boot = ROOT / "passlab" / "autorecord" / "boot"
    env = _env(PASSLAB_TRACE=str(tmp_path / "t"), PYTHONPATH=str(boot))
    done = _python(script, tmp_path, env)
    plain = _python(script, tmp_path, _env())
    assert done.stdout == plain.stdout == "caught ValueError\n"
    assert done.returncode == plain.returncode == 0
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert names == ["001-pass-LegalizeOps.trace.zip", "002-relax.build-llvm.trace.zip"]
    failed = passlab.load_trace(tmp_path / "t" / names[1])
    assert failed.failure is not None and failed.failure.step.name == "Broken"
    assert "my pass broke" in failed.failure.message
    assert [s.name for s in failed.main_chain()][:2] == ["FoldConstant", "Broken"]


def test_a_recorder_failure_is_a_warning_not_a_crash(tmp_path):
    """A folder that cannot be written: the program runs and exits as it would."""
    (tmp_path / "file").write_text("not a folder")
    script = ("import tvm, passlab\n"
              "from tvm import relax\n"
              "m = relax.transform.LegalizeOps()(passlab.models.mlp())\n"
              "print(len(m.functions))\n")
    boot = ROOT / "passlab" / "autorecord" / "boot"
    env = _env(PASSLAB_TRACE=str(tmp_path / "file" / "traces"), PYTHONPATH=str(boot))
    done = _python(script, tmp_path, env)
    assert done.returncode == 0 and done.stdout == _python(script, tmp_path, _env()).stdout
    assert "RuntimeWarning: passlab: could not save the trace of this pass" in done.stderr
    assert "(1 could not be saved: see the warnings above)" in done.stderr


def test_passlab_builds_are_not_recorded_twice(tmp_path):
    """passlab.build records already: its relax.build is not written again."""
    import tvm
    import tvm.relax.vm_build as vm_build

    from passlab._tvm.entry_points import _wrap_in
    from passlab.autorecord import Session

    session = Session(tmp_path / "t")
    original = vm_build.build
    try:
        _wrap_in(vm_build, "build", "relax.build", session.wrapper)
        assert vm_build.build is not original and tvm.relax.build is vm_build.build
        passlab.build(passlab.models.mlp(), progress=False)
        assert session.written == []
        tvm.relax.build(passlab.models.mlp(), "llvm")
        assert [p.name for p in session.written] == ["001-relax.build-llvm.trace.zip"]
    finally:
        vm_build.build = original
        tvm.relax.build = original


def test_record_needs_a_command(capsys):
    from passlab.cli import main

    assert main(["record", "-o", "x"]) == 2
    assert "give the command to record after --" in capsys.readouterr().err
    assert main(["record", "-o", "x", "--", "/nonexistent/prog"]) == 127

