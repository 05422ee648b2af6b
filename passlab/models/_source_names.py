"""Source names: which node of the imported model each binding of `main` came from.

TVM's ONNX and PyTorch importers drop node names: the Relax bindings they emit are
`lv`, `lv1` ... . Each importer keeps, while it runs, a table from the source graph's
values to the Relax expressions it made for them (the ONNX importer's `_nodes`, by
tensor name; the PyTorch importer's `env`, by `fx.Node`). `capturing` keeps
that table when the import ends; `attach` then finds each expression among the
bindings of `main` (by object identity, never by printed text) and writes the node's
name into the binding's span (`Span(SourceName(text), ...)`, the text a JSON list of
the names, so that no name, whatever it holds, can split into two). A binding a converter made on the way (the `reshape` of a Conv
bias) belongs to the node whose result reads it. Spans are TVM's own record of where IR
came from: they are not printed, structural equality and hashes ignore them, and
`tvm.ir.save_json` (so a saved trace) keeps them. `source_names` reads them back.

Examples
--------
>>> import passlab
>>> source_names(passlab.models.mlp()["forward"])
{}
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from passlab import _tvm
from passlab._tvm import ir as _ir

__all__ = ["capturing", "attach", "source_names", "relabel"]

# The importer classes are patched only inside `capturing`; one import at a time.
_LOCK = threading.Lock()


@contextmanager
def capturing(module: str, cls: str, method: str, attr: str) -> Iterator[list[Any]]:
    """While active, each call of `module.cls.method` appends `self.<attr>` (the
    importer's table of converted values) to the list this yields. If TVM moved the class
    or method, the list stays empty: the import runs as is, without source names."""
    import importlib

    try:
        owner = getattr(importlib.import_module(module), cls)
        original = getattr(owner, method)
    except (ImportError, AttributeError):
        yield []
        return
    seen: list[Any] = []

    @functools.wraps(original)
    def keep_table(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        seen.append(getattr(self, attr, None))
        return out

    with _LOCK:
        setattr(owner, method, keep_table)
        try:
            yield seen
        finally:
            setattr(owner, method, original)


#: Separated several names in one ``SourceName`` before names were written as a JSON
#: list (traces saved then still read back): a name holding a newline split in two. (A
#: ``SequentialSpan`` would say the same, but TVM saves its ``source_name`` as null,
#: which loading a saved trace refuses.)
_SEP = "\n"


def _text(names: Sequence[str]) -> str:
    """The `SourceName` text of `names`: a JSON list (`["/conv1/Conv"]`), parsed
    back as data by `_names`, never split on what a name holds."""
    return json.dumps(list(names), ensure_ascii=False)


def _names(text: str) -> tuple[str, ...]:
    """The names `_text` wrote; other text (an older trace's newline-joined names,
    a span some other tool wrote) is split the old way."""
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return tuple(value)
    return tuple(text.split(_SEP))


def _span(names: Sequence[str]) -> Any:
    import tvm

    return tvm.ir.Span(tvm.ir.SourceName(_text(names)), 0, 0, 0, 0)


def _owners(func: Any, results: Sequence[tuple[Any, str]]) -> dict[int, tuple[str, ...]]:
    """Address of each binding var -> the source names it came from. Objects are keyed by
    address (`id_`): Relax expressions overload `==`."""
    relax = _tvm.relax()
    named: dict[int, list[str]] = {}
    for expr, name in results:
        parts = list(expr.fields) if isinstance(expr, relax.Tuple) else [expr]
        for e in [expr, *parts]:
            if isinstance(e, relax.Expr) and name not in named.setdefault(e.id_, []):
                named[e.id_].append(name)
    bindings = list(_ir.iter_bindings(func))
    owner = {b.var.id_: tuple(named.get(b.value.id_, ()) or named.get(b.var.id_, ()))
             for b in bindings}
    readers: dict[int, list[int]] = {}
    for b in bindings:
        for v in _ir.var_refs(b.value):
            readers.setdefault(v.id_, []).append(b.var.id_)
    # A binding a converter made on the way is read only by that node's other bindings:
    # it takes their owner when they agree (walked backwards, readers come first).
    for b in reversed(bindings):
        if not owner[b.var.id_]:
            found = {owner.get(r, ()) for r in readers.get(b.var.id_, ())} - {()}
            if len(found) == 1:
                owner[b.var.id_] = found.pop()
    return {v: names for v, names in owner.items() if names}


def attach(mod: Any, results: Sequence[tuple[Any, str]], function: str = "main") -> Any:
    """`mod` with the span of each binding of `function` naming the source nodes it
    came from. `results` are `(Relax expression, node name)` pairs from the importer's
    table; unnamed nodes are left out. The module is returned unchanged when nothing
    matched or the rewritten function would not be structurally equal to the original."""
    relax = _tvm.relax()
    results = [(e, n) for e, n in results if n]
    if not results or function not in _tvm.functions(mod):
        return mod
    func = mod[function]
    owners = _owners(func, results)
    if not owners:
        return mod

    new = _respanned(func, lambda b: owners.get(b.var.id_))
    new = relax.BlockBuilder().normalize(new)  # the new body's type, as the old one's
    if not _tvm.structural_equal(new, func):
        return mod
    mod[function] = new
    return mod


def source_names(func: Any) -> dict[str, tuple[str, ...]]:
    """binding name -> the source node names `attach` wrote into its span."""
    out: dict[str, tuple[str, ...]] = {}
    for b in _ir.iter_bindings(func):
        source = getattr(b.span, "source_name", None)
        if source is not None and source.name:
            out[str(b.var.name)] = _names(str(source.name))
    return out


def relabel(func: Any, names: Mapping[str, Sequence[str]]) -> Any:
    """`func` with the span of each binding named in `names` (binding name -> source
    names, as `source_names` returns them) written again: for a function a rewrite
    rebuilt (renamed symbolic variables), whose bindings kept their names, not spans."""
    if not names:
        return func
    return _respanned(func, lambda b: names.get(str(b.var.name)))


def _respanned(func: Any, names_of: Callable[[Any], Sequence[str] | None]) -> Any:
    """`func` rebuilt with each binding for which `names_of` gives source names
    spanned by them; the other bindings as they were."""
    relax = _tvm.relax()

    def rebind(b: Any) -> Any:
        found = names_of(b)
        if not found:
            return b
        if isinstance(b, relax.MatchCast):
            return relax.MatchCast(b.var, b.value, b.ty, _span(found))
        return relax.VarBinding(b.var, b.value, _span(found))

    blocks = [type(block)([rebind(b) for b in block.bindings], block.span)
              for block in func.body.blocks]
    body = relax.SeqExpr(blocks, func.body.body, func.body.span)
    return relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs, func.span)
