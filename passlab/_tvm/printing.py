"""Per-function TVMScript text, printed lazily and cached by object identity.

Printing a whole module costs ~50 ms (resnet) to ~140 ms (mobilenet_v2); a diff only
needs the few functions it shows, and unchanged functions are the same objects from one
snapshot to the next, so each is printed at most once while it stays in the cache.

With :mod:`passlab._tvm`, this module holds the diff code's calls into TVM APIs that move
between releases (``Scriptable.script`` options).
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
    """LRU of printed text keyed by ``(C object address, printed name)``.

    Each entry keeps a reference to the TVM object it was printed from, so the address
    cannot be freed and reused by another object while the entry lives.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[int, str], tuple[Any, str]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[int, str]) -> str | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: tuple[int, str], obj: Any, text: str) -> None:
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
    """Drop the ``# from tvm.script import ...`` header and the metadata footnote."""
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
    """Print a Relax function as it appears inside its module (``cls.callee`` calls).

    Printed alone, a call to another module function shows as a bare name that can
    shadow a local variable (``matmul = R.call_tir(matmul, ...)``); inside a module it
    is ``cls.matmul``. A module of this function plus a one-line ``ExternFunc`` stand-in
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
    """TVMScript of one module function as ``def name(...)``, without import headers."""
    key = (_address(func), name)
    text = _CACHE.get(key)
    if text is None:
        text = _print(func, name)
        _CACHE.put(key, func, text)
    return text


#: Threads for :func:`prefetch`: TVM's printer releases the GIL, so on 2 cores two
#: threads print a batch of PrimFuncs ~2x as fast (143 vs 65 ms for 40 mobilenet kernels).
_WORKERS = max(1, min(4, os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def prefetch(jobs: Iterable[tuple[Any, str]]) -> int:
    """Print the ``(function, name)`` pairs not yet in the cache, in parallel threads, so
    that the :func:`function_text` calls that follow are cache hits. Returns how many were
    printed. With one core, or one job, it prints in this thread."""
    global _pool
    todo: dict[tuple[int, str], tuple[Any, str]] = {}
    for func, name in jobs:
        if func is None:
            continue
        key = (_address(func), name)
        if key not in todo and _CACHE.get(key) is None:
            todo[key] = (func, name)
    if len(todo) < 2 or _WORKERS < 2:
        for func, name in todo.values():
            function_text(func, name)
        return len(todo)
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="passlab-print")
    items = list(todo.items())
    for (key, (func, _)), text in zip(items, _pool.map(lambda kv: _print(*kv[1]), items)):
        _CACHE.put(key, func, text)
    return len(items)


def clear_cache() -> None:
    """Forget every printed function (benchmarks measure first-view latency with it)."""
    _CACHE.clear()


def cache_info() -> dict[str, int]:
    """Entries, capacity, hits and misses of the printing cache."""
    return {"size": len(_CACHE), "maxsize": _CACHE.maxsize, "hits": _CACHE.hits,
            "misses": _CACHE.misses}


def function_kind(func: Any) -> str:
    """``"tir"`` for a PrimFunc, ``"relax"`` for Relax functions, else the class name."""
    module = type(func).__module__
    if module.startswith(("tvm.tirx", "tvm.tir")):
        return "tir"
    if module.startswith("tvm.relax"):
        return "relax"
    return type(func).__name__.lower()


def same_function(a: Any, b: Any) -> bool:
    """Identity (the fast path: unchanged functions are shared) or structural equality.

    Free variables are mapped (PrimFuncs hold free buffer-data variables from
    ``MakePackedAPI`` on) and tensor bytes are skipped (weights are not code).
    """
    if a.same_as(b):
        return True
    if type(a) is not type(b):
        return False
    return _tvm.structural_equal(a, b)


def structural_key(func: Any) -> int:
    """A structural hash consistent with :func:`same_function`."""
    return _tvm.function_hash(func)


def is_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``tvm.IRModule`` (imports TVM only when asked)."""
    return _tvm.is_module(obj)


def module_functions(mod: Any) -> dict[str, Any]:
    """The module's functions keyed by ``GlobalVar.name_hint``, sorted by name."""
    return dict(sorted(_tvm.functions(mod).items(), key=lambda item: item[0]))
