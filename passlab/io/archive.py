"""Saved traces (numbered dump folders for diff tools are `passlab.io.dump`).

A saved trace is one zip archive (never a pickle) holding two JSON files:

* `trace.json`: the format name and version, target, versions, warnings, the
  pipeline as data, the failure, any other trace metadata that is plain JSON (`meta`;
  keys that are not are listed under `dropped`), and one record per step (index,
  name, depth, parent, stage, kind, origin, occurrence, seconds, failed, and the ids of
  its `before` and `after` modules);
* `ir.json`: every distinct module of the trace, as one `tvm.ir.save_json` graph of
  an array (module id = position);
* `llvm.json` and `llvm.txt`, for a trace recorded with LLVM's passes: every distinct
  line of LLVM IR once (`llvm.txt`), each function text as runs of line ids, and per
  LLVM step the ids of its functions' texts before and after (`passlab.io._llvm_json`).

`save_json` writes each object once however many times it is referenced, so a
function that 30 snapshots share is stored once, and so are the unchanged statements
of a function a pass modified. A module node is its name -> function map plus its
attributes. Saving all modules in one graph (rather than each function on its own, keyed
by address) also keeps object identity: a `GlobalVar` that a call refers to is the
module's own `GlobalVar` after loading, which TVM's passes and `well_formed` need.

A loaded trace has everything but the user's Python objects: its pipeline is a
`SavedPipeline` (data only: names, origins, enabled flags, notes, and how each
user pass can be rebuilt in a script), and `failure.original` is None.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab._progress import Bar, ProgressArg, bar
from passlab._render import no_cycle_collection
from passlab._tvm.tir import TIR_STAGES
from passlab.errors import TraceFileError
from passlab.io import _llvm_json as _llvm
from passlab.io import _save_advice, _save_temp
from passlab.io import validate as _limits
from passlab.io._tensor_store import stored_graph
from passlab.io._trace_json import check_trace_json
from passlab.io._wellformed import check_loaded
from passlab.io._zipcheck import check_container
from passlab.io.recipes import PassRecipe, function_recipe
from passlab.pipeline import PassEntry, Pipeline, Stage
from passlab.recording.codegen import GeneratedCode
from passlab.recording.trace import Failure, Step, Trace, _HashCache

__all__ = ["save_trace", "load_trace", "TraceFileError", "SavedPipeline",
           "SavedPassEntry", "FORMAT", "FORMAT_VERSION"]

FORMAT = "passlab-trace"
#: Version of the file layout; a reader refuses files with a higher version.
FORMAT_VERSION = 1
_META, _IR = "trace.json", "ir.json"
_STEP_FIELDS = ("index", "name", "depth", "parent", "stage", "kind", "origin", "occurrence",
                "seconds", "failed", "caught")
#: Trace metadata saved in a form of its own; any other key is kept when it is plain JSON.
_OWN_KEYS = frozenset({"target", "versions", "warnings", "input", "pipeline", "failure", "file",
                       "weights", "llvm"})


# ------------------------------------------------------------------ saved pipeline
@dataclasses.dataclass(frozen=True)
class SavedPassEntry(PassEntry):
    """A pipeline entry read from a file: `pass_` is None; `recipe` (a
    `PassRecipe`) says how a script rebuilds a user pass."""

    recipe: Any = None


class SavedPipeline(Pipeline):
    """A pipeline read from a saved trace: data only.

    Every view works (`to_text()`, `rows()`, lookup by name); building does not,
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
    for stage in getattr(pipe, "all_stages", pipe.stages):  # Relax, then TIR stages
        passes = []
        for e in stage.passes:
            recipe = getattr(e, "recipe", None)
            if recipe is None and e.origin == "user" and e.pass_ is not None \
                    and not _tvm.is_pass(e.pass_):
                recipe = function_recipe(e.pass_, e.name)
            passes.append(dict(name=e.name, origin=e.origin, enabled=e.enabled, note=e.note,
                               recipe=None if recipe is None else recipe.to_dict()))
        stages.append(dict(name=stage.name, passes=passes))
    return dict(target=pipe.target, variant=pipe.variant, stages=stages,
                llvm_options=list(getattr(pipe, "llvm_opts", ())),
                llvm_passes=bool(getattr(pipe, "llvm_passes", False)))


