"""Blame: which passes created, rewrote or removed a function, a binding or a tensor.

Like `git blame` for a compiled model: give a name you see in a snapshot (a global
function such as `fused_matmul_add_relu`, a Relax variable such as `lv3`, a tensor
from `passlab.buffers` or a kernel parameter) and get the main-chain passes that
touched it, back to the input model.

Functions are followed through each step's `functions_changed`; bindings through a
per-function map from variable name to the structural hash of its bound value, computed
only for the functions a step changed and cached per function object. A kernel's history
goes on into LLVM's own passes when the trace recorded them (`llvm_passes=True`): the
passes that rewrote its generated functions, and the vectorizers that vectorized them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab.errors import unknown
from passlab.recording.build import Build
from passlab.recording.trace import Step, Trace

__all__ = ["blame", "Blame", "Event"]

ACTIONS = ("created", "rewritten", "removed", "vectorized")


@dataclass(frozen=True, eq=False)
class Event:
    """`step` `action` ("created", "rewritten", "removed"; "vectorized" by one of
    LLVM's vectorizers) the name; `function` is the global function that holds it (for
    bindings and kernel parameters; for an LLVM step, the generated function)."""

    action: str
    step: Step = field(repr=False)
    function: str | None = None

    def __repr__(self) -> str:
        where = f" in {self.function}" if self.function else ""
        return f"Event({self.action} by {self.step.label}{where})"


@dataclass(frozen=True)
class Blame(NamedSequence[Event], _render.Displayable):
    """The history of one name along the main chain: a sequence of `Event`.

    `kind` is "function", "binding", "tensor" (a `passlab.buffers` alias,
    followed as the binding `resolved`) or "parameter" (of a kernel).
    """

    name: str
    kind: str
    events: tuple[Event, ...]
    in_input: bool
    at: Step | None = field(default=None, repr=False)
    resolved: str | None = None

    def _items(self) -> tuple[Event, ...]:
        return self.events

    def _by(self, action: str) -> tuple[Step, ...]:
        return tuple(dict.fromkeys(e.step for e in self.events if e.action == action))

    @property
    def created_by(self) -> tuple[Step, ...]:
        return self._by("created")

    @property
    def rewritten_by(self) -> tuple[Step, ...]:
        return self._by("rewritten")

    @property
    def removed_by(self) -> tuple[Step, ...]:
        return self._by("removed")

    @property
    def vectorized_by(self) -> tuple[Step, ...]:
        """LLVM's vectorizer steps that added vector instructions to the kernel."""
        return self._by("vectorized")

    @property
    def llvm_events(self) -> tuple[Event, ...]:
        """The events in LLVM's own passes (a kernel of a trace recorded with
        `llvm_passes=True`)."""
        return tuple(e for e in self.events if e.step.llvm is not None)

    def summary(self) -> str:
        """One line: "lv (binding): not in the input model. In forward: created by FuseOps;
        rewritten by FuseTIR" (bindings and parameters are grouped by function)."""
        what = self.kind + (f" of {self.resolved!r}" if self.resolved else "")
        head = f"{self.name} ({what}): " + ("in the input model" if self.in_input
                                           else "not in the input model")
        groups: dict[str | None, list[Event]] = {}
        for e in self.events:
            if e.step.llvm is None:
                groups.setdefault(e.function, []).append(e)
        parts = []
        for function, events in groups.items():
            acts = []
            for action in ACTIONS:
                steps = dict.fromkeys(e.step.label for e in events if e.action == action)
                if steps:
                    acts.append(f"{action} by {', '.join(steps)}")
            parts.append((f"In {function}: " if function else "") + "; ".join(acts))
        llvm = self._llvm_summary()
        if not parts:
            return head + ("; no pass touched it" if not llvm else "; " + llvm)
        return head + ("; " + parts[0] if groups.keys() == {None} else ". " + ". ".join(parts)) \
            + (". " + llvm if llvm else "")

    def _llvm_summary(self) -> str:
        """"In LLVM: vectorized by LoopVectorizePass (f_compute_); 31 passes rewrote its
        functions (SROAPass, ...)"."""
        events = self.llvm_events
        if not events:
            return ""
        vec = [f"{e.step.label} ({e.function})" for e in events if e.action == "vectorized"]
        steps = list(dict.fromkeys(e.step.label for e in events if e.action != "vectorized"))
        names = list(dict.fromkeys(s.partition("#")[0] for s in steps))
        parts = [f"vectorized by {', '.join(vec)}"] if vec else ["not vectorized by LLVM"]
        if steps:
            parts.append(f"{len(steps)} LLVM pass run{'s' if len(steps) != 1 else ''} "
                         f"rewrote its functions ({', '.join(names[:5])}"
                         f"{', ...' if len(names) > 5 else ''})")
        return "In LLVM: " + "; ".join(parts)

    def _table(self) -> tuple[list[str], list[list[str]]]:
        return (["step", "pass", "stage", "action", "function"],
                [[str(e.step.index), e.step.label, e.step.stage, e.action, e.function or ""]
                 for e in self.events])

    def to_text(self) -> str:
        header, rows = self._table()
        return self.summary() + ("\n" + _render.text_table(header, rows) if rows else "")

    def to_html(self) -> str:
        header, rows = self._table()
        return _render.html_table(header, rows, caption=self.summary())

    def to_dataframe(self):
        import pandas as pd

        header, rows = self._table()
        return pd.DataFrame(rows, columns=header)


