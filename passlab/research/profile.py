"""Run time per kernel, linked to the operators it holds and the passes that shaped it.

`build.profile(*inputs)` runs the entry function once with an instrument to see which
kernels it calls (with copies of their arguments), then times the entry function end to
end, each kernel alone on its arguments, and the VM's own overhead (the same program with
empty kernels: interpreter, `vm.builtin.*` calls, allocations). Each kernel row carries
its source operators (`passlab.provenance`) and the passes that created or rewrote
it (`passlab.blame`), joined by kernel name. Timing goes through
`passlab._tvm.timing`.

Examples
--------
>>> import passlab
>>> p = passlab.build(passlab.models.mlp()).profile(repeat=3)
>>> [(k.kernel, k.calls) for k in sorted(p, key=lambda k: k.kernel)][:2]
[('fused_matmul1_add1', 1), ('fused_matmul_add_relu', 1)]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab._render import Displayable
from passlab._sequence import NamedSequence
from passlab._tvm import timing as _timing
from passlab._tvm.tir import flops as _flops
from passlab.errors import UnknownNameError, unknown
from passlab.research._profile_plot import ProfilePlot
from passlab.research._profile_plot import seconds_text as _ms

__all__ = ["profile", "Profile", "KernelTime", "SourceTimes", "COLUMNS", "NOISY"]

#: Spread ((max - min) / median over the repeats) above which a time is marked noisy.
NOISY = 0.2

#: ``Profile.to_dataframe()`` columns, in order (issue 25's contract, then extras).
COLUMNS = ("kernel", "calls", "median_s", "min_s", "max_s", "total_s", "share", "bytes",
           "flops", "gflops", "gbps", "sources", "ops", "passes", "noisy", "spread")


@dataclass(frozen=True)
class KernelTime:
    """One kernel: `calls` per run, seconds per call (`median_s`, `min_s`,
    `max_s` over the repeats; 0 for a kernel of the library the run never called),
    `total_s` per run, `share` of the end-to-end time,
    `bytes` its tensor arguments hold (read and written) and `flops` (TVM's estimate,
    None when it has none) per call, achieved `gflops` and `gbps`; `ops` the
    operator calls of the input it holds, `sources` their source-model names (ONNX
    nodes, PyTorch modules) or, without those, the ops; `passes` the labels of the
    passes that created or rewrote it; `noisy` when `spread` exceeds `NOISY`."""

    kernel: str
    calls: int
    median_s: float
    min_s: float
    max_s: float
    total_s: float
    share: float
    bytes: int
    flops: float | None
    sources: tuple[str, ...]
    ops: tuple[str, ...]
    passes: tuple[str, ...]
    spread: float

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY

    @property
    def gflops(self) -> float | None:
        return None if not self.flops or self.median_s <= 0 else self.flops / self.median_s / 1e9

    @property
    def gbps(self) -> float | None:
        return None if self.median_s <= 0 else self.bytes / self.median_s / 1e9

    def to_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in COLUMNS}


@dataclass(frozen=True)
class SourceTimes(Displayable):
    """Time per source operator (`Profile.by_source()`): a kernel's time is split
    evenly among the source names it holds, so the rows add up to the kernels' sum."""

    rows: tuple[tuple[str, tuple[str, ...], float, float], ...]  # source, kernels, s, share

    def _cells(self) -> list[list[str]]:
        return [[s, ", ".join(k), _ms(t), f"{share:.1%}"] for s, k, t, share in self.rows]

    _HEADER = ("source", "kernels", "per run", "share")

    def to_text(self) -> str:
        return _render.text_table(self._HEADER, self._cells())

    def to_html(self) -> str:
        return _render.html_table(self._HEADER, self._cells(), caption="time per source operator")

    def to_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame([dict(source=s, kernels=k, total_s=t, share=sh)
                             for s, k, t, sh in self.rows],
                            columns=["source", "kernels", "total_s", "share"])