def _pipeline_from(data: dict[str, Any] | None) -> SavedPipeline | None:
    if data is None:
        return None

    stages = tuple(
        Stage(s["name"], tuple(
            SavedPassEntry(p["name"], None, p["origin"], bool(p["enabled"]), p.get("note", ""),
                           None if p.get("recipe") is None else PassRecipe.from_dict(p["recipe"]))
            for p in s["passes"]))
        for s in data["stages"])
    tir = tuple(s for s in stages if s.name in TIR_STAGES)
    return SavedPipeline(data["target"], data["variant"],
                         tuple(s for s in stages if s.name not in TIR_STAGES), tir,
                         tuple(data.get("llvm_options", ())),  # absent before LLVM's passes
                         data.get("llvm_passes", False) is True)


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


def save_trace(trace: Trace, path: str | os.PathLike, *, weights: bool = True,
               progress: ProgressArg = None) -> Path:
    """Write `trace` to `path` (a zip archive; see `passlab.io`).

    Every snapshot, the step metadata, the failure, target, versions, warnings and the
    pipeline (as data) are kept; `load_trace` reads it back, in any process. Each
    tensor constant is stored once by content; `weights=False` stores each as an empty
    tensor of its data type (its shape stays in the constant's type). The file is checked
    against `load_trace`'s limits before it takes `path`'s place (it is compressed
    meanwhile, in a thread): a trace that would break one raises `TraceFileError`
    naming it, and nothing is written. `progress`: a bar of the save's phases when it
    takes more than a second (see `passlab.build`'s `progress`).

    Examples
    --------
    >>> import os, tempfile, passlab
    >>> from passlab.io import load_trace, save_trace
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> path = save_trace(trace, os.path.join(tempfile.mkdtemp(), "mlp.trace.zip"))
    >>> len(load_trace(path)) == len(trace)
    True
    """
    delay = _SHOW_AFTER_S if progress is None else 0.0
    with no_cycle_collection(), bar(progress, total=len(_SAVE_PHASES), desc="save trace",
                                    unit="phase", delay=delay) as shown:
        path = _save(trace, Path(path), weights, shown)
        shown.goto(len(_SAVE_PHASES), note=f"{path.name}, {path.stat().st_size / 1e6:.1f} MB")
        return path


#: The phases a bar of `save_trace` and `load_trace` shows (each can take seconds on a
#: large trace), and how long either runs before its bar appears.
_SAVE_PHASES = ("collecting the modules", "TVM writes the IR", "checking and compressing")
_LOAD_PHASES = ("reading the archive", "checking the IR graph", "TVM reads the IR",
                "checking each function", "making the steps")
_SHOW_AFTER_S = 1.0


