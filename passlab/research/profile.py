"""Run time per kernel, measured where each kernel runs, linked to the operators it holds
and the passes that shaped it.

`build.profile(*inputs)` times the entry function's real run **in place**: the VM's
instrument reads a nanosecond clock around every kernel call of the run (on a GPU with the
device synchronised), over repeated runs (`passlab._tvm.timing`). The hooks' own
cost is measured on the same program with empty kernels (the *skeleton*) and taken out,
call by call; the skeleton's plain run is the runtime's own time (`overhead_s`). So, by
construction::

    sum(k.total_s for k in profile) + profile.overhead_s + profile.unattributed_s
        == profile.instrumented_s

where `instrumented_s` is the instrumented run with the hooks' cost (`hook_cost_s`)
taken out, and `unattributed_s` (non-negative within the noise) is the time between
calls that neither the kernels nor the runtime's own work explain. Each kernel is also
timed **alone** on copies of its arguments (`alone_s`, a second opinion: a kernel much
slower in place than alone is a cache or scheduling effect). Runs repeat until the
medians' 95% intervals are within `target` or `budget_s` runs out. Kernels of the
library the run never calls are listed apart (`not_called`). Each kernel row carries its
source operators (`passlab.provenance`) and the passes that created or rewrote it
(`passlab.blame`), joined by kernel name.

Examples
--------
>>> import passlab
>>> p = passlab.build(passlab.models.mlp()).profile(repeat=3, budget_s=0)
>>> [(k.kernel, k.calls) for k in sorted(p, key=lambda k: k.kernel)][:2]
[('fused_matmul1_add1', 1), ('fused_matmul_add_relu', 1)]
>>> p.not_called
()
"""

from __future__ import annotations

import math
import os
import statistics
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from passlab import _progress, _render, _tvm
from passlab._render import Displayable
from passlab._sequence import NamedSequence
from passlab._tvm import devices as _devices
from passlab._tvm import timing as _timing
from passlab._tvm.tir import flops as _flops
from passlab.errors import UnknownNameError, unknown
from passlab.research._profile_measure import measure, noisy, per_run_kernels
from passlab.research._profile_plot import ProfilePlot
from passlab.research._profile_plot import seconds_text as _ms

__all__ = ["profile", "Profile", "KernelTime", "SourceTimes", "COLUMNS", "NOISY", "TARGET",
           "LEVELS"]

#: Spread ((max - min) / median over the repeats) above which an A/B run time is marked
#: noisy (the Edit pane's); a kernel is noisy when its interval misses `TARGET`.
NOISY = 0.2

#: The default `target`: runs repeat until each median's 95% interval lies within
#: +-5% of it (or the time budget runs out); a wider interval marks the figure noisy.
TARGET = 0.05

#: Seconds of measuring after which `profile` stops adding runs (the first `repeat`
#: always run).
BUDGET_S = 5.0

#: `Profile.by_source(level=...)`: "module" (PyTorch module paths; an ONNX node's path
#: without its last part) or "node" (ONNX node names; torch.export node names).
LEVELS = ("module", "node")

#: `Profile.to_dataframe()` columns, in order (issue 25's contract, then extras).
COLUMNS = ("kernel", "calls", "median_s", "min_s", "max_s", "total_s", "share", "bytes",
           "flops", "gflops", "gbps", "sources", "ops", "passes", "noisy", "spread",
           "in_place_s", "ci_low_s", "ci_high_s", "alone_s", "in_place_ratio")


