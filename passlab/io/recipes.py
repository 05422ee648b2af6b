"""How a reproducer rebuilds a pass: TVM's passes by stage list or by name, a user's
function as its source (with the imports, constants and helpers it uses) or by import
path. See `passlab.io.reproducer`, which writes these recipes into scripts."""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import keyword
import sys
import textwrap
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab.pipeline import positional_arity


# ------------------------------------------------------------------------ recipes
@dataclass(frozen=True)
class PassRecipe:
    """How a script gets hold of one pass.

    `code` is Python that binds `pass_` (a TVM pass, `kind` "tvm") or
    `user_pass` (a function `mod -> mod` or `(mod, ctx) -> mod`, `kind`
    "source" or "import"). `kind` "missing" means the pass could not be carried;
    `code` then stops the script with a message saying why. `notes` say what the
    script could not carry. `saved` is True for a recipe read from a trace file: its
    code is text from that file, which a reproducer runs only when asked to
    (`trust_pass_code=True`).
    """

    kind: str
    name: str
    code: str
    notes: tuple[str, ...] = ()
    arity: int = 1
    saved: bool = field(default=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return dict(kind=self.kind, name=self.name, code=self.code, notes=list(self.notes),
                    arity=self.arity)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PassRecipe:
        return cls(str(d["kind"]), str(d["name"]), str(d["code"]),
                   tuple(str(n) for n in d.get("notes", ())), int(d.get("arity", 1)),
                   saved=True)


def py_repr(value: str) -> str:
    """`repr(value)`: how every string is written into generated Python. Never three
    double quotes in a row, not even inside a string: TVM's TVMScript parser finds a
    class's source by counting them on each line."""
    text = repr(value)
    if '"""' in text and text.startswith("'"):
        text = text.replace('"', '\\"')  # in a '...' literal a quote is never an escape
    return text


def _missing(name: str, why: str) -> PassRecipe:
    msg = f"passlab could not carry the pass {name!r}: {why}. Bind `pass_` (a TVM pass) here."
    return PassRecipe("missing", name, f"raise SystemExit({py_repr(msg)})", (why,))


# TVM passes whose arguments are known from TVM's TIR pipeline (``tvm.s_tir.pipeline``);
# this table follows apache-tvm 0.27 and is the place to update when TVM changes.
_TIR_ARGS = {
    "tirx.NarrowDataType": "tvm.tirx.transform.NarrowDataType(32)",
    "tirx.VectorizeLoop": "tvm.tirx.transform.VectorizeLoop(True)",
    # as tvm.tirx.build binds it: the target with its host (the target itself on CPU)
    "tirx.BindTarget": ("tvm.tirx.transform.BindTarget(target.with_host(\n    target.host or "
                        "(target if target.kind.name in ('llvm', 'c') "
                        "else tvm.target.Target('llvm'))))"),
}
_THREAD_SYNC_SCOPES = ("shared", "shared.dyn", "warp")
_NAMESPACES = {"tirx": ("tvm.tirx.transform",), "s_tir": ("tvm.s_tir.transform",),
               "": ("tvm.relax.transform", "tvm.relax.backend", "tvm.ir.transform")}


def _by_name(name: str, occurrence: int, tgt: Any) -> PassRecipe:
    """A TVM pass constructed from its PassInfo name (no arguments, or known ones)."""
    if name in _tvm.CONTAINER_NAMES:
        return _missing(name, "it is a wrapper that only sequences other passes")
    if name in _TIR_ARGS:
        return PassRecipe("tvm", name, f"pass_ = {_TIR_ARGS[name]}")
    if name == "s_tir.ThreadSync":
        scope = _THREAD_SYNC_SCOPES[occurrence % 3]
        return PassRecipe("tvm", name, f"pass_ = tvm.s_tir.transform.ThreadSync({scope!r})",
                          (f"TVM's TIR pipeline runs ThreadSync for {_THREAD_SYNC_SCOPES}; "
                           f"occurrence {occurrence} is taken as scope {scope!r}",))
    prefix, _, base = name.rpartition(".")
    if not base.isidentifier() or base.startswith("_"):
        return _missing(name, "it is not the name of a public TVM pass constructor")
    import importlib

    for ns_name in _NAMESPACES.get(prefix, ()):
        ns = importlib.import_module(ns_name)
        ctor = getattr(ns, base, None)
        if ctor is None or not callable(ctor):
            continue
        try:
            with warnings.catch_warnings(), tgt:
                warnings.simplefilter("ignore")
                built = ctor()
        except TypeError as exc:
            return _missing(name, f"{ns_name}.{base} needs arguments passlab cannot know "
                                  f"({exc})")
        except Exception:  # noqa: BLE001 - any constructor failure means "cannot rebuild"
            continue
        if _tvm.is_pass(built) and _tvm.pass_name(built) == name:
            return PassRecipe("tvm", name, f"pass_ = {ns_name}.{base}()")
    return _missing(name, f"TVM has no public constructor named {base!r} for it (it may be "
                          "an internal pass, run only inside another pass)")


def _from_backend(step: Any, trace: Any, tgt: Any) -> PassRecipe | None:
    """The pass exactly as the target's default pipeline builds it."""
    pipe = trace.pipeline
    if getattr(pipe, "variant", None) != "fused" or step.stage not in _tvm.STAGES:
        return None
    backend = _tvm._backend_module_name(tgt)
    if backend is None:
        return None
    import importlib

    module = f"tvm.relax.backend.{backend}.pipeline"
    with warnings.catch_warnings(), tgt:
        warnings.simplefilter("ignore")
        names = [_tvm.pass_name(p) for p in
                 getattr(importlib.import_module(module), f"{step.stage}_passes")(tgt)]
    k = sum(1 for s in trace if s.index < step.index and s.name == step.name
            and s.stage == step.stage and s.on_main_chain and s.origin == "tvm")
    if names.count(step.name) <= k:
        return None
    return PassRecipe("tvm", step.name, (
        f"from tvm.relax.backend.{backend} import pipeline as backend_pipeline\n\n"
        f"# as TVM's default {step.stage} stage for this target builds it\n"
        f"pass_ = [p for p in backend_pipeline.{step.stage}_passes(target)\n"
        f"         if p.info.name == {py_repr(step.name)}][{k}]"))


def pass_recipe(step: Any, trace: Any = None) -> PassRecipe:
    """How a script rebuilds the pass of `step` (see `PassRecipe`)."""
    tgt = _tvm.target(target_of(trace))
    entry = _entry(step, trace)
    if entry is not None:
        saved = getattr(entry, "recipe", None)  # entries of a loaded trace carry one
        if saved is not None:
            return _from_file(saved, step, tgt)
        if entry.pass_ is not None and not _tvm.is_pass(entry.pass_):
            return function_recipe(entry.pass_, step.name)
    if trace is not None and step.on_main_chain and step.origin == "tvm":
        found = _from_backend(step, trace, tgt)
        if found is not None:
            return found
    recipe = _by_name(step.name, step.occurrence, tgt)
    if recipe.kind == "missing" and step.origin == "user" and entry is None:
        return _missing(step.name, "it is a user pass and the trace's pipeline does not hold "
                                   "it (give reproducer() the trace the step came from)")
    return recipe


def _from_file(saved: PassRecipe, step: Any, tgt: Any) -> PassRecipe:
    """A recipe read from a trace file. Only a user function's code (kinds "source" and
    "import") is kept, marked `saved`; any other kind is rebuilt here from the step's
    name, so that no other text of the file can reach a script as code."""
    if saved.kind in ("source", "import"):
        return PassRecipe(saved.kind, step.name, saved.code, saved.notes, saved.arity,
                          saved=True)
    if saved.kind == "missing":
        return _missing(step.name, saved.notes[0] if saved.notes else
                        "the trace file says it could not be carried")
    return _by_name(step.name, step.occurrence, tgt)


def target_of(trace: Any) -> str:
    """The target a trace was recorded for ("llvm" when it does not say)."""
    return (trace.target if trace is not None else None) or "llvm"


def _entry(step: Any, trace: Any) -> Any:
    if step.origin != "user" or trace is None or trace.pipeline is None:
        return None
    try:
        return trace.pipeline[step.name]
    except (KeyError, ValueError):
        return None


# ------------------------------------------------------------ carrying user functions
def function_recipe(fn: Any, name: str) -> PassRecipe:
    """A user's pass function as source (preferred: the file stands alone) or by
    import path; "missing" when neither works."""
    if not isinstance(fn, types.FunctionType):
        imp = _import_code(fn)
        if imp is not None:
            return PassRecipe("import", name, imp, (), positional_arity(fn))
        return _missing(name, f"it is a {type(fn).__name__} object, not a function, and "
                              "cannot be imported by name")
    code, notes = _source_code(fn)
    imp = _import_code(fn)
    if code is not None and not notes:
        return PassRecipe("source", name, code, (), positional_arity(fn))
    if imp is not None:
        why = "; ".join(notes)
        return PassRecipe("import", name, imp, (
            f"the pass is imported from {fn.__module__}, which must be importable where the "
            f"script runs: its source alone is not enough ({why})",), positional_arity(fn))
    if code is not None:
        return PassRecipe("source", name, code, notes, positional_arity(fn))
    return _missing(name, "; ".join(notes))


def _import_parts(obj: Any) -> tuple[str, str, Path | None] | None:
    """`(module, qualname, sys.path root)` when `module:qualname` resolves to `obj`."""
    mod_name, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(mod_name, str) or not isinstance(qual, str) or mod_name == "__main__" \
            or not _dotted(mod_name) or not _dotted(qual):
        return None
    module = sys.modules.get(mod_name)
    found: Any = module
    for part in qual.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        return None
    file = getattr(module, "__file__", None)
    if not file:
        return mod_name, qual, None
    depth = mod_name.count(".") + (Path(file).name == "__init__.py")
    return mod_name, qual, Path(file).resolve().parents[depth]


def _dotted(name: str) -> bool:
    """True for `a.b.c` made of identifiers: safe to write into an import line."""
    return all(part.isidentifier() and not keyword.iskeyword(part)
               for part in name.split("."))


def _import_lines(mod_name: str, qual: str, name: str) -> list[str]:
    first, _, rest = qual.partition(".")
    if not rest:
        return [f"from {mod_name} import {first}" + ("" if first == name else f" as {name}")]
    return [f"from {mod_name} import {first}", f"{name} = {qual}"]


def _import_code(obj: Any) -> str | None:
    """`user_pass` imported by path (with its sys.path root), or None."""
    parts = _import_parts(obj)
    if parts is None:
        return None
    mod_name, qual, root = parts
    lines = [] if root is None or _is_installed(root) else [
        "# the folder the pass's module was imported from",
        f"sys.path.insert(0, {py_repr(str(root))})"]
    return "\n".join(lines + _import_lines(mod_name, qual, "user_pass"))


def _is_installed(root: Path) -> bool:
    """True for the standard library and installed packages: importable anywhere."""
    import sysconfig

    paths = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "purelib", "platlib")}
    return root in paths or any(part in ("site-packages", "dist-packages") for part in root.parts)


