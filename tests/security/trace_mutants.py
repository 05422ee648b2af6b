"""Mutation fuzzing of saved traces: random edits to the files inside a trace archive,
and a child process that loads and views each mutant, so that a crash (a signal) or a
hang is seen by the parent instead of killing it.

Used by ``tests/security/test_trace_fuzz.py`` (fixed seed) and
``benchmarks/fuzz_traces.py`` (longer runs).
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import selectors
import signal
import struct
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

META, IR = "trace.json", "ir.json"

# Values a mutation puts where a number, a string or a reference was.
_ODD_VALUES = [None, 0, -1, 1, 2**31, 10**9, -(2**63), 2**63 - 1, 2**64, 10**30, 1.5, -0.0,
               1e308, float("nan"), float("inf"), "", "x", "float32", [], {}, True, False]
# Strings a mutation puts where a string was: long, lone surrogates, control characters.
_ODD_STRINGS = ["", "x" * 70_000, "y" * 5000, "\ud800", "a\udfffb", "\x00\x1b[2J\r\n",
                "line\nbreak", "<script>alert(1)</script>", "\u202e" * 3, "w" * 300]


def read_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def write_members(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def with_ir(saved: Path, out: Path, edit: Callable[[list], None]) -> Path:
    """A copy of the trace file ``saved`` at ``out`` whose IR node list ``edit`` changed."""
    m = read_members(saved)
    graph = json.loads(m["ir.json"])
    edit(graph["nodes"])
    m["ir.json"] = json.dumps(graph).encode()
    return write_members(out, m)


def load_error(path: Path) -> str:
    """The message of the TraceFileError that loading ``path`` must raise."""
    import pytest

    from passlab.errors import TraceFileError
    from passlab.io import load_trace

    with pytest.raises(TraceFileError) as err:
        load_trace(path)
    return str(err.value)


# ------------------------------------------------------------------- mutations
def _refs(node: dict) -> list[tuple[object, object]]:
    """(container, key) of every integer reference slot of a node."""
    data = node.get("data")
    if node.get("type") in ("ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict") and \
            isinstance(data, list):
        return [(data, k) for k in range(len(data))]
    if isinstance(data, dict):
        return [(data, k) for k, v in data.items() if type(v) is int]
    return []


def _ir_mutation(graph: dict, rng: random.Random) -> str:
    nodes = graph["nodes"]
    n = len(nodes)
    i = rng.randrange(n)
    node = nodes[i]
    refs = _refs(node)
    op = rng.choice(["alike", "alike", "alike", "alike", "index", "index", "swap_fields",
                     "swap_nodes", "null", "null", "value", "type", "type", "drop_field",
                     "duplicate", "truncate_nodes", "array", "root", "compatible",
                     "compatible", "compatible", "string", "string", "number"])
    if op == "index" and refs:
        box, k = rng.choice(refs)
        box[k] = rng.choice([rng.randrange(n), rng.randrange(max(1, i)), i, n, -1,
                             rng.randrange(i, n) if i < n else n])
        return f"index: node {i} ({node['type']}) slot {k} -> {box[k]}"
    if op == "alike" and refs:
        # another node of the same type: passes a type check, so it reaches TVM and the views
        box, k = rng.choice(refs)
        old = box[k]
        if type(old) is int and 0 <= old < n:
            alike = [j for j in range(i) if nodes[j].get("type") == nodes[old].get("type")]
            if alike:
                box[k] = rng.choice(alike)
                return f"alike: node {i} ({node['type']}) slot {k}: {old} -> {box[k]}"
    if op == "compatible" and refs:
        # a node of another type of the same family (prim.Mul -> prim.Add, ir.IntImm ->
        # ir.StringImm): passes a base-class check, as a PrimExpr operand does
        box, k = rng.choice(refs)
        old = box[k]
        if type(old) is int and 0 <= old < n:
            family = str(nodes[old].get("type")).split(".")[0]
            alike = [j for j in range(i) if str(nodes[j].get("type")).split(".")[0] == family
                     and nodes[j].get("type") != nodes[old].get("type")]
            if alike:
                box[k] = rng.choice(alike)
                return f"compatible: node {i} ({node['type']}) slot {k}: {old} " \
                       f"({nodes[old]['type']}) -> {box[k]} ({nodes[box[k]]['type']})"
    if op == "string":
        strings = [j for j, m in enumerate(nodes) if m.get("type") in (
            "ffi.String", "ir.SourceName", "ir.Op", "tirx.Axis")]
        if strings:
            j = rng.choice(strings)
            nodes[j]["data"] = rng.choice(_ODD_STRINGS)
            return f"string: node {j} ({nodes[j]['type']}) -> {nodes[j]['data'][:20]!r}"
    if op == "number":
        nums = [(m["data"], k) for m in nodes if isinstance(m.get("data"), dict)
                for k, v in m["data"].items() if type(v) in (int, float) and k != "span"]
        if nums:
            box, k = rng.choice(nums)
            box[k] = rng.choice([0, -1, 2**31, 2**63 - 1, -(2**63), 2**64, 1.5,
                                 float("nan"), float("inf"), box[k] + 1])
            return f"number: field {k} -> {box[k]!r}"
    if op == "swap_fields" and isinstance(node.get("data"), dict) and len(node["data"]) > 1:
        a, b = rng.sample(sorted(node["data"]), 2)
        node["data"][a], node["data"][b] = node["data"][b], node["data"][a]
        return f"swap_fields: node {i} ({node['type']}) {a} <-> {b}"
    if op == "swap_nodes":
        j = rng.randrange(n)
        nodes[i], nodes[j] = nodes[j], nodes[i]
        return f"swap_nodes: {i} ({nodes[j]['type']}) <-> {j} ({nodes[i]['type']})"
    if op == "null" and refs:
        box, k = rng.choice(refs)
        none = next((x for x, m in enumerate(nodes) if m.get("type") == "None"), 0)
        box[k] = rng.choice([none, None])
        return f"null: node {i} ({node['type']}) slot {k}"
    if op == "value":
        data = node.get("data")
        if isinstance(data, dict) and data:
            k = rng.choice(sorted(data))
            data[k] = copy.deepcopy(rng.choice(_ODD_VALUES))
            return f"value: node {i} ({node['type']}) field {k} -> {data[k]!r}"
        node["data"] = copy.deepcopy(rng.choice(_ODD_VALUES))
        return f"value: node {i} ({node['type']}) data -> {node['data']!r}"
    if op == "type":
        other = nodes[rng.randrange(n)]["type"]
        node["type"] = rng.choice([other, other, "ffi.Module", "runtime.Nope", "ir.Var",
                                   "ffi.Array", "relax.expr.Function", "ffi.Tensor"])
        return f"type: node {i} -> {node['type']}"
    if op == "drop_field" and isinstance(node.get("data"), dict) and node["data"]:
        k = rng.choice(sorted(node["data"]))
        del node["data"][k]
        return f"drop_field: node {i} ({node['type']}) {k}"
    if op == "duplicate":
        j = rng.randrange(n)
        nodes.insert(j, copy.deepcopy(node))
        return f"duplicate: node {i} ({node['type']}) inserted at {j}"
    if op == "truncate_nodes":
        cut = rng.randrange(n)
        del nodes[cut:]
        return f"truncate_nodes: {n} -> {cut}"
    if op == "array" and node.get("type") == "ffi.Array" and isinstance(node.get("data"), list):
        data = node["data"]
        if data and rng.random() < 0.5:
            del data[rng.randrange(len(data))]
            return f"array: node {i} element removed"
        data.append(rng.randrange(n))
        return f"array: node {i} element {data[-1]} appended"
    if op == "root":
        graph["root_index"] = rng.choice([rng.randrange(n), n, -1, None])
        return f"root: {graph['root_index']!r}"
    return _ir_mutation(graph, rng)  # the chosen edit did not fit this node: pick again


def _meta_mutation(meta: dict, rng: random.Random) -> str:
    # an earlier edit of the same mutant may have made "steps" or a record anything
    steps = meta.get("steps") if isinstance(meta.get("steps"), list) else []
    steps = [r for r in steps if isinstance(r, dict) and r]
    op = rng.choice(["step", "step", "step", "step", "top", "failure", "drop_step_key",
                     "text", "text"])
    if op == "text":  # a string anywhere: step names, the target, warnings, messages
        where = rng.choice(["name", "stage", "target", "warnings", "message"])
        odd = rng.choice(_ODD_STRINGS)
        if where in ("name", "stage") and steps:
            steps[rng.randrange(len(steps))][where] = odd
        elif where == "target":
            meta["target"] = odd
        elif where == "warnings":
            meta["warnings"] = [odd]
        else:
            meta["failure"] = {"where": "pass", "message": odd, "error_type": odd[:50]}
        return f"meta: text {where} -> {odd[:20]!r}"
    if op in ("step", "drop_step_key") and steps:
        n = rng.randrange(len(steps))
        r = steps[n]
        key = rng.choice(sorted(r))
        if op == "drop_step_key":
            del r[key]
            return f"meta: step record {n} lost {key}"
        r[key] = copy.deepcopy(rng.choice(_ODD_VALUES + [10**9, r.get("index"), "pass"]))
        return f"meta: step record {n} {key} -> {r[key]!r}"
    if op == "failure":
        meta["failure"] = rng.choice([
            "oops", [], {"where": "pass"}, {"where": "pass", "message": 1, "error_type": "E"},
            {"where": "pass", "message": "m", "error_type": "E", "step": 10**9},
            {"where": "codegen", "message": "m", "error_type": "E", "enclosing": "abc"}])
        return f"meta: failure -> {meta['failure']!r}"
    key = rng.choice(["versions", "warnings", "input", "target", "pipeline", "meta", "steps",
                      "version", "format", "notes", "kernels_reused"])
    if key in ("notes", "kernels_reused"):  # keys of "meta" that Trace reads
        extra = meta["meta"] = meta.get("meta") if isinstance(meta.get("meta"), dict) else {}
        extra[key] = copy.deepcopy(rng.choice(_ODD_VALUES))
        return f"meta: meta.{key} -> {extra[key]!r}"
    meta[key] = copy.deepcopy(rng.choice(_ODD_VALUES + ["oops", {"apache-tvm": 3}, [1, 2]]))
    return f"meta: {key} -> {meta[key]!r}"


def mutate(members: dict[str, bytes], rng: random.Random) -> tuple[str, dict[str, bytes]]:
    """One to three random edits of a trace's members; returns (what was done, members)."""
    out = dict(members)
    what = []
    graph = meta = None
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        target = rng.random()
        if target < 0.6:
            graph = graph if graph is not None else json.loads(out[IR])
            what.append(_ir_mutation(graph, rng))
        elif target < 0.85:
            meta = meta if meta is not None else json.loads(out[META])
            what.append(_meta_mutation(meta, rng))
        else:
            name = rng.choice([IR, META])
            if graph is not None and name == IR:
                out[IR], graph = json.dumps(graph).encode(), None
            if meta is not None and name == META:
                out[META], meta = json.dumps(meta).encode(), None
            data = out[name]
            kind = rng.choice(["truncate", "duplicate", "bytes"])
            if kind == "truncate":
                out[name] = data[: rng.randrange(len(data))]
            elif kind == "duplicate":
                a = rng.randrange(len(data))
                b = min(len(data), a + rng.randrange(1, 200))
                out[name] = data[:b] + data[a:b] + data[b:]
            else:
                raw = bytearray(data)
                for _ in range(rng.randrange(1, 5)):
                    raw[rng.randrange(len(raw))] = rng.randrange(32, 127)
                out[name] = bytes(raw)
            what.append(f"{kind}: {name}")
            break  # the member may no longer parse: no structured edit after this one
    if graph is not None:
        out[IR] = json.dumps(graph).encode()
    if meta is not None:
        out[META] = json.dumps(meta).encode()
    return "; ".join(what), out


