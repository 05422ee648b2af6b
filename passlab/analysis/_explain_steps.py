"""A sentence for every recorded step: the pass's card plus what changed *here*, with the
numbers taken from the analyses (change sets, a census of calls, `passlab.buffers`).

The main Relax passes and the memory passes have sentences of their own; TIR passes get
a verb and the kernels they touched; anything else the generic one (functions, bindings,
IR lines, peak temporary memory). A step that changed nothing says so, and why when the
reason is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from passlab import _render, _tvm
from passlab._render import human_bytes
from passlab._tvm import passinfo
from passlab._tvm.ir_calls import ALLOC_STORAGE, ALLOC_TENSOR
from passlab._tvm.printing import function_text, prefetch
from passlab.analysis import _explain_render as _html
from passlab.analysis.diff import prints_by_region
from passlab.analysis.explain import Card, card_for, llvm_card
from passlab.analysis.llvm import llvm_sentence
from passlab.recording import numbering

__all__ = ["Explanation", "explain_step"]

#: Names shown in a sentence before "and N more".
_SHOWN = 3


@dataclass(frozen=True)
class Explanation(_render.Displayable):
    """What one recorded step did, in a sentence, with the card of its pass
    (`passlab.Step.explain`; `passlab.explain` gives the `Card`
    alone: what the pass does in general, no build needed).

    `kind` is "specific" (a sentence written for this pass), "generic", "no change",
    "failed" or "container"; `facts` holds the numbers the sentence states.
    """

    label: str
    index: int
    card: Card
    sentence: str
    kind: str
    facts: tuple[tuple[str, Any], ...] = ()
    #: the pass's pipeline position, as every view numbers it (None: no pipeline entry)
    position: int | None = None

    @property
    def ref(self) -> str:
        """How the views name this step: "#5 FuseOps", or "tirx.BindTarget (step 35)"."""
        if self.position is None:
            return f"{self.label} (step {self.index})"
        return f"#{self.position} {self.label}"

    @property
    def summary(self) -> str:
        return self.card.summary

    def fact(self, key: str) -> Any:
        return dict(self.facts)[key]

    def to_text(self) -> str:
        return f"{self.ref}: {self.sentence}\n{self.card.summary}"

    def to_html(self, *, style: bool = True) -> str:
        """The "Explain" strip; `style=False` leaves out the stylesheet (a page that
        shows many strips includes `passlab.analysis.explain.CSS` once)."""
        return _html.strip_html(self, style=style)


def _names(names: Any) -> str:
    names = list(names)
    shown = ", ".join(names[:_SHOWN])
    more = len(names) - _SHOWN
    return shown + (f", and {more} more" if more > 0 else "")


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _arrow(a: Any, b: Any) -> str:
    return f"{a} (unchanged)" if a == b else f"{a} \u2192 {b}"


class _Ctx:
    """What a sentence may look at, computed on first use."""

    def __init__(self, step: Any):
        self.step = step
        self.ch = step.functions_changed
        self._c: dict[str, Any] = {}

    def census(self, which: str) -> passinfo.Census:
        if which not in self._c:
            self._c[which] = passinfo.census(getattr(self.step, which))
        return self._c[which]

    @property
    def b(self) -> passinfo.Census:
        return self.census("before")

    @property
    def a(self) -> passinfo.Census:
        return self.census("after")

    def prims(self, names: Any) -> list[str]:
        fns = _tvm.functions(self.step.after)
        return [n for n in names if n in fns and _tvm.is_prim_func(fns[n])]

    def buffers(self, which: str) -> Any:
        key = "buf_" + which
        if key not in self._c:
            from passlab.analysis.buffers import buffers

            try:
                self._c[key] = buffers(getattr(self.step, which))
            except (ValueError, TypeError):  # no Relax function in this module
                self._c[key] = None
        return self._c[key]

    def row(self) -> dict[str, Any]:
        if "row" not in self._c:
            self._c["row"] = self.step.row()
        return self._c["row"]


Sentence = tuple[str, dict[str, Any]]


# ------------------------------------------------------------------- Relax sentences
def _legalize(c: _Ctx) -> Sentence:
    turned = c.b.operator_calls - c.a.operator_calls
    new = c.prims(c.ch.added)
    left = c.a.operator_calls
    rest = "no operator call remains" if not left else f"{_plural(left, 'operator call')} remain"
    return (f"LegalizeOps turned {_plural(turned, 'high-level operator call')} into R.call_tir "
            f"of {_plural(len(new), 'new TIR function')} ({_names(new)}); {rest}.",
            dict(operators=turned, prim_funcs_added=len(new), operators_left=left))


def _annotate(c: _Ctx) -> Sentence:
    pats = passinfo.op_patterns(c.step.after, c.ch.modified)
    n = sum(pats.values())
    kinds = ", ".join(f"{k} {v}" for v, k in sorted(((v, k) for k, v in pats.items()), reverse=True))
    return (f"AnnotateTIROpPattern labelled {_plural(n, 'TIR function')} for fusion "
            f"({kinds}).", dict(labelled=n, **{f"pattern_{k}": v for k, v in pats.items()}))


def _fuse_ops(c: _Ctx) -> Sentence:
    added = list(c.ch.added)
    grouped = c.b.call_tir - c.a.call_tir
    stay = c.a.call_tir
    return (f"FuseOps grouped {_plural(grouped, 'kernel call')} into "
            f"{_plural(len(added), 'fused function')} ({_names(added)}); "
            f"{_plural(stay, 'call stays', 'calls stay')} unfused.",
            dict(grouped=grouped, fused=len(added), unfused=stay))


def _fuse_tir(c: _Ctx) -> Sentence:
    made = c.prims(c.ch.modified + c.ch.added)
    made = [n for n in made if n.startswith("fused_")] or made
    gone = list(c.ch.removed)
    return (f"FuseTIR turned {_plural(len(made), 'fused function')} into "
            f"{_plural(len(made), 'single TIR kernel')} ({_names(made)}) and dropped "
            f"{_plural(len(gone), 'function')} no longer called; PrimFuncs "
            f"{_arrow(c.b.prim_funcs, c.a.prim_funcs)}, "
            f"{_plural(c.a.call_tir, 'kernel call')} in the Relax code.",
            dict(kernels=len(made), removed=len(gone), prim_funcs_before=c.b.prim_funcs,
                 prim_funcs_after=c.a.prim_funcs, calls=c.a.call_tir))


def _fold(c: _Ctx) -> Sentence:
    folded = (c.b.call_tir + c.b.operator_calls) - (c.a.call_tir + c.a.operator_calls)
    return (f"FoldConstant evaluated {_plural(folded, 'call')} at compile time and put the "
            f"results in the IR as constants; {_plural(len(c.ch.removed), 'function')} "
            "became unused.", dict(folded=folded, removed=len(c.ch.removed)))


def _dce(c: _Ctx) -> Sentence:
    row = c.row()
    gone = list(c.ch.removed)
    bindings = row["bindings_before"] - row["bindings_after"]
    what = f"removed {_plural(len(gone), 'unused function')}"
    if gone:
        what += f" ({_names(gone)})"
    if bindings:
        what += f" and {_plural(bindings, 'unused binding')}"
    return (f"{c.step.name} {what}.",
            dict(removed=len(gone), bindings_removed=bindings))


def _canonicalize(c: _Ctx) -> Sentence:
    row = c.row()
    n = row["bindings_before"] - row["bindings_after"]
    return (f"{c.step.name} simplified {_plural(len(c.ch.modified), 'function')} "
            f"({_names(c.ch.modified)}): Relax bindings "
            f"{_arrow(row['bindings_before'], row['bindings_after'])}.",
            dict(modified=len(c.ch.modified), bindings_removed=n))


def _reshape(c: _Ctx) -> Sentence:
    n = c.a.ops.get("relax.reshape", 0) - c.b.ops.get("relax.reshape", 0)
    return (f"RewriteDataflowReshape turned {_plural(n, 'reshape kernel')} into free views "
            f"(R.reshape); kernel calls {_arrow(c.b.call_tir, c.a.call_tir)}.",
            dict(views=n, calls_before=c.b.call_tir, calls_after=c.a.call_tir))


def _non_dataflow(c: _Ctx) -> Sentence:
    n = c.b.dataflow_blocks - c.a.dataflow_blocks
    return (f"ToNonDataflow turned {_plural(n, 'dataflow block')} into ordinary binding "
            "blocks.", dict(blocks=n))


def _call_tir_rewrite(c: _Ctx) -> Sentence:
    report = c.buffers("after")
    allocs = [a for a in report.allocations if a.op == ALLOC_TENSOR] if report else []
    size = sum(a.bytes or 0 for a in allocs)
    return (f"CallTIRRewrite made {_plural(c.b.call_tir, 'kernel output')} explicit: "
            f"{_plural(c.a.builtin_allocs, 'R.builtin.alloc_tensor allocation')} "
            f"({human_bytes(size)} of constant size) and "
            f"{_plural(c.a.kernel_calls, 'destination-passing kernel call')}.",
            dict(rewritten=c.b.call_tir, allocations=c.a.builtin_allocs,
                 constant_allocations=len(allocs), bytes=size, kernel_calls=c.a.kernel_calls))


def _plan(c: _Ctx) -> Sentence:
    before, after = c.buffers("before"), c.buffers("after")
    storages = [a for a in after.allocations if a.op == ALLOC_STORAGE]
    symbolic = [a for a in after.dynamic_allocations if a.op == ALLOC_STORAGE]
    kept = [a for a in after.allocations if a.op == ALLOC_TENSOR]
    kept_symbolic = [a for a in after.dynamic_allocations if a.op == ALLOC_TENSOR]
    planned = c.a.planned_tensors
    planned_bytes = sum(a.bytes or 0 for a in before.allocations) - sum(a.bytes or 0 for a in kept)
    storage_bytes = sum(a.bytes or 0 for a in storages)
    # the same storages the Buffers pane lists: constant-size ones with their bytes, and
    # those whose size depends on a symbolic dimension
    share = (f"{_plural(len(storages) + len(symbolic), 'storage')} "
             f"({human_bytes(storage_bytes)} in the {len(storages)} of constant size, "
             f"{len(symbolic)} symbolic)" if symbolic else
             f"{_plural(len(storages), 'storage')} ({human_bytes(storage_bytes)})")
    return (f"StaticPlanBlockMemory: {_plural(planned, 'allocation')} "
            f"({human_bytes(planned_bytes)}) now share {share}; "
            f"{_plural(len(kept) + len(kept_symbolic), 'allocation stays', 'allocations stay')} "
            "R.builtin.alloc_tensor (outputs, or sizes it cannot plan).",
            dict(planned=planned, planned_bytes=planned_bytes, storages=len(storages),
                 symbolic_storages=len(symbolic), storage_bytes=storage_bytes,
                 kept=len(kept) + len(kept_symbolic)))


def _lower_alloc(c: _Ctx) -> Sentence:
    n = c.b.builtin_allocs - c.a.builtin_allocs
    return (f"LowerAllocTensor turned {_plural(n, 'remaining R.builtin.alloc_tensor')} into "
            f"storage plus tensor; storages {_arrow(c.b.storages, c.a.storages)}.",
            dict(lowered=n, storages_before=c.b.storages, storages_after=c.a.storages))


def _kill(c: _Ctx) -> Sentence:
    n = c.a.kills - c.b.kills
    return (f"KillAfterLastUse inserted {_plural(n, 'free')} right after last uses "
            "(kill_tensor, kill_storage, kill_object).", dict(kills=n))


def _runtime_builtin(c: _Ctx) -> Sentence:
    n = c.b.storages + c.b.planned_tensors
    return (f"LowerRuntimeBuiltin rewrote {_plural(n, 'relax.memory allocation')} into "
            f"{_plural(c.a.vm_allocs, 'VM allocation')} (relax.vm.*) and the builtins "
            "into VM calls.", dict(memory_allocs=n, vm_allocs=c.a.vm_allocs))


def _shape_lower(c: _Ctx) -> Sentence:
    row = c.row()
    n = c.a.packed - c.b.packed
    return (f"VMShapeLower added {_plural(n, 'shape check and match call')} (vm.builtin.*); "
            f"Relax bindings {_arrow(row['bindings_before'], row['bindings_after'])}.",
            dict(calls_added=n, bindings_before=row["bindings_before"],
                 bindings_after=row["bindings_after"]))


def _global_symbol(c: _Ctx) -> Sentence:
    n = len(c.ch.modified)
    return (f"AttachGlobalSymbol gave {_plural(n, 'function')} a global_symbol "
            f"({_names(c.ch.modified)}).", dict(functions=n))


_SPECIFIC: dict[str, Callable[[_Ctx], Sentence]] = {
    "LegalizeOps": _legalize, "AnnotateTIROpPattern": _annotate, "FuseOps": _fuse_ops,
    "FuseTIR": _fuse_tir, "FoldConstant": _fold, "DeadCodeElimination": _dce,
    "CanonicalizeBindings": _canonicalize, "CanonicalizeRelaxBindings": _canonicalize,
    "RewriteDataflowReshape": _reshape, "ToNonDataflow": _non_dataflow,
    "CallTIRRewrite": _call_tir_rewrite, "StaticPlanBlockMemory": _plan,
    "LowerAllocTensor": _lower_alloc, "KillAfterLastUse": _kill,
    "LowerRuntimeBuiltin": _runtime_builtin, "VMShapeLower": _shape_lower,
    "AttachGlobalSymbol": _global_symbol,
}

#: What TIR passes do to the kernels they change (the sentence adds which and how many).
_TIR_VERBS = {
    "tirx.BindTarget": "attached the target to", "s_tir.LowerInitBlock":
    "turned reduction init blocks into ifs in", "s_tir.ConvertBlocksToOpaque":
    "substituted block variables in", "s_tir.LowerOpaqueBlock": "removed the blocks of",
    "tirx.FlattenBuffer": "flattened the buffers of", "tirx.VectorizeLoop":
    "vectorized loops of", "tirx.StorageRewrite": "re-planned the local storage of",
    "tirx.MakePackedAPI": "gave the packed calling convention to", "tirx.LowerTVMBuiltin":
    "lowered TVM builtins in", "tirx.LowerIntrin": "lowered math intrinsics in",
    "tirx.CommonSubexprElim": "shared repeated subexpressions in", "tirx.StmtSimplify":
    "simplified", "s_tir.StmtSimplify": "simplified", "s_tir.CompactBufferAllocation":
    "shrank intermediate buffers of", "s_tir.PlanAndUpdateBufferAllocationLocation":
    "moved buffer allocations in", "tirx.UnrollLoop": "unrolled loops of",
    "tirx.NarrowDataType": "narrowed index types in", "tirx.SplitHostDevice":
    "split host from device code in", "tirx.RemoveNoOp": "removed no-ops from",
    "s_tir.LoopPartition": "partitioned loops of", "ApplyDefaultSchedule": "scheduled",
}

#: Why a pass changes nothing, where the reason is known.
_NO_CHANGE = {
    "FoldConstant": "no call has only constant inputs (weights passed as parameters are "
                    "not constants)",
    "DispatchSampling": "the module samples nothing (no multinomial_from_uniform)",
    "DispatchSortScan": "no sort, argsort, top-k, cumulative or bucketize operator to dispatch",
    "RewriteDataflowReshape": "no reshape-like kernel to turn into a view",
    "ComputePrimValue": "no symbolic R.prim_value to compute",
    "RewriteCUDAGraph": "CUDA-graph rewriting is off (relax.backend.use_cuda_graph)",
    "tirx.VerifyMemory": "a check: it never changes the IR, and it passed",
    "s_tir.VerifyVTCMLimit": "a check: it never changes the IR, and it passed",
    "DeadCodeElimination": "every function and binding is used",
}


#: IR lines are counted only when a pass touched at most this many functions: printing is
#: the cost, and late TIR passes touch every kernel of a model (a view prints as many).
#: Nor when one of them is a Relax function that views print by binding region (a
#: 32-layer main: ~30 ms to print whole, each side), for the same reason.
LINES_UP_TO = 8


def _lines(funcs: dict[str, Any], names: Any) -> int:
    return sum(function_text(funcs[n], n).count("\n") + 1 for n in names if n in funcs)


def _line_counts(c: _Ctx) -> tuple[int, int] | None:
    """IR lines of the changed functions before and after, or None when too many changed."""
    touched = list(c.ch.modified) + list(c.ch.added)
    if len(touched) + len(c.ch.removed) > LINES_UP_TO:
        return None
    fb, fa = _tvm.functions(c.step.before), _tvm.functions(c.step.after)
    if any(prints_by_region(fb.get(n)) for n in c.ch.modified + c.ch.removed) or any(
            prints_by_region(fa.get(n)) for n in touched):
        return None
    # both sides at once, in the printer's threads (the diff pane prints the same ones)
    prefetch([(fb.get(n), n) for n in c.ch.modified + c.ch.removed]
             + [(fa.get(n), n) for n in touched])
    return _lines(fb, c.ch.modified + c.ch.removed), _lines(fa, touched)


def _tir(c: _Ctx) -> Sentence:
    fa = _tvm.functions(c.step.after)
    total = sum(1 for f in fa.values() if _tvm.is_prim_func(f))
    verb = _TIR_VERBS.get(c.step.name, "changed")
    lines = _line_counts(c)
    parts = []
    if c.ch.modified:
        parts.append(f"{verb} {len(c.ch.modified)} of {total} PrimFuncs ({_names(c.ch.modified)})")
    if c.ch.added:
        parts.append(f"added {_plural(len(c.ch.added), 'function')} ({_names(c.ch.added)})")
    if c.ch.removed:
        parts.append(f"removed {_plural(len(c.ch.removed), 'function')} "
                     f"({_names(c.ch.removed)}), keeping {total}")
    if lines is not None:
        parts.append(f"IR lines of these functions {_arrow(*lines)}")
    facts = dict(modified=len(c.ch.modified), added=len(c.ch.added), removed=len(c.ch.removed),
                 prim_funcs=total)
    if lines is not None:
        facts.update(lines_before=lines[0], lines_after=lines[1])
    return f"{c.step.name} " + "; ".join(parts) + ".", facts


def _op_delta(c: _Ctx) -> str:
    """"-1 nn.relu, +1 clip": operator calls that went away or appeared."""
    try:
        before, after = c.b.ops, c.a.ops
    except (AttributeError, TypeError, ValueError):
        return ""
    delta = {op: after.get(op, 0) - before.get(op, 0) for op in set(before) | set(after)}
    items = sorted((d, op) for op, d in delta.items() if d)
    return ", ".join(f"{d:+d} {op.removeprefix('relax.')}" for d, op in items)


def _generic(c: _Ctx) -> Sentence:
    row = c.row()
    lines = _line_counts(c)
    parts = [f"functions {c.ch.summary()}"]
    ops = _op_delta(c)
    if ops:
        parts.append(f"operator calls {ops}")
    if row["bindings_before"] or row["bindings_after"]:
        parts.append(f"Relax bindings {_arrow(row['bindings_before'], row['bindings_after'])}")
    if row["prim_funcs_before"] or row["prim_funcs_after"]:
        parts.append(f"PrimFuncs {_arrow(row['prim_funcs_before'], row['prim_funcs_after'])}")
    facts = dict(added=len(c.ch.added), removed=len(c.ch.removed), modified=len(c.ch.modified))
    if lines is not None:
        parts.append(f"IR lines of the changed functions {_arrow(*lines)}")
        facts.update(lines_before=lines[0], lines_after=lines[1])
    pb, pa = c.buffers("before"), c.buffers("after")
    if pb is not None and pa is not None:
        parts.append(f"peak temporary memory {_arrow(human_bytes(pb.peak_bytes), human_bytes(pa.peak_bytes))}")
        facts.update(peak_before=pb.peak_bytes, peak_after=pa.peak_bytes)
    return f"{c.step.name} changed the module: " + "; ".join(parts) + ".", facts


def explain_step(step: Any, pipeline: Any = None) -> Explanation:
    """The `Explanation` of one recorded step (see `passlab.Step.explain`).

    `pipeline` (the trace's) lets a user pass be explained by its own docstring."""
    fn = None
    if step.origin == "user" and pipeline is not None:
        fn = next((e.pass_ for e in pipeline if e.name == step.name and e.origin == "user"),
                  None)
    card = card_for(step.name, fn, step.origin)
    owner = getattr(step, "owner", None)
    position = None if owner is None else numbering.positions(owner).get(step.index)
    label = step.label if owner is None else numbering.name_of(step, owner)

    def made(sentence: str, kind: str, facts: dict[str, Any] | None = None) -> Explanation:
        return Explanation(label, step.index, card, sentence, kind,
                           tuple((facts or {}).items()), position)

    if step.failed:
        owner = getattr(step, "owner", None)
        failure = getattr(owner, "failure", None)
        why = "it returned no module"
        if failure is not None and failure.step is step:
            first = (failure.message.strip().splitlines() or [""])[0][:300]
            why = f"{failure.error_type}: {first}"
        return made(f"{step.label} failed: {why}.", "failed")
    if step.kind == "container":
        ch = step.functions_changed
        done = f"together they changed {ch.summary()} functions" if ch else "nothing changed"
        return made(f"{step.label} is a wrapper that runs other passes; {done}.", "container")
    code = getattr(step, "code", None)
    if code is not None:  # the generated code, not a pass
        kernels = tuple(getattr(code, "kernels", ()))
        return made(f"The {code.target_kind} code generator compiled "
                    f"{_plural(len(kernels), 'TIR kernel')} ({_names(kernels)}); step.code "
                    "holds the generated code.", "specific",
                    dict(kernels=len(kernels), target=code.target_kind))
    change = getattr(step, "llvm", None)
    if change is not None:  # one of LLVM's own passes: its sentence reads LLVM's IR
        sentence, facts = llvm_sentence(change)
        return Explanation(label, step.index, llvm_card(step.name), sentence, "specific",
                           tuple(facts.items()), position)
    c = _Ctx(step)
    if not c.ch and step.origin == "user":
        return made(f"no change: {step.label} returned the module it received (structurally "
                    "the same).", "no change")
    if not c.ch:
        why = _NO_CHANGE.get(step.name, "nothing in this module matched what it rewrites")
        return made(f"no change: {why}; the module after {step.label} is the one it "
                    "received.", "no change")
    specific = _SPECIFIC.get(step.name)
    try:
        if specific is not None:
            sentence, facts = specific(c)
            return made(sentence, "specific", facts)
        if step.level != "relax" and step.origin != "user":
            sentence, facts = _tir(c)
            return made(sentence, "specific" if step.name in _TIR_VERBS else "generic", facts)
    except (AttributeError, TypeError, ValueError, KeyError):
        pass  # an odd module (partial, inner): the generic sentence still holds
    sentence, facts = _generic(c)
    return made(sentence, "generic", facts)