def _source_code(fn: types.FunctionType) -> tuple[str | None, tuple[str, ...]]:
    """Source defining `user_pass` plus what it uses; notes for what is missing."""
    definition = _definition(fn)
    if definition is None:
        return None, (f"the source of {fn.__qualname__} is not available (defined in an "
                      "interactive prompt, or its file changed)",)
    header: dict[str, str] = {}
    helpers: dict[str, str] = {}
    notes: list[str] = []
    _carry_dependencies(fn, header, helpers, notes, depth=0, seen={id(fn)})
    alias = "" if fn.__name__ == "user_pass" else (
        "" if fn.__name__ == "<lambda>" else f"\n\n\nuser_pass = {fn.__name__}")
    parts = [*header.values(), *helpers.values(), definition + alias]
    return "\n\n".join(p for p in parts if p), tuple(notes)


def _definition(fn: types.FunctionType) -> str | None:
    try:
        raw = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    if fn.__name__ == "<lambda>":
        segment = _lambda_segment(raw, fn)
        return None if segment is None else f"user_pass = {segment}"
    try:
        tree = ast.parse(raw)
    except SyntaxError:
        return raw.rstrip()
    lines = raw.splitlines()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            # from the `def` line: decorators (e.g. a module_pass wrapper) are not the pass
            return textwrap.dedent("\n".join(lines[node.lineno - 1:node.end_lineno])).rstrip()
    return raw.rstrip()