@dataclass(frozen=True)
class KernelTime:
    """One kernel the run calls: `calls` per run; seconds per call measured in place
    (inside the real run: `median_s`, which `in_place_s` repeats, `min_s`, `max_s`
    over the runs, `ci_low_s`..`ci_high_s` the median's 95% interval); `total_s` per
    run (`calls * median_s`); `share` of the instrumented run (in [0, 1]; of the
    kernels' and the runtime's sum where noise puts the run below it); `alone_s`
    the median per call timed alone on copies of its arguments (None when not timed);
    `bytes` its tensor arguments hold (read and written) and `flops` (TVM's estimate,
    None when it has none) per call, achieved `gflops` and `gbps`; `ops` the
    operator calls of the input it holds, `sources` their source-model names (ONNX
    nodes, PyTorch modules) or, without those, the ops; `passes` the labels of the
    passes that created or rewrote it; `spread` is (max - min) / median over the runs;
    `noisy` when the interval is not within +-`ci_target` of the median."""

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
    alone_s: float | None = None
    ci_low_s: float = math.nan
    ci_high_s: float = math.nan
    ci_target: float = TARGET
    #: each operator call's source names (a PyTorch call: module path, node name)
    source_groups: tuple[tuple[str, ...], ...] = field(default=(), repr=False)

    @property
    def in_place_s(self) -> float:
        """The median per call, measured in place (the same as `median_s`)."""
        return self.median_s

    @property
    def noisy(self) -> bool:
        return noisy(self.median_s, self.ci_low_s, self.ci_high_s, self.ci_target)

    @property
    def in_place_ratio(self) -> float | None:
        """In place / alone per call: above 1, the kernel is slower inside the run (cold
        caches, threads waking) than alone on warm copies of its arguments."""
        if self.alone_s is None or self.alone_s <= 0:
            return None
        return self.median_s / self.alone_s

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
    """Time per source operator (`Profile.by_source()`) at one `level`: each kernel's
    time is counted once, split evenly among the names it holds at that level, so the
    rows add up to the kernels' sum and the shares to the kernels' share."""

    rows: tuple[tuple[str, tuple[str, ...], float, float], ...]  # source, kernels, s, share
    level: str = "module"

    def _cells(self) -> list[list[str]]:
        return [[s, ", ".join(k), _ms(t), f"{share:.1%}"] for s, k, t, share in self.rows]

    @property
    def _header(self) -> tuple[str, ...]:
        return (self.level, "kernels", "per run", "share")

    def to_text(self) -> str:
        return _render.text_table(self._header, self._cells())

    def to_html(self) -> str:
        return _render.html_table(self._header, self._cells(),
                                  caption=f"time per source {self.level}")

    def to_dataframe(self) -> Any:
        import pandas as pd

        return pd.DataFrame([dict(source=s, kernels=k, total_s=t, share=sh)
                             for s, k, t, sh in self.rows],
                            columns=["source", "kernels", "total_s", "share"])


