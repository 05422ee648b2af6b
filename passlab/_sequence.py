"""One small base for results that read like tuples and are also looked up by name.

A trace, a diff, a fused graph, a buffer report ... are immutable sequences: `len`,
iteration, `in`, indexing by position (negative too) and slices, plus lookup by a
name (a pass, a function, a tensor). `NamedSequence` writes that once; a result
says only where its items are and what a name means.

Like `passlab._render`, this module knows nothing about passes or traces and sits
at the bottom of the import graph.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["NamedSequence"]

T = TypeVar("T")


class NamedSequence(Sequence[T]):
    """A read-only sequence over the items `_items` returns.

    `obj[i]` and `obj[-1]` index by position, `obj[a:b]` slices (a tuple, unless
    `_slice` says otherwise), `obj["name"]` calls `_by_name`, which a
    subclass with names defines (raising `passlab.errors.UnknownNameError` with
    close matches for a miss); without it a name is a `TypeError`, as for a tuple.

    Examples
    --------
    >>> class Fruits(NamedSequence[str]):
    ...     def _items(self): return ("apple", "pear")
    ...     def _by_name(self, name): return next(f for f in self if f.startswith(name))
    >>> fruits = Fruits()
    >>> len(fruits), fruits[-1], fruits[:1], fruits["pe"], "pear" in fruits
    (2, 'pear', ('apple',), 'pear', True)
    """

    __slots__ = ()

    def _items(self) -> Sequence[T]:
        raise NotImplementedError(f"{type(self).__name__} defines no _items()")

    def _by_name(self, name: str) -> T:
        raise TypeError(f"{type(self).__name__} indices must be integers or slices, not str")

    def _slice(self, items: Sequence[T]) -> Sequence[T]:
        return items

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[T]:
        return iter(self._items())

    @overload
    def __getitem__(self, key: int) -> T: ...
    @overload
    def __getitem__(self, key: str) -> T: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[T]: ...
    def __getitem__(self, key: int | str | slice) -> T | Sequence[T]:
        if isinstance(key, str):
            return self._by_name(key)
        if isinstance(key, slice):
            return self._slice(self._items()[key])
        return self._items()[key]
