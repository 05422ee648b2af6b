"""How a `Backend` names what it takes: each item of its
`patterns` (a `(name, pattern[, check])` tuple, a `FusionPattern`, or the name of a
pattern set registered with `tvm.relax.backend.pattern_registry`) resolved into TVM
`FusionPattern` objects named `<backend>.<pattern>`.

Knows nothing about `Backend` itself: callers pass the backend's name.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from passlab.errors import unknown

#: TVM modules that register pattern sets when imported (``tvm.relax.backend.contrib``).
PATTERN_MODULES = {
    "tensorrt": "tvm.relax.backend.contrib.tensorrt",
    "example_npu": "tvm.relax.backend.contrib.example_npu",
}


def is_single_pattern(p: Any) -> bool:
    """A lone `"tensorrt"` or `("name", pattern)` rather than a list of them."""
    return isinstance(p, str) or (
        len(p) >= 2 and isinstance(p[0], str) and not isinstance(p[1], str))


def _registry():
    from tvm.relax.backend import pattern_registry

    return pattern_registry


def _load_pattern_module(prefix: str) -> None:
    module = PATTERN_MODULES.get(prefix.split(".")[0])
    if module is not None:
        importlib.import_module(module)


def _registered_names() -> list[str]:
    for module in PATTERN_MODULES.values():
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    return [p.name for p in _registry().get_patterns_with_prefix("")]


def resolve(item: Any, backend: str) -> list[Any]:
    """The `FusionPattern` objects of one pattern item, named `<backend>.<rest>`."""
    from tvm.relax.dpl import DFPattern
    from tvm.relax.transform import FusionPattern

    if isinstance(item, str):
        _load_pattern_module(item)
        reg = _registry()
        found = list(reg.get_patterns_with_prefix(item + ".")) or (
            [p] if (p := reg.get_pattern(item)) is not None else [])
        if not found:
            names = _registered_names()
            if "." in item:
                raise unknown("registered pattern", item, names,
                              extra="Give (name, pattern) tuples for your own patterns.")
            raise unknown("pattern set", item, sorted({n.split(".")[0] for n in names}),
                          extra="One registered pattern can be named in full (e.g. "
                          "'example_npu.conv2d'); give (name, pattern) tuples for your own "
                          "patterns.")
        return [_renamed(p, backend, registered=True) for p in found]
    if isinstance(item, FusionPattern):
        return [_renamed(item, backend, registered=True)]
    if isinstance(item, tuple) and 2 <= len(item) <= 4 and isinstance(item[0], str):
        name, pattern, *rest = item
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"pattern {name!r}: the second item must be a tvm.relax.dpl "
                            f"pattern (e.g. is_op('relax.nn.relu')(wildcard())), not "
                            f"{type(pattern).__name__}")
        annotations, check = {}, None
        if len(rest) == 1:
            if isinstance(rest[0], Mapping):
                annotations = dict(rest[0])
            elif callable(rest[0]):
                check = rest[0]
            else:
                raise TypeError(f"pattern {name!r}: the third item must be a check function or "
                                f"a mapping of annotation patterns, not {type(rest[0]).__name__}")
        elif len(rest) == 2:
            annotations, check = dict(rest[0] or {}), rest[1]
        return [_renamed(FusionPattern(name, pattern, annotations, check), backend,
                         registered=False)]
    raise TypeError(
        f"cannot use {item!r} as a pattern of backend {backend!r}: give (name, pattern), "
        "(name, pattern, check), a FusionPattern or the name of a registered pattern set"
    )


def _renamed(p: Any, backend: str, registered: bool) -> Any:
    """`p` named `<backend>.<rest>`: TVM derives the codegen from the prefix."""
    from tvm.relax.transform import FusionPattern

    name = str(p.name)
    if name.startswith(backend + "."):
        return p
    rest = name.split(".", 1)[1] if registered and "." in name else name
    return FusionPattern(f"{backend}.{rest}", p.pattern, dict(p.annotation_patterns),
                         p.check, getattr(p, "attrs_getter", None))