# ------------------------------------------------------------------- child runs
_CHILD = r"""
import os, sys
import passlab
from passlab.errors import TraceFileError

DEEP = os.environ.get("PASSLAB_FUZZ_PRINT") == "1"

for path in open(sys.argv[1]).read().split("\n")[int(sys.argv[2]):]:
    if not path:
        continue
    print("start", path, flush=True)
    try:
        t = passlab.load_trace(path)
        t.to_text()
        t.changed()
        t.to_html()
        outcome = "ok"
        if DEEP:  # also print every distinct function, as the report and explorer do
            # (a function TVM's printer raises on is a one-line note there, not an error)
            from passlab.analysis.ir_text import function_text
            seen = set()
            for s in t:
                for m in (s.before, s.after):
                    for gv, f in ([] if m is None else m.functions.items()):
                        if f.__chandle__() not in seen:
                            seen.add(f.__chandle__())
                            try:
                                function_text(f, gv.name_hint)
                            except Exception as exc:
                                outcome = "print-error " + type(exc).__name__
    except TraceFileError:
        outcome = "TraceFileError"
    except BaseException as exc:  # any other error is a finding
        outcome = "other " + type(exc).__name__ + ": " + " ".join(str(exc).split())[:200]
    print("end", path, outcome, flush=True)
"""