@dataclass(frozen=True, eq=False)
class Profile(NamedSequence[KernelTime], Displayable):
    """Kernel times of one build (slowest first; see `profile`), indexed by
    position or kernel name. `end_to_end_s` is the median of the entry function,
    `overhead_s` the VM's own time (the program with empty kernels), `builtins` the
    non-kernel calls per run; `gap_s` is what neither accounts for."""

    kernels: tuple[KernelTime, ...]
    end_to_end_s: float
    end_to_end_spread: float
    overhead_s: float
    builtins: Mapping[str, int]
    entry: str
    target: str
    repeat: int
    seed: int
    build: Any = field(default=None, repr=False)

    def _items(self) -> tuple[KernelTime, ...]:
        return self.kernels

    def _by_name(self, name: str) -> KernelTime:
        for k in self.kernels:
            if k.kernel == name:
                return k
        raise unknown("kernel", name, [k.kernel for k in self.kernels],
                      extra="(the kernels this run called)")

    @property
    def kernels_s(self) -> float:
        """The kernels' times per run, summed."""
        return sum(k.total_s for k in self.kernels)

    @property
    def gap_s(self) -> float:
        """End to end minus (kernels + overhead): positive when the run took longer than
        its parts timed alone (caches, threads starting), negative when shorter."""
        return self.end_to_end_s - self.kernels_s - self.overhead_s

    @property
    def noisy(self) -> bool:
        return self.end_to_end_spread > NOISY

    def tir(self, kernel: str) -> str:
        """The kernel's TIR (TVMScript), as the Relax pipeline handed it to TIR."""
        self[kernel]
        return self.build._kernels.tir_mod[kernel].script()

    def code(self, kernel: str, kind: str | None = None) -> str:
        """What the target generated for the kernel (`build.source(kind, kernel)`)."""
        self[kernel]
        return self.build.source(kind, kernel=kernel)

    def by_source(self) -> SourceTimes:
        """Time per source operator or module path ("which layer is slow"), slowest first."""
        totals: dict[str, float] = {}
        owners: dict[str, list[str]] = {}
        for k in self.kernels:
            names = k.sources or (k.kernel,)
            for s in names:
                totals[s] = totals.get(s, 0.0) + k.total_s / len(names)
                owners.setdefault(s, []).append(k.kernel)
        e2e = self.end_to_end_s or 1.0
        rows = sorted(((s, tuple(owners[s]), t, t / e2e) for s, t in totals.items()),
                      key=lambda r: -r[2])
        return SourceTimes(tuple(rows))

    # ------------------------------------------------------------------ views
    def summary(self) -> str:
        e2e = self.end_to_end_s
        pct = (self.gap_s / e2e) if e2e > 0 else 0.0
        noisy = sum(k.noisy for k in self.kernels)
        return (f"{self.entry} on {self.target}: {_ms(e2e)} end to end "
                f"(median of {self.repeat}, spread {self.end_to_end_spread:.0%}"
                f"{', noisy' if self.noisy else ''}); {len(self.kernels)} kernels "
                f"{_ms(self.kernels_s)} + runtime overhead {_ms(self.overhead_s)} "
                f"({sum(self.builtins.values())} builtin calls); gap {_ms(self.gap_s)} "
                f"({pct:+.0%})" + (f"; {noisy} kernels noisy (spread > {NOISY:.0%})"
                                    if noisy else ""))

    _HEADER = ("kernel", "calls", "per call", "per run", "share", "bytes", "GFLOP/s", "GB/s",
               "spread", "sources", "passes")

    def _cells(self) -> list[list[str]]:
        def num(v: float | None) -> str:
            return "" if v is None else f"{v:.2f}"

        return [[k.kernel, str(k.calls), _ms(k.median_s), _ms(k.total_s), f"{k.share:.1%}",
                 _render.human_bytes(k.bytes), num(k.gflops), num(k.gbps),
                 f"{k.spread:.0%}" + (" noisy" if k.noisy else ""),
                 _short(k.sources), _short(k.passes)] for k in self.kernels]

    def to_text(self) -> str:
        return self.summary() + "\n" + _render.text_table(self._HEADER, self._cells())

    def to_html(self) -> str:
        return _render.html_table(self._HEADER, self._cells(), caption=self.summary())

    def to_dataframe(self) -> Any:
        """One row per kernel with the `COLUMNS` (pandas)."""
        import pandas as pd

        return pd.DataFrame([k.to_dict() for k in self.kernels], columns=list(COLUMNS))

    def plot(self, top: int = 30) -> Any:
        """The kernels' times per run as a sorted bar chart (SVG; JupyterLab's theme
        colours, so it reads in light and dark), overhead and gap as the last bars."""
        return ProfilePlot.of(self, top)

    def __repr__(self) -> str:
        return (f"<Profile: {len(self.kernels)} kernels, {_ms(self.end_to_end_s)} end to "
                f"end on {self.target}>")