# ------------------------------------------------------------------------ helpers
def _binding_table(func: Any) -> dict[str, tuple[Any, ...]]:
    table: dict[str, tuple[Any, ...]] = {}
    for p in func.params:
        table[str(p.name)] = (None,)
    for block in getattr(func.body, "blocks", ()):
        for b in block.bindings:
            name = str(b.var.name)
            table[name] = table.get(name, ()) + (b.value,)
    return table


class _Names:
    """Per-function name tables, cached per function object (see the module doc)."""

    def __init__(self) -> None:
        self._bindings = _tvm.ObjectCache(_binding_table)
        self._hashes = _tvm.ObjectCache(_tvm.function_hash)

    def bindings(self, func: Any) -> dict[str, tuple[Any, ...]]:
        """`{variable name: (bound values, ...)}` of a Relax function ({} otherwise)."""
        if func is None or not _tvm.is_relax_function(func):
            return {}
        return self._bindings(func)

    def value_hashes(self, values: tuple[Any, ...]) -> tuple[int | None, ...]:
        return tuple(None if v is None else self._hashes(v) for v in values)

    @staticmethod
    def parameters(func: Any) -> dict[str, str]:
        """`{parameter name: type text}` of a kernel (PrimFunc)."""
        if func is None or not _tvm.is_prim_func(func):
            return {}
        return {str(p.name): str(getattr(p, "ty", "")) for p in func.params}


def _chain(trace: Trace, at: Step | None) -> list[Step]:
    """Main-chain steps up to `at`, without side branches: a step whose output the
    build did not go on from (TVM's device-module Filter, whose input the next pass
    takes again)."""
    main = [s for s in trace if s.on_main_chain and s.after is not None]
    if at is not None:
        main = [s for s in main if s.index <= at.index]
    keep = []
    for k, s in enumerate(main):
        nxt = main[k + 1] if k + 1 < len(main) else None
        if (nxt is not None and not nxt.before.same_as(s.after)
                and any(nxt.before.same_as(p.after) for p in main[max(0, k - 8):k])):
            continue
        keep.append(s)
    return keep


def _events(chain: list[Step], name: str, lookup: Callable[[Any], dict[str, Any]],
            same: Callable[[Any, Any], bool]) -> list[Event]:
    """Where `name` (found in a function by `lookup`) appears, disappears or changes
    (`same` says whether two found values are the same) along the chain."""
    events = []
    for s in chain:
        fa, fb = _tvm.functions(s.before), _tvm.functions(s.after)
        for fname in s.functions_changed.names:
            old = lookup(fa.get(fname)).get(name)
            new = lookup(fb.get(fname)).get(name)
            if old is not None and new is None:
                events.append(Event("removed", s, fname))
            elif new is not None and old is None:
                events.append(Event("created", s, fname))
            elif old is not None and not same(old, new):
                events.append(Event("rewritten", s, fname))
    return events


def _binding_events(chain: list[Step], name: str, names: _Names) -> list[Event]:
    return _events(chain, name, names.bindings,
                   lambda a, b: names.value_hashes(a) == names.value_hashes(b))


def _parameter_events(chain: list[Step], name: str, names: _Names) -> list[Event]:
    return _events(chain, name, names.parameters, lambda a, b: a == b)


def _llvm_events(trace: Trace, kernel: str) -> list[Event]:
    """Kernel `kernel`'s history in LLVM's own passes: one event per function of it
    that an LLVM step changed ("vectorized" where a vectorizer added vector
    instructions)."""
    code = trace.code
    if trace.llvm_summary is None or code is None or kernel not in code.kernels:
        return []
    from passlab.analysis.llvm import VECTORIZERS, stats_of

    events = []
    for s in trace.llvm_steps(kernel):
        for f in s.llvm.functions:
            if f.kernel != kernel:
                continue
            action = {"added": "created", "removed": "removed"}.get(f.status, "rewritten")
            # a vectorizer's step that adds vector instructions "vectorized" the kernel
            if (s.name in VECTORIZERS and action == "rewritten"
                    and stats_of(f.after).vector_instructions
                    > stats_of(f.before).vector_instructions):
                action = "vectorized"
            events.append(Event(action, s, f.symbol))
    return events