@dataclass
class FuzzResult:
    outcomes: Counter = field(default_factory=Counter)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # path, outcome, what
    children: int = 0
    seconds: float = 0.0


def run_mutants(paths: list[Path], what: dict[Path, str], timeout: float = 60.0,
                progress: Callable[[str], None] | None = None,
                print_ir: bool = False) -> FuzzResult:
    """Load and view every mutant in child processes (one child runs many in sequence);
    when a child dies or hangs, the mutant it had started is the culprit and a new child
    goes on after it. Outcomes: ok, TraceFileError, other (an exception of another
    class), signal:NAME, timeout. ``print_ir``: also print every function of a mutant
    that loaded (an exception there is outcome print-error)."""
    res = FuzzResult()
    t0 = time.perf_counter()
    listing = Path(paths[0]).parent / "mutants.txt"
    listing.write_text("".join(f"{p}\n" for p in paths))
    done = 0
    while done < len(paths):
        res.children += 1
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(listing), str(done)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 env={**os.environ, "PASSLAB_FUZZ_PRINT": "1" if print_ir else ""})
        started = None
        start_time = time.perf_counter()
        sel = selectors.DefaultSelector()
        sel.register(child.stdout, selectors.EVENT_READ)
        buf = ""
        killed = None
        while True:
            left = timeout - (time.perf_counter() - start_time)
            if left <= 0:
                child.kill()
                killed = "timeout"
                break
            if not sel.select(timeout=min(left, 1.0)):
                continue
            chunk = os.read(child.stdout.fileno(), 65536).decode()
            if not chunk:
                break
            buf += chunk
            while "\n" in buf:
                line, buf = buf.split("\n", 1)
                kind, _, rest = line.partition(" ")
                if kind == "start":
                    started = rest
                    start_time = time.perf_counter()
                elif kind == "end":
                    path, _, outcome = rest.partition(" ")
                    cls = outcome.split(":")[0].split(" ")[0]
                    res.outcomes[cls] += 1
                    if cls not in ("ok", "TraceFileError"):
                        res.findings.append((path, outcome, what.get(Path(path), "")))
                    started = None
                    done += 1
        sel.close()
        rc = child.wait()
        if started is not None:
            culprit = Path(started)
            outcome = killed or (f"signal:{signal.Signals(-rc).name}" if rc < 0 else f"exit:{rc}")
            res.outcomes[outcome.split(":")[0]] += 1
            res.findings.append((started, outcome, what.get(culprit, "")))
            done += 1
            if progress:
                progress(f"{outcome}: {what.get(culprit, '')}")
        elif rc != 0 and done < len(paths):
            raise RuntimeError(f"the fuzz child exited with {rc} between mutants")
    res.seconds = time.perf_counter() - t0
    return res


