"""Reproducers: one self-contained Python file that re-runs one recorded pass.

The file holds the pass's input module (``step.before``) and the single pass call, and
runs with plain ``python`` (TVM installed, passlab not needed). The module travels as
TVMScript when the printed script parses back to the same IR, else as TVM's JSON
(zlib + base64): large constants print as ``metadata[...]`` and some lowered IR prints
as TVMScript that does not parse.

The pass is rebuilt from what the trace knows:

* TVM's own passes of a Relax stage come from the target's backend pipeline functions
  (``tvm.relax.backend.<backend>.pipeline.<stage>_passes(target)``), so arguments such as
  DLight's schedule rules are exactly what the build used; other TVM passes are found by
  their ``PassInfo`` name in ``tvm.relax.transform``, ``tvm.relax.backend``,
  ``tvm.tirx.transform`` or ``tvm.s_tir.transform``.
* A user's function travels as its source (``inspect.getsource``, from a file or a
  notebook cell, with the imports, constants and helper functions it uses) or, when its
  source needs something the file cannot carry, by import path. Where neither works
  the file says so and stops before running anything.

What the file cannot know: the PassContext config and instruments of the original build
(it runs at ``opt_level=3`` so that the pass is not skipped).
"""

from __future__ import annotations

import ast
import base64
import builtins
import dis
import inspect
import sys
import textwrap
import types
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _render, _tvm

__all__ = ["reproducer", "Reproducer", "PassRecipe", "pass_recipe", "function_recipe"]

#: Text of :class:`passlab.pipeline.UserPassError` for a pass returning a non-module;
#: the script raises the same message so that a reproducer fails like the build.
_NOT_A_MODULE = ("user pass {name!r} returned {type}, not an IRModule; a pass must return "
                 "the (possibly new) module, e.g. `return mod`.")


# ------------------------------------------------------------------------ recipes
@dataclass(frozen=True)
class PassRecipe:
    """How a script gets hold of one pass.

    ``code`` is Python that binds ``pass_`` (a TVM pass, ``kind`` "tvm") or
    ``user_pass`` (a function ``mod -> mod`` or ``(mod, ctx) -> mod``, ``kind``
    "source" or "import"). ``kind`` "missing" means the pass could not be carried;
    ``code`` then stops the script with a message saying why. ``notes`` say what the
    script could not carry.
    """

    kind: str
    name: str
    code: str
    notes: tuple[str, ...] = ()
    arity: int = 1

    def to_dict(self) -> dict[str, Any]:
        return dict(kind=self.kind, name=self.name, code=self.code, notes=list(self.notes),
                    arity=self.arity)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PassRecipe:
        return cls(str(d["kind"]), str(d["name"]), str(d["code"]),
                   tuple(str(n) for n in d.get("notes", ())), int(d.get("arity", 1)))


def _missing(name: str, why: str) -> PassRecipe:
    msg = f"passlab could not carry the pass {name!r}: {why}. Bind `pass_` (a TVM pass) here."
    return PassRecipe("missing", name, f"raise SystemExit({msg!r})", (why,))


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
            and s.stage == step.stage and s.kind == "pass" and s.origin == "tvm")
    if names.count(step.name) <= k:
        return None
    return PassRecipe("tvm", step.name, (
        f"from tvm.relax.backend.{backend} import pipeline as backend_pipeline\n\n"
        f"# as TVM's default {step.stage} stage for this target builds it\n"
        f"pass_ = [p for p in backend_pipeline.{step.stage}_passes(target)\n"
        f"         if p.info.name == {step.name!r}][{k}]"))