def _save(trace: Trace, path: Path, weights: bool, shown: Bar) -> Path:
    import tvm

    shown.note(_SAVE_PHASES[0])
    mods = _Modules()
    meta = getattr(trace, "_meta", {})
    steps = [_step_record(s, mods) for s in trace]
    indices = {s.index for s in trace}
    failure = trace.failure
    fail_rec: dict[str, Any] | None = None
    if failure is not None:
        fail_rec = dict(where=failure.where, message=_fit(failure.message, _limits.MAX_STRING),
                        error_type=_fit(failure.error_type, _limits.MAX_NAME),
                        enclosing=[_fit(e, _limits.MAX_NAME) for e in failure.enclosing],
                        note=_fit(failure.note, _limits.MAX_STRING),
                        step=None if failure.step is None else failure.step.index)
        if failure.step is not None and failure.step.index not in indices:
            fail_rec["step_record"] = _step_record(failure.step, mods)  # a sliced trace
    data = dict(
        format=FORMAT, version=FORMAT_VERSION, target=trace.target,
        versions=dict(meta.get("versions") or _tvm.versions()),
        warnings=[_fit(w, _limits.MAX_STRING) for w in trace.warnings],
        input=mods.id(trace.input),
        pipeline=_pipeline_data(trace.pipeline), failure=fail_rec, steps=steps,
        code=_code_data(trace),
    )
    extra, dropped = {}, []
    for key, value in meta.items():
        if key not in _OWN_KEYS:
            try:
                extra[key] = json.loads(json.dumps(value))
            except (TypeError, ValueError):
                dropped.append(key)
    data.update(meta=extra, dropped=dropped)
    shown.goto(1, note=_SAVE_PHASES[1])
    graph, tensors = stored_graph(json.loads(tvm.ir.save_json(list(mods.mods))), weights)
    shown.goto(2, note=_SAVE_PHASES[2])
    # compact (no spaces to write, compress or skip) and exact: json.loads gives back
    # `graph` itself, so the checks below read what the file holds without parsing it again
    ir = json.dumps(graph, separators=(",", ":"), check_circular=False).encode()
    data["weights"] = bool(weights) and meta.get("weights", True) is not False
    data["stats"] = dict(steps=len(steps), modules=len(mods.mods), ir_bytes=len(ir), **tensors)
    llvm = _llvm.llvm_data(trace)
    llvm_bytes = None if llvm is None else (
        json.dumps(llvm[0], separators=(",", ":"), check_circular=False).encode(),
        llvm[1].encode())
    meta_bytes = json.dumps(data, indent=1).encode()
    # write next to the target, then rename: a crash never leaves a half-written trace.
    # The archive is compressed in a thread while the checks run (zlib lets go of the GIL);
    # a check that fails stops it and nothing is left behind.
    # (locked while written: the next save to the folder removes it if this process dies)
    fd, tmp = _save_temp.fresh(path.parent)
    stop = threading.Event()
    written = None
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="passlab-save") as pool:
            written = pool.submit(_write_archive, fd, meta_bytes, ir, stop, llvm_bytes)
            try:
                _check_before_write(meta_bytes, ir, graph, path, llvm_bytes)
            except BaseException:  # refused or interrupted: stop the writer before the
                stop.set()  # pool waits for it
                raise
            del graph
            written.result()
        os.replace(tmp, path)
    except BaseException:
        stop.set()
        if written is None:  # the writer never started (interpreter shutting down)
            os.close(fd)
        else:
            with contextlib.suppress(BaseException):
                written.result()
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: Bytes of ir.json handed to the compressor at a time: small enough that a refused save
#: stops within a few milliseconds, large enough that the loop costs nothing.
_CHUNK = 4 << 20


class _Stopped(Exception):
    """The checks refused the trace while its archive was being written."""


def _write_archive(fd: int, meta: bytes, ir: bytes, stop: threading.Event,
                   llvm: tuple[bytes, bytes] | None = None) -> None:
    """Write the trace's zip archive to the open file `fd` (and close it)."""
    with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED,
                                                    compresslevel=6) as z:
        z.writestr(_META, meta)
        if llvm is not None:
            z.writestr(_llvm.LLVM_MEMBER, llvm[0])
            z.writestr(_llvm.LINES_MEMBER, llvm[1])
        info = zipfile.ZipInfo(_IR, date_time=time.localtime(time.time())[:6])
        info.compress_type = zipfile.ZIP_DEFLATED  # at zlib's default level, 6
        info.external_attr = 0o600 << 16  # as ZipFile.writestr: -rw-------
        info.file_size = len(ir)  # known up front: zip64 headers when it needs them
        view = memoryview(ir)
        with z.open(info, "w") as dest:
            for at in range(0, len(ir), _CHUNK):
                if stop.is_set():
                    raise _Stopped
                dest.write(view[at:at + _CHUNK])


def _fit(text: str, limit: int) -> str:
    """A message as the loader reads it: lone surrogates replaced, cut at `limit`
    characters (a TVM error can quote a whole function; the trace must still save)."""
    text = text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
    if len(text) <= limit:
        return text
    keep = limit - 80  # room for the note
    return text[:keep] + f" ... ({len(text) - keep:,} more characters cut when the trace " \
                         "was saved)"


