"""Provenance: which kernels each operator call of the input ended up in, and back.

The recorded main chain is followed step by step. Each operator call of the input's entry
function (a binding such as `conv2d1 = R.nn.conv2d(...)`) is tracked by where its
binding lives: LegalizeOps turns the call into `R.call_tir(kernel, ...)` (the binding
keeps its name); FuseOps moves bindings into `Primitive` Relax functions (names kept,
except a group's output, which is matched by the kernel it calls, in program order);
FuseTIR turns such a function into a PrimFunc of the same name; later passes keep kernel
names, so the names reach codegen. An operator whose binding vanishes otherwise is
"folded by FoldConstant" or "removed by <pass>".

Examples
--------
>>> import passlab
>>> prov = passlab.provenance(passlab.build(passlab.models.mlp()).trace)
>>> prov.kernels_of("relu"), prov.ops_of("fused_matmul_add_relu")
(('fused_matmul_add_relu',), ('matmul', 'add', 'relu'))
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from passlab import _render, _tvm
from passlab._render import Displayable
from passlab._sequence import NamedSequence
from passlab._tvm import ir as _ir
from passlab.errors import UnknownNameError, unknown
from passlab.models._source_names import source_names

__all__ = ["provenance", "Provenance", "OpOrigin"]


@dataclass(frozen=True)
class OpOrigin:
    """One operator call of the input and what became of it.

    `op` is the binding name in the input's entry function (`conv2d1`), `operator`
    the Relax operator (`nn.conv2d`), `kernels` the kernels it ended up in (empty when
    it is gone), `fate` one of `"kernel"`, `"builtin"` (a runtime function such as
    `vm.builtin.reshape`), `"unfused"` (still a call in the entry function: e.g. a
    pipeline without LegalizeOps), `"folded"` or `"removed"`,
    `note` says why (`"folded by FoldConstant"`), `history` lists
    `(step label, event)` pairs, and `source` the names of the source model's nodes
    the binding came from (ONNX node names such as `/layer1/layer1.0/conv1/Conv`, or
    PyTorch module paths, when `passlab.load` imported the model; else empty).
    """

    op: str
    operator: str
    kernels: tuple[str, ...]
    fate: str
    note: str = ""
    history: tuple[tuple[str, str], ...] = ()
    source: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Provenance(NamedSequence[OpOrigin], Displayable):
    """Operator calls of the input and the kernels they ended up in (see
    `provenance`); a sequence of `OpOrigin`, indexed by position or op name."""

    function: str
    ops: tuple[OpOrigin, ...]
    #: Kernels the last followed module still defines but nothing calls (TVM leaves a
    #: legalized ``reshape`` behind when LowerRuntimeBuiltin makes its call a runtime
    #: ``vm.builtin.reshape``): :meth:`ops_of` says "not called" for them.
    uncalled: tuple[str, ...] = ()

    def _items(self) -> tuple[OpOrigin, ...]:
        return self.ops

    @functools.cached_property
    def _index(self) -> dict[str, OpOrigin]:
        # the first operator call of each name (a view looks names up once per link)
        index: dict[str, OpOrigin] = {}
        for o in self.ops:
            index.setdefault(o.op, o)
        return index

    def _by_name(self, name: str) -> OpOrigin:
        found = self._index.get(name)
        if found is not None:
            return found
        raise unknown("operator call", name, [o.op for o in self.ops],
                      extra=f"(bindings of {self.function} in the input)")

    @property
    def kernels(self) -> tuple[str, ...]:
        """Every kernel that holds an operator of the input, in order of first use
        (runtime functions such as `vm.builtin.reshape`, fate `"builtin"`, are not
        kernels: `builtins` lists them)."""
        return tuple(dict.fromkeys(k for o in self.ops if o.fate != "builtin"
                                   for k in o.kernels))

    @property
    def builtins(self) -> tuple[str, ...]:
        """The runtime functions operator calls of the input became (`vm.builtin.reshape`)."""
        return tuple(dict.fromkeys(k for o in self.ops if o.fate == "builtin"
                                   for k in o.kernels))

    def kernels_of(self, op: str) -> tuple[str, ...]:
        """The kernels the operator call `op` (a binding name, or a source node name or
        a parent path of some: see `by_source`) ended up in."""
        if op in self._index or not self.sources:
            return self[op].kernels
        return tuple(dict.fromkeys(k for o in self.by_source(op) for k in o.kernels))

    @property
    def sources(self) -> tuple[str, ...]:
        """Every source node name (ONNX node, PyTorch module path), in program order."""
        return tuple(dict.fromkeys(s for o in self.ops for s in o.source))

    def by_source(self, name: str) -> tuple[OpOrigin, ...]:
        """The operator calls that came from the source model's node `name` (an ONNX
        node name, a PyTorch module path) or from anywhere below it: a parent path
        (`layer1.0`, `/layer1/layer1.0`) matches its whole subtree, a container with
        no operator of its own included. In program order."""
        found = tuple(o for o in self.ops if any(_below(s, name) for s in o.source))
        if not found:
            if not self.sources:
                raise UnknownNameError(
                    f"unknown source node {name!r}: the input's {self.function} carries no "
                    "source node names (ONNX and PyTorch models imported with "
                    "passlab.load carry them, when their nodes have names); look "
                    "operators up by binding name instead", name, (), ())
            raise unknown("source node", name, _with_parents(self.sources), extra=(
                "(ONNX node names or PyTorch module paths of the input, and their parent "
                "paths; binding names such as "
                f"{', '.join(repr(o.op) for o in self.ops[:2])} work too)"))
        return found

    def sources_of(self, kernel: str) -> tuple[str, ...]:
        """The source node names of the operator calls a kernel holds."""
        return tuple(dict.fromkeys(s for op in self.ops_of(kernel) for s in self[op].source))

    def ops_of(self, kernel: str) -> tuple[str, ...]:
        """The operator calls of the input that a kernel holds, in program order."""
        found = tuple(o.op for o in self.ops if kernel in o.kernels)
        if not found and kernel in self.uncalled:
            raise UnknownNameError(self._not_called(kernel), kernel, self.kernels, ())
        if not found and kernel not in self.kernels:
            raise unknown("kernel", kernel, self.kernels)
        return found

    def _not_called(self, kernel: str) -> str:
        """Why an uncalled kernel holds no operator call, naming the ones that once ran in
        it and what they run as now."""
        was = [(o, label) for o in self.ops for label, event in o.history
               if event in (f"calls {kernel}", f"merged into kernel {kernel}")]
        why = "; ".join(
            f"{o.op} ran in it until " + (f"{o.history[-1][0]}, which made it call "
                                          f"{', '.join(o.kernels)}" if o.kernels else
                                          o.note or "it was removed")
            for o, _ in was)
        return (f"kernel {kernel!r} is not called: the module still defines it, but no "
                "function calls it, so it holds no operator call of the input"
                + (f" ({why})" if why else "") + ".")

    def _columns(self) -> list[str]:
        return ["op", "operator", "kernels", "fate", "note"] + (
            ["source"] if self.sources else [])

    def _rows(self) -> list[list[str]]:
        extra = bool(self.sources)
        return [[o.op, o.operator, ", ".join(o.kernels) or "-", o.fate, o.note]
                + ([", ".join(o.source) or "-"] if extra else []) for o in self.ops]

    def to_text(self) -> str:
        gone = sum(1 for o in self.ops if not o.kernels)
        head = (f"Provenance of {len(self.ops)} operator calls of {self.function}: "
                f"{len(self.kernels)} kernels" + (f", {gone} gone" if gone else ""))
        return head + "\n" + _render.text_table(self._columns(), self._rows())

    def to_html(self) -> str:
        head = self.to_text().split("\n", 1)[0]
        return _render.html_table(self._columns(), self._rows(),
                                  classes=[o.fate for o in self.ops], caption=head)

    def to_dataframe(self) -> Any:
        """One row per operator call of the input (a `source` column when the input
        carries source node names)."""
        import pandas as pd

        return pd.DataFrame([{"op": o.op, "operator": o.operator,
                              "kernels": ", ".join(o.kernels), "fate": o.fate,
                              "note": o.note}
                             | ({"source": ", ".join(o.source)} if self.sources else {})
                             for o in self.ops])


#: What separates the parts of a source path: PyTorch module paths (``layer1.0.conv1``)
#: and ONNX node names (``/layer1/layer1.0/conv1/Conv``).
_PATH_SEPS = "./"


def _below(source: str, name: str) -> bool:
    """Whether source node `source` is `name` or lies in its subtree."""
    if not name or not source.startswith(name):
        return False
    return (len(source) == len(name) or name[-1] in _PATH_SEPS
            or source[len(name)] in _PATH_SEPS)


def _with_parents(sources: tuple[str, ...]) -> tuple[str, ...]:
    """`sources` and every parent path of theirs (`layer1.0` and `layer1` of
    `layer1.0.conv1`), in order of first appearance: what a lookup may name."""
    out: dict[str, None] = {}
    for s in sources:
        cut = [i for i, c in enumerate(s) if c in _PATH_SEPS and i > 0]
        for i in cut:
            out.setdefault(s[:i], None)
        out.setdefault(s, None)
    return tuple(out)


# ------------------------------------------------------------------------- tracking
@dataclass
class _Where:
    """Where an operator's binding lives now."""

    function: str | None  # function holding the binding (None once it is a kernel or gone)
    var: str | None  # the binding's name there
    kernel: str | None  # the kernel its call runs (call_tir target, or the fused kernel)
    gone: str = ""


