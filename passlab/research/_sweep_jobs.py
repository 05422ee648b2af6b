"""Sweep jobs as plain data.

A job is a dict of plain values (strings, numbers, lists, numpy arrays) so that any
`concurrent.futures.Executor` can carry it: passlab's own worker processes, Dask's
`Client.get_executor()`, Ray's executor. Pipelines travel as recipes: TVM's own passes
by their place in `Pipeline.default(target, variant)`, user passes by import path (with
the `sys.path` folder they were imported from), user TVM passes by name.

What runs a job is `passlab.research._supervise.run_job` (on a worker: it watches a
build process) and `passlab.research._sweep_build` (the build process itself); the
engine that hands jobs to workers is `passlab.research._jobs`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab.errors import SweepError
from passlab.io.recipes import _NAMESPACES, _import_parts
from passlab.pipeline import PassEntry, Pipeline, Stage

#: The columns of a sweep row, in order (issue 17).
COLUMNS = ("model", "pipeline", "status", "error", "build_s", "passes", "kernels",
           "peak_bytes", "peak_bytes_unplanned", "max_abs_diff", "trace", "report",
           "run_s", "run_s_vs_default")

#: The files a job leaves in its folder besides its record (`job.json`).
FILES = ("trace.zip", "report.html", "outputs.npz")

_MOVE_IT = ("define it at the top level of a module (a .py file next to your notebook, "
            "e.g. my_passes.py) and import it from there: worker processes import passes "
            "by module and name")


def empty_row(model: str, pipeline: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(model=model, pipeline=pipeline, status="ok", error="")
    return row


# -------------------------------------------------------------------- pass recipes
def _callable_ref(obj: Any, what: str) -> dict[str, Any]:
    """`{"kind": "import", module, qualname, root, source_sha}` or a SweepError."""
    parts = _import_parts(obj)
    if parts is None:
        mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
        if mod == "__main__":
            why = "it is defined in __main__ (a notebook cell or the script you ran)"
        elif "<lambda>" in str(qual):
            why = "it is a lambda"
        elif "<locals>" in str(qual):
            why = "it is defined inside another function"
        else:
            why = f"it is a {type(obj).__name__} that cannot be imported by name"
        raise SweepError(f"{what} cannot travel to a worker process: {why}; {_MOVE_IT}.")
    module, qual, root = parts
    return dict(kind="import", module=module, qualname=qual,
                root=None if root is None else str(root), source_sha=_source_sha(module))


def _source_sha(module: str) -> str | None:
    """Hash of the module's file: an edited pass makes its jobs run again."""
    file = getattr(sys.modules.get(module), "__file__", None)
    try:
        return hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16] if file else None
    except OSError:
        return None


def _tvm_pass_ref(p: Any, what: str) -> dict[str, Any]:
    """A user-inserted TVM pass rebuilt by name (TVM's public constructors, no arguments)."""
    import importlib

    name = _tvm.pass_name(p)
    prefix, _, base = name.rpartition(".")
    for ns_name in _NAMESPACES.get(prefix, ()):
        ctor = getattr(importlib.import_module(ns_name), base, None)
        try:
            built = ctor() if callable(ctor) else None
        except Exception:  # noqa: BLE001 - a constructor that needs arguments: not by name
            built = None
        if built is not None and _tvm.is_pass(built) and _tvm.pass_name(built) == name:
            return dict(kind="tvm", module=ns_name, ctor=base)
    raise SweepError(f"{what} cannot travel to a worker process: it is a TVM pass that TVM "
                     f"has no argument-free public constructor for; wrap it in a function "
                     f"(mod -> mod) and {_MOVE_IT}.")