def _check_before_write(meta: bytes, ir: bytes, graph: dict[str, Any], path: Path,
                        llvm: tuple[bytes, bytes] | None = None) -> None:
    """The checks `load_trace` makes before TVM parses the file, on what is about to
    be written (`graph` is `json.loads(ir)`; `llvm` the LLVM members, if any): a
    trace that breaks a limit is refused here, with the limit named and advice that holds
    for this trace (`passlab.io._save_advice`)."""
    def bad(why: str) -> TraceFileError:
        data = json.loads(meta)  # what save wrote: the weights flag and the module ids
        hint = _save_advice.advice(graph, data, len(ir), meta, data.get("weights") is True,
                                   _save_advice.failing_node(why))
        return TraceFileError(f"trace.save({str(path)!r}) refused: the file would not load "
                              f"back ({why}); nothing was written" + (f". {hint}" if hint else ""))
    members = [(_META, meta, _limits.MAX_TRACE_JSON_BYTES, "validate.MAX_TRACE_JSON_BYTES"),
               (_IR, ir, _limits.MAX_IR_JSON_BYTES, "validate.MAX_IR_JSON_BYTES")]
    if llvm is not None:
        members += [(_llvm.LLVM_MEMBER, llvm[0], _llvm.MAX_LLVM_JSON_BYTES,
                     "_llvm_json.MAX_LLVM_JSON_BYTES"),
                    (_llvm.LINES_MEMBER, llvm[1], _llvm.MAX_LLVM_LINES_BYTES,
                     "_llvm_json.MAX_LLVM_LINES_BYTES")]
    for name, blob, limit, which in members:
        if len(blob) > limit:
            raise bad(f"its {name} would be {len(blob):,} bytes, over the {limit:,} of "
                      f"passlab.io.{which}")
    try:
        data = _parse(meta, _META, _limits.MAX_TRACE_JSON_VALUES, path)
        _count_values(ir, _IR, _limits.MAX_IR_JSON_VALUES, path)
        lines = None
        if llvm is not None:
            lines = (_parse(llvm[0], _llvm.LLVM_MEMBER, _llvm.MAX_LLVM_JSON_VALUES, path),
                     llvm[1].decode("utf-8").split("\n"))
    except TraceFileError as exc:
        raise bad(str(exc).split(": ", 1)[-1].split(". A trace file")[0]) from None
    inner = lambda why: bad(why)  # noqa: E731
    check_trace_json(data, _limits.modules_in(graph, inner), inner)
    if lines is not None:
        _llvm.check_llvm_json(lines[0], lines[1], data["steps"], inner)
    _limits.check_ir_graph(graph, inner)


# ---------------------------------------------------------------------------- load
def _bad(path: Path, what: str) -> TraceFileError:
    return TraceFileError(f"{path} is not a readable passlab trace: {what}. A trace file is "
                          f"the zip archive written by trace.save(path) (format {FORMAT!r}, "
                          f"version {FORMAT_VERSION} or lower).")


def _member(z: zipfile.ZipFile, name: str, limit: int, path: Path) -> bytearray:
    """A member's bytes, refused past `limit` uncompressed bytes: by its declared size
    first, then while inflating (a header can lie), so a zip bomb costs no memory."""
    info = z.getinfo(name)
    too_big = (f"its {name} inflates to more than {limit:,} bytes, the most passlab reads "
               f"(passlab.io.validate.MAX_{'TRACE' if name == _META else 'IR'}_JSON_BYTES)")
    if info.file_size > limit:
        raise _bad(path, too_big)
    buf = bytearray()  # grows in place: no second copy of a large member
    with z.open(info) as fh:
        while chunk := fh.read(1 << 20):
            if len(buf) + len(chunk) > limit:
                raise _bad(path, too_big)
            buf += chunk
    return buf


def _parse(raw: bytes | bytearray, name: str, max_tokens: int, path: Path) -> Any:
    """`json.loads` of a member, refused first when it holds more than `max_tokens`
    values: every `,`, `[` and `{` starts at most one, and each costs the parser at
    most ~100 bytes, so the parse stays within the memory budget (a file of `[],[],...`
    would otherwise allocate 20 times its size)."""
    _count_values(raw, name, max_tokens, path)
    return json.loads(raw)


def _count_values(raw: bytes | bytearray, name: str, max_tokens: int, path: Path) -> None:
    tokens = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if tokens > max_tokens:
        limit = {_META: "validate.MAX_TRACE_JSON_VALUES", _IR: "validate.MAX_IR_JSON_VALUES"
                 }.get(name, "_llvm_json.MAX_LLVM_JSON_VALUES")
        raise _bad(path, f"its {name} holds more than {max_tokens:,} JSON values, the most "
                         f"passlab parses (passlab.io.{limit})")