def _tensor_alias(module: Any, name: str) -> str | None:
    from passlab.analysis.buffers import buffers

    try:
        report = buffers(module)
    except Exception:  # not a module with Relax tensors
        return None
    for t in report.tensors:
        if name in t.aliases:
            return t.name
    return None


def _resolve(where: Any, trace: Trace | None) -> tuple[Trace, Step | None]:
    if isinstance(where, Build):
        return where.trace, None
    if isinstance(where, Trace):
        return where, None
    if isinstance(where, Step):
        if trace is None:
            raise TypeError(f"blame(step, name) needs the step's trace to follow the name back: "
                            f"blame(step, name, trace=build.trace) (step #{where.index} "
                            f"{where.label!r} alone does not know the passes before it)")
        return trace, where
    raise TypeError(f"blame() takes a Trace, a Build or a Step, not {type(where).__name__}")


KINDS = ("function", "binding", "tensor", "parameter")


def blame(where: Trace | Build | Step, name: str, *, trace: Trace | None = None,
          kind: str | None = None) -> Blame:
    """The main-chain passes that created, rewrote or removed `name`.

    Parameters
    ----------
    where
        A Trace or Build (the whole main chain), or a Step together with `trace=`
        (the chain up to and including that step).
    name
        A global function, a Relax variable (binding or parameter), a tensor name or
        alias from `passlab.buffers` (at the last step), or a kernel parameter.
    kind
        "function", "binding", "tensor" or "parameter" when a name is several things
        (`matmul` is a kernel and a variable); by default the first that fits, in
        that order.

    Returns
    -------
    Blame
        Events in pass order, `created_by` / `rewritten_by` / `removed_by` and
        `in_input` (whether the input model had the name).

    Raises
    ------
    passlab.UnknownNameError
        No snapshot of the chain has the name; the message lists close matches.

    Examples
    --------
    >>> import passlab
    >>> from passlab.research import blame
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> [s.name for s in blame(trace, "fused_matmul_add_relu").created_by]
    ['FuseOps']
    >>> [(e.action, e.step.name, e.function) for e in blame(trace, "lv")][:2]
    [('created', 'FuseOps', 'forward'), ('rewritten', 'FuseTIR', 'forward')]
    """
    if kind is not None and kind not in KINDS:
        raise unknown("blame kind", kind, KINDS)
    trace, at = _resolve(where, trace)
    chain = _chain(trace, at)
    if not chain:
        raise ValueError("the trace has no finished main-chain pass to blame")
    start = chain[0].before
    mods = [start] + [s.after for s in chain]
    names = _Names()

    def functions(m: Any) -> Iterator[Any]:
        return iter(_tvm.functions(m).values())

    def in_bindings(m: Any, n: str) -> bool:
        return any(n in names.bindings(f) for f in functions(m))

    def in_parameters(m: Any, n: str) -> bool:
        return any(n in names.parameters(f) for f in functions(m))

    if kind in (None, "function") and any(name in _tvm.functions(m) for m in mods):
        events = []
        for s in chain:
            ch = s.functions_changed
            for action, group in (("created", ch.added), ("rewritten", ch.modified),
                                  ("removed", ch.removed)):
                if name in group:
                    events.append(Event(action, s))
        if at is None:
            events += _llvm_events(trace, name)
        return Blame(name, "function", tuple(events), name in _tvm.functions(start), at)
    if kind in (None, "binding") and any(in_bindings(m, name) for m in mods):
        return Blame(name, "binding", tuple(_binding_events(chain, name, names)),
                     in_bindings(start, name), at)
    alias = _tensor_alias(chain[-1].after, name) if kind in (None, "tensor") else None
    if alias is not None:
        return Blame(name, "tensor", tuple(_binding_events(chain, alias, names)),
                     in_bindings(start, alias), at, alias)
    if kind in (None, "parameter") and any(in_parameters(m, name) for m in mods):
        return Blame(name, "parameter", tuple(_parameter_events(chain, name, names)),
                     in_parameters(start, name), at)
    known = sorted({n for m in mods for n in _tvm.functions(m)})  # functions listed first
    known += sorted({b for m in mods for f in functions(m) for b in names.bindings(f)})
    what = "function, binding or tensor" if kind is None else kind
    raise unknown(what, name, known, extra="(in this trace's main chain)")