def _short(names: tuple[str, ...], n: int = 3) -> str:
    return ", ".join(names[:n]) + (f" +{len(names) - n}" if len(names) > n else "")


# ------------------------------------------------------------------ measuring
def _final_relax(build: Any) -> Any:
    """The module the Relax pipeline ended with: the trace's last Relax step's, or for a
    re-run that ran no Relax pass (it resumed after the last one) the module resumed from."""
    steps = [s for s in build.trace
             if s.on_main_chain and s.level == "relax" and s.after is not None]
    if steps:
        return steps[-1].after
    if getattr(build, "snapshot", None) is not None:
        return build.snapshot
    raise ValueError("the build's trace has no Relax pipeline step to profile from")


def _kernel_names(build: Any) -> dict[str, str]:
    """Generated symbol -> kernel (PrimFunc) name; shape functions are the VM's own work
    (counted in the overhead, listed in `builtins`)."""
    if build._kernels is None:
        return {}
    out = {}
    for gv, func in build._kernels.tir_mod.functions_items():
        if _timing.is_shape_function(func):
            continue
        symbol = func.attrs.get("global_symbol", gv.name_hint) if func.attrs else gv.name_hint
        out[str(symbol)] = gv.name_hint
    return out


def _links(build: Any, kernels: list[str]) -> dict[str, tuple[tuple, tuple, tuple]]:
    """kernel -> (sources, ops, passes) from provenance and blame (empty where the trace
    does not know the kernel, e.g. a pass renamed it after the chain's end)."""
    from passlab.analysis.provenance import provenance
    from passlab.research.blame import blame

    prov = provenance(build.trace)
    out = {}
    for k in kernels:
        ops = tuple(o.op for o in prov.ops if k in o.kernels)
        sources = tuple(dict.fromkeys(s for o in prov.ops if k in o.kernels for s in o.source))
        try:
            b = blame(build.trace, k, kind="function")
            passes = tuple(dict.fromkeys(s.label for s in (*b.created_by, *b.rewritten_by)))
        except UnknownNameError:
            passes = ()
        out[k] = (sources or ops, ops, passes)
    return out


