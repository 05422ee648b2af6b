"""Build a module with a pipeline while recording every pass, then run it.

`build()` copies the user's current PassContext (opt_level, config, required and
disabled passes, instruments), adds the recorder, and calls `relax.build` with the
pipeline as one module pass, so TVM's TIR pipeline and codegen run (and are recorded) as
usual. A failing build raises `BuildError`, which carries the trace so far.

Builds run one at a time in a process (`BUILD_LOCK`): TVM's pass pipeline is not
thread-safe, so a build started in another thread waits for the running one.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from passlab import _progress, _tvm
from passlab._progress import ProgressArg
from passlab._tvm.codegen import codegen_status, runnable
from passlab._tvm.llvm import codegen_target, started_workers
from passlab._tvm.tir import TIR_ROOT
from passlab.errors import (
    BuildError,
    CheckError,
    DeviceUnavailableError,
    UnknownNameError,
    UserPassError,
    first_line,
)
from passlab.models import as_module
from passlab.pipeline import Pipeline
from passlab.recording.checks import context_config, run_checks
from passlab.recording.codegen import GeneratedCode, codegen_step, name_codegen_failure
from passlab.recording.llvm import PER_KERNEL, WHOLE_MODULE, with_llvm_steps
from passlab.recording.progress import build_progress
from passlab.recording.run import RecordedRun
from passlab.recording.trace import Step, Trace

__all__ = ["build", "record", "Recording", "Build", "BuildError", "as_module", "max_abs_diff",
           "BUILD_LOCK"]

#: Held for the whole of every :func:`build` (pipeline, TIR lowering, codegen). TVM 0.27's
#: pass pipeline is not thread-safe: ``te.tag.TagScope`` keeps the open tag scope in a
#: class attribute, so two ``LegalizeOps`` in two threads fail now and then ("nested
#: op_tag is not allowed for now", or an AssertionError); plain ``relax.build`` in two
#: threads failed 7 of 80 builds of the MLP here (model construction included: TVM's
#: ``BlockBuilder`` asserts on its own scope stack too). With the lock, builds started in
#: several threads run one after another and all succeed. Reentrant: a user pass may
#: build too.
#: For parallel builds use processes (:func:`passlab.sweep`).
BUILD_LOCK = threading.RLock()


def _as_pipeline(pipeline: Any, target: Any) -> Pipeline:
    if pipeline is None:
        return Pipeline.default("llvm" if target is None else target)
    if isinstance(pipeline, str):
        return Pipeline.default("llvm" if target is None else target, variant=pipeline)
    if not isinstance(pipeline, Pipeline):
        raise TypeError(
            f"pipeline must be a passlab.Pipeline (e.g. Pipeline.default('llvm')) or a "
            f"variant name ('fused' or 'build'), not {type(pipeline).__name__}"
        )
    if target is not None and not _tvm.same_target(target, pipeline.target):
        raise ValueError(
            f"target {target!r} differs from the pipeline's target "
            f"{pipeline.target!r}; build with Pipeline.default({str(target)!r}) instead"
        )
    return pipeline


def build(model: Any, pipeline: Pipeline | str | None = None, *, target: Any = None,
          tir_pipeline: str | None = None, reuse: Build | Sequence[Build] = (),
          checks: Sequence[Any] = (),
          progress: bool | Callable[[str, int], None] | None = None,
          llvm_passes: bool | str | Sequence[str] = False) -> Build:
    """Build `model` with `pipeline` while recording every pass.

    Parameters
    ----------
    model
        An IRModule, TVMScript source, or a built-in model name ("mlp", "resnet", ...).
    pipeline
        A `Pipeline` (default: `Pipeline.default(target or "llvm")`, which fuses)
        or a variant name ("fused", "build").
    target
        Only needed without a pipeline; the pipeline carries its target.
    tir_pipeline
        None (default): the pipeline's own TIR stages (edits included), registered with
        TVM under a fresh name for this build. A string: a TIR pipeline TVM has
        registered under that name ("default", "s_tir", ...), run instead.
    reuse
        Earlier builds whose compiled kernels may be reused: when the Relax pipeline ends
        in a TIR module structurally equal to one of theirs, the TIR pipeline and codegen
        are skipped (the trace then has no "tir" steps and says so). Used by
        `passlab.rerun` and `passlab.bisect`.
    progress
        None (default): a progress bar (tqdm: a widget in Jupyter, a bar on a terminal's
        stderr) once the build has run for 2 s, showing the pipeline's passes done, the
        pass that runs and the pass calls recorded; nothing when stderr is not a terminal
        (`PASSLAB_PROGRESS=1` or True asks for it there too). False: no bar. A callable
        `progress(pass_name, pass_calls_so_far)` is called instead, when a pass of the
        main chain or a stage starts.
    checks
        Invariants checked on the recorded modules after the build (see
        `passlab.recording.checks`): `[checks.well_formed(), checks.no_ops_after()]`.
        Well-formedness is always checked after the user's own passes.
    llvm_passes
        Also record LLVM's own passes (SROA, InstCombine, LICM, the loop and SLP
        vectorizers, ...) as steps nested under the codegen step (level "llvm",
        `trace.llvm_steps()`): each pass that changed a function, with the function's
        LLVM IR before and after and its kernel. The lowered module is compiled a second
        time while LLVM prints what each pass changed (read as it streams, never shown);
        the executable is the build's own. `pipeline.with_llvm_passes()` asks for it too.
        A kernel name, or a list of them: only those kernels' LLVM passes, each kernel
        compiled alone; `"per-kernel"`: every kernel's, each compiled alone. Much faster
        on a large model (LLVM's printing of a function costs in proportion to the module
        around it), the kernels spread over processes (`PASSLAB_LLVM_WORKERS` caps them;
        1: one after another here); the same function passes, LLVM's module-level passes
        then seeing one kernel at a time. True records a lowered module of more than
        1 MB (`passlab.recording.llvm.WHOLE_MODULE_MAX_BYTES`) per kernel too, and the
        trace's notes say so; `"whole-module"` records it as one module however large.
        `Build.with_llvm_passes(...)` records them after a build instead.

    Returns
    -------
    Build
        `.executable` (a TVM VM executable), `.trace` and `.run(*inputs)`.

    Raises
    ------
    BuildError
        When a pass or codegen fails; `.trace` keeps every step up to the failure, and
        the message names the first pass that broke a check, which is often the cause.
    passlab.checks.CheckError
        (a BuildError) When the build succeeded but a pass broke one of `checks`.
    KeyboardInterrupt
        Ctrl-C during a pass stays a KeyboardInterrupt, with `.trace` attached.

    Examples
    --------
    >>> import passlab
    >>> b = passlab.build(passlab.models.mlp())
    >>> b.run().shape
    (4, 8)
    """
    pipe = _as_pipeline(pipeline, target)
    tgt = _tvm.target(pipe.target)
    earlier = [reuse] if isinstance(reuse, Build) else list(reuse)
    with BUILD_LOCK:  # a built-in model is made with TVM's BlockBuilder: not thread-safe either
        mod = as_module(model)
        bar = None if callable(progress) else build_progress(pipe, progress, tgt.kind.name)
        run = RecordedRun(pipe, mod, progress=progress if callable(progress) else bar,
                          config=context_config(checks) if checks else None)
        kernels = _llvm_kernels(llvm_passes) or pipe.llvm_passes
        with _llvm_workers(kernels) as workers:
            return _build_locked(mod, pipe, tgt, run, bar, tir_pipeline, earlier, checks,
                                 kernels, workers)


def _build_locked(mod: Any, pipe: Pipeline, tgt: Any, run: RecordedRun, bar: Any,
                  tir_pipeline: str | None, earlier: list[Build], checks: Sequence[Any],
                  llvm_passes: bool | tuple[str, ...] = False,
                  workers: Any = None) -> Build:
    start = time.perf_counter()
    tgt = _llvm_target(tgt, pipe, llvm_passes)
    try:
        with run:
            tir = run.tir_pipeline() if tir_pipeline is None and pipe.tir_stages \
                else (tir_pipeline or "default")
            executable, kernels, reused = _tvm.build(mod, tgt, run.relax_pass(), tir,
                                                     [b._kernels for b in earlier])
    except BaseException as exc:
        trace = run.trace(exc)
        if isinstance(exc, Exception):  # a codegen failure names the kernel it fails on
            trace = name_codegen_failure(trace, tgt.kind.name)
        if bar is not None:
            bar.close(f"failed after {len(trace)} pass calls", done=False)
        found = _violations(trace, checks) if isinstance(exc, Exception) else ()
        extra = ("\nChecks:\n" + "\n".join(v.to_text() for v in found)) if found else ""
        status = codegen_status(tgt.kind.name)
        if trace.failure is not None and trace.failure.where == "codegen" \
                and status != "available":
            extra += (f"\nCode generation for {tgt.kind.name!r} is {status}; every pass up "
                      "to it is recorded in .trace.")
        err = run.error(exc, trace, extra)
        if err is exc:  # Ctrl-C in a TVM pass: the KeyboardInterrupt itself, .trace attached
            raise
        raise err from exc
    trace = run.trace(**_reuse_meta(reused))
    calls = len(trace)  # pass calls; the codegen step is not one
    if bar is not None:
        bar.codegen(calls)
    try:
        trace = _with_codegen(trace, kernels, tgt, pipe)
    except Exception as exc:  # a user's source emitter failed
        if bar is not None:
            bar.close("failed in codegen", done=False)
        raise run.error(exc, run.trace(exc, **_reuse_meta(reused))) from exc
    if llvm_passes:
        trace = _with_llvm(trace, tgt, None if bar is None else bar.bar, llvm_passes,
                           workers)
    if bar is not None:
        llvm = trace.llvm_summary
        bar.close(f"{calls} pass calls recorded" + (
            f", {llvm.changed} of LLVM's {llvm.runs} pass runs" if llvm is not None else ""),
            done=True)
    found = _violations(trace, checks)
    broken = [v for v in found if not v.check.endswith("(user passes)") and not v.preexisting]
    if broken:
        raise CheckError(trace, found)
    old = [v.to_text() for v in found if v.preexisting]
    if old:  # broken before a user pass ran, not by it: said once, in the trace's notes
        trace = Trace(list(trace), {**trace._meta, "notes": [*trace.notes, *old]}, adopt=True)
    for v in found:  # the implicit check after user passes warns on a successful build
        if not v.preexisting:
            warnings.warn(v.to_text(), RuntimeWarning, stacklevel=3)
    return Build(mod, pipe, trace, executable, time.perf_counter() - start, kernels)


def _llvm_kernels(llvm_passes: Any) -> bool | tuple[str, ...]:
    """`llvm_passes` as `build` uses it: True/False, or the kernels' names (a tuple;
    `("per-kernel",)` for every kernel)."""
    if isinstance(llvm_passes, bool):
        return llvm_passes
    if isinstance(llvm_passes, str):
        return (llvm_passes,)
    try:
        names = tuple(llvm_passes)
    except TypeError:
        names = ()
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"llvm_passes is True, False, a kernel's name, a list of kernel "
                        f"names, 'per-kernel' or 'whole-module', not {llvm_passes!r}")
    if WHOLE_MODULE in names and len(names) > 1:
        raise ValueError(f"llvm_passes={WHOLE_MODULE!r} records the whole module and takes "
                         f"no kernel names beside it; got {list(names)!r}")
    return names


def _llvm_workers(kernels: bool | tuple[str, ...]) -> Any:
    """Worker processes for recording several kernels' LLVM passes each alone, started
    before the build's first pass: their import of TVM then runs beside the build
    (`passlab._tvm.llvm.started_workers`). None (as a context) otherwise."""
    if not isinstance(kernels, tuple) or (len(kernels) < 2 and PER_KERNEL not in kernels):
        return nullcontext()
    return started_workers(None if PER_KERNEL in kernels else len(kernels))


def _llvm_target(tgt: Any, pipe: Pipeline, llvm_passes: Any) -> Any:
    """The build's target with the pipeline's LLVM options (`Pipeline.llvm_options`)."""
    host = tgt.host if tgt.host is not None else tgt
    if (llvm_passes or pipe.llvm_opts) and host.kind.name != "llvm":
        raise ValueError(f"LLVM's passes and options need an LLVM code generator; target "
                         f"{pipe.target!r} generates {host.kind.name!r} code: build for "
                         "'llvm' (or a GPU target, whose host code is LLVM's)")
    return codegen_target(tgt, pipe.llvm_opts)


def _with_llvm(trace: Trace, tgt: Any, bar: Any, kernels: Any = True,
               workers: Any = None) -> Trace:
    """`trace` with LLVM's passes as steps (`passlab.recording.llvm`); a trace whose
    kernels came from an earlier build has no code generation to record, and says so."""
    if trace.kernels_reused or trace.code is None:
        why = ("its kernels were reused from an earlier build" if trace.kernels_reused
               else "it compiled no TIR kernel")
        return Trace(list(trace), {**trace._meta, "notes": [
            *trace.notes, f"LLVM's passes were not recorded: {why}"]}, adopt=True)
    host = tgt.host if tgt.host is not None else tgt
    try:
        return with_llvm_steps(trace, host, (), bar,
                               kernels if isinstance(kernels, tuple) else (), workers)
    except (KeyboardInterrupt, UnknownNameError) as exc:  # Ctrl-C, a misspelt kernel:
        exc.trace = trace  # type: ignore[union-attr]  # the build is kept on the error
        raise
    except Exception as exc:  # noqa: BLE001 - the build succeeded: it is not lost
        why = f"LLVM's passes were not recorded: {type(exc).__name__}: {first_line(exc)}"
        warnings.warn(why, RuntimeWarning, stacklevel=4)
        return Trace(list(trace), {**trace._meta, "notes": [*trace.notes, why]}, adopt=True)


def _with_codegen(trace: Trace, kernels: Any, tgt: Any, pipe: Pipeline) -> Trace:
    """`trace` with its final `codegen` step: what the target produced, and the text
    of the pipeline's source emitters (its `codegen` stage), run on the lowered TIR
    module. Reused kernels bring the code of the build that compiled them."""
    if kernels is None:
        return trace
    root = next((s for s in trace if s.name == TIR_ROOT and s.after is not None), None)
    lowered = root.after if root is not None else kernels.tir_mod
    if kernels.code is None:
        emitted = {}
        for e in pipe.emitters:
            text = e.pass_(lowered)
            if not isinstance(text, str):
                raise UserPassError(
                    f"source emitter {e.name!r} (codegen stage) returned "
                    f"{type(text).__name__}, not str; an emitter returns the source text "
                    "it generates for the lowered TIR module")
            emitted[e.name] = text
        names = tuple(gv.name_hint for gv in kernels.tir_mod.get_global_vars())
        kernels.code = GeneratedCode(tgt.kind.name, names, kernels.lib, emitted=emitted,
                                     module=lowered)
    tir_seconds = sum(s.seconds or 0.0 for s in trace if s.depth == 0 and s.level == "tir")
    seconds = 0.0 if trace.kernels_reused else max(0.0, kernels.seconds - tir_seconds)
    # reused kernels: the module their build lowered (this trace ran no TIR pipeline)
    module = kernels.code.module if kernels.code.module is not None else lowered
    step = codegen_step(Step, len(trace), module, kernels.code,
                        trace[0]._hash, seconds)
    return Trace([*trace, step], trace._meta, adopt=True)


def _reuse_meta(reused: bool) -> dict[str, Any]:
    if not reused:
        return {}
    return dict(kernels_reused=True, notes=[
        "TIR pipeline and codegen skipped: the kernels are structurally identical to an "
        "earlier build's, whose compiled library was reused"])


def _violations(trace: Trace, checks: Sequence[Any]) -> tuple:
    """First violation of each check (and of well-formedness after user passes)."""
    if not checks and not any(s.origin == "user" for s in trace):
        return ()  # nothing to check
    return run_checks(trace, checks)


class Recording:
    """What `record` yields: `.trace` is filled in when the block exits."""

    def __init__(self, run: RecordedRun):
        self._run = run
        self.trace: Trace | None = None

    def _finish(self, exc: BaseException | None) -> None:
        failed = exc if isinstance(exc, Exception) else None  # Ctrl-C is not a failure
        self.trace = self._run.trace(failed)


@contextmanager
def record() -> Iterator[Recording]:
    """Record every pass run inside the block, e.g. your own `relax.build` call.

    The current PassContext is copied (opt_level, config, disabled/required passes,
    instruments) and the recorder added. Pass contexts are thread-local: passes run by
    other threads are not recorded.

    Examples
    --------
    >>> import passlab, tvm
    >>> model = passlab.models.mlp()
    >>> with passlab.record() as rec:
    ...     _ = tvm.relax.transform.LegalizeOps()(model)
    >>> rec.trace[0].name
    'LegalizeOps'
    """
    run = RecordedRun()
    recording = Recording(run)
    try:
        with run:
            yield recording
    except BaseException as exc:
        recording._finish(exc)
        raise
    recording._finish(None)


# ---------------------------------------------------------------------- running
@dataclass(frozen=True)
class Build:
    """A recorded build: the input module, the pipeline, the trace and the executable."""

    module: Any = field(repr=False)
    pipeline: Pipeline
    trace: Trace
    executable: Any = field(repr=False)
    seconds: float
    _kernels: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def vm(self):
        """The Relax VM of the executable, on the device of the build's target (the
        CPU for llvm, the GPU for cuda ...): `DeviceUnavailableError` where it is absent.
        Creating it loads the executable: for llvm, LLVM generates the machine code of
        every kernel then (TVM defers it to the first load), which is most of a first
        `run()`."""
        why = runnable(_tvm.target(self.pipeline.target).kind.name)
        if why is not None:
            raise DeviceUnavailableError(f"cannot run this {self.pipeline.target!r} build: {why}")
        start = time.perf_counter()
        vm = _tvm.virtual_machine(self.executable, self.device)
        self.__dict__["_load_s"] = time.perf_counter() - start
        return vm

    def with_llvm_passes(self, kernels: bool | str | Sequence[str] = True, *,
                         progress: ProgressArg = None) -> Build:
        """This build with LLVM's own passes recorded now, as `build(...,
        llvm_passes=kernels)` would have: the lowered module (or the named kernels, or
        `"per-kernel"`: each kernel alone) is compiled again while LLVM prints what each
        pass changed. Nothing else runs again: the Relax and TIR passes, the trace and
        the executable are this build's. So a model can be built plainly, its profile
        read, and only the kernels worth a look recorded down to LLVM afterwards.

        Raises ValueError where this build's trace holds LLVM's passes already (build
        again to record others), or where its target's code is not LLVM's. A recording
        that fails leaves the build as it was, with a note that says why (as `build`
        does).

        Examples
        --------
        >>> import passlab
        >>> b = passlab.build(passlab.models.mlp())
        >>> later = b.with_llvm_passes("transpose")
        >>> later.trace.llvm_summary.kernels, b.trace.llvm_summary is None
        (('transpose',), True)
        """
        wanted = _llvm_kernels(kernels)
        if not wanted:
            return self
        held = self.trace.llvm_summary
        if held is not None:
            which = (f"for the kernels {', '.join(held.kernels)}" if held.kernels
                     else "for the whole module")
            raise ValueError(f"this build's trace already holds LLVM's passes ({which}): "
                             "to record other kernels, build again with "
                             "passlab.build(model, pipeline, llvm_passes=...)")
        pipe = self.pipeline
        tgt = _llvm_target(_tvm.target(pipe.target), pipe, wanted)
        with BUILD_LOCK, _llvm_workers(wanted) as workers, \
                _progress.bar(progress, total=None, desc="LLVM's passes", delay=2.0) as bar:
            trace = _with_llvm(self.trace, tgt, bar, wanted, workers)  # options: global
            llvm = trace.llvm_summary
            bar.close(f"{llvm.changed} of LLVM's {llvm.runs} pass runs changed the IR"
                      if llvm is not None else "not recorded")
        return dataclasses.replace(self, trace=trace)

    @property
    def load_s(self) -> float | None:
        """Seconds the VM took to load the executable (`vm`, made by the first `run`):
        for llvm, LLVM's machine-code generation of every kernel, which TVM defers to the
        first load (ResNet 2.3 s, DenseNet-121 17.7 s here); None before."""
        return self.__dict__.get("_load_s")

    @cached_property
    def device(self):
        """The TVM device the build's code runs on (`tvm.cpu(0)`, `tvm.cuda(0)` ...)."""
        from passlab._tvm.devices import device_of

        return device_of(self.pipeline.target)

    def source(self, kind: str | None = None, kernel: str | None = None) -> str:
        """What the target generated: `kind` "llvm" (LLVM IR), "asm", "c", "cuda"
        (also "opencl", "metal", "webgpu" ...; default the target's main one, see
        `trace.code.kinds`); with `kernel`, only that TIR kernel's functions.

        Examples
        --------
        >>> import passlab
        >>> b = passlab.build(passlab.models.mlp())
        >>> "define" in b.source("llvm", kernel="fused_matmul_add_relu")
        True
        """
        code = self.trace.code
        if code is None:
            raise ValueError("this build has no generated code: its module has no TIR "
                             "kernels to compile")
        return code.text(kind) if kernel is None else code.kernel(kernel, kind or code.main_kind)

    @property
    def entry(self) -> str:
        return _tvm.entry_function(self.module)

    def inputs(self, seed: int = 0, shapes: Mapping[str, int] | None = None,
               function: str | None = None) -> list:
        """Random arguments for every parameter of `function` (inputs and weights).

        Floats are uniform in [-1, 1) (in [0.5, 1.5) for parameters whose name says they
        are variances), integers in [0, 8); symbolic dimensions take `shapes[name]`
        (default 8). The same seed gives the same arrays, so two builds of one model can
        be compared.
        """
        import numpy as np

        rng = np.random.default_rng(seed)
        func = self.module[function or self.entry]
        out = []
        for name, shape, dtype in _tvm.params(func):
            dims = tuple(d if isinstance(d, int) else int((shapes or {}).get(d, 8)) for d in shape)
            if dtype.startswith(("int", "uint")):
                out.append(rng.integers(0, 8, size=dims).astype(dtype))
            elif dtype == "bool":
                out.append(rng.integers(0, 2, size=dims).astype(bool))
            elif "var" in name:
                out.append(rng.uniform(0.5, 1.5, size=dims).astype(dtype))
            else:
                out.append(rng.uniform(-1, 1, size=dims).astype(dtype))
        return out

    def run(self, *inputs: Any, function: str | None = None, seed: int = 0,
            shapes: Mapping[str, int] | None = None):
        """Run the executable: numpy in, numpy out.

        Missing arguments (all of them, or the weights after the given inputs) are drawn
        by `inputs` with `seed`.
        """
        name = function or self.entry
        args = list(inputs)
        n_params = len(self.module[name].params)
        if len(args) > n_params:
            raise TypeError(f"{name}() takes {n_params} arguments, {len(args)} were given")
        if len(args) < n_params:
            args += self.inputs(seed, shapes, name)[len(args):]
        vm = self.vm  # first: a device that is absent is said before inputs move
        result = vm[name](*[_tvm.to_tvm_tensor(a, self.device) for a in args])
        return _tvm.to_numpy(result)  # copied back to the host

    def profile(self, *inputs: Any, repeat: int = 10, number: int | None = None,
                min_repeat_ms: float | None = None, seed: int = 0, alone: bool = True,
                target: float = 0.05, budget_s: float | None = 5.0,
                progress: Any = None) -> Any:
        """Run time of the entry function and of each kernel it calls, measured in place
        (inside the real run), each kernel linked to its source operators and the passes
        that shaped it: a `passlab.research.profile.Profile` (served by
        `passlab.research`; the arguments are `passlab.research.profile.profile`'s).
        Missing inputs are drawn as by `run`. An Explorer opened on this build later
        shows the profile while it is alive.

        Examples
        --------
        >>> import passlab
        >>> p = passlab.build(passlab.models.mlp()).profile(repeat=3, budget_s=0)
        >>> p.end_to_end_s > 0, len(p) > 0
        (True, True)
        """
        from passlab.recording.trace import _UPPER

        return _UPPER["profile"](self, *inputs, repeat=repeat, number=number,
                                 min_repeat_ms=min_repeat_ms, seed=seed, alone=alone,
                                 target=target, budget_s=budget_s, progress=progress)


def max_abs_diff(a: Any, b: Any) -> float:
    """Largest absolute difference between two results (arrays or tuples of arrays)."""
    import numpy as np

    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
            raise ValueError("results have different structures")
        return max((max_abs_diff(x, y) for x, y in zip(a, b)), default=0.0)
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"results have different shapes: {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
