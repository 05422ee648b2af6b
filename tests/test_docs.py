"""The Examples blocks of the public entry points run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

import passlab

MODULES = ["passlab", "passlab.pipeline", "passlab.trace", "passlab.build", "passlab.models",
           "passlab.analysis.diff", "passlab.analysis.graph", "passlab.analysis.buffers",
           "passlab.views.report", "passlab.importers", "passlab.backend", "passlab.analysis.table",
           "passlab.analysis.partitions", "passlab.research", "passlab.research.predicates",
           "passlab.research.compare", "passlab.research.blame", "passlab.research.rerun",
           "passlab.research.bisect"]


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