@dataclass(frozen=True, eq=False)
class Profile(NamedSequence[KernelTime], Displayable):
    """Kernel times of one build (slowest first; see `profile`), indexed by position or
    kernel name: the kernels the run calls; `not_called` names the library's others.

    `end_to_end_s` is the median plain run of the entry function (no instrument);
    `instrumented_s` the median instrumented run with the hooks' own cost
    (`hook_cost_s` per run) taken out; `overhead_s` the runtime's own time (the program
    with empty kernels); `unattributed_s` what is left:
    `sum(total_s) + overhead_s + unattributed_s == instrumented_s`. `builtins`
    counts the non-kernel calls per run; `repeat` is the runs made, `target` the
    interval aimed at, `device` where it ran."""

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
    instrumented_s: float = math.nan
    hook_cost_s: float = math.nan
    unattributed_s: float = math.nan
    not_called: tuple[str, ...] = ()
    instrumented_raw_s: float = math.nan  # the instrumented run as clocked, hooks and all
    end_to_end_ci: tuple[float, float] = (math.nan, math.nan)
    instrumented_ci: tuple[float, float] = (math.nan, math.nan)
    ci_target: float = TARGET
    device: str = ""
    load: float | None = None  # the machine's 1-minute load average per core, when known
    plain_runs: int = 0  # the plain timings made (`repeat` counts the instrumented runs)

    def _items(self) -> tuple[KernelTime, ...]:
        return self.kernels

    def _by_name(self, name: str) -> KernelTime:
        for k in self.kernels:
            if k.kernel == name:
                return k
        if name in self.not_called:
            raise unknown("kernel", name, [k.kernel for k in self.kernels],
                          extra=f"({name!r} is in the library but this run does not call "
                                "it: see not_called)")
        raise unknown("kernel", name, [k.kernel for k in self.kernels],
                      extra="(the kernels this run called)")

    def _whole(self) -> float:
        """What shares are of: the instrumented run, or the parts' sum where the noise
        put the run below it."""
        inst = 0.0 if math.isnan(self.instrumented_s) else self.instrumented_s
        over = 0.0 if math.isnan(self.overhead_s) else self.overhead_s
        return max(inst, self.kernels_s + over)

    @property
    def kernels_s(self) -> float:
        """The kernels' times per run (in place), summed."""
        return sum(k.total_s for k in self.kernels)

    @property
    def gap_s(self) -> float:
        """The old name of `unattributed_s`."""
        return self.unattributed_s

    @property
    def noise_s(self) -> float:
        """Half the width of the instrumented run's 95% interval: an `unattributed_s`
        above minus this is within the noise."""
        lo, hi = self.instrumented_ci
        return (hi - lo) / 2 if not (math.isnan(lo) or math.isnan(hi)) else math.nan

    @property
    def slowdown(self) -> float:
        """The instrumented run as clocked / the plain run: what the hooks and the
        synchronisation cost the run being measured."""
        e2e = self.end_to_end_s
        return self.instrumented_raw_s / e2e if e2e > 0 else math.nan

    @property
    def noisy(self) -> bool:
        lo, hi = self.instrumented_ci
        return (noisy(self.instrumented_raw_s, lo, hi, self.ci_target)
                or noisy(self.end_to_end_s, *self.end_to_end_ci, self.ci_target))

    @property
    def quiet_hint(self) -> str:
        """A sentence when the whole run was noisy (most figures missed the target),
        else "" ."""
        noisy = sum(k.noisy for k in self.kernels)
        if not (self.noisy or (self.kernels and noisy * 2 > len(self.kernels))):
            return ""
        load = (f" (load {self.load:.1f} per core)" if self.load is not None
                and self.load > 0.5 else "")
        return (f"the times varied from run to run{load}: profile again on a quiet machine "
                "(other programs closed), or with a larger budget_s")

    def tir(self, kernel: str) -> str:
        """The kernel's TIR (TVMScript), as the Relax pipeline handed it to TIR."""
        if kernel not in self.not_called:
            self[kernel]
        return self.build._kernels.tir_mod[kernel].script()

    def code(self, kernel: str, kind: str | None = None) -> str:
        """What the target generated for the kernel (`build.source(kind, kernel)`)."""
        if kernel not in self.not_called:
            self[kernel]
        return self.build.source(kind, kernel=kernel)

    def by_source(self, level: str | None = None) -> SourceTimes:
        """Time per source name at one `level` ("which layer is slow"), slowest first.

        `level` is "module" (PyTorch module paths, ONNX node paths without the node's
        own last part) or "node" (ONNX node names, torch.export node names); None: module
        when the model carries source names. Each kernel's time is counted once, split
        evenly among its distinct names at that level (a kernel without source names
        counts under its operator calls), so the rows sum to `kernels_s`."""
        if level is not None and level not in LEVELS:
            raise ValueError(f"level {level!r} is not one of {', '.join(map(repr, LEVELS))}: "
                             "'module' for module paths, 'node' for graph nodes")
        level = level or "module"
        totals: dict[str, float] = {}
        owners: dict[str, list[str]] = {}
        for k in self.kernels:
            names = _at_level(k, level) or k.ops or (k.kernel,)
            for s in names:
                totals[s] = totals.get(s, 0.0) + k.total_s / len(names)
                owners.setdefault(s, []).append(k.kernel)
        whole = self._whole() or 1.0
        rows = sorted(((s, tuple(owners[s]), t, min(1.0, t / whole))
                       for s, t in totals.items()), key=lambda r: (-r[2], r[0]))
        return SourceTimes(tuple(rows), level)

    # ------------------------------------------------------------------ views
    def sentence(self) -> str:
        """How the instrumented run splits, in one sentence."""
        inst = self.instrumented_s
        head = f"{self.entry} on {self.target}"
        if self.device:
            head += f" ({self.device})"
        if math.isnan(inst):  # no calibration (overhead=False): the plain run only
            return (f"{head}: {_ms(self.end_to_end_s)} end to end; {len(self.kernels)} "
                    f"kernels take {_ms(self.kernels_s)} in place (hooks included).")

        un, noise = self.unattributed_s, self.noise_s
        kernels = f"{len(self.kernels)} kernel{'s' if len(self.kernels) != 1 else ''}"
        if un >= 0:
            def part(v: float) -> str:
                return f"{_ms(v)} ({v / inst:.0%})" if inst > 0 else _ms(v)

            return (f"{head}: of the {_ms(inst)} instrumented run, {kernels} take "
                    f"{part(self.kernels_s)}, the runtime's own work "
                    f"{part(self.overhead_s)}, and {part(un)} between calls is "
                    "unattributed.")
        # the parts measured longer than the run: no share above 100% is printed
        noise_text = f"+-{_ms(noise)}"
        how = ("within" if math.isnan(noise) or un >= -noise else "more than")
        return (f"{head}: {kernels} take {_ms(self.kernels_s)} and the runtime's own work "
                f"{_ms(self.overhead_s)}, {_ms(-un)} more than the {_ms(inst)} "
                f"instrumented run, {how} its noise ({noise_text}).")

    def summary(self) -> str:
        """`sentence()`, then the figures behind it: the plain run and its interval,
        the hooks' cost, the noisy kernels, the kernels not called."""
        runs = f"median of {self.plain_runs or self.repeat} timings"
        lo, hi = self.end_to_end_ci
        out = self.sentence() + (f" Plain run {_ms(self.end_to_end_s)} ({runs}, 95% "
                                 f"interval {_ms(lo)}-{_ms(hi)})")
        if math.isnan(self.hook_cost_s):
            out += "."
        else:
            out += (f"; {self.repeat} instrumented runs, the hooks' {_ms(self.hook_cost_s)} "
                    f"per run taken out; clocked with them the run is {self.slowdown:.2f}x "
                    "the plain one.")
        noisy = sum(k.noisy for k in self.kernels)
        if noisy:
            out += (f" {noisy} kernel{'s' if noisy != 1 else ''} noisy (interval wider than "
                    f"+-{self.ci_target:.0%}).")
        if self.not_called:
            n = len(self.not_called)
            out += (f" {n} kernel{'s' if n != 1 else ''} in the library not called by this "
                    f"run: {_short(self.not_called, 4)}.")
        if self.quiet_hint:
            out += f" Note: {self.quiet_hint}."
        return out

    _HEADER = ("kernel", "calls", "per call", "+-", "per run", "share", "alone",
               "in place/alone", "bytes", "GFLOP/s", "GB/s", "sources", "passes")

    def _cells(self) -> list[list[str]]:
        def num(v: float | None) -> str:
            return "" if v is None else f"{v:.2f}"

        return [[k.kernel, str(k.calls), _ms(k.median_s), _ci_text(k) + (" noisy" if k.noisy
                                                                           else ""),
                 _ms(k.total_s), f"{k.share:.1%}",
                 "" if k.alone_s is None else _ms(k.alone_s), num(k.in_place_ratio),
                 _render.human_bytes(k.bytes), num(k.gflops), num(k.gbps),
                 _short(k.sources), _short(k.passes)] for k in self.kernels]

    def to_text(self) -> str:
        return self.summary() + "\n" + _render.text_table(self._HEADER, self._cells())

    def to_html(self) -> str:
        """The summary and the kernel table, fitting the output's width: kernel names
        wrap, sources and passes are cut short in their cells (the whole list on hover);
        wider than the output, the table scrolls inside its box."""
        esc = _render.esc
        clip = ("max-width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap")
        rows = []
        for k, cells in zip(self.kernels, self._cells()):
            tds = [f'<td style="max-width:22em;overflow-wrap:anywhere">{esc(cells[0])}</td>']
            tds += [f'<td class="num">{esc(c)}</td>' for c in cells[1:11]]
            tds += [f'<td style="{clip}" title="{esc(", ".join(full))}">{esc(c)}</td>'
                    for c, full in ((cells[11], k.sources), (cells[12], k.passes))]
            rows.append(f"<tr>{''.join(tds)}</tr>")
        head = "".join(f'<th class="num">{esc(h)}</th>' if 0 < i < 11 else f"<th>{esc(h)}</th>"
                       for i, h in enumerate(self._HEADER))
        idle = (f'<div class="passlab-note">In the library, not called by this run: '
                f'{esc(", ".join(self.not_called))}</div>' if self.not_called else "")
        return (f"<style>{_render.CSS}</style>"
                f'<div class="passlab-note"><b>{esc(self.sentence())}</b> '
                f"{esc(self.summary()[len(self.sentence()):].strip())}</div>"
                f'<div style="overflow-x:auto;max-width:100%"><table class="passlab-table">'
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
                f"{idle}")

    def to_dataframe(self) -> Any:
        """One row per kernel the run calls, with the `COLUMNS` (pandas)."""
        import pandas as pd

        return pd.DataFrame([k.to_dict() for k in self.kernels], columns=list(COLUMNS))

    def plot(self, top: int = 30) -> Any:
        """The kernels' times per run as a sorted bar chart (SVG; JupyterLab's theme
        colours, so it reads in light and dark), the runtime's own work and the
        unattributed rest as the last bars (a negative rest is written, not drawn)."""
        return ProfilePlot.of(self, top)

    def __repr__(self) -> str:
        return (f"<Profile: {len(self.kernels)} kernels, {_ms(self.end_to_end_s)} end to "
                f"end on {self.target}>")


