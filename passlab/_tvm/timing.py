"""Run time on TVM 0.27: time each kernel where it runs (in place), kernels alone, and
entry functions end to end.

TVM 0.27 has no Relax VM profiler (`VirtualMachine(profile=True)` and
`tvm.runtime.profiling` went with apache/tvm PR #19455). What is left, and used here:

- `vm.set_instrument(fn)`: `fn(func, symbol, before_run, ret_value, *args)` is called
  before and after every VM call (kernels and `vm.builtin.*`). `InPlace` reads a
  monotonic nanosecond clock as the last thing of the "before" call and the first thing of
  the "after" call of each kernel, so a kernel is timed inside the real run (its inputs
  where the previous kernel left them, the thread pool as the run keeps it); on a GPU the
  device is synchronised before each reading. `capture` records which kernels a run
  calls, with copies of their arguments.
- the hooks' own cost is measured on a *skeleton*: the same VM program linked with kernels
  whose bodies are empty (`skeleton`), run with the same instrument. Its interval at
  each kernel call is what the hooks (and the call of an empty kernel) put inside a
  measured interval; the skeleton's plain run is the VM's own time (interpreter,
  `vm.builtin.*` calls, allocations, the packed calls themselves).
- `Module.time_evaluator(name, dev, number, repeat, min_repeat_ms)`: a
  `BenchmarkResult` (seconds) for one kernel of the library
  (`vm.module.imports[0]`, looked up with `query_imports=True` as TVM's
  `relax.testing.lib_comparator` does: the kernel *alone*, on copies of its arguments)
  or for a VM function (the plain end-to-end time). It runs the function once first
  (warm-up, discarded) and synchronises the device around each repeat.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from passlab._tvm import devices as _devices


@dataclass(frozen=True)
class Measured:
    """Seconds per call over `repeat` repeats of `number` calls each."""

    median: float
    min: float
    max: float
    mean: float
    std: float
    number: int
    repeat: int

    @property
    def spread(self) -> float:
        """(max - min) / median: 0.2 means the repeats differ by 20% of the median."""
        return (self.max - self.min) / self.median if self.median > 0 else 0.0


@dataclass(frozen=True)
class Call:
    """One call the VM made during a run: `symbol`, whether it is a kernel of the
    library, and its tensor arguments' shapes, dtypes and bytes."""

    symbol: str
    kernel: bool
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    nbytes: int

    @property
    def signature(self) -> tuple:
        return (self.symbol, self.shapes, self.dtypes)


def device(kind: str) -> Any:
    """The TVM device code for target kind `kind` runs on, or DeviceUnavailableError
    naming the device (see `passlab._tvm.devices.device_of`)."""
    return _devices.device_of(kind, "time")


def loadable(executable: Any, kind: str, folder: str) -> Any:
    """What the VM can load: the executable itself, or for "c" (C source the VM cannot
    load as it is) the shared library `export_library` compiles into `folder`."""
    if kind != "c":
        return executable
    import tvm

    path = os.path.join(folder, f"lib{len(os.listdir(folder))}.so")
    executable.export_library(path)
    return tvm.runtime.load_module(path)


def machine(executable: Any, kind: str, dev: Any) -> Any:
    """A VirtualMachine for `executable` on `dev` ("c" builds compiled first)."""
    from tvm import relax

    with tempfile.TemporaryDirectory(prefix="passlab-c-") as folder:
        return relax.VirtualMachine(loadable(executable, kind, folder), dev)


def kernel_library(vm: Any) -> Any:
    """The compiled kernels of a VM (what `LibCompareVMInstrument` looks them up in)."""
    imports = vm.module.imports
    return imports[0] if len(imports) else None


def capture(vm: Any, entry: str, args: Sequence[Any], kernels: set[str]
            ) -> tuple[list[Call], dict[tuple, list[Any]]]:
    """Run `entry` once with an instrument: every call in order, and the arguments of
    each kernel signature's first call, tensors copied before the call (so its inputs
    hold the values the run gave them)."""
    import tvm

    calls: list[Call] = []
    copies: dict[tuple, list[Any]] = {}

    def instrument(func: Any, symbol: str, before: bool, ret: Any, *call_args: Any) -> int:
        if not before:
            return 0
        tensors = [a for a in call_args if isinstance(a, tvm.runtime.Tensor)]
        call = Call(str(symbol), str(symbol) in kernels,
                    tuple(tuple(int(d) for d in a.shape) for a in tensors),
                    tuple(str(a.dtype) for a in tensors),
                    sum(_nbytes(a) for a in tensors))
        calls.append(call)
        if call.kernel and call.signature not in copies:  # scalars (shape vars) as they are
            copies[call.signature] = [a.copyto(a.device) if isinstance(a, tvm.runtime.Tensor)
                                      else a for a in call_args]
        return 0

    vm.set_instrument(instrument)
    try:
        vm[entry](*args)
    finally:
        vm.set_instrument(None)
    return calls, copies