def _read(path: Path) -> tuple[dict[str, Any], bytearray, Any]:
    try:
        check_container(path, _limits.MAX_MEMBERS, lambda why: _bad(path, why))
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > _limits.MAX_MEMBERS:
                raise _bad(path, f"the archive holds {len(infos):,} members; passlab reads at "
                                 f"most {_limits.MAX_MEMBERS} (passlab.io.validate.MAX_MEMBERS)")
            names = {i.filename for i in infos}
            if _META not in names:
                raise _bad(path, f"the archive has no {_META} (it holds {sorted(names)[:5]})")
            data = _parse(_member(z, _META, _limits.MAX_TRACE_JSON_BYTES, path), _META,
                          _limits.MAX_TRACE_JSON_VALUES, path)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise _bad(path, f"{_META} does not say format {FORMAT!r}")
            version = data.get("version")
            if type(version) is not int or version < 1:
                raise _bad(path, f"{_META} has format version {version!r:.40}, not an "
                                 "integer of 1 or more")
            if version > FORMAT_VERSION:
                raise TraceFileError(
                    f"{path} was written by a newer passlab (trace format version {version}); "
                    f"this passlab reads versions up to {FORMAT_VERSION}: upgrade passlab "
                    "(pip install -U passlab) to read it.")
            if _IR not in names:
                raise _bad(path, f"the archive has no {_IR} (the IR of its modules)")
            ir = _member(z, _IR, _limits.MAX_IR_JSON_BYTES, path)
            llvm = _llvm_members(z, names, path)
    except FileNotFoundError:
        raise TraceFileError(f"no trace file at {path}") from None
    except TraceFileError:
        raise
    except zipfile.BadZipFile as exc:
        raise _bad(path, f"it is not a complete zip archive ({exc}); a truncated or "
                         "overwritten file looks like this") from None
    except (EOFError, OSError, ValueError, UnicodeDecodeError, RecursionError,
            NotImplementedError) as exc:  # zlib, CRC, JSON, an unsupported compression
        raise _bad(path, f"its content is corrupt ({type(exc).__name__}: {exc})") from None
    return data, ir, llvm


def _llvm_members(z: zipfile.ZipFile, names: set[str], path: Path
                  ) -> tuple[Any, list[str]] | None:
    """LLVM's passes, when the trace has them: `llvm.json` parsed, and the lines of
    `llvm.txt` (both bounded; checked against the steps later)."""
    if _llvm.LLVM_MEMBER not in names:
        return None
    if _llvm.LINES_MEMBER not in names:
        raise _bad(path, f"the archive has {_llvm.LLVM_MEMBER} but no {_llvm.LINES_MEMBER} "
                         "(the lines of LLVM IR it refers to)")
    data = _parse(_member(z, _llvm.LLVM_MEMBER, _llvm.MAX_LLVM_JSON_BYTES, path),
                  _llvm.LLVM_MEMBER, _llvm.MAX_LLVM_JSON_VALUES, path)
    text = bytes(_member(z, _llvm.LINES_MEMBER, _llvm.MAX_LLVM_LINES_BYTES, path))
    return data, text.decode("utf-8").split("\n")


def load_trace(path: str | os.PathLike, *, progress: ProgressArg = None) -> Trace:
    """Read a trace written by `save_trace`.

    Nothing in the file reaches TVM unchecked: the archive's size and member count, every
    field of `trace.json` and every node of the IR graph are checked first (see
    `passlab.io.validate` for the limits), and each loaded function must pass TVM's
    well-formedness check (Relax or TIR), so a damaged or crafted file is refused with a
    `TraceFileError` instead of crashing the process. `progress`: a bar of the load's
    phases when it takes more than a second (see `passlab.build`'s `progress`).

    Raises
    ------
    TraceFileError
        The file is missing, not a trace, truncated, corrupt, crafted, too large, or
        from a newer passlab.
    """
    delay = _SHOW_AFTER_S if progress is None else 0.0
    with no_cycle_collection(), bar(progress, total=len(_LOAD_PHASES), desc="load trace",
                                    unit="phase", delay=delay) as shown:
        trace = _load(Path(path), shown)
        shown.goto(len(_LOAD_PHASES), note=f"{len(trace)} steps")
        return trace


