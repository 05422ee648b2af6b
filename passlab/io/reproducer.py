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

import base64
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passlab import _render
from passlab.errors import first_line
from passlab.io.recipes import PassRecipe, function_recipe, pass_recipe, target_of

__all__ = ["reproducer", "Reproducer", "PassRecipe", "pass_recipe", "function_recipe"]

#: Text of :class:`passlab.pipeline.UserPassError` for a pass returning a non-module;
#: the script raises the same message so that a reproducer fails like the build.
_NOT_A_MODULE = ("user pass {name!r} returned {type}, not an IRModule; a pass must return "
                 "the (possibly new) module, e.g. `return mod`.")


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
        why = f"the printed TVMScript does not parse back ({type(exc).__name__}: {first_line(exc)})"
    import tvm

    blob = base64.b64encode(zlib.compress(tvm.ir.save_json(mod).encode(), 9)).decode()
    chunks = "\n".join(blob[i:i + 100] for i in range(0, len(blob), 100))
    code = (f"import base64\nimport zlib\n\n_IR = \"\"\"\n{chunks}\n\"\"\"\n"
            f"{var} = tvm.ir.load_json(zlib.decompress(base64.b64decode(_IR)).decode())")
    return "json", code, why


class _UseJson(Exception):
    pass


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
    >>> from passlab.io import reproducer
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
    target = target_of(trace)
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