def _bindings(func: Any) -> Iterator[tuple[str, Any]]:
    for b in _ir.iter_bindings(func):
        yield str(b.var.name), b.value


def _calls(func: Any, mod: Any) -> list[tuple[str, str, str]]:
    """(binding name, kind, target name) of each call in a Relax function."""
    relax = _tvm.relax()
    out = []
    for name, value in _bindings(func):
        if isinstance(value, relax.Call):
            t = _ir.call_target(value, mod, {})
            out.append((name, t.kind, t.name))
    return out


def _input_ops(mod: Any, entry: str) -> list[tuple[str, str]]:
    return [(name, _ir.short_op(target)) for name, kind, target in _calls(mod[entry], mod)
            if kind == "op" and not target.startswith(("relax.memory.", "relax.builtin."))]


def input_module(trace: Any) -> Any:
    """The module a trace started from (`trace.input`, else the first pass's input);
    `ValueError` when the trace recorded no pass."""
    trace = getattr(trace, "trace", trace)
    if getattr(trace, "input", None) is not None:
        return trace.input
    first = next((s.before for s in trace if s.on_main_chain and s.before is not None), None)
    if first is None:
        raise ValueError("the trace has no input module to follow (it recorded no pass)")
    return first


def provenance(trace: Any) -> Provenance:
    """Map every operator call of the input's entry function to the kernels it ended in
    after fusion, lowering and codegen, and every kernel back to its operators.

    Parameters
    ----------
    trace : Trace or Build
        A recorded build (its main chain is followed from the input).

    Returns
    -------
    Provenance
        `.kernels_of(op)`, `.ops_of(kernel)`, one `OpOrigin` per operator call.

    Examples
    --------
    >>> import passlab
    >>> prov = passlab.provenance(passlab.build(passlab.models.resnet()).trace)
    >>> prov.kernels_of("relu")
    ('fused_batch_norm_relu',)
    """
    trace = getattr(trace, "trace", trace)
    try:
        hit = _COMPUTED.get(trace)
    except TypeError:  # not weakly referable (a duck-typed trace): computed each time
        return _provenance(trace)
    if hit is None or hit[0] != len(trace):
        hit = (len(trace), _provenance(trace))
        _COMPUTED[trace] = hit
    return hit[1]


