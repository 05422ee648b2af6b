"""binder/: what Binder installs covers what every notebook imports.

Building the environment itself (a fresh venv, the requirements, postBuild, every notebook
run in it) takes minutes: that is `.ci/binder-check`, not part of the suite."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs the 'notebook' extra")

ROOT = Path(__file__).parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the modules each requirement brings, for the requirements binder/requirements.txt names
PROVIDES = {
    "apache-tvm": {"tvm"}, "numpy": {"numpy"}, "pandas": {"pandas"}, "graphviz": {"graphviz"},
    "ipywidgets": {"ipywidgets"}, "anywidget": {"anywidget"}, "ipykernel": {"IPython"},
    "onnx": {"onnx", "onnxruntime"}, "torch": {"torch"}, "dask": {"dask"},
}


def binder_modules() -> set[str]:
    found = {"passlab"}
    for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-e ."):
            found |= {"tvm", "numpy", "pandas", "graphviz"}  # passlab's own dependencies
            extras = re.search(r"\[(.*)\]", line)
            for extra in extras.group(1).split(",") if extras else ():
                found |= PROVIDES.get(extra.strip(), set())
        elif line:
            found |= PROVIDES.get(re.split(r"[=<>\[ ]", line)[0], set())
    return found


def notebook_imports(path: Path) -> set[str]:
    local = {p.stem for p in path.parent.glob("*.py")}  # helpers shipped beside them
    found = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            found |= {m.split(".")[0] for m in
                      re.findall(r"^\s*(?:from|import)\s+([\w.]+)", cell.source, re.M)}
    return found - set(sys.stdlib_module_names) - local


def test_binder_installs_what_every_notebook_imports():
    have = binder_modules()
    missing = {p.name: sorted(notebook_imports(p) - have) for p in NOTEBOOKS}
    assert {k: v for k, v in missing.items() if v} == {}


def test_binder_requirements_name_the_extras():
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert [ln for ln in lines if ln.startswith("-e")] == ["-e .[onnx,torch,dask]"]