def _entry_ref(entry: PassEntry, stage: str, seen: Counter) -> dict[str, Any]:
    what = f"pass {entry.name!r}"
    if entry.origin == "tvm" and entry.pass_ is not None:
        k = seen[(stage, entry.name)]
        seen[(stage, entry.name)] += 1
        return dict(kind="default", stage=stage, name=entry.name, occurrence=k)
    if entry.pass_ is None:
        raise SweepError(f"{what} has no pass object (a pipeline loaded from a trace file "
                         "holds names only); rebuild the pipeline from Pipeline.default()")
    if _tvm.is_pass(entry.pass_):
        try:
            return _callable_ref(entry.pass_, what)
        except SweepError:
            return _tvm_pass_ref(entry.pass_, what)
    return _callable_ref(entry.pass_, f"user {what}")


#: The pipeline's fields that hold stages: the Relax stages, and the TIR stages where the
#: Pipeline has them (their names differ from the Relax ones).
_STAGE_FIELDS = ("stages", "tir_stages")


def pipeline_recipe(pipe: Pipeline) -> dict[str, Any]:
    """A pipeline as plain data (see `pipeline_from_recipe`)."""
    if not isinstance(pipe, Pipeline):
        raise SweepError(f"a sweep pipeline is a passlab.Pipeline or a variant name "
                         f"('fused', 'build'), not {type(pipe).__name__}")
    seen: Counter = Counter()
    out: dict[str, Any] = dict(target=pipe.target, variant=pipe.variant)
    for field in _STAGE_FIELDS:
        if hasattr(pipe, field):
            out[field] = [dict(name=s.name, passes=[
                dict(name=e.name, origin=e.origin, enabled=e.enabled, note=e.note,
                     ref=_entry_ref(e, s.name, seen)) for e in s.passes])
                for s in getattr(pipe, field)]
    if pipe.llvm_opts:  # absent for none: the default pipeline's recipe stays as it was
        out["llvm_options"] = list(pipe.llvm_opts)
    return out


def is_baseline(recipe: dict[str, Any]) -> bool:
    """True for the unmodified `Pipeline.default(target)` (the fused variant)."""
    return recipe["variant"] == "fused" and recipe == pipeline_recipe(
        Pipeline.default(recipe["target"]))


def _resolve(ref: dict[str, Any], defaults: dict[tuple, Any]) -> Any:
    import importlib

    if ref["kind"] == "default":
        return defaults[(ref["stage"], ref["name"], ref["occurrence"])]
    root = ref.get("root")
    if root is not None and root not in sys.path:
        sys.path.insert(0, root)
    if ref["kind"] == "tvm":
        return getattr(importlib.import_module(ref["module"]), ref["ctor"])()
    obj: Any = importlib.import_module(ref["module"])
    for part in ref["qualname"].split("."):
        obj = getattr(obj, part)
    return obj


def pipeline_from_recipe(recipe: dict[str, Any]) -> Pipeline:
    """The pipeline a recipe describes, with live pass objects (in a worker)."""
    import dataclasses

    default = Pipeline.default(recipe["target"], recipe["variant"])
    fields = [f for f in _STAGE_FIELDS if f in recipe and hasattr(default, f)]
    defaults: dict[tuple, Any] = {}
    for field in fields:
        for s in getattr(default, field):
            seen: Counter = Counter()
            for e in s.passes:
                defaults[(s.name, e.name, seen[e.name])] = e.pass_
                seen[e.name] += 1
    stages: dict[str, Any] = {field: tuple(
        Stage(s["name"], tuple(PassEntry(p["name"], _resolve(p["ref"], defaults), p["origin"],
                                         p["enabled"], p["note"]) for p in s["passes"]))
        for s in recipe[field]) for field in fields}
    return dataclasses.replace(default, **stages).llvm_options(*recipe.get("llvm_options", ()))


