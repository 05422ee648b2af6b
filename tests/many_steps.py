"""Traces with many steps, crafted from a small saved trace (no build needed): the scale
tests of the Explorer and the report (issues 22 and 24) use them.

``with_inner(saved, out, n)`` adds ``n`` inner steps under the trace's first FoldConstant
(as a model with weights as constants makes FoldConstant run TIR builds inside itself);
``with_main(saved, out, n)`` replaces the steps by ``n`` main-chain passes, each of which
changes the module (the crafted file of issue 22 2(d)). Both files stay small: the steps
point at modules already in ``ir.json``.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

INNER_NAMES = ("s_tir.LowerOpaqueBlock", "tirx.FlattenBuffer", "tirx.StmtSimplify",
               "tirx.VectorizeLoop", "tirx.RemoveNoOp", "tirx.MakePackedAPI")


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(out: Path, members: dict[str, bytes], data: dict) -> Path:
    members = dict(members, **{"trace.json": json.dumps(data).encode()})
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, blob in members.items():
            z.writestr(name, blob)
    return out


def _renumber(steps: list[dict]) -> list[dict]:
    """Indices 0..n-1 in order, parents mapped to the new indices, occurrences counted."""
    new_of: dict[int, int] = {}
    seen: dict[str, int] = {}
    out = []
    for k, s in enumerate(steps):
        s = dict(s)
        if s["index"] >= 0:
            new_of[s["index"]] = k
        s["index"] = k
        if s["parent"] is not None:
            s["parent"] = new_of[s["parent"]]
        s["occurrence"] = seen.get(s["name"], 0)
        seen[s["name"]] = s["occurrence"] + 1
        out.append(s)
    return out


def with_inner(saved: Path, out: Path, n: int) -> Path:
    m = _members(saved)
    data = json.loads(m["trace.json"])
    steps = data["steps"]
    at = next(k for k, s in enumerate(steps) if s["name"] == "FoldConstant")
    fold = steps[at]
    # back and forth between FoldConstant's input and the model's input (LegalizeOps
    # changed it): every inner step changes one function
    a, b = fold["before"], data["input"]
    extra = [dict(index=-1, name=INNER_NAMES[k % len(INNER_NAMES)], depth=fold["depth"] + 1,
                  parent=fold["index"], stage=fold["stage"], kind="inner", origin="tvm",
                  occurrence=0, seconds=1e-5, failed=False, caught=False,
                  before=a if k % 2 == 0 else b, after=b if k % 2 == 0 else a)
             for k in range(n)]
    old_code = data.get("code")
    data["steps"] = _renumber(steps[:at + 1] + extra + steps[at + 1:])
    if old_code is not None:
        old_code["step"] = old_code["step"] + n
    return _write(out, m, data)


def with_main(saved: Path, out: Path, n: int) -> Path:
    m = _members(saved)
    data = json.loads(m["trace.json"])
    # the model's input and LegalizeOps' output: every step changes the module
    a = data["input"]
    b = next(s["after"] for s in data["steps"] if s["name"] == "LegalizeOps")
    data["steps"] = _renumber([
        dict(index=k, name=f"Pass{k % 7}", depth=0, parent=None, stage="legalize",
             kind="pass", origin="tvm", occurrence=0, seconds=1e-4, failed=False,
             caught=False, before=a if k % 2 == 0 else b, after=b if k % 2 == 0 else a)
        for k in range(n)])
    data["code"] = None
    data["failure"] = None
    return _write(out, m, data)