def _ci_text(k: KernelTime) -> str:
    """The interval's half-width, relative: "3%" (the larger side)."""
    if math.isnan(k.ci_low_s) or k.median_s <= 0:
        return ""
    return f"{max(k.median_s - k.ci_low_s, k.ci_high_s - k.median_s) / k.median_s:.0%}"


def _short(names: tuple[str, ...], n: int = 3) -> str:
    return ", ".join(names[:n]) + (f" +{len(names) - n}" if len(names) > n else "")


def _at_level(k: KernelTime, level: str) -> tuple[str, ...]:
    """A kernel's source names at `level`. A PyTorch operator call carries its module
    path then its torch.export node name; an ONNX one its node name alone."""
    out: list[str] = []
    for names in k.source_groups or tuple((s,) for s in k.sources if s not in k.ops):
        if len(names) >= 2:  # PyTorch: (module path, node name)
            picked = names[0] if level == "module" else names[-1]
        elif level == "module" and "/" in names[0].strip("/"):  # ONNX: the node's path
            picked = names[0].rsplit("/", 1)[0]
        else:
            picked = names[0]
        out.append(picked)
    return tuple(dict.fromkeys(out))


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


def _links(build: Any, kernels: list[str]
           ) -> dict[str, tuple[tuple, tuple, tuple, tuple]]:
    """kernel -> (sources, ops, passes, source groups) from provenance and blame (empty
    where the trace does not know the kernel, e.g. a pass renamed it after the chain's
    end); a source group is one operator call's source names."""
    from passlab.analysis.provenance import provenance
    from passlab.research.blame import blame

    prov = provenance(build.trace)
    out = {}
    for k in kernels:
        mine = [o for o in prov.ops if k in o.kernels]
        ops = tuple(o.op for o in mine)
        sources = tuple(dict.fromkeys(s for o in mine for s in o.source))
        groups = tuple(tuple(o.source) for o in mine if o.source)
        try:
            b = blame(build.trace, k, kind="function")
            passes = tuple(dict.fromkeys(s.label for s in (*b.created_by, *b.rewritten_by)))
        except UnknownNameError:
            passes = ()
        out[k] = (sources or ops, ops, passes, groups)
    return out


