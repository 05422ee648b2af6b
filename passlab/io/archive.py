"""Saved traces and DumpIR-style folders.

A saved trace is one zip archive (never a pickle) holding two JSON files:

* ``trace.json``: the format name and version, target, versions, warnings, the
  pipeline as data, the failure, any other trace metadata that is plain JSON (``meta``;
  keys that are not are listed under ``dropped``), and one record per step (index,
  name, depth, parent, stage, kind, origin, occurrence, seconds, failed, and the ids of
  its ``before`` and ``after`` modules);
* ``ir.json``: every distinct module of the trace, as one ``tvm.ir.save_json`` graph of
  an array (module id = position).

``save_json`` writes each object once however many times it is referenced, so a
function that 30 snapshots share is stored once, and so are the unchanged statements
of a function a pass modified. A module node is its name -> function map plus its
attributes. Saving all modules in one graph (rather than each function on its own, keyed
by address) also keeps object identity: a ``GlobalVar`` that a call refers to is the
module's own ``GlobalVar`` after loading, which TVM's passes and ``well_formed`` need.

A loaded trace has everything but the user's Python objects: its pipeline is a
:class:`SavedPipeline` (data only: names, origins, enabled flags, notes, and how each
user pass can be rebuilt in a script), and ``failure.original`` is None.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab.errors import TraceFileError
from passlab.io.recipes import PassRecipe, function_recipe
from passlab.pipeline import PassEntry, Pipeline, Stage
from passlab.recording.trace import Failure, Step, Trace, _HashCache

__all__ = ["save_trace", "load_trace", "export_dump", "TraceFileError", "SavedPipeline",
           "SavedPassEntry", "FORMAT", "FORMAT_VERSION"]

FORMAT = "passlab-trace"
#: Version of the file layout; a reader refuses files with a higher version.
FORMAT_VERSION = 1
_META, _IR = "trace.json", "ir.json"
_STEP_FIELDS = ("index", "name", "depth", "parent", "stage", "kind", "origin", "occurrence",
                "seconds", "failed")
#: Trace metadata saved in a form of its own; any other key is kept when it is plain JSON.
_OWN_KEYS = frozenset({"target", "versions", "warnings", "input", "pipeline", "failure", "file"})


# ------------------------------------------------------------------ saved pipeline
@dataclasses.dataclass(frozen=True)
class SavedPassEntry(PassEntry):
    """A pipeline entry read from a file: ``pass_`` is None; ``recipe`` (a
    :class:`~passlab.io.recipes.PassRecipe`) says how a script rebuilds a user pass."""

    recipe: Any = None


class SavedPipeline(Pipeline):
    """A pipeline read from a saved trace: data only.

    Every view works (``to_text()``, ``rows()``, lookup by name); building does not,
    because a file cannot hold the user's pass functions.
    """

    def to_pass(self, on_error: Callable | None = None):
        raise TypeError(
            "this pipeline was loaded from a saved trace and holds no passes, only their "
            f"names; rebuild it with passlab.Pipeline.default({self.target!r}, "
            f"variant={self.variant!r}) and your edits (rows() lists them)"
        )

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + " (loaded: data only)>"


def _pipeline_data(pipe: Any) -> dict[str, Any] | None:
    if pipe is None:
        return None

    stages = []
    for stage in pipe.stages:
        passes = []
        for e in stage.passes:
            recipe = getattr(e, "recipe", None)
            if recipe is None and e.origin == "user" and e.pass_ is not None \
                    and not _tvm.is_pass(e.pass_):
                recipe = function_recipe(e.pass_, e.name)
            passes.append(dict(name=e.name, origin=e.origin, enabled=e.enabled, note=e.note,
                               recipe=None if recipe is None else recipe.to_dict()))
        stages.append(dict(name=stage.name, passes=passes))
    return dict(target=pipe.target, variant=pipe.variant, stages=stages)


def _pipeline_from(data: dict[str, Any] | None) -> SavedPipeline | None:
    if data is None:
        return None

    stages = tuple(
        Stage(s["name"], tuple(
            SavedPassEntry(p["name"], None, p["origin"], bool(p["enabled"]), p.get("note", ""),
                           None if p.get("recipe") is None else PassRecipe.from_dict(p["recipe"]))
            for p in s["passes"]))
        for s in data["stages"])
    return SavedPipeline(data["target"], data["variant"], stages)


# ---------------------------------------------------------------------------- save
class _Modules:
    """Distinct modules by C object address, in first-seen order."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.mods: list[Any] = []

    def id(self, mod: Any) -> int | None:
        if mod is None:
            return None
        key = mod.__chandle__()
        if key not in self.ids:
            self.ids[key] = len(self.mods)
            self.mods.append(mod)
        return self.ids[key]