def pass_recipe(step: Any, trace: Any = None) -> PassRecipe:
    """How a script rebuilds the pass of ``step`` (see :class:`PassRecipe`)."""
    tgt = _tvm.target(_target_of(trace))
    entry = _entry(step, trace)
    if entry is not None:
        saved = getattr(entry, "recipe", None)  # entries of a loaded trace carry one
        if saved is not None:
            return saved
        if entry.pass_ is not None and not _tvm.is_pass(entry.pass_):
            return function_recipe(entry.pass_, step.name)
    if trace is not None and step.kind == "pass" and step.origin == "tvm":
        found = _from_backend(step, trace, tgt)
        if found is not None:
            return found
    recipe = _by_name(step.name, step.occurrence, tgt)
    if recipe.kind == "missing" and step.origin == "user" and entry is None:
        return _missing(step.name, "it is a user pass and the trace's pipeline does not hold "
                                   "it (give reproducer() the trace the step came from)")
    return recipe


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
            return PassRecipe("import", name, imp, (), _arity(fn))
        return _missing(name, f"it is a {type(fn).__name__} object, not a function, and "
                              "cannot be imported by name")
    code, notes = _source_code(fn)
    imp = _import_code(fn)
    if code is not None and not notes:
        return PassRecipe("source", name, code, (), _arity(fn))
    if imp is not None:
        why = "; ".join(notes)
        return PassRecipe("import", name, imp, (
            f"the pass is imported from {fn.__module__}, which must be importable where the "
            f"script runs: its source alone is not enough ({why})",), _arity(fn))
    if code is not None:
        return PassRecipe("source", name, code, notes, _arity(fn))
    return _missing(name, "; ".join(notes))


def _arity(fn: Any) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _import_parts(obj: Any) -> tuple[str, str, Path | None] | None:
    """``(module, qualname, sys.path root)`` when ``module:qualname`` resolves to ``obj``."""
    mod_name, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(mod_name, str) or not isinstance(qual, str) or mod_name == "__main__" \
            or "<" in qual:
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


def _import_lines(mod_name: str, qual: str, name: str) -> list[str]:
    first, _, rest = qual.partition(".")
    if not rest:
        return [f"from {mod_name} import {first}" + ("" if first == name else f" as {name}")]
    return [f"from {mod_name} import {first}", f"{name} = {qual}"]


def _import_code(obj: Any) -> str | None:
    """``user_pass`` imported by path (with its sys.path root), or None."""
    parts = _import_parts(obj)
    if parts is None:
        return None
    mod_name, qual, root = parts
    lines = [] if root is None or _is_installed(root) else [
        f"sys.path.insert(0, {str(root)!r})  # where {mod_name} was imported from"]
    return "\n".join(lines + _import_lines(mod_name, qual, "user_pass"))


def _is_installed(root: Path) -> bool:
    """True for the standard library and installed packages: importable anywhere."""
    import sysconfig

    paths = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "purelib", "platlib")}
    return root in paths or any(part in ("site-packages", "dist-packages") for part in root.parts)


