"""The TVM transforms a `Backend` runs on a module, behind the
public `passlab.backend.partition` and `passlab.backend.host_fallback`:

* `partition_module`: `FuseOpsByPattern` + `MergeCompositeFunctions`, with the
  entry function renamed `main` while they run (`with_entry_as_main`);
* `inline_regions`: a backend's regions inlined back for the host;
* `composite_names` and `unmatched_message`: which patterns matched.

Functions take resolved values (patterns, a backend's name, or a `Backend` passed in),
so this module never imports `passlab.backend`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from passlab import _tvm
from passlab.backend.patterns import resolve


def with_entry_as_main(mod: Any, fn: Callable[[Any], Any]) -> Any:
    """Run `fn` on the entry function alone, named `main`, and put the module back
    together after.

    `MergeCompositeFunctions` (TVM 0.27) only looks at a function called `main` and
    fails on modules with other public Relax functions; the built-in models' entry is
    `forward`. So the other public Relax functions are set aside (and returned
    untouched), and the entry is renamed through `global_symbol` and
    `NormalizeGlobalVar`, which also updates every call of it.
    """
    tvm, relax = _tvm.tvm(), _tvm.relax()
    entry = _tvm.entry_function(mod)
    aside = {gv: f for gv, f in mod.functions_items()
             if gv.name_hint != entry and isinstance(f, relax.Function)
             and f.attrs is not None and "global_symbol" in f.attrs}
    sub = mod if not aside else tvm.IRModule(
        {gv: f for gv, f in mod.functions_items() if gv not in aside},
        attrs=mod.attrs, global_infos=mod.global_infos)
    if entry != "main":
        sub = _rename(sub, {entry: "main"})
    out = fn(sub)
    if entry != "main":
        out = _rename(out, {"main": entry})
    if not aside:
        return out
    funcs = dict(out.functions_items())
    taken = {gv.name_hint for gv in funcs}
    clash = [gv.name_hint for gv in aside if gv.name_hint in taken]
    if clash:
        raise ValueError(f"partitioning made functions named like existing ones: {clash}")
    return tvm.IRModule({**funcs, **aside}, attrs=out.attrs, global_infos=out.global_infos)


def _rename(mod: Any, renames: Mapping[str, str]) -> Any:
    return _tvm.rename_functions(mod, dict(renames))


def partition_module(mod: Any, patterns: list[Any], merge: bool = True) -> Any:
    """`mod` partitioned by `patterns` (see `passlab.backend.partition`)."""
    relax = _tvm.relax()

    def run(m):
        m = relax.transform.FuseOpsByPattern(patterns, bind_constants=False,
                                             annotate_codegen=not merge,
                                             entry_functions=["main"])(m)
        return relax.transform.MergeCompositeFunctions()(m) if merge else m

    return with_entry_as_main(mod, run)


def inline_regions(mod: Any, name: str) -> Any:
    """`mod` with the regions of backend `name` inlined back into their callers (see
    `passlab.backend.host_fallback`)."""
    tvm, relax = _tvm.tvm(), _tvm.relax()
    funcs, hit = {}, False
    for gv, func in mod.functions_items():
        attrs = getattr(func, "attrs", None)
        if attrs is not None and "Codegen" in attrs and str(attrs["Codegen"]) == name:
            func = func.without_attr("Codegen").without_attr("global_symbol")
            hit = True
        funcs[gv] = func
    if not hit:
        return mod
    new = tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
    new = relax.transform.LambdaLift()(new)  # composite closures become private functions
    new = relax.transform.InlinePrivateFunctions()(new)
    # Inlined results come out as dataflow-block outputs, which would keep FuseOps from
    # fusing across them; CanonicalizeBindings makes them dataflow variables again.
    return relax.transform.CanonicalizeBindings()(new)


def composite_names(mod: Any) -> list[str]:
    """Names of every `Composite` function in `mod`, top-level or inside a region."""
    relax = _tvm.relax()
    found: list[str] = []

    def visit(func: Any) -> None:
        attrs = getattr(func, "attrs", None)
        if attrs is not None and "Composite" in attrs:
            found.append(str(attrs["Composite"]))
        for block in getattr(getattr(func, "body", None), "blocks", ()):
            for binding in block.bindings:
                if isinstance(binding.value, relax.Function):
                    visit(binding.value)

    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            visit(func)
    return found


def unmatched_message(b: Any, mod: Any) -> str:
    """The warning `passlab.backend.preview` gives when patterns matched nothing
    in `mod` (empty when every pattern declared as a tuple matched)."""
    used = set(composite_names(mod))
    names = b.pattern_names
    if not any(n in used for n in names):
        return (f"backend {b.name!r}: none of its {len(names)} patterns matched "
                f"({', '.join(names[:10])}{', ...' if len(names) > 10 else ''}); nothing is "
                "offloaded. Check the op names (e.g. 'relax.nn.conv2d') and that the model "
                "has those ops before LegalizeOps.")
    own = [p for p in _own_pattern_names(b) if p not in used]
    if own:
        return (f"backend {b.name!r}: {len(own)} of its patterns matched nothing: "
                f"{', '.join(own)}")
    return ""


def _own_pattern_names(b: Any) -> list[str]:
    """Names of the patterns declared as tuples (registered sets are broad on purpose,
    so their unmatched patterns are not worth a warning)."""
    out: list[str] = []
    for item in b.patterns:
        if isinstance(item, tuple):
            out.extend(p.name for p in resolve(item, b.name))
    return out