def _step_record(s: Step, mods: _Modules) -> dict[str, Any]:
    rec = {f: getattr(s, f) for f in _STEP_FIELDS}
    rec.update(before=mods.id(s.before), after=mods.id(s.after))
    return rec


def save_trace(trace: Trace, path: str | os.PathLike) -> Path:
    """Write ``trace`` to ``path`` (a zip archive; see :mod:`passlab.io`).

    Every snapshot, the step metadata, the failure, target, versions, warnings and the
    pipeline (as data) are kept; :func:`load_trace` reads it back, in any process.

    Examples
    --------
    >>> import os, tempfile, passlab
    >>> from passlab.io import load_trace, save_trace
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> path = save_trace(trace, os.path.join(tempfile.mkdtemp(), "mlp.trace.zip"))
    >>> len(load_trace(path)) == len(trace)
    True
    """
    import tvm

    mods = _Modules()
    meta = getattr(trace, "_meta", {})
    steps = [_step_record(s, mods) for s in trace]
    indices = {s.index for s in trace}
    failure = trace.failure
    fail_rec = None
    if failure is not None:
        fail_rec = dict(where=failure.where, message=failure.message,
                        error_type=failure.error_type, enclosing=list(failure.enclosing),
                        note=failure.note,
                        step=None if failure.step is None else failure.step.index)
        if failure.step is not None and failure.step.index not in indices:
            fail_rec["step_record"] = _step_record(failure.step, mods)  # a sliced trace
    data = dict(
        format=FORMAT, version=FORMAT_VERSION, target=trace.target,
        versions=dict(meta.get("versions") or _tvm.versions()),
        warnings=list(trace.warnings), input=mods.id(trace.input),
        pipeline=_pipeline_data(trace.pipeline), failure=fail_rec, steps=steps,
    )
    extra, dropped = {}, []
    for key, value in meta.items():
        if key not in _OWN_KEYS:
            try:
                extra[key] = json.loads(json.dumps(value))
            except (TypeError, ValueError):
                dropped.append(key)
    data.update(meta=extra, dropped=dropped)
    ir = tvm.ir.save_json(list(mods.mods))
    data["stats"] = dict(steps=len(steps), modules=len(mods.mods), ir_bytes=len(ir))
    path = Path(path)
    # write next to the target, then rename: a crash never leaves a half-written trace
    fd, tmp = tempfile.mkstemp(prefix=".passlab-", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED,
                                                        compresslevel=6) as z:
            z.writestr(_META, json.dumps(data, indent=1))
            z.writestr(_IR, ir)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------------------- load
def _bad(path: Path, what: str) -> TraceFileError:
    return TraceFileError(f"{path} is not a readable passlab trace: {what}. A trace file is "
                          f"the zip archive written by trace.save(path) (format {FORMAT!r}, "
                          f"version {FORMAT_VERSION} or lower).")


def _read(path: Path) -> tuple[dict[str, Any], str]:
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if _META not in names:
                raise _bad(path, f"the archive has no {_META} (it holds {sorted(names)[:5]})")
            data = json.loads(z.read(_META))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise _bad(path, f"{_META} does not say format {FORMAT!r}")
            version = data.get("version")
            if not isinstance(version, int):
                raise _bad(path, f"{_META} has no integer format version")
            if version > FORMAT_VERSION:
                raise TraceFileError(
                    f"{path} was written by a newer passlab (trace format version {version}); "
                    f"this passlab reads versions up to {FORMAT_VERSION}: upgrade passlab "
                    "(pip install -U passlab) to read it.")
            if _IR not in names:
                raise _bad(path, f"the archive has no {_IR} (the IR of its modules)")
            ir = z.read(_IR).decode()
    except FileNotFoundError:
        raise TraceFileError(f"no trace file at {path}") from None
    except TraceFileError:
        raise
    except zipfile.BadZipFile as exc:
        raise _bad(path, f"it is not a complete zip archive ({exc}); a truncated or "
                         "overwritten file looks like this") from None
    except (EOFError, OSError, ValueError, UnicodeDecodeError) as exc:  # zlib, CRC, JSON
        raise _bad(path, f"its content is corrupt ({type(exc).__name__}: {exc})") from None
    return data, ir


def load_trace(path: str | os.PathLike) -> Trace:
    """Read a trace written by :func:`save_trace`.

    Raises
    ------
    TraceFileError
        The file is missing, not a trace, truncated, corrupt, or from a newer passlab.
    """
    import tvm

    path = Path(path)
    data, ir = _read(path)
    saved_with = data.get("versions", {}).get("apache-tvm", "?")
    try:
        modules = list(tvm.ir.load_json(ir))
    except Exception as exc:  # TVM raises its own error types
        raise TraceFileError(
            f"{path}: apache-tvm {_tvm.versions().get('apache-tvm')} could not read the IR "
            f"saved with apache-tvm {saved_with} ({str(exc).strip().splitlines()[-1][:300]}); "
            "load the trace with the TVM version that saved it") from None
    try:
        return _trace_from(data, modules, path)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _bad(path, f"{_META} is missing or has a wrong field ({type(exc).__name__}: "
                         f"{exc})") from None