def _source_code(fn: types.FunctionType) -> tuple[str | None, tuple[str, ...]]:
    """Source defining ``user_pass`` plus what it uses; notes for what is missing."""
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
    """The text of the lambda ``fn`` inside the source line(s) that hold it."""
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
            helpers[name] = _definition_of_helper(value) + (
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
    """An import or assignment that rebinds ``name`` to ``value`` anywhere, or None."""
    if isinstance(value, types.ModuleType):
        full = value.__name__
        if full == name:
            return f"import {full}"
        parent, _, last = full.rpartition(".")
        if parent and last == name:
            return f"from {parent} import {name}"
        return f"import {full} as {name}"
    if _is_literal(value):
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


# -------------------------------------------------------------- carrying the module
def module_code(mod: Any, var: str = "mod", module: str = "auto") -> tuple[str, str, str]:
    """``(mode, code, why)``: Python that binds ``var`` to ``mod``.

    ``mode`` is "tvmscript" when the printed script parses back to a structurally equal
    module, else "json" (``why`` says what went wrong with the script).
    """
    import tvm_ffi
    from tvm.script import from_source

    why = "asked for" if module == "json" else ""
    try:
        if module == "json":
            raise _UseJson
        text = mod.script()
        lines = text.splitlines()
        imports = [ln[2:] for ln in lines if ln.startswith(("# from tvm", "# import tvm"))]
        body = "\n".join(ln for ln in lines if not ln.startswith(("# from tvm", "# import tvm")))
        names: dict[str, Any] = {}
        exec("\n".join(imports), names)  # noqa: S102 - TVM's own printed import lines
        parsed = from_source(text, extra_vars=names)
        cls = next((ln.split()[1].split(":")[0].split("(")[0] for ln in lines
                    if ln.startswith("class ")), None)
        if cls is not None and tvm_ffi.structural_equal(parsed, mod, True):
            code = "\n".join(imports) + "\n\n" + body.strip() + f"\n\n\n{var} = {cls}"
            return "tvmscript", code, ""
        why = "the printed TVMScript parses back to a different module"
    except _UseJson:
        pass
    except Exception as exc:  # noqa: BLE001 - any printer or parser failure means "use JSON"
        why = f"the printed TVMScript does not parse back ({_first_line(exc)})"
    import tvm

    blob = base64.b64encode(zlib.compress(tvm.ir.save_json(mod).encode(), 9)).decode()
    chunks = "\n".join(blob[i:i + 100] for i in range(0, len(blob), 100))
    code = (f"import base64\nimport zlib\n\n_IR = \"\"\"\n{chunks}\n\"\"\"\n"
            f"{var} = tvm.ir.load_json(zlib.decompress(base64.b64decode(_IR)).decode())")
    return "json", code, why


class _UseJson(Exception):
    pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


# ------------------------------------------------------------------- reproducer
@dataclass(frozen=True)
class Reproducer:
    """A self-contained script that re-runs one pass; ``.write(path)`` saves it.

    ``expect`` is "error" (the pass failed in the build: the script should fail with
    ``error``) or "ok"; ``mode`` says how the module travels ("tvmscript" or "json").
    """

    text: str = field(repr=False)
    name: str
    label: str
    expect: str
    mode: str
    recipe: str
    error: str = ""
    notes: tuple[str, ...] = ()

    def write(self, path: str | Path | None = None) -> Path:
        """Write the script to ``path`` (a file, or a folder that gets ``self.name``)."""
        p = Path(path) if path is not None else Path(self.name)
        if p.is_dir():
            p = p / self.name
        p.write_text(self.text)
        return p

    def __str__(self) -> str:
        return self.text

    def to_text(self) -> str:
        return self.text

    def to_html(self) -> str:
        cap = f"reproducer for {self.label} ({self.expect}, module as {self.mode})"
        return (f'<div class="passlab-note">{_render.esc(cap)}</div>'
                f"<pre>{_render.esc(self.text)}</pre>")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return _render.mimebundle(self)


def reproducer(what: Any, trace: Any = None, *, module: str = "auto") -> Reproducer:
    """A script that re-runs one recorded pass on its recorded input.

    Parameters
    ----------
    what
        A :class:`~passlab.Step` (any pass, healthy or failed), a :class:`~passlab.Trace`
        or a :class:`~passlab.BuildError` (its failure: the failing pass, or codegen).
    trace
        The trace ``what`` came from, when ``what`` is a step: it gives the target and
        the user's pass functions.
    module
        How the input module travels: "auto" (TVMScript when it parses back to the
        same IR, else JSON), "json" (exact, down to variable names; not readable) or
        "tvmscript" (readable; falls back to JSON when the script does not parse back).

    Examples
    --------
    >>> import passlab
    >>> from passlab.reproducer import reproducer
    >>> b = passlab.build(passlab.models.mlp())
    >>> r = reproducer(b.trace.find("FuseOps"), b.trace)
    >>> r.expect, r.recipe
    ('ok', 'tvm')
    """
    if module not in ("auto", "json", "tvmscript"):
        raise ValueError(f"module must be 'auto', 'json' or 'tvmscript', not {module!r}")
    if hasattr(what, "trace") and hasattr(what, "failure"):  # a BuildError
        what = what.trace
    if _is_trace(what):
        trace = what
        failure = trace.failure
        if failure is None:
            raise ValueError("this trace did not fail; give the step to reproduce, e.g. "
                             "reproducer(trace.find('FuseOps'), trace)")
        if failure.step is None:
            return _codegen_reproducer(trace, module)
        what = failure.step
    if not hasattr(what, "before") or not hasattr(what, "origin"):
        raise TypeError(f"reproducer() takes a Step, Trace or BuildError, not "
                        f"{type(what).__name__}")
    return _step_reproducer(what, trace, module)


def _is_trace(obj: Any) -> bool:
    return hasattr(obj, "top_level") and hasattr(obj, "failure")


def _target_of(trace: Any) -> str:
    return (trace.target if trace is not None else None) or "llvm"


def _failure_for(step: Any, trace: Any) -> Any:
    f = None if trace is None else trace.failure
    return f if f is not None and f.step is not None and f.step.index == step.index else None


def _enclosing_recipe(step: Any, trace: Any, recipe: PassRecipe) -> tuple[Any, PassRecipe, str]:
    """For an inner pass TVM does not expose (e.g. FuseTIRInner), the nearest enclosing
    pass that can be rebuilt: running it on its input runs the inner pass too."""
    if recipe.kind != "missing" or trace is None or step.kind != "inner":
        return step, recipe, ""
    by_index = {s.index: s for s in trace}
    parent = by_index.get(step.parent)
    while parent is not None:
        found = pass_recipe(parent, trace)
        if found.kind != "missing" and parent.before is not None:
            return parent, found, (
                f"{step.label} cannot be rebuilt on its own ({recipe.notes[0]}); the script "
                f"runs the pass it ran inside, {parent.label} (step #{parent.index}), on that "
                "pass's input")
        if parent.kind != "inner":
            break
        parent = by_index.get(parent.parent)
    return step, recipe, ""


def _step_reproducer(step: Any, trace: Any, module: str) -> Reproducer:
    if step.before is None:
        raise ValueError(f"step #{step.index} {step.label} has no recorded input module")
    target = _target_of(trace)
    run, recipe, via = _enclosing_recipe(step, trace, pass_recipe(step, trace))
    mode, mod_code, why = module_code(run.before, module=module)
    failure = _failure_for(step, trace)
    expect = "error" if step.failed else "ok"
    error = ""
    if failure is not None:
        error = f"{failure.error_type}: {failure.message}"
    elif step.failed:
        error = "(the pass was still running when the build failed; the trace has no message)"
    notes = ([via] if via else []) + list(recipe.notes)
    if why and why != "asked for":
        notes.append(f"the module travels as TVM JSON: {why}")
    if trace is None:
        notes.append("no trace given: the target is taken to be 'llvm'")
    expected = None
    if run.after is not None:
        import hashlib

        import tvm_ffi

        try:
            printed = hashlib.sha256(run.after.script().encode()).hexdigest()
        except Exception:  # noqa: BLE001 - the structural hash alone then decides
            printed = ""
        expected = (tvm_ffi.structural_hash(run.after, True, True), printed)
    what = "failed" if expect == "error" else "ran"
    title = (f"Reproducer: pass {step.label!r} (step #{step.index}, stage {step.stage}, "
             f"{step.kind}, {step.origin} pass) {what} on the module below.")
    text = _script(run, title, trace, target, recipe, mode, mod_code, expect, error, notes,
                   expected)
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in step.label)
    return Reproducer(text, f"reproduce_{step.index:03d}_{safe}.py", step.label, expect, mode,
                      recipe.kind, error, tuple(notes))