def _count(name: str, value: Any, *, least: int, none_ok: bool = False,
           hint: str = "") -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}"
                         f"{' (or None' + hint + ')' if none_ok else ''}, not {value!r}")


def _real(name: str, value: Any, *, low: float, high: float = math.inf,
          low_open: bool = False, none_ok: bool = False, what: str = "") -> None:
    if value is None and none_ok:
        return
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and math.isfinite(value) and (value > low if low_open else value >= low)
          and value <= high)
    if not ok:
        rng = f"{'above' if low_open else 'at least'} {low:g}"
        if math.isfinite(high):
            rng += f" and at most {high:g}"
        raise ValueError(f"{name} must be a finite number {rng}{what}, not {value!r}")


def check_arguments(repeat: Any, number: Any, min_repeat_ms: Any, seed: Any, target: Any,
                    budget_s: Any, **flags: Any) -> None:
    """Every argument of `profile` checked before any work: one ValueError saying what
    was wrong and what would be right."""
    _count("repeat", repeat, least=1)
    _count("number", number, least=1, none_ok=True,
           hint=": as many calls as fill min_repeat_ms")
    _real("min_repeat_ms", min_repeat_ms, low=0, none_ok=True,
          what=" (milliseconds each timing of the plain run and of a kernel alone fills; "
               "None: 2)")
    _count("seed", seed, least=0)
    _real("target", target, low=0, high=1, low_open=True,
          what=" (the relative half-width of the 95% interval aimed at, e.g. 0.05)")
    _real("budget_s", budget_s, low=0, none_ok=True,
          what=" (seconds of measuring after which no more runs are added; 0: exactly "
               "`repeat` runs)")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, not {value!r}")


