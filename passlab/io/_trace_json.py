"""Checks of `trace.json` on load: every field `load_trace` reads has
the right type, and every number that sizes something (step indices, depths, parents,
occurrences, seconds, module ids) is in range, so that a loaded trace never makes a view
allocate without bound or fail later with a TypeError or AttributeError. The limits are
those of `passlab.io.validate`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from passlab.errors import TraceFileError
from passlab.io.validate import MAX_NAME, MAX_STEP_DEPTH, MAX_STEPS, MAX_STRING, bad_text
from passlab.recording.llvm import LLVM_STAGE
from passlab.recording.trace import KINDS

__all__ = ["check_trace_json"]

_ORIGINS = ("tvm", "user")
_WHERE = ("pass", "codegen", "setup")


def check_trace_json(data: dict[str, Any], modules: int,
                     what: Callable[[str], TraceFileError]) -> None:
    """Check every field of `trace.json` that `load_trace` reads:
    types, module ids (`modules` is how many `ir.json` holds), and every number that
    sizes something (step indices, depths, parents, occurrences, seconds), so that a
    loaded trace never makes a view allocate without bound or fail with a TypeError."""

    def need(ok: bool, msg: str) -> None:
        if not ok:
            raise what(f"trace.json: {msg}")

    def text(v: Any) -> bool:
        return isinstance(v, str)

    def module(v: Any, where: str) -> None:
        need(v is None or (type(v) is int and 0 <= v < modules),
             f"{where} is {v!r:.40}, not null or a module id in 0..{modules - 1}")

    _check_texts(data, need)
    steps: Any = data.get("steps")
    need(isinstance(steps, list), "'steps' is not a list of step records")
    need(len(steps) <= MAX_STEPS, f"{len(steps):,} steps; at most {MAX_STEPS:,} are read")
    depth_of: dict[int, int] = {}
    last = -1
    for n, r in enumerate(steps):
        _check_step(r, f"step record {n}", need, module)
        need(r["index"] > last, f"step record {n} has index {r['index']}, not above the "
                                f"previous one ({last}): steps are saved in order")
        last = r["index"]
        parent = r["parent"]
        if parent in depth_of:  # a sliced trace may leave the parent out
            need(r["depth"] == depth_of[parent] + 1,
                 f"step {r['index']} has depth {r['depth']}, but its parent step {parent} "
                 f"has depth {depth_of[parent]}")
        depth_of[r["index"]] = r["depth"]
    module(data.get("input"), "'input'")
    need(type(data.get("weights", True)) is bool, "'weights' is not true or false")
    need(data.get("target") is None or isinstance(data["target"], (str, dict)),
         "'target' is not a string, an object or null")
    versions = data.get("versions", {})
    need(isinstance(versions, dict) and all(text(k) and text(v) for k, v in versions.items()),
         "'versions' is not an object of names to version strings")
    warnings = data.get("warnings", [])
    need(isinstance(warnings, list) and all(map(text, warnings)),
         "'warnings' is not a list of strings")
    meta = data.get("meta") or {}
    need(isinstance(meta, dict), "'meta' is not an object")
    notes = meta.get("notes", [])  # keys of meta that Trace reads
    need(isinstance(notes, list) and all(map(text, notes)),
         "meta 'notes' is not a list of strings")
    need(type(meta.get("kernels_reused", False)) is bool,
         "meta 'kernels_reused' is not true or false")
    _check_pipeline(data.get("pipeline"), need)
    f = data.get("failure")
    if f is not None:
        need(isinstance(f, dict), "'failure' is not an object or null")
        need(f.get("where") in _WHERE, f"failure 'where' is {f.get('where')!r:.40}, not one "
                                       f"of {', '.join(_WHERE)}")
        need(text(f.get("message")) and text(f.get("error_type")) and text(f.get("note", "")),
             "failure 'message', 'error_type' and 'note' are not all strings")
        enclosing = f.get("enclosing", [])
        need(isinstance(enclosing, list) and all(map(text, enclosing)),
             "failure 'enclosing' is not a list of pass names")
        step = f.get("step")
        need(step is None or (type(step) is int and 0 <= step < MAX_STEPS),
             f"failure 'step' is {step!r:.40}, not null or a step index")
        if step is not None and step not in depth_of:
            need("step_record" in f, f"failure step {step} is neither a saved step nor "
                                     "given by a 'step_record'")
            _check_step(f["step_record"], "failure 'step_record'", need, module)
            need(f["step_record"]["index"] == step, "failure 'step_record' is another step")


def _check_texts(data: dict[str, Any], need: Callable[[bool, str], None]) -> None:
    """Every string of `trace.json`: text (no lone surrogate), names (steps, stages,
    pipeline entries, kernels, keys) of at most MAX_NAME characters, messages, warnings
    and other values of at most MAX_STRING; a user pass's source and generated code are
    bounded by the file's size only."""
    # paths are (parent path, key) pairs, spelled out only for the error
    # step records are checked by _check_step (their strings are the name and the stage)
    stack: list[tuple[Any, int, Any]] = [(v, MAX_STRING, (None, k)) for k, v in data.items()
                                         if k not in ("code", "steps")]
    code = data.get("code")
    if isinstance(code, dict):
        top = (None, "code")
        stack += [(code.get("kernels"), MAX_NAME, (top, "kernels")),
                  (code.get("target_kind"), MAX_NAME, (top, "target_kind"))]
        sources = code.get("sources")
        if isinstance(sources, dict):
            stack += [(list(sources), MAX_NAME, (top, "sources"))]
            stack += [(v, 1 << 62, ((top, "sources"), k)) for k, v in sources.items()]
    while stack:
        value, limit, path = stack.pop()
        if isinstance(value, str):
            if len(value) > limit or not value.isascii():
                why = bad_text(value, limit)
                need(why is None, f"the string at {_spell(path)} {why}")
        elif isinstance(value, list):
            stack.extend((v, limit, (path, n)) for n, v in enumerate(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                why = bad_text(k, MAX_NAME)
                need(why is None, f"a key in {_spell(path)} {why}")
                sub = 1 << 62 if k == "code" else MAX_NAME if k in _NAMES else limit
                stack.append((v, sub, (path, k)))


def _spell(path: Any) -> str:
    parts = []
    while path is not None:
        path, key = path
        parts.append(f"[{key}]" if type(key) is int else f".{key}")
    return "".join(reversed(parts)).lstrip(".")


# Keys whose string values are names (capped at MAX_NAME).
_NAMES = frozenset({"name", "stage", "kind", "origin", "error_type", "where", "enclosing",
                    "variant"})


def _check_step(r: Any, where: str, need: Callable[[bool, str], None],
                module: Callable[[Any, str], None]) -> None:
    need(isinstance(r, dict), f"{where} is not an object")
    for key in ("index", "name", "depth", "parent", "stage", "kind", "origin", "occurrence",
                "seconds", "failed", "before", "after"):
        need(key in r, f"{where} has no {key!r}")
    index, depth, parent, occ = r["index"], r["depth"], r["parent"], r["occurrence"]
    need(type(index) is int and 0 <= index < MAX_STEPS,
         f"{where} has index {index!r:.40}, not an integer in 0..{MAX_STEPS - 1}")
    need(type(depth) is int and 0 <= depth <= min(index, MAX_STEP_DEPTH),
         f"step {index} has depth {depth!r:.40}, not an integer in 0..{min(index, MAX_STEP_DEPTH)}"
         " (a step is nested in steps that started before it)")
    need((parent is None) == (depth == 0) and (parent is None or (
        type(parent) is int and 0 <= parent < index)),
         f"step {index} has parent {parent!r:.40}: a nested step's parent is the index of an "
         "earlier step, a top-level step (depth 0) has none")
    need(type(occ) is int and 0 <= occ <= index,
         f"step {index} has occurrence {occ!r:.40}, not an integer in 0..{index}")
    need(all(isinstance(r[k], str) and len(r[k]) <= MAX_NAME for k in ("name", "stage")),
         f"step {index}'s name and stage are not strings (of at most {MAX_NAME} characters)")
    for k in ("name", "stage"):
        if not r[k].isascii():
            why = bad_text(r[k], MAX_NAME)
            need(why is None, f"the string at steps[{where.split()[-1]}].{k} {why}")
    need(r["kind"] in KINDS and r["origin"] in _ORIGINS,
         f"step {index} has kind {r['kind']!r:.40} and origin {r['origin']!r:.40}: kinds "
         f"are {', '.join(KINDS)}, origins {', '.join(_ORIGINS)}")
    need(type(r["failed"]) is bool, f"step {index}'s 'failed' is not true or false")
    sec = r["seconds"]
    need((sec is None and (r["failed"] or r["stage"] == LLVM_STAGE)) or (
        type(sec) in (int, float) and math.isfinite(sec) and sec >= 0),
         f"step {index} has seconds {sec!r:.40}, not a non-negative number (only a failed "
         "step or an LLVM step, whose passes are not timed, may have null)")
    module(r["before"], f"step {index}'s 'before'")
    module(r["after"], f"step {index}'s 'after'")


def _check_pipeline(p: Any, need: Callable[[bool, str], None]) -> None:
    if p is None:
        return
    opts = p.get("llvm_options", []) if isinstance(p, dict) else []
    need(isinstance(opts, list) and all(isinstance(o, str) and len(o) <= MAX_NAME
                                        for o in opts)
         and (not isinstance(p, dict) or type(p.get("llvm_passes", False)) is bool),
         "the pipeline's 'llvm_options' is not a list of option strings, or its "
         "'llvm_passes' is not true or false")
    need(isinstance(p, dict) and isinstance(p.get("stages"), list) and
         isinstance(p.get("variant"), str) and isinstance(p.get("target"), (str, dict)),
         "'pipeline' is not null or an object with target, variant and a list of stages")
    for s in p["stages"]:
        need(isinstance(s, dict) and isinstance(s.get("name"), str)
             and isinstance(s.get("passes"), list), "a pipeline stage is not an object with "
                                                    "a name and a list of passes")
        for e in s["passes"]:
            need(isinstance(e, dict) and isinstance(e.get("name"), str)
                 and e.get("origin") in _ORIGINS and type(e.get("enabled")) is bool
                 and isinstance(e.get("note", ""), str),
                 "a pipeline entry is not an object with a name, origin, enabled and note")
            r = e.get("recipe")
            need(r is None or (isinstance(r, dict) and all(
                isinstance(r.get(k), str) for k in ("kind", "name", "code"))
                and type(r.get("arity", 1)) is int and isinstance(r.get("notes", []), list)
                and all(isinstance(x, str) for x in r.get("notes", []))),
                f"the recipe of pipeline entry {e['name']!r:.80} is not null or an object "
                "with kind, name and code strings")
