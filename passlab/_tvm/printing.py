"""Per-function TVMScript text, printed lazily and cached by object identity.

Printing a whole module costs ~50 ms (resnet) to ~140 ms (mobilenet_v2); a diff only
needs the few functions it shows, and unchanged functions are the same objects from one
snapshot to the next, so each is printed at most once while it stays in the cache.

With `passlab._tvm`, this module holds the diff code's calls into TVM APIs that move
between releases (`Scriptable.script` options).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from passlab import _tvm

__all__ = [
    "function_text",
    "head_text",
    "binding_names",
    "binding_count",
    "can_head",
    "prefetch",
    "function_kind",
    "same_function",
    "structural_key",
    "clear_cache",
    "cache_info",
    "is_module",
    "module_functions",
    "CACHE_SIZE",
]

_log = logging.getLogger(__name__)

#: How many printed functions to keep; ~4k covers every function of a large model at a
#: few pipeline steps while bounding memory to some tens of MiB of text.
CACHE_SIZE = 4096


class _TextCache:
    """LRU of printed text keyed by `(C object address, printed name[, bindings])`.

    Each entry keeps a reference to the TVM object it was printed from, so the address
    cannot be freed and reused by another object while the entry lives.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[Any, ...], tuple[Any, str]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...]) -> str | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: tuple[Any, ...], obj: Any, text: str) -> None:
        with self._lock:
            self._data[key] = (obj, text)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


_CACHE = _TextCache(CACHE_SIZE)


def _address(obj: Any) -> int:
    # Python wrappers are recreated on every ``mod[gv]``; the C object is what is shared.
    chandle = getattr(obj, "__chandle__", None)
    return chandle() if chandle is not None else id(obj)


def _strip(text: str) -> str:
    """Drop the `# from tvm.script import ...` header and the metadata footnote."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and (lines[start].startswith("# from ") or not lines[start].strip()):
        start += 1
    end = len(lines)
    while end > start and (
        not lines[end - 1].strip() or lines[end - 1].startswith("# Metadata omitted.")
    ):
        end -= 1
    return "\n".join(lines[start:end])


def _print_relax_in_module(func: Any, name: str) -> str:
    """Print a Relax function as it appears inside its module (`cls.callee` calls).

    Printed alone, a call to another module function shows as a bare name that can
    shadow a local variable (`matmul = R.call_tir(matmul, ...)`); inside a module it
    is `cls.matmul`. A module of this function plus a one-line `ExternFunc` stand-in
    for each callee prints it that way at the cost of printing the function alone.
    """
    import tvm
    from tvm import relax

    callees = list(relax.analysis.all_global_vars(func))
    own = next((gv for gv in callees if gv.name_hint == name), None) or tvm.ir.GlobalVar(name)
    functions = {own: func}
    for gv in callees:
        if gv.name_hint != name:
            functions[gv] = relax.ExternFunc(gv.name_hint)
    lines = tvm.IRModule(functions).script(show_meta=False).split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("    @"))
    return _strip("\n".join(line[4:] if line.startswith("    ") else line
                            for line in lines[start:]))


def _print(func: Any, name: str) -> str:
    script = getattr(func, "script", None)
    if script is None:
        return str(func)
    if type(func).__name__ == "Function" and function_kind(func) == "relax":
        try:
            return _print_relax_in_module(func, name)
        except Exception:  # noqa: BLE001 - the plain print below is still correct
            _log.debug("printing %s inside a module failed; printing it alone", name,
                       exc_info=True)
    # show_meta stays False (the default): large constants print as ``metadata[...]``
    # references, and show_meta=True segfaults with some tvm-ffi versions.
    return _strip(script(name=name, show_meta=False))


def function_text(func: Any, name: str) -> str:
    """TVMScript of one module function as `def name(...)`, without import headers; a
    one-line `# TVM could not print ...` comment where TVM's printer raises."""
    key = (_address(func), name)
    text = _CACHE.get(key)
    if text is None:
        text = _print_job(func, name, None)
        _CACHE.put(key, func, text)
    return text