def zip_mutation(raw: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One edit of the zip container itself: a member's compression method, its
    encryption flag, its declared sizes, the end record's entry count, a duplicated
    directory entry."""
    data = bytearray(raw)
    end = data.rfind(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack_from("<LL", data, end + 12)
    entries = [m.start() for m in re.finditer(b"PK\x01\x02", bytes(data[cd_offset:end]))]
    entry = cd_offset + rng.choice(entries) if entries else cd_offset
    op = rng.choice(["method", "encrypted", "size", "count", "duplicate"])
    if op == "method":
        method = rng.choice([12, 14, 9, 1, 99])
        struct.pack_into("<H", data, entry + 10, method)
        local = struct.unpack_from("<L", data, entry + 42)[0]
        struct.pack_into("<H", data, local + 8, method)
        return f"zip: method -> {method}", bytes(data)
    if op == "encrypted":
        struct.pack_into("<H", data, entry + 8, struct.unpack_from("<H", data, entry + 8)[0] | 1)
        return "zip: encrypted flag", bytes(data)
    if op == "size":
        size = rng.choice([0, 1, 2**31, 2**32 - 1])
        struct.pack_into("<L", data, entry + rng.choice([20, 24]), size)
        return f"zip: declared size -> {size}", bytes(data)
    if op == "count":
        count = rng.choice([0, 1, 2, 65535])
        struct.pack_into("<HH", data, end + 8, count, count)
        return f"zip: entry count -> {count}", bytes(data)
    # duplicate the first directory entry (two members of one name)
    name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, cd_offset + 28)
    first = bytes(data[cd_offset:cd_offset + 46 + name_len + extra_len + comment_len])
    out = bytes(data[:end]) + first + bytes(data[end:])
    out = bytearray(out)
    e = end + len(first)
    n = struct.unpack_from("<H", out, e + 10)[0] + 1
    struct.pack_into("<HHL", out, e + 8, n, n, cd_size + len(first))
    return "zip: duplicate member", bytes(out)


def make_mutants(base: Path, folder: Path, count: int, seed: int) -> dict[Path, str]:
    """Write ``count`` mutants of the trace ``base`` into ``folder``: path -> edits
    (one in ten also edits the zip container)."""
    members = read_members(base)
    rng = random.Random(seed)
    out = {}
    for k in range(count):
        what, mutant = mutate(members, rng)
        path = write_members(folder / f"mutant{k:05d}.zip", mutant)
        if rng.random() < 0.1:
            edit, raw = zip_mutation(path.read_bytes(), rng)
            path.write_bytes(raw)
            what = f"{what}; {edit}"
        out[path] = what
    return out