# ------------------------------------------------------------------- check recipes
def check_recipe(check: Any) -> dict[str, Any]:
    """A check as data: passlab's built-in checks by factory, others by import path."""
    import re

    from passlab.recording.checks import Check

    if isinstance(check, str):
        return dict(kind="builtin", factory=check, args={})
    if isinstance(check, Check):
        qual = getattr(check.fn, "__qualname__", "")
        if qual.startswith(("well_formed.", "immutable_modules.")):
            return dict(kind="builtin", factory=qual.split(".")[0], args={})
        m = re.fullmatch(r"no (.*)\* ops after (.*)", check.name)
        if m and qual.startswith("no_ops_after."):
            return dict(kind="builtin", factory="no_ops_after",
                        args=dict(prefix=m[1], after=m[2]))
    return _callable_ref(check, f"check {getattr(check, 'name', check)!r}")


def check_from_recipe(recipe: dict[str, Any]) -> Any:
    from passlab.recording import checks

    if recipe["kind"] == "builtin":
        if recipe["factory"] not in ("well_formed", "immutable_modules", "no_ops_after"):
            raise SweepError(f"unknown check {recipe['factory']!r}; passlab's checks by name "
                             "are 'well_formed', 'immutable_modules' and 'no_ops_after'")
        return getattr(checks, recipe["factory"])(**recipe["args"])
    return _resolve(recipe, {})


# ------------------------------------------------------------------- model specs
def model_spec(model: Any, trust: bool = False) -> tuple[dict[str, Any], str]:
    """`(spec, default label)`: built-in names and files travel as names, anything else
    as the IRModule's JSON (`tvm.ir.save_json`). A `.pt2` file that only loads by
    running code from it is refused here, before anything is built, unless `trust`."""
    from passlab.models import NAMES, as_module

    if isinstance(model, str) and model in NAMES:
        return dict(kind="builtin", name=model), model
    if isinstance(model, (str, os.PathLike)) and not (isinstance(model, str) and "\n" in model):
        path = Path(model)
        if path.is_file():
            sha = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            spec: dict[str, Any] = dict(kind="path", path=str(path.resolve()), sha=sha)
            if path.suffix.lower() == ".pt2":
                if trust:
                    spec["trust"] = True  # the worker loads it with torch.export.load
                else:
                    _check_pt2(path)
            return spec, path.stem
    import tvm

    text = tvm.ir.save_json(as_module(model))
    return dict(kind="ir", json=text, sha=hashlib.sha256(text.encode()).hexdigest()[:16]), ""


def model_from_spec(spec: dict[str, Any]) -> Any:
    from passlab.models import as_module

    if spec["kind"] == "ir":
        import tvm

        return tvm.ir.load_json(spec["json"])  # written by model_spec in the parent
    if spec["kind"] == "builtin":
        return as_module(spec["name"])
    return as_module(spec["path"], trust=spec.get("trust") is True)


def _check_pt2(path: Path) -> None:
    """Refuse an untrusted `.pt2` in the sweep's own process (the worker checks again)."""
    try:
        import torch  # noqa: F401 - the check reads the archive with torch's reader
    except ImportError:
        return  # the worker names the missing extra in the job's row
    from passlab.models._pt2 import check_archive

    check_archive(path)


def job_key(job: dict[str, Any]) -> str:
    """What makes two jobs the same: model, pipeline, checks, inputs, versions."""
    spec = {k: v for k, v in job["model_spec"].items() if k != "json"}
    seed, arrays = job["inputs"]
    digest = hashlib.sha256()
    for a in arrays or ():
        digest.update(str((a.shape, str(a.dtype))).encode())
        digest.update(a.tobytes())
    data = dict(model=spec, pipeline=job["pipeline_recipe"], checks=job["checks"], seed=seed,
                arrays=digest.hexdigest(), versions=_tvm.versions())
    if job.get("profile") is not None:  # a profiled job is another job (it has run_s)
        data["profile"] = job["profile"]
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:24]


def job_place(job: dict[str, Any]) -> tuple[Path, list[str]]:
    """Where a job's files go: the sweep's `out` folder (the user's choice, trusted as
    given) and the folder names below it (each checked: never a link)."""
    if job.get("out") is not None:
        return Path(job["out"]), list(job["parts"])
    folder = Path(job["folder"])
    return folder.parent, [folder.name]