def _header(title: str, trace: Any, target: str, expect_line: str, notes: list[str]) -> str:
    versions = dict(trace._meta.get("versions", {})) if trace is not None else {}
    made = (f"apache-tvm {versions.get('apache-tvm', '?')}, apache-tvm-ffi "
            f"{versions.get('apache-tvm-ffi', '?')}") if versions else "unknown versions"
    lines = [f'"""{title}', "", f"Recorded for target {target!r} with {made}.",
             f"Expected: {expect_line}", ""]
    if notes:
        lines += ["What this file could not carry or had to guess:"]
        lines += [f"  - {n}" for n in notes] + [""]
    lines += ["Written by passlab.reproducer(); run it with plain Python: python <this file>",
              '"""']
    return "\n".join(line.replace('"""', "'''") for line in lines)


_RULE = 80


def _section(title: str) -> str:
    return f"# --- {title} ".ljust(_RULE, "-")


def _user_pass_code(recipe: PassRecipe) -> list[str]:
    call = ("user_pass(mod, tvm.transform.PassContext.current())" if recipe.arity >= 2
            else "user_pass(mod)")
    return [_section(f"the pass: the user's {recipe.name!r}"), recipe.code, "", "",
            "class UserPassError(TypeError):",
            '    """What passlab raises for a pass that returns something else than a module."""',
            "", "",
            "def run_user_pass(mod):",
            f"    out = {call}",
            "    if not isinstance(out, tvm.IRModule):",
            f"        raise UserPassError({_NOT_A_MODULE!r}.format(",
            f"            name={recipe.name!r}, type=type(out).__name__))",
            "    return out", "", ""]


