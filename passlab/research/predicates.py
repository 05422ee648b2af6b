"""Ready predicates for `passlab.Trace.first` and `passlab.Trace.filter`.

Each predicate looks at `step.after` (False for a failed step), has a readable
`repr`, and combines with `&`, `|` and `~`. Per-function facts (which operators a
Relax function calls) are cached per function object, and unchanged functions are the
same objects from step to step, so scanning a whole trace reads each function once.

Examples
--------
>>> import passlab
>>> from passlab.research.predicates import no_calls, has_function
>>> trace = passlab.build(passlab.models.mlp()).trace
>>> trace.first(no_calls("relax.nn.")).name
'LegalizeOps'
>>> trace.first(has_function("fused_*") & no_calls("relax.nn.")).name
'FuseOps'
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

from passlab import _tvm
from passlab.recording.trace import Step

__all__ = ["Predicate", "no_calls", "calls", "has_function", "buffer_over"]


class Predicate:
    """A named test of a step: `pred(step) -> bool`.

    `&`, `|` and `~` combine predicates (and plain functions of a step); a failed
    step (no module after it) satisfies none, negated or not.
    """

    def __init__(self, name: str, test: Callable[[Any], bool]):
        self.name = name
        self._test = test

    @classmethod
    def on_module(cls, name: str, test: Callable[[Any], bool]) -> Predicate:
        """A predicate from a test of the module after the step."""
        return cls(name, lambda step: getattr(step, "after", None) is not None
                   and bool(test(step.after)))

    def __call__(self, step: Step) -> bool:
        return bool(self._test(step))

    def __and__(self, other: Callable[[Any], bool]) -> Predicate:
        return Predicate(f"({self.name} & {_name(other)})", lambda s: self(s) and bool(other(s)))

    def __or__(self, other: Callable[[Any], bool]) -> Predicate:
        return Predicate(f"({self.name} | {_name(other)})", lambda s: self(s) or bool(other(s)))

    def __invert__(self) -> Predicate:
        return Predicate(f"~{self.name}",
                         lambda s: getattr(s, "after", None) is not None and not self(s))

    def __repr__(self) -> str:
        return self.name


def _name(f: Any) -> str:
    return f.name if isinstance(f, Predicate) else getattr(f, "__name__", repr(f))


def _called_names(func: Any) -> frozenset[str]:
    """Operators (`relax.nn.relu`), global functions (called directly or through
    `call_tir`) and extern symbols a Relax function calls."""
    import tvm
    from tvm import relax

    names: set[str] = set()

    def visit(node: Any) -> None:
        if not isinstance(node, relax.Call):
            return
        op = node.op
        if isinstance(op, tvm.ir.Op):
            names.add(str(op.name))
        elif isinstance(op, tvm.ir.GlobalVar):
            names.add(op.name_hint)
        elif isinstance(op, relax.ExternFunc):
            names.add(str(op.global_symbol))
        for arg in node.args:
            if isinstance(arg, tvm.ir.GlobalVar):
                names.add(arg.name_hint)

    relax.analysis.post_order_visit(func, visit)
    return frozenset(names)


def _module_calls() -> Callable[[Any], frozenset[str]]:
    per_function = _tvm.ObjectCache(_called_names)

    def calls_of(mod: Any) -> frozenset[str]:
        out: set[str] = set()
        for f in _tvm.functions(mod).values():
            if _tvm.is_relax_function(f):
                out |= per_function(f)
        return frozenset(out)

    return _tvm.ObjectCache(calls_of)


def no_calls(prefix: str = "relax.nn.") -> Predicate:
    """True when no Relax function of the module calls an operator whose name starts
    with `prefix` (`"relax.nn."`: every neural-network operator has been legalized)."""
    calls_of = _module_calls()
    return Predicate.on_module(f"no_calls({prefix!r})",
                     lambda mod: not any(n.startswith(prefix) for n in calls_of(mod)))


def calls(op_name: str) -> Predicate:
    """True when some Relax function calls `op_name`: an operator (`"relax.nn.relu"`
    or `"nn.relu"`) or a global function, directly or through `call_tir`."""
    calls_of = _module_calls()
    wanted = {op_name, "relax." + op_name}
    return Predicate.on_module(f"calls({op_name!r})", lambda mod: bool(wanted & calls_of(mod)))


def has_function(name: str) -> Predicate:
    """True when the module has a global function called `name`; shell-style patterns
    work (`"fused_*"`)."""
    pattern = any(c in name for c in "*?[")

    def test(mod: Any) -> bool:
        names = [gv.name_hint for gv in mod.get_global_vars()]
        return any(fnmatch.fnmatchcase(n, name) for n in names) if pattern else name in names

    return Predicate.on_module(f"has_function({name!r})", test)


def buffer_over(nbytes: int) -> Predicate:
    """True when a temporary tensor (an intermediate, not an input, weight or output)
    of more than `nbytes` bytes appears in the module (see `passlab.buffers`).
    Modules the buffer analysis cannot read count as False."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ValueError(f"nbytes must be a non-negative int, not {nbytes!r}")

    def largest(mod: Any) -> int:
        from passlab.analysis.buffers import buffers

        try:
            report = buffers(mod)
        except Exception:  # e.g. a TIR-only module: no Relax tensors to measure
            return -1
        return max((t.bytes for t in report.tensors
                    if t.kind == "intermediate" and t.bytes is not None), default=-1)

    largest_of = _tvm.ObjectCache(largest)
    return Predicate.on_module(f"buffer_over({nbytes})", lambda mod: largest_of(mod) > nbytes)