def _trace_from(data: dict[str, Any], modules: list[Any], path: Path) -> Trace:
    def mod(i: int | None) -> Any:
        if i is None:
            return None
        if not 0 <= i < len(modules):
            raise IndexError(f"module id {i} out of range 0..{len(modules) - 1}")
        return modules[i]

    cache = _HashCache()

    def step(r: dict[str, Any]) -> Step:
        return Step(int(r["index"]), str(r["name"]), int(r["depth"]),
                    None if r["parent"] is None else int(r["parent"]), str(r["stage"]),
                    str(r["kind"]), str(r["origin"]), int(r["occurrence"]),
                    None if r["seconds"] is None else float(r["seconds"]),
                    mod(r["before"]), mod(r["after"]), bool(r["failed"]), cache)

    steps = [step(r) for r in data["steps"]]
    meta: dict[str, Any] = dict(data.get("meta") or {})
    meta.update(
        target=data.get("target"), pipeline=_pipeline_from(data.get("pipeline")),
        input=mod(data.get("input")), versions=dict(data.get("versions", {})),
        file=str(path))
    if data.get("warnings"):
        meta["warnings"] = list(data["warnings"])
    f = data.get("failure")
    if f is not None:
        by_index = {s.index: s for s in steps}
        fstep = None
        if f.get("step") is not None:
            fstep = by_index.get(f["step"]) or step(f["step_record"])
        meta["failure"] = Failure(f["where"], f["message"], f["error_type"], fstep,
                                  tuple(f.get("enclosing", ())), f.get("note", ""))
    return Trace(steps, meta)


# ------------------------------------------------------------------------- dumps
_DUMP_FILE = re.compile(r"^\d{3,}_.+\.py$")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "pass"


def export_dump(trace: Trace, folder: str | os.PathLike, *,
                all_steps: bool = False) -> tuple[Path, ...]:
    """Write the module after each pass as numbered TVMScript files, for diff tools.

    ``000_input.py`` is the module the build started from; then one file per pass of
    the main chain that changed the module (``all_steps=True``: every main-chain pass
    that finished), numbered in order (``001_LegalizeOps.py``, ...), each headed by a
    comment naming the step. ``passes.txt`` holds the pass table and, for a failed
    build, ``failure.txt`` what failed. Earlier dump files in ``folder`` are replaced.

    Examples
    --------
    >>> import tempfile, passlab
    >>> from passlab.io import export_dump
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> files = export_dump(trace, tempfile.mkdtemp())
    >>> [f.name for f in files[:3]]
    ['000_input.py', '001_LegalizeOps.py', '002_AnnotateTIROpPattern.py']
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if _DUMP_FILE.match(old.name) or old.name in ("passes.txt", "failure.txt"):
            old.unlink()
    main = [s for s in trace if s.kind == "pass" and s.after is not None
            and (all_steps or s.changed)]
    first = trace.input if trace.input is not None else next(
        (s.before for s in trace if s.kind == "pass"), None)
    width = max(3, len(str(len(main))))
    written: list[Path] = []
    head = f"# target {trace.target}"
    if first is not None:
        written.append(_write_module(out / f"{0:0{width}d}_input.py", first,
                                     f"# passlab dump: the input module\n{head}"))
    for n, s in enumerate(main, 1):
        ch = s.functions_changed
        what = "; ".join(f"{k}: {', '.join(v)}" for k, v in
                         (("added", ch.added), ("removed", ch.removed), ("modified", ch.modified))
                         if v) or ("module attributes changed" if ch.attrs else "no change")
        ms = "" if s.seconds is None else f", {s.seconds * 1e3:.2f} ms"
        text = (f"# passlab dump: after step #{s.index} {s.label} (stage {s.stage}, "
                f"{s.origin} pass{ms})\n# {what}\n{head}")
        written.append(_write_module(out / f"{n:0{width}d}_{_safe(s.label)}.py", s.after, text))
    (out / "passes.txt").write_text(trace.to_text() + "\n")
    if trace.failure is not None:
        (out / "failure.txt").write_text(trace.failure.to_text() + "\n")
    return tuple(written)


def _write_module(path: Path, mod: Any, header: str) -> Path:
    try:
        body = mod.script()
    except Exception as exc:  # noqa: BLE001 - one unprintable module must not stop a dump
        body = f"# could not print this module as TVMScript: {type(exc).__name__}: {exc}"
    path.write_text(f"{header}\n\n{body}\n")
    return path
