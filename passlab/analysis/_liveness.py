"""Liveness of one walked Relax function: its tensors with their live ranges, its
allocations and memory blocks (tensors before planning, storages after), and the live
bytes at each binding. `passlab.analysis.buffers` turns the results into a
`BufferReport`; the definitions are in its docstring."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from passlab import _render
from passlab._tvm import ir as _ir

__all__ = ["Tensor", "Allocation"]

_COUNTED = (_ir.ALLOC_STORAGE, _ir.ALLOC_TENSOR)  # what estimate_memory_usage counts


@dataclass(frozen=True)
class Tensor:
    """One tensor of a function: who makes it, who reads it, its size and live range.

    `bytes` is `None` when the size is symbolic and no bound was given; `size` is
    always the size as text (`"256 * n"`). `defined`, `first_use` and `last_use`
    are binding indices of `function`.
    """

    name: str
    function: str
    kind: str  # intermediate, output, input, weight
    producer: str
    consumers: tuple[str, ...]
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    size: str
    defined: int
    first_use: int | None
    last_use: int | None
    storage: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def shape_text(self) -> str:
        return _render.shape_text(self.shape)


@dataclass(frozen=True)
class Allocation:
    """An explicit allocation: `R.memory.alloc_storage` or `R.builtin.alloc_tensor`.

    `first_use` and `last_use` are its live range (binding indices): from the first to
    the last binding of any tensor placed in it; None when nothing is placed in it.
    """

    name: str
    function: str
    op: str
    bytes: int | None
    size: str
    binding: int
    tensors: tuple[str, ...]
    constant: bool = True
    first_use: int | None = None
    last_use: int | None = None


@dataclass
class _Result:
    walk: _ir.Walk
    tensors: list[Tensor]
    params: list[Tensor]
    allocs: list[Allocation]
    timeline: list[int]
    exact: bool
    tensor_ranges: list[tuple[str, int, int]]  # (tensor, first, last binding it is live)
    unknown: set[str]
    block_ranges: list[tuple[str, int, int]]  # (memory block, first, last binding)
    planned: bool
    calls: tuple[str, ...]  # label of the call at each binding, "" where none
    storages: list[Allocation]  # the memory blocks after planning (empty before)

    def live_at(self, index: int) -> list[str]:
        """Names of the tensors live at binding `index`."""
        return [n for n, lo, hi in self.tensor_ranges if lo <= index <= hi]

    def blocks_at(self, index: int) -> list[str]:
        """Names of the memory blocks live at binding `index`."""
        return [n for n, lo, hi in self.block_ranges if lo <= index <= hi]

    def tensor_peak(self) -> int:
        """The most bytes of tensors live at one binding (unknown sizes count 0)."""
        size = {t.name: t.bytes or 0 for t in self.tensors}
        delta = [0] * (len(self.timeline) + 1)
        for n, lo, hi in self.tensor_ranges:
            if lo <= hi:
                delta[lo] += size.get(n, 0)
                delta[hi + 1] -= size.get(n, 0)
        return max(itertools.accumulate(delta[:len(self.timeline)]), default=0)


def _base(v: _ir.Value) -> _ir.Value:
    while v.view_of is not None:
        v = v.view_of
    return v


def _analyse(w: _ir.Walk, bounds: Mapping[str, int]) -> _Result:
    end = len(w.bindings)
    uses: dict[int, list[int]] = {}
    readers: dict[int, list[str]] = {}
    for c in w.calls:
        for v in c.inputs:
            b = _base(v)
            uses.setdefault(id(b), []).append(c.index)
            readers.setdefault(id(b), []).append(c.label)
        for v in c.outputs:
            uses.setdefault(id(_base(v)), []).append(c.index)
    returned = {id(_base(v)) for v in w.results}
    for key in returned:
        uses.setdefault(key, []).append(end)

    views: dict[int, list[str]] = {}
    placed: dict[int, list[str]] = {}
    for x in w.values:
        if x.view_of is not None:
            views.setdefault(id(_base(x)), []).append(x.display)
        if x.storage is not None:
            placed.setdefault(id(x.storage), []).append(x.name)
    tensors: list[Tensor] = []
    params: list[Tensor] = []
    block_end: dict[int, int] = {}  # by id() of the block's Value
    block_start: dict[int, int] = {}
    for v in w.values:
        if v.view_of is not None or v.kind == "storage":
            continue
        u = sorted(set(uses.get(id(v), [])))
        aliases = tuple(dict.fromkeys(a for a in (*v.aliases, *views.get(id(v), ()))
                                      if a != v.name))
        kind = v.kind if v.kind in ("input", "weight") else (
            "output" if id(v) in returned else "intermediate")
        t = Tensor(v.name, w.function, kind, v.producer.label if v.producer else "",
                   tuple(dict.fromkeys(readers.get(id(v), []))), v.info.shape, v.info.dtype,
                   v.info.size.bytes, v.info.size.text, v.index, u[0] if u else None,
                   u[-1] if u else None, v.storage.name if v.storage is not None else None, aliases)
        if v.kind in ("input", "weight", "const"):  # module data, not temporaries
            if v.kind != "const":
                params.append(t)
            continue
        tensors.append(t)
        block = v.storage if v.storage is not None else v
        last = max(t.last_use if t.last_use is not None else v.index, v.index)
        block_end[id(block)] = max(block_end.get(id(block), -1), last)
        # a storage lives from its first user on, not from its alloc_storage binding
        block_start[id(block)] = min(block_start.get(id(block), v.index), v.index)

    blocks = [v for v in w.values if id(v) in block_end]
    # live ranges as difference arrays: a 32-layer forward has ~1,000 bindings and
    # tensors that live across many of them, and the names live at one binding are only
    # asked for at the peak (_Result.live_at)
    delta = [0] * (end + 2)
    unknown: set[str] = set()
    exact = True
    block_ranges = []
    for b in blocks:
        size = b.info.size
        if size.bytes is None:
            exact = False
            unknown |= set(size.symbols) - set(bounds)
        lo, hi = max(block_start[id(b)], 0), block_end[id(b)]
        block_ranges.append((b.name, lo, hi))
        if lo <= hi:
            delta[lo] += size.bytes or 0
            delta[hi + 1] -= size.bytes or 0
    timeline = list(itertools.accumulate(delta[:end + 1]))
    tensor_ranges = [(t.name, t.defined, t.last_use if t.last_use is not None else t.defined)
                     for t in tensors]
    allocs = []
    for v in w.values:
        if v.op in _COUNTED:
            inside = placed.get(id(v), []) if v.kind == "storage" else [v.name]
            live = id(v) in block_end
            allocs.append(Allocation(v.name, w.function, v.op, v.info.size.bytes,
                                     v.info.size.text, v.index, tuple(inside),
                                     not v.info.size.symbols and v.info.size.bytes is not None,
                                     block_start[id(v)] if live else None,
                                     block_end[id(v)] if live else None))
    planned = any(v.storage is not None for v in w.values)
    storages: list[Allocation] = []
    if planned:  # every memory block, counted by estimate_memory_usage or not
        counted = {a.name: a for a in allocs}
        for b in blocks:
            a = counted.get(b.name)
            if a is None:  # vm.alloc_storage after VMBuiltinLower, or a tensor of its own
                held = tuple(placed.get(id(b), [])) if b.kind == "storage" else (b.name,)
                a = Allocation(b.name, w.function, b.op, b.info.size.bytes, b.info.size.text,
                               b.index, held, not b.info.size.symbols
                               and b.info.size.bytes is not None, block_start[id(b)],
                               block_end[id(b)])
            storages.append(a)
    calls = [""] * end
    for c in w.calls:
        if 0 <= c.index < end and not calls[c.index]:
            calls[c.index] = c.label
    return _Result(w, tensors, params, allocs, timeline, exact, tensor_ranges, unknown,
                   block_ranges, planned, tuple(calls), storages)


def _peak_storages(r: _Result, index: int) -> tuple[Allocation, ...]:
    """The memory blocks live at binding `index` after planning (empty before)."""
    live = set(r.blocks_at(index))
    return tuple(a for a in r.storages if a.name in live)