#: Trace -> (its length, its provenance): the report, the Explorer's provenance pane and
#: its kernel panels ask for the same trace's provenance (Swin-T: 0.3 s a time). The value
#: holds only names, so the trace can die.
_COMPUTED: weakref.WeakKeyDictionary[Any, tuple[int, Provenance]] = weakref.WeakKeyDictionary()


def clear_cache() -> None:
    """Forget every trace's provenance (benchmarks measure a cold report with it)."""
    _COMPUTED.clear()


def _provenance(trace: Any) -> Provenance:
    steps = [s for s in trace if s.on_main_chain and s.after is not None]
    first = input_module(trace)
    entry = _tvm.entry_function(first, strict=False)
    ops = _input_ops(first, entry)
    where = {op: _Where(entry, op, None) for op, _ in ops}
    history: dict[str, list[tuple[str, str]]] = {op: [] for op, _ in ops}
    walked: dict[tuple[int, int], list[tuple[str, str, str]]] = {}  # see _advance
    last = first
    for step in steps:
        if step.stage == "tir":
            # TVM's TIR pipeline keeps kernel names (they become the compiled symbols) but
            # splits and filters modules for host and device: follow the Relax stages only
            break
        last = step.after
        if step.changed:
            _advance(step, where, history, entry, walked)
    out = []
    for op, operator in ops:
        w = where[op]
        if w.gone:
            fate = "folded" if w.gone.startswith("folded") else "removed"
            out.append(OpOrigin(op, operator, (), fate, w.gone, tuple(history[op])))
        elif w.function is not None and w.function != entry:
            # still inside a Relax function (no FuseTIR, or a backend region): that
            # function is what runs it
            out.append(OpOrigin(op, operator, (w.function,), "kernel", "", tuple(history[op])))
        elif w.kernel is None:
            out.append(OpOrigin(op, operator, (), "unfused",
                                f"still an operator call in {w.function}", tuple(history[op])))
        elif "." in w.kernel:  # vm.builtin.reshape and friends: a runtime call, no kernel
            out.append(OpOrigin(op, operator, (w.kernel,), "builtin",
                                f"runs as the runtime function {w.kernel}", tuple(history[op])))
        else:
            out.append(OpOrigin(op, operator, (w.kernel,), "kernel", "", tuple(history[op])))
    names = source_names(first[entry])
    return Provenance(entry, tuple(replace(o, source=names.get(o.op, ())) for o in out),
                      _uncalled(last, out))