def _script(step: Any, title: str, trace: Any, target: str, recipe: PassRecipe, mode: str,
            mod_code: str, expect: str, error: str, notes: list[str],
            expected: tuple[int, str] | None) -> str:
    expect_line = (error.splitlines()[0] if error else "an error") if expect == "error" else (
        "the pass runs without error")
    user = recipe.kind in ("source", "import")
    out = [_header(title, trace, target, expect_line, notes), "",
           "import sys", "", "import tvm", "from tvm import relax  # noqa: F401 - registers Relax",
           "", ""]
    # the user's code comes first, so that its own globals cannot shadow `target` or `mod`
    if user:
        out += _user_pass_code(recipe)
    out += [f"target = tvm.target.Target({target!r})", "",
            _section("the input module: what the pass received (step.before)"), mod_code, "", ""]
    if not user:
        out += [_section("the pass"), recipe.code, "", ""]
    out += [_section("run it as the build did: under the target, opt_level=3 so it runs"),
            "with target, tvm.transform.PassContext(opt_level=3):",
            f"    out = {'run_user_pass(mod)' if user else 'pass_(mod)'}", ""]
    if expect == "error":
        msg = (f"pass {step.label!r} did not fail here: the failure in the build may depend on "
               "its PassContext (config, instruments) or on state outside the module")
        out += [f"print({msg!r}, file=sys.stderr)", "sys.exit(3)"]
    else:
        same = f"ok: {step.label} ran; its output matches the recorded module"
        differs = f"ok: {step.label} ran; its output differs from the recorded module"
        if mode == "tvmscript":
            differs += (" (TVMScript does not keep every name, e.g. fc2.bias becomes fc2_bias: "
                        "reproducer(..., module='json') compares exactly)")
        out += ["import hashlib", "", "import tvm_ffi", "",
                "# the recorded output: structural hash and SHA-256 of its printed TVMScript",
                f"EXPECTED = {expected!r}",
                "if tvm_ffi.structural_hash(out, True, True) == EXPECTED[0]:",
                f"    print({same!r})",
                "elif hashlib.sha256(out.script().encode()).hexdigest() == EXPECTED[1]:",
                f"    print({same + ' (same TVMScript; some variables are distinct objects)'!r})",
                "else:",
                f"    print({differs!r})"]
    return "\n".join(out) + "\n"


def _codegen_reproducer(trace: Any, module: str) -> Reproducer:
    """Codegen failed after every pass: rebuild from the Relax pipeline's output."""
    last = [s for s in trace if s.depth == 0 and s.stage != "tir" and s.after is not None]
    if not last:
        raise ValueError("the build failed before any pass finished: there is no module to "
                         "reproduce the failure from")
    step = last[-1]
    target = trace.target or "llvm"
    mode, mod_code, why = module_code(step.after, module=module)
    f = trace.failure
    error = f"{f.error_type}: {f.message}"
    notes = [f"the module travels as TVM JSON: {why}"] if why and why != "asked for" else []
    title = ("Reproducer: code generation failed after every recorded pass finished; this "
             f"builds the output of {step.label!r} (step #{step.index}) without a Relax pipeline.")
    out = [_header(title, trace, target, error.splitlines()[0], notes), "",
           "import sys", "", "import tvm", "from tvm import relax", "",
           f"target = tvm.target.Target({target!r})", "",
           _section("the module the Relax pipeline produced"), mod_code, "", "",
           _section("TIR pipeline and code generation, as relax.build runs them"),
           "executable = relax.build(mod, target, relax_pipeline=None)",
           "print('code generation did not fail here', file=sys.stderr)", "sys.exit(3)"]
    return Reproducer("\n".join(out) + "\n", "reproduce_codegen.py", "codegen", "error", mode,
                      "codegen", error, tuple(notes))