def _lambda_segment(raw: str, fn: types.FunctionType) -> str | None:
    """The text of the lambda `fn` inside the source line(s) that hold it."""
    raw = raw[:4000]
    matches = []
    start = raw.find("lambda")
    while start != -1:
        for end in range(len(raw), start + 6, -1):
            text = raw[start:end].strip()
            try:
                node = ast.parse(text, mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Lambda):
                code = compile(text, "<lambda>", "eval").co_consts
                if any(isinstance(c, types.CodeType) and c.co_code == fn.__code__.co_code
                       and c.co_names == fn.__code__.co_names for c in code):
                    matches.append(text)
                break
        start = raw.find("lambda", start + 6)
    return matches[0] if len(set(matches)) == 1 else None


def _global_names(code: types.CodeType) -> list[str]:
    names = [i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return list(dict.fromkeys(names))


def _carry_dependencies(fn: types.FunctionType, header: dict[str, str], helpers: dict[str, str],
                        notes: list[str], depth: int, seen: set[int]) -> None:
    used: list[tuple[str, Any]] = []
    for name in _global_names(fn.__code__):
        if name in fn.__globals__:
            used.append((name, fn.__globals__[name]))
        elif not hasattr(builtins, name):
            notes.append(f"it uses the name {name!r}, which is not defined where it was written")
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            used.append((name, cell.cell_contents))
        except ValueError:
            notes.append(f"it uses the variable {name!r} of an enclosing function, unset then")
    for name, value in used:
        if name in header or name in helpers:
            continue
        line = _carry_value(name, value)
        if line is not None:
            header[name] = line
        elif (isinstance(value, (types.FunctionType, type)) and depth < 3
              and id(value) not in seen and _definition_of_helper(value) is not None):
            seen.add(id(value))
            helpers[name] = str(_definition_of_helper(value)) + (
                "" if value.__name__ == name else f"\n{name} = {value.__name__}")
            if isinstance(value, types.FunctionType):
                _carry_dependencies(value, header, helpers, notes, depth + 1, seen)
        else:
            notes.append(f"it uses {name!r} (a {type(value).__name__}), which the script "
                         "cannot carry")


def _definition_of_helper(obj: Any) -> str | None:
    if isinstance(obj, types.FunctionType):
        return None if obj.__name__ == "<lambda>" else _definition(obj)
    try:
        return textwrap.dedent(inspect.getsource(obj)).rstrip()
    except (OSError, TypeError):
        return None


def _carry_value(name: str, value: Any) -> str | None:
    """An import or assignment that rebinds `name` to `value` anywhere, or None."""
    if isinstance(value, types.ModuleType):
        full = value.__name__
        if not isinstance(full, str) or not _dotted(full):
            return None
        if full == name:
            return f"import {full}"
        parent, _, last = full.rpartition(".")
        if parent and last == name:
            return f"from {parent} import {name}"
        return f"import {full} as {name}"
    if isinstance(value, str):
        return f"{name} = {py_repr(value)}"
    if _is_literal(value) and '"""' not in repr(value):
        return f"{name} = {value!r}"
    parts = _import_parts(value)
    if parts is not None and (parts[2] is None or _is_installed(parts[2])):
        return "\n".join(_import_lines(parts[0], parts[1], name))
    return None


def _is_literal(value: Any) -> bool:
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        pass
    elif isinstance(value, (tuple, list, frozenset, set, dict)):
        items = value.items() if isinstance(value, dict) else ((v, None) for v in value)
        if not all(_is_literal(k) and _is_literal(v) for k, v in items):
            return False
    else:
        return False
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError):
        return False
