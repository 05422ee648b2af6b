"""The user's names for a `torch.export` program's symbolic dimensions.

`torch.export.export(..., dynamic_shapes={"x": {1: Dim("seq")}})` records the dimension
as a sympy symbol (`s27`) and keeps the name `seq` only in the program's shape
environment, which maps each symbol to the input sizes it came from
(`var_to_sources`: `L['x'].size()[1]`) and those to the `Dim` names
(`source_name_to_debug_name`). TVM's importer names its symbolic variables after the
symbols, so a user who wrote `seq` would read `s27` and have `bounds={"seq": 16}`
refused. `dim_names` reads the names back; the importer renames the variables
(`passlab._tvm.ir.rename_symbolic_vars`).

Those tables are torch internals: when they are missing (another torch release, a
program read back with `torch.export.load`, which keeps no names) the symbols stay as
they are.
"""

from __future__ import annotations

import keyword
from typing import Any

__all__ = ["dim_names"]


def _shape_env(program: Any) -> Any:
    """The shape environment of the program's symbolic input sizes, or None."""
    for node in getattr(getattr(program, "graph", None), "nodes", ()):
        if getattr(node, "op", None) != "placeholder":
            continue
        val = node.meta.get("val")
        for size in getattr(val, "shape", ()):
            env = getattr(getattr(size, "node", None), "shape_env", None)
            if env is not None:
                return env
    return None


def _source_name(source: Any) -> str | None:
    name = getattr(source, "name", None)
    if callable(name):  # a method in some torch releases, a property in others
        try:
            name = name()
        except Exception:  # noqa: BLE001 - an unnamed source: no name to keep
            return None
    return name if isinstance(name, str) else None


def dim_names(program: Any) -> dict[str, str]:
    """Symbol name -> the user's `Dim` name (`{"s27": "seq"}`) for each symbolic
    dimension of `program` that has one. A name is kept only when it is a plain
    identifier, not a Python keyword, and neither taken by another dimension nor already
    a symbol's name, so that renaming never merges two variables."""
    env = _shape_env(program)
    if env is None:
        return {}
    debug = getattr(env, "source_name_to_debug_name", None) or {}
    sources = getattr(env, "var_to_sources", None) or {}
    used = [str(s) for s in getattr(program, "range_constraints", {}) or {}]
    symbols = set(used) | {str(s) for s in sources}
    # the program's own symbols first: torch may have unified two (one Dim on two
    # inputs: s70 replaced by s53), and only the survivor appears in the program
    by_name = {str(s): found for s, found in sources.items()}
    order = [s for s in used if s in by_name] + [s for s in by_name if s not in used]
    out: dict[str, str] = {}
    for symbol in order:
        found = by_name[symbol]
        names = {debug[n] for n in map(_source_name, found) if n in debug}
        if len(names) != 1:
            continue
        name = names.pop()
        if (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
                and name not in symbols and name not in out.values()):
            out[symbol] = name
    return out
