"""LLVM's passes in a saved trace: the `llvm.json` and `llvm.txt` members.

A trace recorded with `build(..., llvm_passes=True)` holds, for each LLVM step, the
functions the pass changed with their LLVM IR before and after. Consecutive versions of a
function share most of their lines, so every distinct line is stored once, in
`llvm.txt` (the lines joined by newlines: plain text, never parsed as JSON), and each
distinct function text in `llvm.json` as runs of consecutive line ids,
`[first, count, first, count, ...]` (`[]` is the empty text):

    {"texts": [[0, 120, 415, 3, 123, 40], ...],
     "steps": [[step index, target, scope, skipped,
                [[symbol, kernel or null, before id, after id], ...]], ...],
     "summary": {"options": [...], "runs": n, "changed": n, "unchanged": [[pass, n], ...],
                 "seconds": s}}

ResNet-18's whole LLVM pipeline (2,297 changed steps): 118 million characters of
function text in 1.9 million lines, 335,000 of them distinct. On load every field is
checked (types, ranges, that each record names a saved step of stage "llvm", that the
texts the runs make stay within `MAX_LLVM_CHARS`) before a view sees it; nothing in it
reaches TVM.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from passlab.io._text import MAX_NAME, bad_text
from passlab.recording.llvm import LLVM_STAGE, LlvmChange, LlvmFunction, LlvmSummary
from passlab.recording.trace import Step, Trace

__all__ = ["LLVM_MEMBER", "LINES_MEMBER", "MAX_LLVM_JSON_BYTES", "MAX_LLVM_JSON_VALUES",
           "MAX_LLVM_LINES_BYTES", "MAX_LLVM_CHARS", "llvm_data", "check_llvm_json",
           "with_llvm"]

#: The archive members holding LLVM's passes: the records, and the distinct lines.
LLVM_MEMBER = "llvm.json"
LINES_MEMBER = "llvm.txt"
#: Uncompressed bytes of `llvm.json` (ResNet-18's: ~0.5 MiB of runs and records).
MAX_LLVM_JSON_BYTES = 64 * 2**20
#: JSON values of `llvm.json` (two per run of lines, ~10 per step record).
MAX_LLVM_JSON_VALUES = 4_000_000
#: Uncompressed bytes of `llvm.txt` (ResNet-18's distinct lines: 24 MiB).
MAX_LLVM_LINES_BYTES = 512 * 2**20
#: Characters of all the function texts the runs make, together (ResNet-18's: 118
#: million): bounds the memory a loaded trace's LLVM text takes.
MAX_LLVM_CHARS = 1 << 30
_SCOPES = ("function", "loop", "cgscc", "module")


def llvm_data(trace: Trace) -> tuple[dict[str, Any], str] | None:
    """The `llvm.json` content and the `llvm.txt` text of `trace`, or None when it
    holds no LLVM step."""
    steps = [s for s in trace if s.llvm is not None]
    summary = trace.llvm_summary
    if not steps and summary is None:
        return None
    text_ids: dict[str, int] = {}
    texts: list[list[int]] = []
    line_ids: dict[str, int] = {}

    def text_id(text: str) -> int:
        found = text_ids.get(text)
        if found is not None:
            return found
        runs: list[int] = []
        for line in (text.split("\n") if text else ()):
            i = line_ids.setdefault(line, len(line_ids))
            if runs and runs[-2] + runs[-1] == i:
                runs[-1] += 1
            else:
                runs += [i, 1]
        text_ids[text] = len(texts)
        texts.append(runs)
        return text_ids[text]

    records = []
    for s in steps:
        ch = s.llvm
        records.append([s.index, ch.target, ch.scope, ch.skipped,
                        [[f.symbol, f.kernel, text_id(f.before), text_id(f.after)]
                         for f in ch.functions]])
    data = dict(texts=texts, steps=records,
                summary=None if summary is None else summary.to_dict())
    return data, "\n".join(line_ids)


def check_llvm_json(data: Any, lines: Sequence[str], steps: Sequence[dict[str, Any]],
                    what: Callable[[str], Exception]) -> None:
    """Check `llvm.json` (`data`) against the lines of `llvm.txt` and the saved step
    records `steps`."""

    def need(ok: bool, msg: str) -> None:
        if not ok:
            raise what(f"{LLVM_MEMBER}: {msg}")

    need(isinstance(data, dict), "it is not an object with texts, steps and summary")
    texts, records = data.get("texts"), data.get("steps")
    need(isinstance(texts, list) and isinstance(records, list),
         "'texts' and 'steps' are not lists")
    for n, line in enumerate(lines):
        if not line.isascii():
            why = bad_text(line, 1 << 62)
            need(why is None, f"line {n} of {LINES_MEMBER} {why}")
    ends = [0, *accumulate(len(line) + 1 for line in lines)]  # characters before line k
    total = 0
    for n, runs in enumerate(texts):
        need(isinstance(runs, list) and len(runs) % 2 == 0
             and all(type(v) is int for v in runs),
             f"text {n} is not a list of [first line, count] runs")
        for first, count in zip(runs[::2], runs[1::2]):
            need(first >= 0 and count >= 1 and first + count <= len(lines),
                 f"text {n} has a run of lines {first}..{first + count - 1}, outside "
                 f"0..{len(lines) - 1}")
            total += ends[first + count] - ends[first]
        need(total <= MAX_LLVM_CHARS, f"its texts hold more than {MAX_LLVM_CHARS:,} "
                                      "characters (passlab.io._llvm_json.MAX_LLVM_CHARS)")
    llvm_steps = {r["index"]: r for r in steps if r.get("stage") == LLVM_STAGE}
    seen: set[int] = set()
    for n, rec in enumerate(records):
        where = f"step record {n}"
        need(isinstance(rec, list) and len(rec) == 5, f"{where} is not [index, target, "
                                                      "scope, skipped, functions]")
        index, target, scope, skipped, funcs = rec
        need(type(index) is int and index in llvm_steps and index not in seen,
             f"{where} names step {index!r:.40}, not a saved step of stage 'llvm' (once)")
        seen.add(index)
        need(isinstance(target, str) and bad_text(target, MAX_NAME) is None,
             f"{where}'s target is not a name of at most {MAX_NAME} characters")
        need(scope in _SCOPES, f"{where}'s scope is {scope!r:.40}, not one of "
                               f"{', '.join(_SCOPES)}")
        need(type(skipped) is int and 0 <= skipped <= 10**9,
             f"{where}'s skipped count is not a non-negative integer")
        need(isinstance(funcs, list), f"{where}'s functions are not a list")
        for f in funcs:
            need(isinstance(f, list) and len(f) == 4, f"{where} has a function that is "
                                                       "not [symbol, kernel, before, after]")
            sym, kernel, before, after = f
            need(isinstance(sym, str) and bad_text(sym, MAX_NAME) is None
                 and (kernel is None or (isinstance(kernel, str)
                                         and bad_text(kernel, MAX_NAME) is None)),
                 f"{where} has a function whose symbol or kernel is not a name")
            need(all(type(i) is int and 0 <= i < len(texts) for i in (before, after)),
                 f"{where} has a text id outside 0..{len(texts) - 1}")
    need(seen == set(llvm_steps), "a saved step of stage 'llvm' has no record")
    summary = data.get("summary")
    if summary is not None:
        ok = (isinstance(summary, dict)
              and isinstance(summary.get("options"), list)
              and all(isinstance(o, str) and bad_text(o, MAX_NAME) is None
                      for o in summary["options"])
              and all(type(summary.get(k)) is int and summary[k] >= 0
                      for k in ("runs", "changed"))
              and type(summary.get("seconds")) in (int, float)
              and math.isfinite(summary["seconds"]) and summary["seconds"] >= 0
              and isinstance(summary.get("kernels", []), list)
              and all(isinstance(k, str) and bad_text(k, MAX_NAME) is None
                      for k in summary.get("kernels", []))
              and isinstance(summary.get("unchanged"), list)
              and all(isinstance(u, list) and len(u) == 2 and isinstance(u[0], str)
                      and bad_text(u[0], MAX_NAME) is None and type(u[1]) is int
                      and u[1] >= 0 for u in summary["unchanged"]))
        need(ok, "'summary' is not an object with options, runs, changed, unchanged and "
                 "seconds")


def _text(runs: Sequence[int], lines: Sequence[str]) -> str:
    return "\n".join(line for first, count in zip(runs[::2], runs[1::2])
                     for line in lines[first:first + count])


def with_llvm(steps: list[Step], data: dict[str, Any] | None, lines: Sequence[str] = ()
              ) -> tuple[list[Step], Any]:
    """The loaded steps with their LLVM changes, and the trace's `LlvmSummary` (None
    when the file has none); `data` and `lines` were checked by `check_llvm_json`."""
    if data is None:
        return steps, None
    texts = [_text(runs, lines) for runs in data["texts"]]
    by_index = {}
    for index, target, scope, skipped, funcs in data["steps"]:
        by_index[index] = (target, scope, skipped, funcs)
    out = []
    for s in steps:
        rec = by_index.get(s.index)
        if rec is None:
            out.append(s)
            continue
        target, scope, skipped, funcs = rec
        change = LlvmChange(s.name, target, scope, tuple(
            LlvmFunction(sym, kernel, texts[b], texts[a]) for sym, kernel, b, a in funcs),
            skipped)
        out.append(Step(s.index, s.name, s.depth, s.parent, s.stage, s.kind, s.origin,
                        s.occurrence, s.seconds, s.before, s.after, s.failed, s._hash,
                        caught=s.caught, code=s.code, llvm=change))
    summary = data.get("summary")
    if summary is None:
        return out, None
    return out, LlvmSummary(tuple(summary["options"]), summary["runs"], summary["changed"],
                            tuple((u[0], u[1]) for u in summary["unchanged"]),
                            float(summary["seconds"]), tuple(summary.get("kernels", ())))