def _nbytes(t: Any) -> int:
    n = 1
    for d in t.shape:
        n *= int(d)
    return n * ((t.dtype.bits * t.dtype.lanes + 7) // 8)


def measured(samples: Sequence[float], number: int) -> Measured:
    """Statistics of one function's repeats (seconds per call in each)."""
    import statistics

    values = list(samples)
    return Measured(statistics.median(values), min(values), max(values),
                    statistics.fmean(values),
                    statistics.pstdev(values) if len(values) > 1 else 0.0, number, len(values))


def timer(module: Any, name: str, args: Sequence[Any], dev: Any, *, number: int | None,
          min_repeat_ms: int) -> tuple[Callable[[], float], int]:
    """`(one repeat, number)`: a function that times one repeat of `number` calls of
    `module`'s `name` on `args` (seconds per call; each repeat starts with one
    discarded warm-up call) and the `number` used. Without `number`, as many calls as
    fill `min_repeat_ms`, from one timed call."""
    if number is None:
        probe = module.time_evaluator(name, dev, number=1, repeat=1)
        once = max(float(probe(*args).results[0]), 1e-9)
        number = max(1, min(1_000_000, math.ceil(min_repeat_ms * 1e-3 / once)))
    evaluator = module.time_evaluator(name, dev, number=number, repeat=1)
    return (lambda: float(evaluator(*args).results[0])), number


def interleaved(timers: Mapping[Any, tuple[Callable[[], float], int]], repeat: int
                ) -> dict[Any, Measured]:
    """Every timer once per round, `repeat` rounds: a load that comes and goes on a
    shared machine falls on all of them alike, so their times stay comparable."""
    samples: dict[Any, list[float]] = {k: [] for k in timers}
    for _ in range(repeat):
        for key, (once, _) in timers.items():
            samples[key].append(once())
    return {k: measured(v, timers[k][1]) for k, v in samples.items()}


def is_shape_function(func: Any) -> bool:
    """A host function VMShapeLower made to compute symbolic shapes (`shape_func`): the
    VM's own work, not a kernel, and needed by the skeleton to allocate right."""
    return bool(func.attrs is not None and func.attrs.get("tirx.is_host_func", False))


def skeleton(relax_mod: Any, tgt: Any, kind: str, dev: Any) -> Any:
    """A VM running `relax_mod` (the module the Relax pipeline ended with) with every
    kernel's body emptied: its run time is the VM's own (interpreter, builtins,
    allocations, argument checks of each packed call, shape functions), without the
    kernels' work."""
    import tvm
    from tvm import relax, tirx
    from tvm.relax import vm_build as vb

    builder = relax.ExecBuilder()
    mod = vb._vmcodegen(builder, relax_mod, "bytecode")
    tir_mod = vb._filter_tir(mod)
    lib = None
    if tir_mod is not None and len(tir_mod.get_global_vars()) > 0:
        empty = {gv: f if is_shape_function(f) else
                 f.with_body(tirx.Evaluate(tirx.const(0, "int32")))
                 for gv, f in tir_mod.functions_items()}
        tir_mod = vb._auto_attach_system_lib_prefix(
            tvm.IRModule(empty, attrs=tir_mod.attrs), tgt, None)
        lib = tvm.tirx.build(tir_mod, target=tgt, pipeline="default")
    attrs = dict(relax_mod.attrs) if relax_mod.attrs else {}
    ext = list(attrs.get("external_mods", []))
    params = dict(attrs.get("const_name_to_constant", {}))
    host = [m for m in ext if not vb._is_device_module(m)]
    if lib is not None:
        for m in ext:
            if vb._is_device_module(m):
                lib.import_module(m)
    executable = vb.VMExecutable(vb._ffi_api.VMLink(builder, tgt, lib, host, params))
    return machine(executable, kind, dev)


def builtin_counts(calls: Sequence[Call]) -> Mapping[str, int]:
    """Calls per run of everything that is not a kernel, most called first (read-only)."""
    from types import MappingProxyType

    return MappingProxyType(dict(Counter(c.symbol for c in calls if not c.kernel).most_common()))


# ------------------------------------------------------------------ in place
def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of `samples`: the order statistics
    `x(k)` and `x(n+1-k)` with the largest `k` whose binomial coverage is at least
    `confidence`. With fewer than 6 samples no pair reaches 95%: the interval is then
    the smallest and the largest sample (its coverage is 1 - 2/2^n)."""
    values = sorted(samples)
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    alpha = (1.0 - confidence) / 2
    k, tail = 0, 0.0  # tail: P(B <= k - 1) for B ~ Binomial(n, 1/2)
    while k < n // 2:
        nxt = tail + math.comb(n, k) / 2.0 ** n
        if nxt > alpha:
            break
        tail, k = nxt, k + 1
    k = max(k, 1)
    return values[k - 1], values[n - k]


@dataclass(frozen=True)
class Run:
    """One instrumented run: its wall time and each kernel call's measured interval (the
    kernel's symbol and nanoseconds, in call order)."""

    total_ns: int
    symbols: tuple[str, ...]
    intervals_ns: tuple[int, ...]

    @functools.cached_property
    def by_symbol(self) -> dict[str, int]:
        """Nanoseconds per symbol, its calls summed."""
        out: dict[str, int] = {}
        for sym, ns in zip(self.symbols, self.intervals_ns):
            out[sym] = out.get(sym, 0) + ns
        return out


class InPlace:
    """Runs `entry` of `vm` with an instrument that times each call of a symbol in
    `kernels` where it happens (see the module doc). `run` returns a `Run`;
    the instrument is set only while a run lasts."""

    def __init__(self, vm: Any, entry: str, args: Sequence[Any], kernels: set[str],
                 dev: Any) -> None:
        import time

        self._func = vm[entry]
        self._vm = vm
        self._args = list(args)
        self._sync = None if _devices.is_cpu(dev) else dev.sync
        self._clock = time.perf_counter_ns
        self._kernels = frozenset(kernels)
        self._stamps: list[int] = []
        self._names: list[str] = []

    def _instrument(self) -> Callable[..., int]:
        kernels, clock, sync = self._kernels, self._clock, self._sync
        stamp, name = self._stamps.append, self._names.append
        if sync is None:
            def instrument(func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> int:
                if symbol in kernels:
                    if before:
                        name(symbol)
                        stamp(clock())
                    else:
                        stamp(clock())
                return 0
        else:  # a GPU: the kernel's work is done when the device says so
            def instrument(func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> int:
                if symbol in kernels:
                    if before:
                        name(symbol)
                        sync()
                        stamp(clock())
                    else:
                        sync()
                        stamp(clock())
                return 0
        return instrument

    def run(self) -> Run:
        self._stamps.clear()
        self._names.clear()
        self._vm.set_instrument(self._instrument())
        try:
            if self._sync is not None:
                self._sync()
            start = self._clock()
            self._func(*self._args)
            if self._sync is not None:
                self._sync()
            total = self._clock() - start
        finally:
            self._vm.set_instrument(None)
        s = self._stamps
        return Run(total, tuple(self._names), tuple(s[i + 1] - s[i] for i in range(0, len(s), 2)))


def hook_floor(real: Run, calibration: Sequence[Run]) -> list[float]:
    """Per kernel call of `real`, the nanoseconds the hooks put inside its interval:
    the median interval of the same call in the `calibration` runs (the skeleton's,
    whose kernels are empty); by symbol where the call sequences differ, 0 without
    calibration."""
    import statistics

    if not calibration:
        return [0.0] * len(real.symbols)
    same = all(c.symbols == real.symbols for c in calibration)
    if same:
        return [statistics.median(c.intervals_ns[i] for c in calibration)
                for i in range(len(real.symbols))]
    by_symbol: dict[str, list[int]] = {}
    for c in calibration:
        for sym, ns in zip(c.symbols, c.intervals_ns):
            by_symbol.setdefault(sym, []).append(ns)
    every = [ns for v in by_symbol.values() for ns in v]
    fallback = statistics.median(every) if every else 0.0
    return [statistics.median(by_symbol[s]) if s in by_symbol else fallback
            for s in real.symbols]
