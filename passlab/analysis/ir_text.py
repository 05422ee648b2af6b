"""The TVMScript text of a module's functions, as every face shows it (the Explorer's
kernel panel, the report's generated-code section, the diffs of both).

Views format what this returns; they do not print IR themselves (`tests/test_architecture.py`
checks that no module under `passlab/views/` imports `passlab._tvm.printing` or the
IR walkers). Printing is lazy, per function, and cached by object identity
(`passlab._tvm.printing`), so a function shown by two faces is printed once.

Examples
--------
>>> import passlab
>>> from passlab.analysis.ir_text import function_source
>>> mod = passlab.build(passlab.models.mlp()).trace.find("FuseTIR").after
>>> kind, text = function_source(mod, "fused_matmul_add_relu")
>>> kind, text.splitlines()[1].startswith("def fused_matmul_add_relu(")
('TIR', True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passlab import _tvm
from passlab._tvm import printing

__all__ = ["function_text", "function_source", "prefetch", "clear_caches"]


def function_text(func: Any, name: str) -> str:
    """TVMScript of one module function as `def name(...)`, without import headers."""
    return printing.function_text(func, name)


def function_source(module: Any, name: str) -> tuple[str, str] | None:
    """`(kind, text)` of the global function `name` of `module`: kind `"TIR"` for
    a PrimFunc, `"Relax"` for a Relax function (else the class name, titled); None when
    the module has no function of that name."""
    func = _tvm.functions(module).get(name) if module is not None else None
    if func is None:
        return None
    kind = printing.function_kind(func)
    return ("TIR" if kind == "tir" else kind.title()), printing.function_text(func, name)


def prefetch(diffs: Iterable[Any], max_functions: int | None = None) -> int:
    """Print, in parallel threads, every function that these
    `ModuleDiff` objects show with `max_functions` (None:
    all), so that rendering them afterwards hits the cache. Returns how many were printed."""
    return printing.prefetch(job for d in diffs for job in d.print_jobs(max_functions))


def clear_caches() -> None:
    """Forget every printed function, every rendered diff block and every block's line
    pairing (a cold first view, as the benchmarks measure it)."""
    from passlab.analysis import _diff_layout, _diff_render

    printing.clear_cache()
    _diff_render.BLOCKS.clear()
    _diff_layout._pairs.cache_clear()
    _diff_layout._elided.cache_clear()


def forget_unreferenced() -> int:
    """Forget the printed text, rendered diff blocks and what the IR walks remember of
    functions and calls nothing else refers to any more (a dropped build's: these caches
    outlive traces, and each entry keeps its object alive). Returns how many entries
    went."""
    from passlab._tvm import ir
    from passlab.analysis import _diff_render

    return _tvm.forget_unreferenced(_diff_render.BLOCKS.stores() + printing.stores()
                                    + ir.stores())
