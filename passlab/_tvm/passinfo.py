"""What passlab's explanations need from TVM: where a pass's API lives and its docstring,
and a census of the calls in a module (operators, kernels, allocations, frees).

Pass names are those TVM records (`FuseOps`, `tirx.LowerIntrin`, `s_tir.LoopPartition`);
the Python modules that define them moved between TVM versions, hence this adapter.
"""

from __future__ import annotations

import importlib
import inspect
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from passlab._tvm import ObjectCache, is_prim_func, is_relax_function
from passlab._tvm.ir_calls import ALLOC_STORAGE, ALLOC_TENSOR, STORAGE_TENSOR, call_target
from passlab._tvm.ir_types import _tvm, attr, iter_bindings

__all__ = ["api_path", "pass_doc", "pass_constructors", "Census", "census", "op_patterns"]

#: Where TVM 0.27 defines passes, by the prefix TVM records in their names.
_PREFIXES = (("tirx.", ("tvm.tirx.transform",)), ("s_tir.", ("tvm.s_tir.transform",)))
_RELAX = ("tvm.relax.transform", "tvm.relax.backend", "tvm.s_tir.dlight", "tvm.transform")
#: Docstring sections that describe the Python signature, not the pass.
_SECTIONS = ("Parameters", "Returns", "Note", "Notes", "Example", "Examples")


#: Where TVM 0.27 defines pass constructors, by the prefix TVM records in their names.
_NAMESPACES = (("tvm.relax.transform", ""), ("tvm.tirx.transform", "tirx."),
               ("tvm.s_tir.transform", "s_tir."))


@lru_cache(maxsize=1)
def pass_constructors() -> dict[str, Callable[[], Any]]:
    """TVM's pass constructors that need no argument, by the name TVM records for their
    passes ("FoldConstant", "tirx.VectorizeLoop"): what a pipeline editor can insert."""
    found: dict[str, Callable[[], Any]] = {}
    for module, prefix in _NAMESPACES:
        try:
            ns = importlib.import_module(module)
        except ImportError:
            continue
        for member in sorted(dir(ns)):
            ctor = getattr(ns, member)
            if member.startswith("_") or not member[:1].isupper() or inspect.isclass(ctor) \
                    or not callable(ctor):
                continue
            try:
                params = inspect.signature(ctor).parameters.values()
            except (TypeError, ValueError):
                continue
            if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in params):  # made without arguments
                found.setdefault(prefix + member, ctor)
    return found


def api_path(name: str) -> str | None:
    """`tvm.relax.transform.FuseOps` for "FuseOps": the TVM API object that makes the pass
    called `name` (a `#n` suffix is ignored), or None when TVM has none by that name."""
    found = _lookup(name.split("#")[0])
    return None if found is None else found[0]


def pass_doc(name: str) -> tuple[str, str] | None:
    """`(api path, docstring)` of the TVM pass called `name`, or None."""
    found = _lookup(name.split("#")[0])
    if found is None:
        return None
    path, obj = found
    doc = inspect.getdoc(obj) or ""
    return path, _strip_sections(doc)


def _lookup(name: str) -> tuple[str, Any] | None:
    modules: tuple[str, ...] = _RELAX
    attr_name = name
    for prefix, where in _PREFIXES:
        if name.startswith(prefix):
            modules, attr_name = where, name[len(prefix):]
    if not attr_name.isidentifier():
        return None
    for module in modules:
        try:
            obj = getattr(importlib.import_module(module), attr_name, None)
        except ImportError:
            continue
        if obj is not None and callable(obj):
            return f"{module}.{attr_name}", obj
    return None


def _strip_sections(doc: str) -> str:
    """The prose of a numpy-style docstring, without its Parameters/Returns sections."""
    lines = doc.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() in _SECTIONS and set(lines[i + 1].strip()) <= {"-"} and lines[i + 1].strip():
            lines = lines[:i]
            break
    return "\n".join(lines).strip()


