"""Static checks: ruff's rule set and mypy's type check (both configured in pyproject.toml)
fail the suite on any finding."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    out = subprocess.run([ruff, "check", "--output-format", "concise", "passlab", "tests",
                          "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_mypy_finds_nothing():
    """``mypy`` (pyproject's [tool.mypy]: packages = ["passlab"], check_untyped_defs) is
    clean; TVM, torch and the notebook stack count as Any. Under a second with mypy's cache
    (.mypy_cache), about 15 s without: slow."""
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed: pip install -e '.[test]'")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ""


def test_the_package_ships_its_type_information():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["passlab"]
    assert (ROOT / "passlab" / "py.typed").is_file()
    assert config["tool"]["mypy"]["packages"] == ["passlab"]
