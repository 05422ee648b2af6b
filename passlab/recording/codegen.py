"""Generated code as part of the trace: the final `codegen` step of a build.

After the TIR pipeline, TVM's code generators turn the lowered module into a runtime
module: LLVM IR and assembly for llvm, C for c, CUDA C (OpenCL, Metal, WGSL ...) for GPU
targets, beside the host code that launches the kernels. `GeneratedCode` holds
that text, per source kind and, where the text can be split into functions, per TIR
kernel, so that a view can show a kernel's generated code next to its TIR.

Text is read from the runtime module on first use (LLVM IR of a ResNet is megabytes),
and kept once read.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from passlab import _render, _tvm
from passlab._tvm import codegen as _codegen
from passlab.errors import first_line, unknown

__all__ = ["CodegenCulprit", "GeneratedCode", "TargetSupport", "codegen_culprit",
           "codegen_step", "name_codegen_failure", "targets"]

#: Lines of one source shown in text and HTML views before "shown N of M".
MAX_LINES = 400


class GeneratedCode(_render.Displayable):
    """What a target produced for one build.

    `target_kind` is the target's kind ("llvm", "cuda", ...), `kernels` the TIR
    kernels (PrimFunc names) that were compiled. `text` gives one source kind in
    full, `kernel` the code of one kernel (its functions in every kind, or in one).

    Examples
    --------
    >>> import passlab
    >>> code = passlab.build(passlab.models.mlp()).trace.code
    >>> code.kinds, code.main_kind
    (('llvm', 'asm'), 'llvm')
    >>> code.kernel("fused_matmul_add_relu", "llvm").splitlines()[0][:7]
    'define '
    """

    __slots__ = ("_by_kernel", "_emitted", "_later", "_lib", "_sources", "_split", "kernels",
                 "module", "target_kind")

    def __init__(self, target_kind: str, kernels: tuple[str, ...] = (), lib: Any = None,
                 sources: Mapping[str, str] | None = None,
                 emitted: Mapping[str, str] | None = None, module: Any = None) -> None:
        self.target_kind = target_kind
        self.module = module  # the lowered TIR module the code was generated from
        self.kernels = tuple(kernels)
        self._lib = lib
        self._sources = None if sources is None else dict(sources)
        self._later: dict[str, Any] = {}  # expensive kinds (assembly), read when asked for
        self._emitted = dict(emitted or {})
        self._split: dict[str, dict[str, str]] = {}
        self._by_kernel: dict[str, dict[str | None, list[tuple[str, str]]]] = {}

    # -------------------------------------------------------------------- sources
    def _read(self) -> dict[str, str]:
        if self._sources is None:
            if self._lib is not None:
                self._sources, self._later = _codegen.sources(self._lib)
            else:
                self._sources = {}
            self._lib = None  # the text (and readers of the rest) is all that is needed
        return self._sources

    @property
    def sources(self) -> dict[str, str]:
        """`{kind: text}` of every kind: the code generators' output (assembly is
        generated here if no one asked for it yet: seconds for a large model), then
        the user's emitters' (the `codegen` stage of the pipeline), under their names."""
        for kind in list(self._later):
            self.text(kind)
        return {**self._read(), **self._emitted}

    def read_sources(self) -> dict[str, str]:
        """The kinds read so far (all but assembly nobody asked for): what a saved trace
        keeps without generating assembly."""
        return {**self._read(), **self._emitted}

    @property
    def kinds(self) -> tuple[str, ...]:
        """The source kinds there are, e.g. ("llvm", "asm") or ("llvm", "asm", "cuda")."""
        texts = self._read()
        found = [*texts, *self._later]
        host = [k for k in ("llvm", "asm", "c") if k in found]  # host code first
        return tuple(dict.fromkeys([*host, *found, *self._emitted]))

    @property
    def main_kind(self) -> str:
        """The kind a target is mainly about: its device code for GPU targets ("cuda"),
        "llvm" for llvm, "c" for c."""
        kinds = self.kinds
        main = _codegen.MAIN_KIND.get(self.target_kind, self.target_kind)
        return main if main in kinds else (kinds[0] if kinds else main)

    def text(self, kind: str | None = None) -> str:
        """The whole source of `kind` (default `main_kind`)."""
        kind = kind or self.main_kind
        texts = self._read()
        if kind in self._later:
            texts[kind] = self._later.pop(kind)()
        if kind in self._emitted:
            return self._emitted[kind]
        if kind not in texts:
            raise unknown("source kind", kind, self.kinds,
                          extra=f"(what the {self.target_kind} target produced)")
        return texts[kind]

    def functions(self, kind: str | None = None) -> dict[str, str]:
        """`{symbol: text}` of the function definitions in one source kind."""
        kind = kind or self.main_kind
        if kind not in self._split:
            self._split[kind] = _codegen.split_functions(self.text(kind), kind)
        return self._split[kind]

    def kernel(self, name: str, kind: str | None = None) -> str:
        """The generated code of TIR kernel `name`: its functions (the kernel itself,
        the packed wrapper, a GPU target's device kernels) in `kind`, or in every kind
        that has some, each under a `// <kind>` heading. Empty when that kernel has no
        function in `kind`; a name that is no compiled kernel raises
        `UnknownNameError` with close matches."""
        if name not in self.kernels:
            raise unknown("kernel", name, self.kernels,
                          extra=f"(the TIR kernels compiled for {self.target_kind})")
        kinds = [kind] if kind is not None else list(self.kinds)
        parts = []
        for k in kinds:
            # what the kernel computes first (``..._compute_``, a GPU target's device
            # kernels), the packed wrapper that unpacks the arguments last
            found = [text for sym, text in sorted(
                self._kernel_functions(k).get(name, ()),
                key=lambda st: _wrapper_last(st[0], name))]
            if found and kind is not None:
                return "\n\n".join(found)
            if found:
                parts.append(f"// {k}\n" + "\n\n".join(found))
        return "\n\n".join(parts)

    def _kernel_functions(self, kind: str) -> dict[str | None, list[tuple[str, str]]]:
        """`{kernel: [(symbol, text), ...]}` of one source kind, made once: a report's
        kernel panels ask for 40 kernels of a module of ~120 symbols."""
        if kind not in self._by_kernel:
            grouped: dict[str | None, list[tuple[str, str]]] = {}
            for sym, text in self.functions(kind).items():
                grouped.setdefault(_codegen.kernel_of(sym, self.kernels), []).append((sym, text))
            self._by_kernel[kind] = grouped
        return self._by_kernel[kind]

    def per_kernel(self, kind: str | None = None) -> dict[str, str]:
        """`{kernel: code}` for every compiled kernel that has code in `kind`."""
        out = {k: self.kernel(k, kind or self.main_kind) for k in self.kernels}
        return {k: v for k, v in out.items() if v}

    # ---------------------------------------------------------------------- views
    def summary(self) -> str:
        main = self.main_kind
        lines = (f", {main}: {len(self.text(main).splitlines())} lines"
                 if main in self.kinds else "")
        return (f"Generated code for {self.target_kind}, {len(self.kernels)} kernels "
                f"({', '.join(self.kinds) or 'no source'}{lines})")

    def to_text(self, kind: str | None = None, max_lines: int | None = MAX_LINES) -> str:
        lines = self.text(kind).splitlines() if self.kinds else []
        shown = lines if max_lines is None else lines[:max_lines]
        out = self.summary() + "\n" + "\n".join(shown)
        if len(shown) < len(lines):
            out += "\n" + _render.shown_note(len(shown), len(lines), "lines")
        return out

    def to_html(self, kind: str | None = None, max_lines: int | None = MAX_LINES) -> str:
        if not self.kinds:
            return f'<div class="passlab-code">{_render.esc(self.summary())}</div>'
        kind = kind or self.main_kind
        lines = self.text(kind).splitlines()
        shown = lines if max_lines is None else lines[:max_lines]
        note = (f'<div class="passlab-note">{_render.esc(_render.shown_note(len(shown), len(lines), "lines"))}</div>'
                if len(shown) < len(lines) else "")
        return (f'<div class="passlab-code"><div class="passlab-caption">'
                f'{_render.esc(self.summary())}; showing {_render.esc(kind)}</div>'
                f'<pre data-kind="{_render.esc(kind)}">{_render.esc(chr(10).join(shown))}</pre>'
                f'{note}</div>')

    def __repr__(self) -> str:
        return f"<GeneratedCode {self.target_kind}: {len(self.kernels)} kernels>"


@dataclass(frozen=True)
class CodegenCulprit:
    """The kernel a failed code generation fails on when compiled alone: `kernel` (the
    TIR kernel), `function` (its lowered function that fails: the kernel itself, or a
    GPU target's `<kernel>_kernel`), `stage` (the TIR stage whose output the code
    generator received: "host_finalize" or "device_finalize"), `message` (what the code
    generator said) and `module` (that function alone, as it received it)."""

    kernel: str
    function: str
    stage: str
    message: str
    module: Any = dataclasses.field(repr=False, compare=False)

    def to_text(self) -> str:
        alone = f" (function {self.function!r})" if self.function != self.kernel else ""
        return (f"the code generator fails on kernel {self.kernel!r}{alone} compiled alone, "
                f"the output of the {self.stage} stage")


#: At most this long is spent compiling kernels one at a time after a codegen failure
#: (a large model whose failure no kernel explains would otherwise compile them all).
SEARCH_SECONDS = 30.0

#: TIR stages whose output the code generators receive, device code first (a GPU
#: target's kernels are where its code generator fails most).
_FINAL_STAGES = ("device_finalize", "host_finalize")


def _final_module(trace: Any, stage: str) -> Any:
    steps = [s for s in trace if s.stage == stage and s.after is not None and not s.failed]
    whole = [s for s in steps if s.name == stage]  # the stage's own step: its whole output
    pick = whole[-1] if whole else (steps[-1] if steps else None)
    return None if pick is None else pick.after


#: What :func:`codegen_culprit` found per trace (it compiles kernels: seconds on a large
#: model), so that the build's error and the reproducer compile them once.
_CULPRITS: weakref.WeakKeyDictionary[Any, CodegenCulprit | None] = weakref.WeakKeyDictionary()


def codegen_culprit(trace: Any) -> CodegenCulprit | None:
    """For a trace that failed in code generation: compile its lowered kernels one at a
    time and return the first that fails alone with the build's error (None when the
    failure is not in code generation, no kernel fails alone that way, or every function
    of that module fails, e.g. a target without its toolchain)."""
    try:
        return _CULPRITS[trace]
    except (KeyError, TypeError):
        pass
    found = _culprit(trace)
    try:
        _CULPRITS[trace] = found
    except TypeError:  # not weakly referenceable: not cached
        pass
    return found


def _culprit(trace: Any) -> CodegenCulprit | None:
    f = trace.failure
    if f is None or f.where != "codegen" or f.step is not None:
        return None
    expected = f.message.strip().splitlines()[0].strip() if f.message.strip() else ""
    host = _final_module(trace, "host_finalize")
    if host is None or not expected:
        return None
    kernels = [gv.name_hint for gv in host.get_global_vars()]
    deadline = time.perf_counter() + SEARCH_SECONDS
    for stage in _FINAL_STAGES:
        mod = trace_module = _final_module(trace, stage)
        if trace_module is None:
            continue
        names = sorted(gv.name_hint for gv in mod.get_global_vars())
        found, compiled = None, 0
        for name in names:
            if time.perf_counter() > deadline:  # a failure no kernel explains: stop looking
                return None
            exc = _codegen.compile_alone(mod, name)
            if exc is None:
                compiled += 1
            elif found is None and first_line(exc).strip() == expected:
                found = (name, exc)
            if found is not None and compiled:
                break
        if found is not None and (compiled or len(names) == 1):
            name, exc = found
            return CodegenCulprit(_codegen.kernel_of(name, kernels) or name, name, stage,
                                  first_line(exc), _codegen.single_function(mod, name))
    return None


def name_codegen_failure(trace: Any, target_kind: str) -> Any:
    """`trace` with its code-generation failure naming the kernel that fails alone
    (`codegen_culprit`) in its note; `trace` itself when none is found or the
    target has no working code generator here."""
    if _codegen.codegen_status(target_kind) != "available":
        return trace
    try:
        culprit = codegen_culprit(trace)
    except Exception:  # noqa: BLE001 - naming the kernel is a help, never a second failure
        return trace
    if culprit is None:
        return trace
    f = trace.failure
    note = "; ".join(n for n in (f.note, culprit.to_text() + ": passlab.reproducer(err) "
                                 "compiles just that kernel") if n)
    named = type(trace)(list(trace), {**trace._meta, "failure": dataclasses.replace(f, note=note)},
                        adopt=True)
    _CULPRITS[named] = culprit
    return named


def codegen_step(step_cls: Any, index: int, module: Any, code: GeneratedCode,
                 hash_cache: Any, seconds: float) -> Any:
    """The final step of a trace: `before` and `after` are the lowered TIR module
    (unchanged: code generation makes text, not IR), `code` what was generated.
    `seconds` is the part of `tirx.build` no recorded pass accounts for."""
    return step_cls(index, "codegen", 0, None, "codegen", "pass", "tvm", 0, seconds,
                    module, module, False, hash_cache, code=code)


class TargetSupport(_render.Displayable):
    """Which targets this TVM wheel records, compiles and runs on this machine (see
    `targets`): rows of (kind, Relax pipeline, code generation, runs here)."""

    __slots__ = ("rows",)

    def __init__(self, rows: tuple[tuple[str, str, str, str], ...]) -> None:
        self.rows = rows

    def status(self, kind: str) -> str:
        """"available", or why code generation for `kind` is not."""
        for row in self.rows:
            if row[0] == kind:
                return row[2]
        raise unknown("target kind", kind, tuple(r[0] for r in self.rows))

    @property
    def available(self) -> tuple[str, ...]:
        """Target kinds whose code this machine can generate."""
        return tuple(r[0] for r in self.rows if r[2] == "available")

    _HEADER = ("target", "Relax pipeline", "code generation", "runs here")

    def to_text(self) -> str:
        return ("Targets of this TVM (recorded and compiled without their hardware where "
                "code generation is available)\n" + _render.text_table(self._HEADER, self.rows))

    def to_html(self) -> str:
        return _render.html_table(list(self._HEADER), [list(r) for r in self.rows],
                                  caption="Targets of this TVM")

    def __repr__(self) -> str:
        return f"<TargetSupport: {', '.join(self.available)} available>"


def targets() -> TargetSupport:
    """Every target kind passlab has a pipeline for: which Relax pipeline it gets, whether
    this TVM wheel can generate its code here (no device needed), and whether the result
    runs on this machine.

    Examples
    --------
    >>> import passlab
    >>> t = passlab.targets()
    >>> t.status("llvm"), "cuda" in t.available
    ('available', True)
    """
    rows = []
    for kind in _tvm.SUPPORTED_TARGETS:
        module = _tvm._BACKENDS.get(kind, "gpu_generic")
        status = _codegen.codegen_status(kind)
        why = _codegen.runnable(kind)
        runs = "yes" if why is None else ("no: C source" if kind == "c" else
                                          f"no: no {kind} runtime or device")
        rows.append((kind, module, status, runs))
    return TargetSupport(tuple(rows))


def _wrapper_last(symbol: str, kernel: str) -> int:
    """Sort key of a kernel's generated functions: 0 for its compute function, 1 for
    the others (device kernels), 2 for the packed-API wrapper (`kernel` itself, or
    `__tvm_ffi_kernel`)."""
    if symbol.endswith("_compute_"):
        return 0
    return 2 if symbol.removeprefix("__tvm_ffi_") == kernel else 1
