"""LLVM's own passes, analysed: LLVM IR diffs of a step, per-pass statistics of every
function a pass changed (instructions, basic blocks, vector instructions), the sentence
an Explain strip says about a step, and what LLVM's vectorizers did to each kernel.

Everything here reads the text LLVM printed (`Step.llvm`, recorded with
`passlab.build(..., llvm_passes=True)`); `vectorization(..., measure=True)` also
compiles the lowered module again with each vectorizer switched off, to measure what
each one is responsible for.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab._sequence import NamedSequence
from passlab._tvm import llvm as _llvm
from passlab._tvm.codegen import kernel_of, split_functions
from passlab.analysis.diff import llvm_diff
from passlab.errors import unknown
from passlab.recording.codegen import _final_module

__all__ = ["llvm_diff", "LlvmRow", "LlvmTable", "llvm_table",
           "llvm_sentence", "KernelVectorization", "Vectorization", "vectorization",
           "VECTORIZERS", "REMARKS_NOTE"]

#: LLVM's vectorizers, as LLVM names their passes.
VECTORIZERS = ("LoopVectorizePass", "SLPVectorizerPass")
#: Why passlab shows no optimization remarks ("loop not vectorized: ...").
REMARKS_NOTE = ("LLVM's optimization remarks cannot be switched on through TVM 0.27: its "
                "cl-opt sets an LLVM option as a bool, int, uint or string, and the remark "
                "options (-pass-remarks=loop-vectorize and the like) are regular expressions "
                "(the build dies with std::bad_alloc). What each vectorizer did is read from "
                "the IR before and after it instead.")


# -------------------------------------------------------------------- statistics
@functools.lru_cache(maxsize=50_000)
def stats_of(text: str) -> _llvm.FunctionStats:
    """`passlab._tvm.llvm.function_stats(text)`, cached: the table, the vectorization
    view and `blame` read the same function texts."""
    return _llvm.function_stats(text)


@dataclass(frozen=True)
class LlvmRow:
    """One function one LLVM pass changed: counts before and after (see
    `passlab._tvm.llvm.FunctionStats`)."""

    index: int
    label: str
    symbol: str
    kernel: str | None
    status: str
    instructions: tuple[int, int]
    blocks: tuple[int, int]
    vector_instructions: tuple[int, int]

    def as_dict(self) -> dict[str, Any]:
        return dict(index=self.index, step=self.label, function=self.symbol,
                    kernel=self.kernel, status=self.status,
                    instructions_before=self.instructions[0],
                    instructions_after=self.instructions[1],
                    blocks_before=self.blocks[0], blocks_after=self.blocks[1],
                    vector_before=self.vector_instructions[0],
                    vector_after=self.vector_instructions[1])


class LlvmTable(NamedSequence[LlvmRow], _render.Displayable):
    """Per-pass statistics of LLVM's pipeline: one `LlvmRow` per (LLVM step, function it
    changed), in the order LLVM ran; `by_pass()` sums them per pass name."""

    __slots__ = ("rows",)

    def __init__(self, rows: Sequence[LlvmRow]) -> None:
        self.rows = tuple(rows)

    def _items(self) -> tuple[LlvmRow, ...]:
        return self.rows

    def by_pass(self) -> list[tuple[str, int, int, int, int]]:
        """`(pass, functions changed, Δinstructions, Δblocks, Δvector instructions)` per
        pass name, most instructions removed first."""
        sums: dict[str, list[int]] = {}
        for r in self.rows:
            name = r.label.partition("#")[0]
            acc = sums.setdefault(name, [0, 0, 0, 0])
            acc[0] += 1
            acc[1] += r.instructions[1] - r.instructions[0]
            acc[2] += r.blocks[1] - r.blocks[0]
            acc[3] += r.vector_instructions[1] - r.vector_instructions[0]
        rows = [(n, v[0], v[1], v[2], v[3]) for n, v in sums.items()]
        return sorted(rows, key=lambda t: (t[2], t[0]))

    _HEADER = ("step", "pass", "function", "kernel", "instructions", "blocks", "vector")

    def _cells(self) -> list[list[str]]:
        def arrow(pair: tuple[int, int]) -> str:
            return f"{pair[0]} -> {pair[1]}" if pair[0] != pair[1] else str(pair[0])

        return [[str(r.index), r.label, r.symbol, r.kernel or "", arrow(r.instructions),
                 arrow(r.blocks), arrow(r.vector_instructions)] for r in self.rows]

    def to_text(self) -> str:
        head = (f"LLVM's passes: {len(self.rows)} function changes by "
                f"{len({r.index for r in self.rows})} pass runs")
        return head + "\n" + _render.text_table(self._HEADER, self._cells())

    def to_html(self) -> str:
        return _render.html_table(list(self._HEADER), self._cells(),
                                  caption=f"LLVM's passes: {len(self.rows)} function changes")

    def to_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame([r.as_dict() for r in self.rows])

    def __repr__(self) -> str:
        return f"<LlvmTable: {len(self.rows)} rows>"


def _row(step: Any, f: Any) -> LlvmRow:
    b, a = stats_of(f.before), stats_of(f.after)
    return LlvmRow(step.index, step.label, f.symbol, f.kernel, f.status,
                   (b.instructions, a.instructions), (b.blocks, a.blocks),
                   (b.vector_instructions, a.vector_instructions))


def llvm_table(trace: Any, kernel: str | None = None) -> LlvmTable:
    """Instructions, basic blocks and vector instructions of every function before and
    after each LLVM pass that changed it (only `kernel`'s functions with `kernel`).
    The module's text outside its functions (`[module]`) has no row.

    Examples
    --------
    >>> import passlab
    >>> from passlab.analysis import llvm_table
    >>> t = llvm_table(passlab.build(passlab.models.mlp(), llvm_passes=True).trace)
    >>> "LoopVectorizePass" in [name for name, *_ in t.by_pass()]
    True
    """
    rows = [_row(s, f) for s in trace.llvm_steps(kernel) for f in s.llvm.functions
            if f.symbol != _llvm.MODULE and (kernel is None or f.kernel == kernel)]
    return LlvmTable(rows)


# --------------------------------------------------------------------- sentences
def _names(names: Sequence[str], n: int = 3) -> str:
    more = len(names) - n
    return ", ".join(names[:n]) + (f" and {more} more" if more > 0 else "")


def llvm_sentence(change: Any) -> tuple[str, dict[str, Any]]:
    """What one LLVM step did, in a sentence with its numbers (the Explain strip's),
    and those numbers."""
    funcs = [f for f in change.functions if f.symbol != _llvm.MODULE]
    where = {"function": "", "loop": f" (on {change.target})",
             "cgscc": " (on a call-graph SCC)", "module": " (a module pass)"}[change.scope]
    facts: dict[str, Any] = dict(functions=len(funcs), kernels=len(change.kernels),
                                 skipped=change.skipped)
    if not funcs:
        return (f"{change.pass_name}{where} changed the module's text outside its functions "
                "(declarations, attributes, metadata).", facts)
    b = [stats_of(f.before) for f in funcs]
    a = [stats_of(f.after) for f in funcs]
    ins = (sum(x.instructions for x in b), sum(x.instructions for x in a))
    blocks = (sum(x.blocks for x in b), sum(x.blocks for x in a))
    vec = (sum(x.vector_instructions for x in b), sum(x.vector_instructions for x in a))
    facts.update(instructions_before=ins[0], instructions_after=ins[1], blocks_before=blocks[0],
                 blocks_after=blocks[1], vector_before=vec[0], vector_after=vec[1])
    kernels = change.kernels
    whose = (f" of kernel{'s' if len(kernels) > 1 else ''} {_names(list(kernels))}"
             if kernels else " (TVM's runtime helpers)")
    parts = [f"instructions {ins[0]} \u2192 {ins[1]}" if ins[0] != ins[1]
             else f"{ins[0]} instructions, as many as before (rewritten in place)"]
    if blocks[0] != blocks[1]:
        parts.append(f"basic blocks {blocks[0]} \u2192 {blocks[1]}")
    if vec[0] != vec[1]:
        parts.append(f"vector instructions {vec[0]} \u2192 {vec[1]}")
        widths = sorted({t for f in funcs for t, _ in stats_of(f.after).vector_types}
                        - {t for f in funcs for t, _ in stats_of(f.before).vector_types})
        if widths:
            parts.append(f"new vector types {', '.join(widths[:4])}")
            facts["new_vector_types"] = tuple(widths)
    symbols = [f.symbol for f in funcs]
    return (f"{change.pass_name}{where} changed {_names(symbols)}{whose}: "
            + "; ".join(parts) + ".", facts)


# ----------------------------------------------------------------- vectorization
@dataclass(frozen=True)
class KernelVectorization:
    """What LLVM's vectorizers did to one TIR kernel (`vectorization`).

    `loop_vectorized` / `slp_vectorized`: whether LoopVectorizePass / SLPVectorizerPass
    changed one of its functions; `loop_created` / `slp_created`: the vector types
    each created there (`{"<4 x float>": 129}`, counted in the IR right after the pass);
    `before_llvm`: vector types already in the IR TVM handed to LLVM (TVM's own
    vectorized TIR loops); `final`: vector types of its functions in the generated code;
    `steps`: the vectorizer steps' indices. With `measure=True`, `without_loop` and
    `without_slp` count the `final` vector types again in a code generation with
    `-vectorize-loops:bool=false` / `-vectorize-slp:bool=false` (None otherwise): the
    difference is what each vectorizer is responsible for, copies made by later passes
    (unrolling) included."""

    kernel: str
    loop_vectorized: bool
    slp_vectorized: bool
    loop_created: tuple[tuple[str, int], ...]
    slp_created: tuple[tuple[str, int], ...]
    before_llvm: tuple[tuple[str, int], ...]
    final: tuple[tuple[str, int], ...]
    steps: tuple[int, ...]
    without_loop: int | None = None
    without_slp: int | None = None

    @property
    def vector_types(self) -> int:
        """Vector types written in the kernel's generated functions."""
        return sum(n for _, n in self.final)

    @property
    def widest(self) -> str | None:
        """The widest vector type in the generated code (most lanes), e.g. "<8 x float>"."""
        if not self.final:
            return None
        return max(self.final, key=lambda tn: (_lanes(tn[0]), tn[1]))[0]

    @property
    def loop_share(self) -> int | None:
        """Vector types that disappear without the loop vectorizer (measured)."""
        return None if self.without_loop is None else self.vector_types - self.without_loop

    @property
    def slp_share(self) -> int | None:
        """Vector types that disappear without the SLP vectorizer (measured)."""
        return None if self.without_slp is None else self.vector_types - self.without_slp

    def sentence(self) -> str:
        """One line for the kernel panel."""
        done = [name for name, on in (("LoopVectorize", self.loop_vectorized),
                                      ("SLPVectorizer", self.slp_vectorized)) if on]
        if not self.final:
            head = "not vectorized: no vector type in its generated code"
        else:
            by = " and ".join(done) if done else (
                "TVM's vectorized TIR" if self.before_llvm else "LLVM")
            head = f"vectorized by {by}; widest {self.widest}, {self.vector_types} vector types"
        measured = []
        if self.loop_share is not None:
            measured.append(f"{self.loop_share} from the loop vectorizer")
        if self.slp_share is not None:
            measured.append(f"{self.slp_share} from the SLP vectorizer")
        return head + (f" (measured: {', '.join(measured)})" if measured else "")


def _lanes(vtype: str) -> int:
    try:
        return int(vtype.strip("<>").split(" x ")[0].split()[-1])
    except (ValueError, IndexError):
        return 0


def _add(acc: dict[str, int], types: Sequence[tuple[str, int]], sign: int = 1) -> None:
    for t, n in types:
        acc[t] = acc.get(t, 0) + sign * n


def _items(acc: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((t, n) for t, n in acc.items() if n > 0), key=lambda tn: (-tn[1], tn[0])))


class Vectorization(NamedSequence[KernelVectorization], _render.Displayable):
    """Per kernel, what LLVM's loop and SLP vectorizers did (`vectorization`); look a
    kernel up by name."""

    __slots__ = ("kernels", "measured", "note")

    def __init__(self, kernels: Sequence[KernelVectorization], measured: bool) -> None:
        self.kernels = tuple(kernels)
        self.measured = measured
        self.note = REMARKS_NOTE

    def _items(self) -> tuple[KernelVectorization, ...]:
        return self.kernels

    def _by_name(self, name: str) -> KernelVectorization:
        for k in self.kernels:
            if k.kernel == name:
                return k
        raise unknown("kernel", name, [k.kernel for k in self.kernels])

    _HEADER = ("kernel", "LoopVectorize", "SLPVectorizer", "widest", "vector types",
               "without loop vec.", "without SLP")

    def _cells(self) -> list[list[str]]:
        def opt(n: int | None) -> str:
            return "" if n is None else str(n)

        return [[k.kernel, "yes" if k.loop_vectorized else "", "yes" if k.slp_vectorized
                 else "", k.widest or "", str(k.vector_types), opt(k.without_loop),
                 opt(k.without_slp)] for k in self.kernels]

    def to_text(self) -> str:
        head = "What LLVM's vectorizers did, per kernel" + (
            " (measured without each: -vectorize-loops / -vectorize-slp off)"
            if self.measured else "")
        return head + "\n" + _render.text_table(self._HEADER, self._cells()) + "\n" + self.note

    def to_html(self) -> str:
        return (_render.html_table(list(self._HEADER), self._cells(),
                                   caption="What LLVM's vectorizers did, per kernel")
                + f'<div class="passlab-note">{_render.esc(self.note)}</div>')

    def to_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame([dict(kernel=k.kernel, loop_vectorized=k.loop_vectorized,
                                  slp_vectorized=k.slp_vectorized, widest=k.widest,
                                  vector_types=k.vector_types, without_loop=k.without_loop,
                                  without_slp=k.without_slp) for k in self.kernels])

    def __repr__(self) -> str:
        n = sum(1 for k in self.kernels if k.final)
        return f"<Vectorization: {n} of {len(self.kernels)} kernels vectorized>"


def vectorization(trace: Any, *, measure: bool = False) -> Vectorization:
    """What LLVM's loop and SLP vectorizers did to each kernel of a trace recorded with
    `llvm_passes=True`: whether each changed it, the vector types each created, those
    already there (TVM's vectorized TIR) and those in the generated code, with the widest.
    `measure=True` compiles the lowered module twice more (each vectorizer off) and
    counts what disappears (a trace without the lowered module cannot).

    Examples
    --------
    >>> import passlab
    >>> from passlab.analysis import vectorization
    >>> v = vectorization(passlab.build(passlab.models.mlp(), llvm_passes=True).trace)
    >>> v["fused_matmul_add_relu"].loop_vectorized, v["fused_matmul_add_relu"].widest
    (True, '<4 x float>')
    """
    code = trace.code
    if code is None or trace.llvm_summary is None:
        raise ValueError("vectorization() needs a trace recorded with LLVM's passes: "
                         "passlab.build(model, llvm_passes=True)")
    kernels = code.kernels
    created: dict[str, dict[str, dict[str, int]]] = {k: {p: {} for p in VECTORIZERS}
                                                     for k in kernels}
    start: dict[str, dict[str, int]] = {k: {} for k in kernels}
    first_seen: set[str] = set()
    steps: dict[str, list[int]] = {k: [] for k in kernels}
    for s in trace.llvm_steps():
        base = s.name.partition("#")[0]
        for f in s.llvm.functions:
            if f.kernel is None:
                continue
            if f.symbol not in first_seen:
                first_seen.add(f.symbol)
                _add(start[f.kernel], stats_of(f.before).vector_types)
            if base in VECTORIZERS:
                acc = created[f.kernel][base]
                _add(acc, stats_of(f.after).vector_types)
                _add(acc, stats_of(f.before).vector_types, -1)
                if s.index not in steps[f.kernel]:
                    steps[f.kernel].append(s.index)
    final_funcs = code.functions("llvm") if "llvm" in code.kinds else {}
    final: dict[str, dict[str, int]] = {k: {} for k in kernels}
    for sym, text in final_funcs.items():
        k = kernel_of(sym, kernels)
        if k is not None:
            _add(final[k], stats_of(text).vector_types)
            if sym not in first_seen:  # no LLVM pass changed it: as TVM made it
                _add(start[k], stats_of(text).vector_types)
    off: dict[str, dict[str, int]] = {}
    if measure:
        off = _measured(trace, kernels)
    out = []
    for k in kernels:
        lv, slp = created[k]["LoopVectorizePass"], created[k]["SLPVectorizerPass"]
        out.append(KernelVectorization(
            k, any(s for s in steps[k] if trace[s].name.startswith("LoopVectorizePass")),
            any(s for s in steps[k] if trace[s].name.startswith("SLPVectorizerPass")),
            _items(lv), _items(slp), _items(start[k]), _items(final[k]), tuple(steps[k]),
            off["loop"].get(k, 0) if off else None, off["slp"].get(k, 0) if off else None))
    return Vectorization(out, bool(off))


def _measured(trace: Any, kernels: Sequence[str]) -> dict[str, dict[str, int]]:
    """`{"loop": {kernel: vector types}, "slp": {...}}` of code generations of the
    trace's lowered module with each vectorizer off."""
    host = _final_module(trace, "host_finalize")
    if host is None:
        raise ValueError("vectorization(measure=True) needs the lowered host module "
                         "(the host_finalize stage's output), which this trace lacks")
    target = _llvm.module_target(host)
    options = tuple(getattr(trace.pipeline, "llvm_opts", ()) or ())
    out = {}
    for key, opt in (("loop", "-vectorize-loops:bool=false"),
                     ("slp", "-vectorize-slp:bool=false")):
        text = _llvm.compile_ll(host, target, [*options, opt])
        counts: dict[str, int] = {}
        for sym, body in split_functions(text, "llvm").items():
            k = kernel_of(sym, kernels)
            if k is not None:
                counts[k] = counts.get(k, 0) + sum(n for _, n in stats_of(body).vector_types)
        out[key] = counts
    return out
