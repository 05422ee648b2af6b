"""Where a program enters TVM's compiler, and a way to wrap those entries when TVM is
imported, for recording a program that does not know about passlab.

The entry points are TVM 0.27's: `relax.build` (`tvm.compile` of a Relax module
calls it), `tirx.build` (`tvm.compile` of a TIR module) and `Pass.__call__` (a pass
run by hand). Each is wrapped in the module that defines it, as soon as that module has
run and before any other module copies the name (`tvm/relax/__init__.py` does
`from .vm_build import build`), so every way of reaching it sees the wrapper. Nothing
here imports TVM: a program that never imports it pays for one finder on
`sys.meta_path`.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ALIASES", "ENTRY_POINTS", "wrap_on_import"]

#: (module, attribute path in it, what passlab calls the entry): TVM 0.27's ways into
#: the compiler.
ENTRY_POINTS: tuple[tuple[str, str, str], ...] = (
    ("tvm.relax.vm_build", "build", "relax.build"),
    ("tvm.tirx.build", "build", "tirx.build"),
    ("tvm.ir.transform", "Pass.__call__", "pass"),
)

#: Packages that copy an entry point's name when they are imported (``from .vm_build
#: import build``): when TVM was imported before the wrapping, they get the wrapper too.
ALIASES: dict[str, tuple[str, ...]] = {"tvm.relax.vm_build": ("tvm.relax",),
                                       "tvm.tirx.build": ("tvm.tirx",)}

#: A wrapper factory: (the original callable, the entry's label) -> the wrapper.
Wrapper = Callable[[Callable[..., Any], str], Callable[..., Any]]


def _wrap_in(module: Any, attr: str, label: str, wrapper: Wrapper) -> None:
    owner_path, _, name = attr.rpartition(".")
    owner = module
    for part in filter(None, owner_path.split(".")):
        owner = getattr(owner, part)
    original = getattr(owner, name)
    if getattr(original, "__passlab_wrapped__", False):
        return
    wrapped = wrapper(original, label)
    wrapped.__passlab_wrapped__ = True  # type: ignore[attr-defined]
    setattr(owner, name, wrapped)
    for alias in ALIASES.get(module.__name__, ()):
        package = sys.modules.get(alias)
        if package is not None and getattr(package, name, None) is original:
            setattr(package, name, wrapped)


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then wraps the module's entry points."""

    def __init__(self, real: Any, entries: list[tuple[str, str]], wrapper: Wrapper) -> None:
        self.real, self.entries, self.wrapper = real, entries, wrapper

    def create_module(self, spec: Any) -> Any:
        return self.real.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.real.exec_module(module)
        for attr, label in self.entries:
            _wrap_in(module, attr, label, self.wrapper)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, wrapper: Wrapper) -> None:
        self.wrapper = wrapper
        self.busy = threading.local()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        entries = [(attr, label) for mod, attr, label in ENTRY_POINTS if mod == name]
        if not entries or getattr(self.busy, "on", False):
            return None
        self.busy.on = True  # the finders below us may import; don't look at our own
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        finally:
            self.busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(spec.loader, entries, self.wrapper)
        return spec


def wrap_on_import(wrapper: Wrapper) -> None:
    """Wrap every entry point with `wrapper(original, label)`: at once in the TVM
    modules already imported, and in the others as they are imported. Calling it again
    wraps nothing twice."""
    for mod, attr, label in ENTRY_POINTS:
        module = sys.modules.get(mod)
        if module is not None:
            _wrap_in(module, attr, label, wrapper)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(wrapper))
