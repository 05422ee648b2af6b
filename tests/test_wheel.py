"""passlab as a user gets it: the sdist and the wheel built from the repository's tracked
files, installed (not editable) into a fresh virtual environment, where the demo, the
Explorer's front end, a report and the recording of an unmodified program work.

Slow (a venv and its install, about a minute with pip's cache), so one module-scoped
environment serves every test here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: The unmodified program: two builds, a line on stdout, exit status 3.
TWO_BUILDS = (Path(__file__).parent / "unmodified_program.py").read_text()


def _tracked(prefix: str = "") -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", *([prefix] if prefix else [])], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return sorted(p for p in out.decode().split("\0") if p)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist, and the wheel built from it (``python -m build``'s default), of the
    tracked files as they are in the working tree (what ``git archive`` exports once they
    are committed; an untracked file is left out, as it would be)."""
    base = tmp_path_factory.mktemp("dist")
    src = base / "src"
    for rel in _tracked():
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_file():
            shutil.copy2(ROOT / rel, target)
    done = subprocess.run([sys.executable, "-m", "build", "-o", str(base / "out"), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return base / "out"


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("passlab-*.whl")
    return wheel


def test_the_wheel_holds_every_tracked_file_of_the_package(dist):
    names = set(zipfile.ZipFile(_wheel(dist)).namelist())
    package = {n for n in names if n.startswith("passlab/")}
    tracked = set(_tracked("passlab"))
    assert sorted(tracked - package) == []  # nothing left out (static/**, boot/, ...)
    assert sorted(package - tracked) == []  # nothing that git does not know
    # the one file outside the package: the .pth line that PASSLAB_TRACE needs
    assert "passlab-autorecord.pth" in names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(_wheel(dist)).read(meta).decode()
    assert "License-Expression: Apache-2.0" in text
    assert "Requires-Dist: pandas>=" in text and "Requires-Dist: pandas==" not in text
    assert "Project-URL: Documentation" in text and "Classifier: Typing :: Typed" in text


def test_the_sdist_holds_the_package_and_what_builds_it(dist):
    (sdist,) = dist.glob("passlab-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert sorted(set(_tracked("passlab")) - names) == []
    assert {"pyproject.toml", "setup.py", "LICENSE", "README.md"} <= names


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel (and the notebook extra) installed,
    not editable, at the versions of constraints.txt."""
    env = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    py = env / "bin" / "python"
    done = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"),
         f"passlab[notebook] @ {_wheel(dist).as_uri()}"],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return env


def _run(venv: Path, args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PASSLAB_TRACE")}
    env.update(kw.pop("env", {}))
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=env, **kw)


def test_installed_passlab_is_the_wheel_not_the_checkout(venv, tmp_path):
    done = _run(venv, [str(venv / "bin" / "python"), "-c",
                       "import passlab; print(passlab.__file__, passlab.__version__)"], tmp_path)
    assert done.returncode == 0, done.stderr
    where, version = done.stdout.split()
    assert str(venv) in where and str(ROOT) not in where
    assert version == "0.1.0"


def test_demo_explorer_and_report_work_from_the_wheel(venv, tmp_path):
    bin_ = venv / "bin"
    demo = _run(venv, [str(bin_ / "passlab"), "demo", "--model", "mlp", "-o", "demo"], tmp_path)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "max abs diff 0" in demo.stdout
    assert (tmp_path / "demo" / "report.html").stat().st_size > 100_000
    script = ("import passlab\n"
              "ex = passlab.Explorer(passlab.build(passlab.models.mlp()))\n"
              "assert 'explorer/graph/pane.js' in ex._esm and len(ex._esm) > 50_000\n"
              "print(len(ex._esm))\n")
    explorer = _run(venv, [str(bin_ / "python"), "-c", script], tmp_path)
    assert explorer.returncode == 0, explorer.stderr[-3000:]
    report = _run(venv, [str(bin_ / "passlab"), "report", "mlp", "-o", "r.html"], tmp_path)
    assert report.returncode == 0, report.stderr[-3000:]
    page = (tmp_path / "r.html").read_text()
    assert "report/main.js" in page and "</html>" in page


def test_passlab_trace_records_an_unmodified_program(venv, tmp_path):
    """The .pth line the wheel installs: only the environment variable, no code change."""
    (tmp_path / "two_builds.py").write_text(TWO_BUILDS)
    py = str(venv / "bin" / "python")
    plain = _run(venv, [py, "two_builds.py"], tmp_path)
    recorded = _run(venv, [py, "two_builds.py"], tmp_path,
                    env={"PASSLAB_TRACE": str(tmp_path / "traces")})
    assert (plain.returncode, plain.stdout) == (3, "built twice\n")
    assert (recorded.returncode, recorded.stdout) == (3, "built twice\n")
    files = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert files == ["001-relax.build-llvm.trace.zip", "002-relax.build-llvm.trace.zip"]
    assert "passlab: 2 trace(s) in" in recorded.stderr
    check = ("import glob, passlab\n"
             "print([len(passlab.load_trace(p)) for p in sorted(glob.glob('traces/*.zip'))])\n")
    loaded = _run(venv, [py, "-c", check], tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.strip() == "[79, 79]"


def test_the_resolver_keeps_a_users_pandas_3_0_and_jupyterlab_4_5(venv, dist, tmp_path):
    """pip's resolver, --dry-run: the wheel with its notebook extra beside pandas 3.0 and
    JupyterLab 4.5 (what a user's environment may already hold) needs no other version
    of either."""
    done = _run(venv, [str(venv / "bin" / "python"), "-m", "pip", "install", "--dry-run",
                       "--ignore-installed", "--quiet", "--report", "report.json",
                       "pandas==3.0.*", "jupyterlab==4.5.*",
                       f"passlab[notebook] @ {_wheel(dist).as_uri()}"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    chosen = {i["metadata"]["name"].lower(): i["metadata"]["version"]
              for i in json.loads((tmp_path / "report.json").read_text())["install"]}
    assert chosen["pandas"].startswith("3.0.") and chosen["jupyterlab"].startswith("4.5.")
    assert chosen["passlab"] == "0.1.0"
