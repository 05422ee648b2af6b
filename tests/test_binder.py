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
    "notebook": {"ipywidgets", "anywidget", "IPython", "nbformat"},
}


def binder_modules() -> set[str]:
    found = {"passlab"}
    for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-e ."):
            found |= {"tvm", "numpy", "pandas"}  # passlab's own dependencies
            extras = re.search(r"\[(.*)\]", line)
            for extra in extras.group(1).split(",") if extras else ():
                found |= PROVIDES.get(extra.strip(), set())
        elif line and not line.startswith("-"):
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
    assert [ln for ln in lines if ln.startswith("-e")] == ["-e .[notebook,onnx,torch,dask]"]


def test_binder_takes_torch_from_pytorchs_cpu_index():
    """Plain PyPI's torch is the CUDA build (cuda-toolkit, cudnn, nccl, triton...): Binder
    names PyTorch's CPU wheel index and the +cpu local version, and installs at the
    versions of constraints.txt."""
    lines = [ln.strip() for ln in (ROOT / "binder" / "requirements.txt").read_text()
             .splitlines() if ln.strip() and not ln.startswith("#")]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    torch = [ln for ln in lines if re.match(r"torch\b", ln)]
    assert len(torch) == 1 and torch[0].endswith("+cpu"), torch
    assert "-c ../constraints.txt" in lines
    pinned = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines()
              if ln.startswith("torch==")]
    assert pinned == [torch[0]]  # one torch version for make, CI and Binder


def test_the_package_declares_ranges_and_the_constraints_pin_them():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                      for d in extra]
    exact = sorted(d.split(";")[0] for d in deps if "==" in d)
    assert exact == ["apache-tvm-ffi==0.1.14.post0", "apache-tvm==0.27.0.post1"]
    assert project["license"] == "Apache-2.0"
    pins = {ln.split("==")[0].lower() for ln in (ROOT / "constraints.txt").read_text()
            .splitlines() if "==" in ln and not ln.startswith("#")}
    names = {re.split(r"[\[<>=!~; ]", d)[0].lower() for d in deps}
    assert sorted(names - pins - {"passlab", "tomli"}) == []  # every dependency pinned there