def profile(build: Any, *inputs: Any, repeat: int = 10, number: int | None = None,
            min_repeat_ms: float | None = None, seed: int = 0, links: bool = True,
            overhead: bool = True, alone: bool = True, target: float = TARGET,
            budget_s: float | None = BUDGET_S, progress: _progress.ProgressArg = None
            ) -> Profile:
    """Time `build`'s entry function, and each kernel it calls, in place (see the
    module doc).

    Parameters
    ----------
    inputs
        Input arrays; missing ones (all, or the weights after the inputs) are drawn as
        by `build.run` with `seed`.
    repeat
        The fewest runs (each run: one instrumented run, one plain timing, and the
        skeleton's two); more follow while a median's 95% interval is wider than
        +-`target` of it and `budget_s` lasts.
    number
        Calls per plain timing and per kernel-alone timing; default: as many as fill
        `min_repeat_ms` (default 2 ms).
    links
        False leaves each kernel's `sources`, `ops` and `passes` empty: no
        provenance or blame of the trace (`attribute` needs only the times).
    overhead
        False builds no skeleton: no runtime overhead and no hook calibration
        (`overhead_s`, `hook_cost_s`, `instrumented_s` and `unattributed_s` are NaN,
        and each in-place time keeps the hooks' share, about a microsecond per call);
        `attribute` and `sweep(profile=)` compare end-to-end and kernel times only.
    alone
        False does not time each kernel alone on copies of its arguments (`alone_s`
        None).
    target
        The relative half-width of the 95% interval aimed at (0.05: +-5%).
    budget_s
        Seconds of measuring after which no more runs are added (default 5; 0 or None:
        exactly `repeat` runs).
    progress
        A bar of the runs (see `passlab._progress`): None shows one in Jupyter or on
        a terminal, True always, False never.

    Raises
    ------
    ValueError
        An argument out of range (before any work).
    passlab.errors.DeviceUnavailableError
        A GPU target without its device here (llvm and c time on this CPU).
    """
    check_arguments(repeat, number, min_repeat_ms, seed, target, budget_s, links=links,
                    overhead=overhead, alone=alone)
    entry = build.entry
    n_params = len(build.module[entry].params)
    args = list(inputs)
    if len(args) > n_params:
        raise TypeError(f"{entry}() takes {n_params} arguments, {len(args)} were given")
    tgt = _tvm.target(build.pipeline.target)
    kind = tgt.kind.name
    dev = _timing.device(kind)
    args += build.inputs(seed, None, entry)[len(args):]
    vm = _timing.machine(build.executable, kind, dev)  # its own: the instrument stays here
    tensors = [_devices.to_device(a, dev) for a in args]
    names = _kernel_names(build)
    vm[entry](*tensors)  # warm-up: first-call initialisation stays out of the capture
    calls, copies = _timing.capture(vm, entry, tensors, set(names))
    opts: dict[str, Any] = dict(number=number,
                                min_repeat_ms=2 if min_repeat_ms is None else min_repeat_ms)
    skeleton = _timing.skeleton(_final_relax(build), tgt, kind, dev) if overhead else None
    called = {c.symbol for c in calls if c.kernel}
    per_sig = Counter(c.signature for c in calls if c.kernel)
    bytes_of = {c.signature: c.nbytes for c in calls if c.kernel}
    plain = {"e2e": _timing.timer(vm.module, entry, tensors, dev, **opts)}
    in_place = _timing.InPlace(vm, entry, tensors, called, dev)
    calibration = None
    if skeleton is not None:
        plain["overhead"] = _timing.timer(skeleton.module, entry, tensors, dev, **opts)
        calibration = _timing.InPlace(skeleton, entry, tensors, called, dev)
    lib = _timing.kernel_library(vm)
    alone_timers = ({sig: _timing.timer(lib, sig[0], copies[sig], dev, **opts)
                     for sig in per_sig} if alone else {})
    runs, skel_runs, samples, alone_samples = measure(
        plain, in_place, calibration, alone_timers, repeat, target,
        budget_s or 0.0, names, per_sig, progress, entry)
    return _assemble(build, names, calls, per_sig, bytes_of, runs, skel_runs, samples,
                     alone_samples, links, target, entry, repeat, seed, dev)