def _uncalled(mod: Any, ops: list[OpOrigin]) -> tuple[str, ...]:
    """The PrimFuncs of `mod` that no Relax function calls and no operator runs in."""
    funcs = _tvm.functions(mod)
    called = {c for f in funcs.values() for c in _tvm.called_functions(f)}
    running = {k for o in ops for k in o.kernels}
    return tuple(n for n, f in funcs.items()
                 if _tvm.is_prim_func(f) and n not in called and n not in running)


def _advance(step: Any, where: dict[str, _Where], history: dict[str, list], entry: str,
             walked: dict[tuple[int, int], list[tuple[str, str, str]]] | None = None
             ) -> None:
    """Follow every operator through `step`. Each Relax function is walked once per
    step at most, and once per trace while it stays the same object: `walked` keeps
    its calls by (function object, which module functions are Relax), the two things a
    call's kind depends on."""
    mod = step.after
    funcs = _tvm.functions(mod)
    relax_fns = {n: f for n, f in funcs.items() if _tvm.is_relax_function(f)}
    label = step.label
    if walked is None:
        walked = {}
    kinds = hash(tuple((n, n in relax_fns) for n in funcs))
    calls: dict[str, list[tuple[str, str, str]]] = {}
    for n, f in relax_fns.items():
        key = (f.__chandle__(), kinds)
        known = walked.get(key)
        if known is None:
            known = walked[key] = _calls(f, mod)
        calls[n] = known
    # each function's first call per binding name, built when first asked for: looking
    # an operator's binding up by scanning its function's calls was quadratic (the 7B
    # shape: 9,100 scans of ~1,000 calls, 4.9 s of its provenance)
    first: dict[str, dict[str, tuple[str, str, str]]] = {}

    def call_named(function: str | None, var: str | None) -> tuple[str, str, str] | None:
        if function not in calls:
            return None
        index = first.get(function)
        if index is None:
            index = first[function] = {}
            for c in calls[function]:
                index.setdefault(c[0], c)
        return index.get(var) if var is not None else None
    used_in: dict[str | None, set[str]] = {}  # one walk of the input per function
    missing: list[str] = []
    for op, w in where.items():
        if w.gone:
            continue
        if w.function is None:  # a kernel: it stays while a function of that name exists
            if w.kernel not in funcs:
                w.gone = f"kernel {w.kernel} removed by {step.name}"
                history[op].append((label, w.gone))
            continue
        hit = call_named(w.function, w.var)
        if hit is not None and hit[1] == "function" and w.kernel is not None:
            # a call of a fused function under this operator's name: FuseOps moved the
            # operator into that function and named its new call like it ("lv1" from an
            # importer and from FuseOps alike); whether the function also calls this
            # operator's kernel proves nothing (add, relu are in most), so find the
            # binding where it went (_relocate)
            hit = None
        if hit is not None:
            _, kind, target = hit
            if kind in ("call_tir", "dps", "function") and target != w.kernel:
                w.kernel = target
                history[op].append((label, f"calls {target}"))
            continue
        if w.function in funcs and w.function not in relax_fns:
            # FuseTIR: the Relax function holding the binding became a PrimFunc
            w.function, w.var, w.kernel = None, None, w.function
            history[op].append((label, f"merged into kernel {w.kernel}"))
            continue
        missing.append(op)
    if missing:
        _relocate(missing, where, history, calls, entry, label)
    called = {c[2] for c in calls.get(entry, ()) if c[1] in ("call_tir", "dps")}
    for op in missing:
        w = where[op]
        if w.function is None or call_named(w.function, w.var) is not None:
            continue  # relocated
        if w.kernel is not None and w.kernel in called:
            # the binding was rewritten (CallTIRRewrite: destination-passing calls with
            # new names) but the entry still runs the kernel: follow the kernel from now on
            w.function = w.var = None
            history[op].append((label, f"kernel {w.kernel} called directly"))
        else:
            if w.function not in used_in:
                used_in[w.function] = _used_names(step.before, w.function)
            used = w.var in used_in[w.function]
            w.gone = (f"folded by {step.name}" if used and "Fold" in step.name else
                      f"removed by {step.name}" + ("" if used else " (its result was unused)"))
            w.function = w.var = None
            history[op].append((label, w.gone))


