"""passlab.analysis as a namespace: every analysis and its result type, and the public
names of ``passlab`` typed for checkers (no TVM needed)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import passlab
import passlab.analysis as analysis
from passlab._render import Displayable

ROOT = Path(__file__).resolve().parents[1]
#: The public analysis modules (the private ``_*`` ones serve them).
PUBLIC = ("diff", "graph", "buffers", "table", "partitions", "provenance", "explain")


def test_every_analysis_and_result_type_is_exported():
    missing = []
    for short in PUBLIC:
        module = importlib.import_module(f"passlab.analysis.{short}")
        for name in module.__all__:
            value = getattr(module, name)
            is_result = inspect.isclass(value) and issubclass(value, Displayable)
            is_analysis = inspect.isfunction(value) and value.__module__ == module.__name__ and (
                inspect.signature(value).return_annotation not in ("str", "None"))
            if (is_result or is_analysis) and name not in analysis.__all__:
                missing.append(f"{short}.{name}")
    assert missing == []
    for name in analysis.__all__:
        assert getattr(analysis, name) is not None, name
    assert set(analysis.__all__) >= {"explain_step", "Explanation", "Card", "provenance",
                                     "Provenance", "partitions", "PartitionReport"}


def test_an_exported_function_stays_the_function_once_its_module_is_imported():
    importlib.import_module("passlab.analysis.diff")
    importlib.import_module("passlab.analysis.provenance")
    assert analysis.diff is passlab.diff and inspect.isfunction(analysis.diff)
    assert analysis.provenance is passlab.provenance and inspect.isfunction(analysis.provenance)
    assert analysis.explain is passlab.explain


def test_every_lazy_public_name_is_typed():
    tree = ast.parse((ROOT / "passlab" / "__init__.py").read_text())
    typed = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                typed |= {a.asname or a.name for a in imp.names}
    assert typed == set(passlab._LAZY)
    assert set(passlab.__all__) <= typed | set(vars(passlab))