def _assemble(build: Any, names: dict[str, str], calls: list[Any], per_sig: Counter,
              bytes_of: dict[Any, int], runs: list[Any], skel_runs: list[Any],
              samples: dict[str, list[float]], alone_samples: dict[Any, list[float]],
              links: bool, target: float, entry: str, repeat: int, seed: int, dev: Any
              ) -> Profile:
    calibrated = bool(skel_runs)
    per_run, _ = per_run_kernels(runs, skel_runs, names)
    e2e = samples["e2e"]
    e2e_med = statistics.median(e2e)
    raw = [r.total_ns * 1e-9 for r in runs]
    raw_med = statistics.median(raw)
    skel_half = 0.0
    if calibrated:
        overhead_s = statistics.median(samples["overhead"])
        skel = [r.total_ns * 1e-9 for r in skel_runs]
        skel_lo, skel_hi = _timing.median_ci(skel)
        skel_half = (skel_hi - skel_lo) / 2
        hook_cost = max(0.0, statistics.median(skel) - overhead_s)
        # never below zero: on a run of microseconds the hooks' cost, measured apart,
        # can come out larger than the run clocked with them (the noise says so)
        instrumented = max(0.0, raw_med - hook_cost)
    else:
        overhead_s = hook_cost = instrumented = math.nan
    order = list(dict.fromkeys(names[c.symbol] for c in calls if c.kernel))
    unused = sorted(set(names.values()) - set(order))
    linked = (_links(build, order) if links else {k: ((), (), (), ()) for k in order})
    funcs = build._kernels.tir_mod if build._kernels is not None else None
    rows = []
    for k in order:
        sigs = [s for s in per_sig if names[s[0]] == k]
        n = sum(per_sig[s] for s in sigs)
        values = [p.get(k, 0.0) / n for p in per_run]  # seconds per call, each run
        med = statistics.median(values)
        lo, hi = _timing.median_ci(values)
        alone_s = None
        if alone_samples:
            alone_s = sum(per_sig[s] * statistics.median(alone_samples[s]) for s in sigs) / n
        sources, ops, passes, groups = linked[k]
        row = KernelTime(
            k, n, med, min(values), max(values), med * n, 0.0,
            sum(per_sig[s] * bytes_of[s] for s in sigs) // n,
            _flops(funcs[k]) if funcs is not None else None, sources, ops, passes,
            (max(values) - min(values)) / med if med > 0 else 0.0, alone_s, lo, hi, target,
            groups)
        rows.append(row)
    rows.sort(key=lambda r: (-r.total_s, r.kernel))
    kernels_s = sum(r.total_s for r in rows)
    # shares of the instrumented run, or of the parts' sum where the noise put the run
    # below them: each in [0, 1], together at most 1
    parts = kernels_s + (overhead_s if calibrated else 0.0)
    whole = max(instrumented if calibrated else raw_med, parts)
    rows = [replace(r, share=r.total_s / whole if whole > 0 else 0.0) for r in rows]
    unattributed = instrumented - kernels_s - overhead_s if calibrated else math.nan
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        load = None
    e2e_spread = (max(e2e) - min(e2e)) / e2e_med if e2e_med > 0 else 0.0
    raw_lo, raw_hi = _timing.median_ci(raw)
    prof = Profile(tuple(rows), e2e_med, e2e_spread, overhead_s,
                   _timing.builtin_counts(calls), entry, str(build.pipeline.target),
                   len(runs), seed, build, instrumented, hook_cost, unattributed,
                   tuple(unused), raw_med, _timing.median_ci(e2e),
                   (raw_lo - (hook_cost if calibrated else 0.0) - skel_half,
                    raw_hi - (hook_cost if calibrated else 0.0) + skel_half),
                   target, _devices.device_name(dev), load, len(e2e))
    remember(build, prof)
    return prof