def _used_names(mod: Any, function: str | None) -> set[str]:
    """Names of the variables that some binding or the result of `function` reads."""
    if mod is None or function is None:
        return set()
    func = _tvm.functions(mod).get(function)
    if func is None or not _tvm.is_relax_function(func):
        return set()
    names = {str(v.name) for b in _ir.iter_bindings(func) for v in _ir.var_refs(b.value)}
    body = getattr(func.body, "body", None)
    return names | ({str(v.name) for v in _ir.var_refs(body)} if body is not None else set())


def _relocate(missing: list[str], where: dict[str, _Where], history: dict[str, list],
              calls: dict[str, list[tuple[str, str, str]]], entry: str, label: str) -> None:
    """Find bindings that left their function (FuseOps). FuseOps makes one function per
    distinct group and calls it once per group, so each call site of the entry function
    is one group: its bindings take the missing operators by name, else by the kernel
    they call, earliest first (call sites and bindings are in program order)."""
    left = list(missing)
    sites = [t for _, kind, t in calls.get(entry, ()) if kind == "function" and t in calls]
    sites += [n for n in calls if n != entry and n not in sites]  # uncalled: last
    for fname in sites:
        for var, kind, target in calls[fname]:
            if not left:
                return
            by_name = [op for op in left if where[op].var == var
                       and where[op].kernel in (None, target)]
            by_kernel = [op for op in left if where[op].kernel == target
                         and kind in ("call_tir", "dps")]
            chosen = next(iter(by_name or by_kernel), None)
            if chosen is None:
                continue
            w = where[chosen]
            w.function, w.var = fname, var
            if kind in ("call_tir", "dps"):
                w.kernel = target
            history[chosen].append((label, f"moved into {fname}"))
            left.remove(chosen)