#: binding counts of recent functions: (the function, kept alive so that its address
#: is not reused, and its count), by address
_COUNTS: OrderedDict[int, tuple[Any, int]] = OrderedDict()
_COUNTS_SIZE = 256


def binding_count(func: Any) -> int:
    """How many top-level bindings a Relax function has (0 for anything else): what
    `head_text` counts. Cached by object."""
    key = _address(func)
    with _CACHE._lock:
        hit = _COUNTS.get(key)
    if hit is not None:
        return hit[1]
    body: Any = getattr(func, "body", None)
    count = 0
    if function_kind(func) == "relax" and hasattr(body, "blocks"):
        count = sum(len(block.bindings) for block in body.blocks)
    with _CACHE._lock:
        _COUNTS[key] = (func, count)
        while len(_COUNTS) > _COUNTS_SIZE:
            _COUNTS.popitem(last=False)
    return count


def binding_names(func: Any, limit: int) -> tuple[str, ...]:
    """The variable names of a Relax function's first `limit` top-level bindings, in
    program order (empty for anything else). Each costs a few calls into TVM, so only
    the region asked for is read."""
    body: Any = getattr(func, "body", None)
    if function_kind(func) != "relax" or not hasattr(body, "blocks"):
        return ()
    names: list[str] = []
    for block in body.blocks:
        bindings = block.bindings
        for k in range(min(len(bindings), limit - len(names))):
            names.append(str(bindings[k].var.name))
        if len(names) >= limit:
            break
    return tuple(names)


def _head(func: Any, count: int) -> Any:
    """`func` with only its first `count` top-level bindings, returning the last of
    them: printed, its lines are the whole function's first lines (names are given in
    program order), and a print costs what those lines cost."""
    from tvm import relax

    blocks, left, last = [], count, None
    for block in func.body.blocks:
        if left <= 0:
            break
        kept = list(block.bindings)[:left]
        left -= len(kept)
        if kept:
            blocks.append(type(block)(kept))
            last = kept[-1].var
    result = last if last is not None else func.body.body
    return relax.Function(func.params, relax.SeqExpr(blocks, result), func.ret_ty,
                          func.is_pure, func.attrs)


def can_head(func: Any, count: int) -> bool:
    """Whether `head_text` can cut `func` after `count` bindings (TVM builds
    the shorter function); False sends a first view back to the whole function."""
    try:
        _head(func, count)
    except Exception:  # noqa: BLE001 - TVM raises its own error types
        _log.debug("cannot cut a function after %d bindings", count, exc_info=True)
        return False
    return True


def _strip_head_tail(text: str) -> str:
    """Drop what only a head print has after its last binding: `return` of that
    binding's variable and the dataflow block's `R.output(...)` for it."""
    lines = text.split("\n")
    if lines and lines[-1].startswith("    return "):
        lines.pop()
    while lines and lines[-1].lstrip().startswith("R.output("):
        lines.pop()
    return "\n".join(lines)


def head_text(func: Any, name: str, count: int) -> str:
    """The first lines of `function_text` of a Relax function: its signature and
    its first `count` top-level bindings (per binding region: a 32-layer forward of
    2,400 lines prints its first screen in a tenth of the time). The whole text when the
    function has no more bindings than that, or is not a Relax function."""
    if binding_count(func) <= count:
        return function_text(func, name)
    key = (_address(func), name, count)
    text = _CACHE.get(key)
    if text is None:
        text = _print_job(func, name, count)
        _CACHE.put(key, func, text)
    return text