def remember(build: Any, prof: Profile) -> None:
    """Let `build` know its latest profile (weakly: the profile refers to the build, so
    a strong reference back would be a cycle): an Explorer opened on the build shows it."""
    try:
        build.__dict__["_last_profile"] = weakref.ref(prof)
    except (AttributeError, TypeError):  # not a Build (a stand-in in a test)
        pass


def last_profile(build: Any) -> Profile | None:
    """The latest profile of `build` that is still alive, or None."""
    ref = getattr(build, "__dict__", {}).get("_last_profile")
    return ref() if ref is not None else None


def check_belongs(prof: Any, trace: Any, where: str) -> None:
    """A ValueError unless `prof` (a Profile) was measured on the build `trace` came
    from (`where` names the call, e.g. "write_report"): its kernels would be joined by
    name to another program's."""
    if not isinstance(prof, Profile):
        raise TypeError(f"{where}: profile must be a passlab Profile (build.profile()), "
                        f"not {type(prof).__name__}")
    own = getattr(prof.build, "trace", None)
    if own is trace:
        return
    code = getattr(trace, "code", None)
    mine = set(getattr(code, "kernels", ()) or ())
    theirs = [k.kernel for k in prof.kernels] + list(prof.not_called)
    missing = sorted(k for k in theirs if k not in mine)
    raise ValueError(
        f"{where}: this profile was measured on another build ({prof.target}, "
        f"{len(theirs)} kernels"
        + (f", {len(missing)} of them not in this trace, e.g. {missing[0]!r}" if missing
           else "") + "); a profile belongs to the build it timed: pass "
        "profile=build.profile() of the build this trace comes from")


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
    tensors = [_devices.to_device(x, dev) for x in args]
    timers = {i: _timing.timer(_timing.machine(bld.executable, kind, dev).module, entry,
                               tensors, dev, number=None, min_repeat_ms=min_repeat_ms)
              for i, bld in enumerate((a, b))}
    timed = _timing.interleaved(timers, repeat)
    return timed[0].median, timed[1].median, max(timed[0].spread, timed[1].spread)