def profile(build: Any, *inputs: Any, repeat: int = 10, number: int | None = None,
            min_repeat_ms: int | None = None, seed: int = 0, links: bool = True,
            overhead: bool = True) -> Profile:
    """Time `build`'s entry function and each kernel it calls (see the module doc).

    Parameters
    ----------
    inputs
        Input arrays; missing ones (all, or the weights after the inputs) are drawn as
        by `build.run` with `seed`.
    repeat
        Repeats of each measurement (medians and spreads are over these).
    number
        Calls per repeat; default: as many as fill `min_repeat_ms` (default 2 ms).
    links
        False leaves each kernel's `sources`, `ops` and `passes` empty: no
        provenance or blame of the trace (`attribute` needs only the times).
    overhead
        False does not time the runtime overhead (no skeleton VM to build: `overhead_s`
        and `gap_s` are NaN); `attribute` and `sweep(profile=)` compare end-to-end
        and kernel times only.

    Raises
    ------
    passlab.errors.DeviceUnavailableError
        A GPU target without its device here (llvm and c time on this CPU).
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    if number is not None and number < 1:
        raise ValueError(f"number must be at least 1 (or None: as many as fill "
                         f"min_repeat_ms), not {number}")
    tgt = _tvm.target(build.pipeline.target)
    kind = tgt.kind.name
    dev = _timing.device(kind)
    entry = build.entry
    n_params = len(build.module[entry].params)
    args = list(inputs)
    if len(args) > n_params:
        raise TypeError(f"{entry}() takes {n_params} arguments, {len(args)} were given")
    args += build.inputs(seed, None, entry)[len(args):]
    vm = _timing.machine(build.executable, kind, dev)  # its own: the instrument stays here
    tensors = [_tvm.tvm().runtime.tensor(a, dev) for a in args]
    names = _kernel_names(build)
    vm[entry](*tensors)  # warm-up: first-call initialisation stays out of the capture
    calls, copies = _timing.capture(vm, entry, tensors, set(names))
    opts: dict[str, Any] = dict(number=number,
                                min_repeat_ms=2 if min_repeat_ms is None else min_repeat_ms)
    skeleton = _timing.skeleton(_final_relax(build), tgt, kind, dev) if overhead else None
    lib = _timing.kernel_library(vm)
    per_sig = Counter(c.signature for c in calls if c.kernel)
    bytes_of = {c.signature: c.nbytes for c in calls if c.kernel}
    timers: dict[Any, Any] = {"e2e": _timing.timer(vm.module, entry, tensors, dev, **opts)}
    if skeleton is not None:
        timers["overhead"] = _timing.timer(skeleton.module, entry, tensors, dev, **opts)
    for sig in per_sig:
        timers[sig] = _timing.timer(lib, sig[0], copies[sig], dev, **opts)
    timed = _timing.interleaved(timers, repeat)
    e2e = timed["e2e"]
    overhead_s = timed["overhead"].median if "overhead" in timed else float("nan")
    order = list(dict.fromkeys(names[c.symbol] for c in calls if c.kernel))
    unused = sorted(set(names.values()) - set(order))
    linked = (_links(build, order + unused) if links
              else {k: ((), (), ()) for k in order + unused})
    funcs = build._kernels.tir_mod if build._kernels is not None else None
    rows = []
    for k in order:
        sigs = [s for s in per_sig if names[s[0]] == k]
        n = sum(per_sig[s] for s in sigs)
        total = sum(per_sig[s] * timed[s].median for s in sigs)
        flops = _flops(funcs[k]) if funcs is not None else None
        sources, ops, passes = linked[k]
        rows.append(KernelTime(
            k, n, total / n, sum(per_sig[s] * timed[s].min for s in sigs) / n,
            sum(per_sig[s] * timed[s].max for s in sigs) / n, total,
            total / e2e.median if e2e.median > 0 else 0.0,
            sum(per_sig[s] * bytes_of[s] for s in sigs) // n, flops, sources, ops, passes,
            max(timed[s].spread for s in sigs)))
    rows.sort(key=lambda r: (-r.total_s, r.kernel))
    # kernels in the library that this run never called (e.g. a reshape the VM runs as
    # vm.builtin.reshape): listed, with no time, so that every kernel appears once
    for k in unused:
        sources, ops, passes = linked[k]
        rows.append(KernelTime(k, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0,
                               _flops(funcs[k]) if funcs is not None else None,
                               sources, ops, passes, 0.0))
    return Profile(tuple(rows), e2e.median, e2e.spread, overhead_s,
                   _timing.builtin_counts(calls), entry, str(build.pipeline.target),
                   repeat, seed, build)


def paired_end_to_end(a: Any, b: Any, *inputs: Any, repeat: int = 10, seed: int = 0,
                      min_repeat_ms: int = 2) -> tuple[float, float, float]:
    """`(median a, median b, larger spread)`: the entry functions of two builds of one
    model on the same inputs, timed in alternation, so that load that comes and goes
    falls on both alike (`attribute` times each variant against the full pipeline so)."""
    tgt = _tvm.target(a.pipeline.target)
    kind = tgt.kind.name
    dev = _timing.device(kind)
    entry = a.entry
    args = list(inputs) + a.inputs(seed, None, entry)[len(inputs):]
    tensors = [_tvm.tvm().runtime.tensor(x, dev) for x in args]
    timers = {i: _timing.timer(_timing.machine(bld.executable, kind, dev).module, entry,
                               tensors, dev, number=None, min_repeat_ms=min_repeat_ms)
              for i, bld in enumerate((a, b))}
    timed = _timing.interleaved(timers, repeat)
    return timed[0].median, timed[1].median, max(timed[0].spread, timed[1].spread)
