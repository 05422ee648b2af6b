"""The Examples blocks of the public entry points run as written."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import passlab

ROOT = Path(__file__).resolve().parents[1]
#: Every module of the package whose docstrings hold examples (found from the source, so a
#: new module's examples run without being listed here).
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "passlab").rglob("*.py") if ">>> " in path.read_text()
)


def test_public_modules_have_examples():
    for name in ["passlab", "passlab.pipeline", "passlab.recording.trace",
                 "passlab.recording.build", "passlab.models", "passlab.analysis.diff",
                 "passlab.backend", "passlab.io.reproducer", "passlab.recording.checks"]:
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"passlab": passlab}, verbose=False,
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_import_is_cheap():
    """`import passlab` imports neither TVM nor Jupyter nor pandas."""
    import subprocess
    import sys

    code = ("import sys, passlab; bad = [m for m in ('tvm', 'ipywidgets', 'IPython', 'pandas', "
            "'graphviz') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