def _load(path: Path, shown: Bar) -> Trace:
    from tvm_ffi.serialization import from_json_graph_str

    shown.note(_LOAD_PHASES[0])
    data, ir, llvm = _read(path)
    shown.goto(1, note=_LOAD_PHASES[1])
    versions = data.get("versions")
    saved_with = versions.get("apache-tvm", "?") if isinstance(versions, dict) else "?"

    def unreadable(why: str) -> TraceFileError:
        if "bad_alloc" in why or "MemoryError" in why:  # not the version: the memory
            return TraceFileError(
                f"{path}: the process ran out of memory while TVM read the trace's IR "
                f"({why}); a trace within passlab.io.validate's limits loads in about 1 GiB "
                "plus five times its tensor data: free memory, or raise the process's limit")
        return TraceFileError(
            f"{path}: apache-tvm {_tvm.versions().get('apache-tvm')} could not read the IR "
            f"saved with apache-tvm {saved_with!s:.40} ({why}); load the trace with the TVM "
            "version that saved it")

    try:
        graph = _parse(ir, _IR, _limits.MAX_IR_JSON_VALUES, path)
    except TraceFileError:
        raise
    except (ValueError, RecursionError) as exc:
        raise unreadable(f"{type(exc).__name__}: {exc}") from None
    del ir
    bad = lambda why: _bad(path, why)  # noqa: E731
    check_trace_json(data, _limits.modules_in(graph, bad), bad)
    if llvm is not None:
        _llvm.check_llvm_json(llvm[0], llvm[1], data["steps"], bad)
    _limits.check_ir_graph(graph, bad)
    # TVM parses exactly the graph that was checked, written out again (compact: no spaces
    # to write or skip, no cycle check on a tree that json.loads made); the parsed graph
    # goes first: TVM's own parse of the text is the peak of a load
    text = json.dumps(graph, separators=(",", ":"), check_circular=False)
    del graph
    shown.goto(2, note=_LOAD_PHASES[2], now=True)
    try:
        modules = list(from_json_graph_str(text))
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
        raise unreadable((str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]) \
            from None
    del text
    shown.goto(3, note=_LOAD_PHASES[3], now=True)
    ill_formed = check_loaded(modules, bad)
    shown.goto(4, note=_LOAD_PHASES[4])
    try:
        trace = _trace_from(data, modules, path, llvm)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _bad(path, f"{_META} is missing or has a wrong field ({type(exc).__name__}: "
                         f"{exc})") from None
    if not ill_formed:
        return trace
    more = f" (and {len(ill_formed) - 3} more)" if len(ill_formed) > 3 else ""
    note = "; ".join(ill_formed[:3]) + more
    return Trace(list(trace), {**trace._meta, "warnings": [*trace.warnings, note]}, adopt=True)


def _trace_from(data: dict[str, Any], modules: list[Any], path: Path,
                llvm: Any = None) -> Trace:
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
                    mod(r["before"]), mod(r["after"]), bool(r["failed"]), cache,
                    caught=r.get("caught") is True)  # absent in files saved before it

    steps = [step(r) for r in data["steps"]]
    meta: dict[str, Any] = dict(data.get("meta") or {})
    meta.update(
        target=data.get("target"), pipeline=_pipeline_from(data.get("pipeline")),
        input=mod(data.get("input")), versions=dict(data.get("versions", {})),
        file=str(path), weights=data.get("weights", True) is not False)
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
    steps, summary = _llvm.with_llvm(_with_code(steps, data.get("code"), path),
                                     *(llvm or (None,)))
    if summary is not None:
        meta["llvm"] = summary
    return Trace(steps, meta)


def _code_data(trace: Trace) -> dict[str, Any] | None:
    """The generated code of the trace's `codegen` step, as text (see
    `passlab.recording.codegen.GeneratedCode`): the kinds read so far."""
    step = next((s for s in reversed(tuple(trace)) if s.code is not None), None)
    if step is None:
        return None
    code = step.code
    # assembly nobody asked for is not generated for the file (seconds for a large model)
    return dict(step=step.index, target_kind=code.target_kind, kernels=list(code.kernels),
                sources=code.read_sources())


def _with_code(steps: list[Step], data: Any, path: Path) -> list[Step]:
    if data is None:
        return steps
    ok = (isinstance(data, dict) and type(data.get("step")) is int
          and isinstance(data.get("target_kind"), str)
          and isinstance(data.get("kernels"), list)
          and all(isinstance(k, str) for k in data["kernels"])
          and isinstance(data.get("sources"), dict)
          and all(isinstance(k, str) and isinstance(v, str) for k, v in data["sources"].items()))
    at = next((i for i, s in enumerate(steps) if ok and s.index == data["step"]), None)
    if at is None:
        raise _bad(path, "'code' is not an object with the index of a saved step, a "
                         "target_kind, a list of kernel names and {kind: text} sources")
    code = GeneratedCode(data["target_kind"], tuple(data["kernels"]), sources=data["sources"])
    return steps[:at] + [dataclasses.replace(steps[at], code=code)] + steps[at + 1:]