#: Threads for :func:`prefetch`: TVM's printer releases the GIL, so on 2 cores two
#: threads print a batch of PrimFuncs ~2x as fast (143 vs 65 ms for 40 mobilenet kernels).
_WORKERS = max(1, min(4, os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _job_key(func: Any, name: str, count: int | None) -> tuple[Any, ...]:
    if count is not None and binding_count(func) > count:
        return (_address(func), name, count)
    return (_address(func), name)


def _print_job(func: Any, name: str, count: int | None) -> str:
    """`function_text` (`count` None) or `head_text`, printed. A loaded
    trace can hold a function that passes TVM's well-formedness check and still makes
    its printer raise (a fuzzed trace: an array one element short, a loop whose bounds'
    type differs from its variable's): its text is then a one-line comment that says so,
    and each view shows it where the function would be, instead of failing whole."""
    try:
        if count is not None and binding_count(func) > count:
            return _strip_head_tail(_print(_head(func, count), name))
        return _print(func, name)
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
        _log.debug("TVM could not print %s", name, exc_info=True)
        why = " ".join((str(exc).strip().splitlines() or [""])[-1].split())[:300]
        return f"# TVM could not print {name}: {type(exc).__name__}: {why}".rstrip(": ")


def prefetch(jobs: Iterable[tuple[Any, ...]]) -> int:
    """Print the `(function, name)` pairs (or `(function, name, bindings)` triples:
    `head_text`) not yet in the cache, in parallel threads, so that the
    `function_text` / `head_text` calls that follow are cache hits. Returns
    how many were printed. With one core, or one job, it prints in this thread."""
    global _pool
    todo: dict[tuple[Any, ...], tuple[Any, str, int | None]] = {}
    for func, name, *rest in jobs:
        if func is None:
            continue
        count = rest[0] if rest else None
        key = _job_key(func, name, count)
        if key not in todo and _CACHE.get(key) is None:
            todo[key] = (func, name, count)
    if len(todo) < 2 or _WORKERS < 2:
        for key, job in todo.items():
            _CACHE.put(key, job[0], _print_job(*job))
        return len(todo)
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="passlab-print")
    items = list(todo.items())
    for (key, job), text in zip(items, _pool.map(lambda kv: _print_job(*kv[1]), items)):
        _CACHE.put(key, job[0], text)
    return len(items)


def stores() -> list[tuple[Any, Any, int, Any]]:
    """The printing caches as `_tvm.forget_unreferenced` reads them: the printed texts
    (`(function, text)` entries) and the binding counts (`(function, count)`)."""
    first = lambda entry: entry  # noqa: E731 - the entry holds its function first
    return [(_CACHE._data, first, 1, _CACHE._lock), (_COUNTS, first, 1, _CACHE._lock)]


def clear_cache() -> None:
    """Forget every printed function (benchmarks measure first-view latency with it)."""
    _CACHE.clear()
    with _CACHE._lock:
        _COUNTS.clear()


def cache_info() -> dict[str, int]:
    """Entries, capacity, hits and misses of the printing cache."""
    return {"size": len(_CACHE), "maxsize": _CACHE.maxsize, "hits": _CACHE.hits,
            "misses": _CACHE.misses}


def function_kind(func: Any) -> str:
    """`"tir"` for a PrimFunc, `"relax"` for Relax functions, else the class name."""
    module = type(func).__module__
    if module.startswith(("tvm.tirx", "tvm.tir")):
        return "tir"
    if module.startswith("tvm.relax"):
        return "relax"
    return type(func).__name__.lower()


def same_function(a: Any, b: Any) -> bool:
    """Identity (the fast path: unchanged functions are shared) or structural equality.

    Free variables are mapped (PrimFuncs hold free buffer-data variables from
    `MakePackedAPI` on) and tensor bytes are skipped (weights are not code).
    """
    if a.same_as(b):
        return True
    if type(a) is not type(b):
        return False
    return _tvm.structural_equal(a, b)


def structural_key(func: Any) -> int:
    """A structural hash consistent with `same_function`."""
    return _tvm.function_hash(func)


def is_module(obj: Any) -> bool:
    """Whether `obj` is a `tvm.IRModule` (imports TVM only when asked)."""
    return _tvm.is_module(obj)


def module_functions(mod: Any) -> dict[str, Any]:
    """The module's functions keyed by `GlobalVar.name_hint`, sorted by name."""
    return dict(sorted(_tvm.functions(mod).items(), key=lambda item: item[0]))