@dataclass(frozen=True)
class Census:
    """Counts of what the Relax functions of a module call (fused "Primitive" functions
    are counted apart: their calls are inside kernels-to-be)."""

    ops: Counter = field(default_factory=Counter)  # Relax operator calls by op name
    call_tir: int = 0  # R.call_tir (and call_tir_inplace) outside fused functions
    fused_calls: int = 0  # calls of Primitive (fused) Relax functions
    kernel_calls: int = 0  # destination-passing calls of PrimFuncs (after CallTIRRewrite)
    allocs: Counter = field(default_factory=Counter)  # allocation ops by name
    kills: int = 0  # kill_tensor / kill_storage / kill_object
    packed: int = 0  # calls of packed functions (vm.builtin.* ...)
    dataflow_blocks: int = 0
    prim_funcs: int = 0
    fused_functions: int = 0

    @property
    def operator_calls(self) -> int:
        return sum(self.ops.values())

    @property
    def builtin_allocs(self) -> int:
        """`R.builtin.alloc_tensor` calls (unplanned allocations)."""
        return self.allocs.get(ALLOC_TENSOR, 0)

    @property
    def storages(self) -> int:
        return self.allocs.get(ALLOC_STORAGE, 0)

    @property
    def planned_tensors(self) -> int:
        return self.allocs.get(STORAGE_TENSOR, 0)

    @property
    def vm_allocs(self) -> int:
        return sum(n for k, n in self.allocs.items() if k.startswith("relax.vm."))


def census(mod: Any) -> Census:
    """Count the calls of every Relax function of `mod` (see `Census`); once per
    module object (a step's module before is the previous step's after)."""
    return Census() if mod is None else _CENSUSES(mod)


def _census(mod: Any) -> Census:
    _, relax = _tvm()
    ops: Counter = Counter()
    allocs: Counter = Counter()
    n = dict(call_tir=0, fused=0, kernel=0, kills=0, packed=0, blocks=0, prims=0, fused_fns=0)
    if mod is None:
        return Census()
    for func in mod.functions.values():
        if is_prim_func(func):
            n["prims"] += 1
            continue
        if not is_relax_function(func):
            continue
        if attr(func, "Primitive"):
            n["fused_fns"] += 1
            continue
        n["blocks"] += sum(isinstance(b, relax.DataflowBlock)
                           for b in getattr(func.body, "blocks", ()))
        for b in iter_bindings(func):
            if not isinstance(b.value, relax.Call):
                continue
            t = call_target(b.value, mod, {})
            if t.kind == "op":
                ops[t.name] += 1
            elif t.kind == "call_tir":
                n["call_tir"] += 1
            elif t.kind == "alloc":
                allocs[t.name] += 1
            elif t.kind == "function" and t.func is not None and attr(t.func, "Primitive"):
                n["fused"] += 1
            elif t.kind == "dps" and t.func is not None and is_prim_func(t.func):
                n["kernel"] += 1
            elif t.kind == "bookkeeping" and "kill" in t.name:
                n["kills"] += 1
            elif t.kind in ("dps", "packed", "bookkeeping"):
                n["packed"] += 1
    return Census(ops, n["call_tir"], n["fused"], n["kernel"], allocs, n["kills"], n["packed"],
                  n["blocks"], n["prims"], n["fused_fns"])


#: Censuses of the modules a view looked at last (weakly: a closed trace's modules go).
_CENSUSES = ObjectCache(_census, maxsize=64, weak=True)


def op_patterns(mod: Any, names: Any) -> Counter:
    """How many of the PrimFuncs `names` of `mod` carry each `op_pattern` label."""
    from passlab._tvm.ir_calls import op_pattern, pattern_name

    out: Counter = Counter()
    for name in names:
        try:
            func = mod[name]
        except Exception:  # a name of another module
            continue
        if is_prim_func(func):
            p = op_pattern(func)
            if p is not None:
                out[pattern_name(p)] += 1
    return out
