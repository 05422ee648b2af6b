"""LLVM's own passes as steps of the trace: what LLVM's optimisation pipeline did to each
kernel between the last TIR pass and the generated code.

`passlab.build(..., llvm_passes=True)` has TVM's LLVM code generator print, for every
pass that changed a function, the function after it (`-print-changed`, read as it
streams by `passlab._tvm.llvm`). Each of those passes becomes one step nested under the
`codegen` step: stage and level `"llvm"`, kind `"inner"`, its name LLVM's pass name
(`InstCombinePass`), and `Step.llvm` holding an `LlvmChange`: the functions it
changed, each with its LLVM IR before and after and the TIR kernel (PrimFunc) it belongs
to. Pass runs that changed nothing are folded away (counted on the next step that did
change something, and per pass in `trace.llvm_summary`).

The text before a change is the text after the function's previous change (one string
object, shared), so a trace holds each distinct printed function once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from passlab._tvm import codegen as _codegen
from passlab._tvm import llvm as _llvm
from passlab.recording.trace import Changes, Step, Trace

__all__ = ["LlvmFunction", "LlvmChange", "LlvmSummary", "llvm_steps", "with_llvm_steps",
           "LLVM_STAGE", "MODULE", "PER_KERNEL", "WHOLE_MODULE", "WHOLE_MODULE_MAX_BYTES"]

LLVM_STAGE = _llvm.LLVM_STAGE
MODULE = _llvm.MODULE
#: `build(..., llvm_passes=PER_KERNEL)`: every kernel's LLVM passes, each kernel
#: compiled alone (a name no TIR kernel can have).
PER_KERNEL = "per-kernel"
#: `build(..., llvm_passes=WHOLE_MODULE)`: LLVM's passes on the whole lowered module as
#: the build compiled it, however large (`llvm_passes=True` records a module larger
#: than `WHOLE_MODULE_MAX_BYTES` per kernel).
WHOLE_MODULE = "whole-module"
#: `llvm_passes=True` records a lowered module up to this size (its `tvm.ir.save_json`
#: text) as one module, a larger one per kernel: LLVM's printing of a function costs in
#: proportion to the module around it, so on the built-in ResNet (3.4 MB) the whole
#: module's recording took 50-93 s and the per-kernel one 12 s, beside a 2.7 s build;
#: the MLP (0.28 MB) records as one module in 1.1 s.
WHOLE_MODULE_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class LlvmFunction:
    """One function an LLVM pass changed: its generated `symbol`
    (`fused_add_compute_`, `__tvm_ffi_fused_add`; `MODULE` for the module's text
    outside its functions), the TIR `kernel` it belongs to (None for TVM's runtime
    helpers such as `__tvm_set_raised_6`, and for the module text), and its LLVM IR
    `before` and `after` the pass ("" before: the pass made it; "" after: the pass
    deleted it)."""

    symbol: str
    kernel: str | None
    before: str
    after: str

    @property
    def status(self) -> str:
        """"added", "removed" or "modified"."""
        if not self.before:
            return "added"
        return "removed" if not self.after else "modified"


@dataclass(frozen=True)
class LlvmChange:
    """What one LLVM pass run changed (a step's `Step.llvm`): `pass_name` as LLVM
    prints it, `target` what it ran on as LLVM printed it (a function, `loop %x in
    function f`, `(f, g)` for a call-graph SCC, `[module]`), `scope`
    ("function", "loop", "cgscc" or "module"), the `functions` it changed and
    `skipped`: runs of LLVM passes that changed nothing just before this one, folded
    into it."""

    pass_name: str
    target: str
    scope: str
    functions: tuple[LlvmFunction, ...]
    skipped: int = 0

    @property
    def kernels(self) -> tuple[str, ...]:
        """The TIR kernels whose functions this pass changed, in order."""
        return tuple(dict.fromkeys(f.kernel for f in self.functions if f.kernel is not None))

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(f.symbol for f in self.functions)

    @cached_property
    def changes(self) -> Changes:
        """The functions changed, as a step's change set (by generated symbol)."""
        by = {"added": [], "removed": [], "modified": []}  # type: dict[str, list[str]]
        for f in self.functions:
            by[f.status].append(f.symbol)
        return Changes(tuple(by["added"]), tuple(by["removed"]), tuple(by["modified"]))

    def function(self, symbol: str) -> LlvmFunction:
        for f in self.functions:
            if f.symbol == symbol:
                return f
        from passlab.errors import unknown

        raise unknown("function", symbol, self.symbols, extra=f"(changed by {self.pass_name})")


@dataclass(frozen=True)
class LlvmSummary:
    """How LLVM's pipeline was recorded for a trace (`trace.llvm_summary`): the LLVM
    `options` of the build (`Pipeline.llvm_options`), `runs`: every pass run LLVM
    reported on (changed or not), `changed`: the runs that changed something (one step
    each), `unchanged`: `{pass name: runs that changed nothing}`, and `seconds`:
    what the recording cost (a second code generation that prints; LLVM's own printing is
    most of it)."""

    options: tuple[str, ...]
    runs: int
    changed: int
    unchanged: tuple[tuple[str, int], ...]
    seconds: float
    kernels: tuple[str, ...] = ()
    """The kernels whose LLVM passes were recorded, each compiled alone
    (`llvm_passes=["kernel", ...]` or `"per-kernel"`); empty: the whole module, as the
    build compiled it."""

    def to_dict(self) -> dict[str, Any]:
        return dict(options=list(self.options), runs=self.runs, changed=self.changed,
                    unchanged=[list(x) for x in self.unchanged], seconds=self.seconds,
                    kernels=list(self.kernels))


def _kernel_of(symbol: str, kernels: Sequence[str]) -> str | None:
    if symbol == MODULE:
        return None
    return _codegen.kernel_of(symbol, kernels)


def llvm_steps(dumps: Sequence[Any], kernels: Sequence[str], parent: Step,
               first_index: int, hash_cache: Any) -> list[Step]:
    """One step per changed dump (`passlab._tvm.llvm.LlvmDump`), nested under
    `parent` (the codegen step), numbered from `first_index`."""
    steps: list[Step] = []
    seen: dict[str, int] = {}
    module = parent.module
    for k, d in enumerate(dumps):
        funcs = tuple(LlvmFunction(sym, _kernel_of(sym, kernels), before, after)
                      for sym, before, after in d.changes)
        change = LlvmChange(d.pass_name, d.target, d.scope, funcs, d.skipped)
        occ = seen.get(d.pass_name, 0)
        seen[d.pass_name] = occ + 1
        steps.append(Step(first_index + k, d.pass_name, parent.depth + 1, parent.index,
                          LLVM_STAGE, "inner", "tvm", occ, None, module, module, False,
                          hash_cache, llvm=change))
    return steps


def with_llvm_steps(trace: Trace, tgt: Any, options: Sequence[str] = (),
                    progress: Any = None, kernels: Sequence[str] | str = (),
                    workers: _llvm.Workers | None = None) -> Trace:
    """`trace` (a finished build's, ending in its `codegen` step) with LLVM's passes
    as steps after that step: the lowered host module (the `host_finalize` stage's
    output, what TVM's code generator received) is compiled again with `options` and
    LLVM's change printing, read as it streams; the build's own executable is not
    touched. Without `kernels` the whole module is compiled as the build compiled it, if
    it is at most `WHOLE_MODULE_MAX_BYTES`, else each kernel alone (and a note says so);
    `WHOLE_MODULE` asks for the whole module however large. With `kernels` (names, or
    `PER_KERNEL` for all of them), each of those
    kernels' functions is compiled alone, the kernels spread over processes
    (`passlab._tvm.llvm.record_kernels`): far faster on a large model, the same function
    passes, LLVM's module-level passes then seeing one kernel at a time; its steps
    follow the kernels' order. `progress` (a `passlab._progress.Bar` or None) says so
    before, between kernels and after; never while LLVM prints: a bar on a terminal
    writes to descriptor 2, which LLVM's dump then holds. `workers`: worker processes
    started ahead (`passlab._tvm.llvm.started_workers`) for the kernels' recording."""
    import tvm

    from passlab.recording.codegen import _final_module

    code_step = next((s for s in reversed(tuple(trace)) if s.code is not None), None)
    if code_step is None:
        raise ValueError("this trace has no codegen step (a failed build, kernels reused "
                         "from an earlier build, or a module without TIR kernels): there "
                         "is no LLVM code generation to record")
    host = _final_module(trace, "host_finalize")
    if host is None:
        raise ValueError("this trace does not hold the host_finalize stage's output (the "
                         "module TVM's code generator receives): build with passlab's own "
                         "TIR pipeline (tir_pipeline=None) to record LLVM's passes")
    compiled = code_step.code.kernels
    if isinstance(kernels, str):
        kernels = (kernels,)
    notes: list[str] = []
    if not kernels:  # llvm_passes=True: the whole module, unless it is large
        size = len(tvm.ir.save_json(host))
        if size > WHOLE_MODULE_MAX_BYTES and len(compiled) > 1:
            kernels = (PER_KERNEL,)
            notes.append(
                f"LLVM's passes were recorded per kernel, each kernel compiled alone: the "
                f"lowered module is {size / 1e6:.1f} MB, over passlab.recording.llvm."
                f"WHOLE_MODULE_MAX_BYTES ({WHOLE_MODULE_MAX_BYTES / 1e6:.1f} MB), and LLVM's "
                f"printing costs in proportion to the module; "
                f"llvm_passes={WHOLE_MODULE!r} records it as one module")
    elif WHOLE_MODULE in kernels:  # alone: build checks it
        kernels = ()
    if PER_KERNEL in kernels:
        kernels = tuple(compiled)
    for k in kernels:
        if k not in compiled:
            from passlab.errors import unknown

            raise unknown("kernel", k, compiled,
                          extra=f"(llvm_passes= takes the names of compiled TIR kernels, "
                                f"{PER_KERNEL!r} for each of them alone, or "
                                f"{WHOLE_MODULE!r})")
    kernels = tuple(dict.fromkeys(kernels))
    if progress is not None:
        progress.note("recording LLVM's passes (a second code generation that prints"
                      + (f", {len(kernels)} kernels each alone)" if kernels else ")"))
        progress.redraw()
    start = time.perf_counter()
    if kernels:
        def between(done: int, total: int) -> None:
            if progress is not None:
                progress.note(f"recording LLVM's passes: {done} of {total} kernels")
                progress.redraw()

        parts = _llvm.record_kernels(host, tgt, kernels,
                                     lambda symbol: _codegen.kernel_of(symbol, compiled),
                                     options, on_kernel=between, started=workers)
        dumps = [d for p in parts for d in p.dumps]
        runs = sum(p.headers for p in parts)
        unchanged: dict[str, int] = {}
        for p in parts:
            for name, n in p.skipped:
                unchanged[name] = unchanged.get(name, 0) + n
    else:
        reader = _llvm.record_codegen(host, tgt, options)
        dumps, runs, unchanged = reader.dumps, reader.headers, reader.skipped
    seconds = time.perf_counter() - start
    if progress is not None:
        progress.note(f"LLVM: {len(dumps)} of {runs} pass runs changed the IR")
    steps = llvm_steps(dumps, compiled, code_step, len(trace), code_step._hash)
    summary = LlvmSummary(tuple(options), runs, len(dumps), tuple(sorted(unchanged.items())),
                          seconds, tuple(kernels))
    meta = {**trace._meta, "llvm": summary}
    if notes:
        meta["notes"] = [*trace.notes, *notes]
    return Trace([*trace, *steps], meta, adopt=True)
