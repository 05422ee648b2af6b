"""Reproducers: one self-contained Python file that re-runs one recorded pass.

The file holds the pass's input module (`step.before`) and the single pass call, and
runs with plain `python` (TVM installed, passlab not needed). The module travels as
TVMScript when every string in it is a plain name (checked on the objects: TVM prints
names raw) and the printed script parses back to the same IR, else as TVM's JSON (zlib +
base64, in a string literal): large constants print as `metadata[...]` and some lowered
IR prints as TVMScript that does not parse.

Nothing read from the trace becomes code: the docstring and comments are fixed text,
names and messages are string constants written with `repr`, and a user pass's code
read from a trace file is only run when the reproducer is made with
`trust_pass_code=True`.

The pass is rebuilt from what the trace knows:

* TVM's own passes of a Relax stage come from the target's backend pipeline functions
  (`tvm.relax.backend.<backend>.pipeline.<stage>_passes(target)`), so arguments such as
  DLight's schedule rules are exactly what the build used; other TVM passes are found by
  their `PassInfo` name in `tvm.relax.transform`, `tvm.relax.backend`,
  `tvm.tirx.transform` or `tvm.s_tir.transform`.
* A user's function travels as its source (`inspect.getsource`, from a file or a
  notebook cell, with the imports, constants and helper functions it uses) or, when its
  source needs something the file cannot carry, by import path. Where neither works
  the file says so and stops before running anything.

What the file cannot know: the PassContext config and instruments of the original build
(it runs at `opt_level=3` so that the pass is not skipped).
"""

from __future__ import annotations

import ast
import base64
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passlab import _render, _tvm
from passlab._tvm.tensors import random_constants
from passlab.errors import first_line
from passlab.io.recipes import PassRecipe, function_recipe, pass_recipe, py_repr, target_of

__all__ = ["reproducer", "Reproducer", "PassRecipe", "pass_recipe", "function_recipe"]

#: Text of :class:`passlab.pipeline.UserPassError` for a pass returning a non-module;
#: the script raises the same message so that a reproducer fails like the build.
_NOT_A_MODULE = ("user pass {name!r} returned {type}, not an IRModule; a pass must return "
                 "the (possibly new) module, e.g. `return mod`.")


# -------------------------------------------------------------- carrying the module
#: Strings TVM's printer may print bare (names of functions, variables, buffers, blocks,
#: ops, attribute keys, target fields): a module whose strings all match travels as
#: TVMScript; anything else (a newline, a quote, a bracket) sends it as JSON.
_PLAIN = re.compile(r"[A-Za-z0-9_.+,-]*", re.ASCII)
#: ``StringImm`` values, which the printer always quotes: printable ASCII without quotes
#: or backslashes (the printer's own escaping is then never relied on).
_LITERAL = re.compile(r"[ !#-&(-\[\]-~]*", re.ASCII)
#: The names the TVMScript body uses, bound by import lines passlab writes itself.
_SCRIPT_IMPORTS = ("from tvm.script import ir as I", "from tvm.script import relax as R",
                   "from tvm.script import tirx as T")


def unsafe_string(mod: Any) -> str | None:
    """The first string inside `mod` that is not safe to print as TVMScript, or None.

    Checked on the objects (TVM's own serialisation of the module graph), never on the
    printed text: TVM prints names raw, so a function named `"f\\nimport os"` prints
    as two lines.
    """
    import json

    import tvm

    nodes = json.loads(tvm.ir.save_json(mod))["nodes"]
    literal_only: dict[int, bool] = {}
    inline: list[str] = []

    def visit(owner: str, key: Any, value: Any) -> None:
        if isinstance(value, str):
            inline.append(value)
        elif isinstance(value, int) and not isinstance(value, bool) \
                and 0 <= value < len(nodes) and nodes[value].get("type") == "ffi.String":
            ok = owner == "ir.StringImm" and key == "value"
            literal_only[value] = literal_only.get(value, True) and ok

    for node in nodes:
        data = node.get("data")
        kind = node.get("type", "")
        if kind in ("ffi.String", "ffi.Tensor"):  # a tensor's bytes (base64) never print
            continue
        if isinstance(data, dict):
            for key, value in data.items():
                visit(kind, key, value)
        elif isinstance(data, list):
            for value in data:
                visit(kind, None, value)
        else:
            visit(kind, None, data)
    for i, only_literal in literal_only.items():
        text = nodes[i].get("data")
        if not isinstance(text, str) or not (_LITERAL if only_literal else _PLAIN).fullmatch(text):
            return str(text)
    return next((t for t in inline if not _PLAIN.fullmatch(t)), None)


def _script_ast_ok(text: str) -> bool:
    """A second look, at the printed script's syntax tree (parsed, never run): one
    `class Module`, no imports, lambdas or dunder names."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef) \
            or tree.body[0].name != "Module":
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Lambda, ast.Global,
                             ast.Nonlocal, ast.NamedExpr)):
            return False
        name = (node.id if isinstance(node, ast.Name) else node.attr
                if isinstance(node, ast.Attribute) else "")
        if name.startswith("__"):
            return False
    return True


def literal(value: str, indent: str = "    ", width: int = 76) -> str:
    """`value` as Python source: `repr` of it, split into implicitly concatenated
    pieces inside parentheses when long. Every string passlab writes into a script goes
    through this (or `repr`)."""
    if len(py_repr(value)) <= width:
        return py_repr(value)
    step = max(8, width - len(indent) - 8)
    pieces, i = [], 0
    while i < len(value):
        cut = value.rfind(" ", i + 1, i + step) + 1 if len(value) - i > step else len(value)
        cut = cut if cut > i else min(len(value), i + step)
        pieces.append(value[i:cut])
        i = cut
    return "(\n" + "".join(f"{indent}{py_repr(p)}\n" for p in pieces) + ")"


def module_code(mod: Any, var: str = "mod", module: str = "auto") -> tuple[str, str, str]:
    """`(mode, code, why)`: Python that binds `var` to `mod`.

    `mode` is "tvmscript" when every string in the module is a plain name (checked on
    the objects) and the printed script parses back to a structurally equal module, else
    "json" (`why` says why not TVMScript). The JSON travels as one string literal
    (zlib + base64, written with `repr`), so no text from the IR becomes code.
    """
    why = "asked for" if module == "json" else ""
    if module != "json":
        text, why = _checked_script(mod)
        if text is not None:
            body = "\n".join(ln for ln in text.splitlines()
                             if not ln.startswith(("# from tvm", "# import tvm")))
            code = "\n".join(_SCRIPT_IMPORTS) + "\n\n" + body.strip() + f"\n\n\n{var} = Module"
            return "tvmscript", code, ""
    import tvm

    blob = base64.b64encode(zlib.compress(tvm.ir.save_json(mod).encode(), 9)).decode()
    chunks = "".join(f"    {blob[i:i + 72]!r}\n" for i in range(0, len(blob), 72))
    code = (f"import base64\nimport zlib\n\n_IR = (\n{chunks})\n"
            f"{var} = tvm.ir.load_json(zlib.decompress(base64.b64decode(_IR)).decode())")
    return "json", code, why


def _checked_script(mod: Any) -> tuple[str | None, str]:
    """`(printed TVMScript, "")` when `mod` can travel as TVMScript, else
    `(None, why not)`."""
    import tvm_ffi
    from tvm.script import from_source, ir, relax, tirx

    try:
        bad = unsafe_string(mod)
        if bad is not None:
            return None, (f"it holds a string that is not a plain name ({bad[:60]!r}), and "
                          "TVM prints names as they are")
        text = mod.script(name="Module")
        if "metadata[" in text:
            return None, "its constants print as metadata[...] references"
        if not _script_ast_ok(text):
            return None, "the printed TVMScript is not a single plain module class"
        # safe to parse: every name in it was checked above, and imports are passlab's own
        parsed = from_source(text, extra_vars={"I": ir, "R": relax, "T": tirx})
        if not tvm_ffi.structural_equal(parsed, mod, True):
            return None, "the printed TVMScript parses back to a different module"
    except Exception as exc:  # noqa: BLE001 - any printer or parser failure means "use JSON"
        return None, (f"the printed TVMScript does not parse back ({type(exc).__name__}: "
                      f"{first_line(exc)})")
    return text, ""


# ------------------------------------------------------------------- reproducer
@dataclass(frozen=True)
class Reproducer(_render.Displayable):
    """A self-contained script that re-runs one pass; `.write(path)` saves it.

    `expect` is "error" (the pass failed in the build: the script should fail with
    `error`) or "ok"; `mode` says how the module travels ("tvmscript" or "json").
    """

    text: str = field(repr=False)
    name: str
    label: str
    expect: str
    mode: str
    recipe: str
    error: str = ""
    notes: tuple[str, ...] = ()
    #: the kernel a code-generation failure is reproduced on ("" for the others)
    kernel: str = ""

    def write(self, path: str | Path | None = None) -> Path:
        """Write the script to `path` (a file, or a folder that gets `self.name`)."""
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


def reproducer(what: Any, trace: Any = None, *, module: str = "auto",
               trust_pass_code: bool = False) -> Reproducer:
    """A script that re-runs one recorded pass on its recorded input.

    Nothing from the trace becomes code in the script: the module travels as TVMScript
    only when every name in it is a plain identifier (else as TVM JSON in a string
    literal), and names and messages are written as string constants with `repr`.

    Parameters
    ----------
    what
        A `Step` (any pass, healthy or failed), a `Trace`
        or a `BuildError` (its failure: the failing pass, or codegen).
    trace
        The trace `what` came from, when `what` is a step: it gives the target and
        the user's pass functions. Default: the trace the step belongs to
        (`step.owner`), while that trace is alive.
    module
        How the input module travels: "auto" (TVMScript when it parses back to the
        same IR, else JSON), "json" (exact, down to variable names; not readable) or
        "tvmscript" (readable; falls back to JSON when the script does not parse back).
    trust_pass_code
        For a trace loaded from a file: write the user pass's code that the file holds
        into the script as code, to be run. By default it is written as a string for
        you to read, and the script stops before running anything (a trace file from
        someone else could hold any code).

    Examples
    --------
    >>> import passlab
    >>> from passlab.io import reproducer
    >>> b = passlab.build(passlab.models.mlp())
    >>> r = reproducer(b.trace.find("FuseOps"))
    >>> r.expect, r.recipe, r.mode
    ('ok', 'tvm', 'tvmscript')
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
    if getattr(what, "llvm", None) is not None:
        raise ValueError(
            f"{what.label} is one of LLVM's own passes, run inside TVM's LLVM code generator: "
            "TVM cannot run it alone. step.llvm holds the LLVM IR of each function it changed, "
            "before and after (passlab.diff(step)); passlab.build(model, llvm_passes=True) "
            "records the code generator's passes again")
    if trace is None:
        trace = getattr(what, "owner", None)
    return _step_reproducer(what, trace, module, trust_pass_code)


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


def _step_reproducer(step: Any, trace: Any, module: str, trust: bool) -> Reproducer:
    if step.before is None:
        raise ValueError(f"step #{step.index} {step.label} has no recorded input module")
    target = target_of(trace)
    run, recipe, via = _enclosing_recipe(step, trace, pass_recipe(step, trace))
    # a trace saved with weights=False holds empty tensors: draw seeded values instead
    weightless = trace is not None and getattr(trace, "_meta", {}).get("weights") is False
    before = random_constants(run.before) if weightless else run.before
    mode, mod_code, why = module_code(before, module=module)
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
    if weightless:
        notes.append("the trace was saved without its weights (trace.save(path, "
                     "weights=False)): the module's tensor constants are seeded random values "
                     "(seed 0) of their recorded shapes and data types")
    if recipe.saved and not trust:
        notes.append("the user pass's code came from a trace file: it is written as a string "
                     "(SAVED_PASS_CODE) and not run")
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
    about = {"PASS": step.label,
             "STEP": (f"step #{step.index} (stage {step.stage}, {step.kind}, {step.origin} "
                      f"pass); it {what} on the module below in the build")}
    text = _script(run, about, trace, target, recipe, mode, mod_code, expect, error, notes,
                   expected, trust)
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_"
                   for c in step.label)[:60]
    return Reproducer(text, f"reproduce_{step.index:03d}_{safe}.py", step.label, expect, mode,
                      recipe.kind, error, tuple(notes))


_DOC = '''"""A passlab reproducer: runs one recorded pass (or code generation) again, on the
module it received in the build.

Run it with plain Python (TVM installed; passlab is not needed): python <this file>
The constants below say which pass it is (PASS, STEP), what the build used and saw
(TARGET, RECORDED_WITH, ERROR), what this file expects (EXPECTED) and what it could not
carry or had to guess (NOTES). Names and messages from the trace appear only there.
"""'''


def _header(about: dict[str, str], trace: Any, target: str, expected: str, error: str,
            notes: list[str]) -> list[str]:
    """The fixed docstring, then every name and message as a `repr`-quoted constant."""
    versions = dict(trace._meta.get("versions", {})) if trace is not None else {}
    made = (f"apache-tvm {versions.get('apache-tvm', '?')}, apache-tvm-ffi "
            f"{versions.get('apache-tvm-ffi', '?')}") if versions else "unknown versions"
    consts = {**about, "TARGET": _tvm.target_spec(target), "RECORDED_WITH": made,
              "EXPECTED": expected, "ERROR": error}
    out = [_DOC, ""]
    for name, value in consts.items():
        out.append(f"{name} = {literal(value) if isinstance(value, str) else repr(value)}")
    out += ["NOTES = (", *(f"    {literal(n, indent='        ')}," for n in notes), ")", "", ""] \
        if notes else ["NOTES = ()", "", ""]
    return out


_RULE = 80


def _section(title: str) -> str:
    """A comment line; `title` is always passlab's own fixed text."""
    return f"# --- {title} ".ljust(_RULE, "-")


def _user_pass_code(recipe: PassRecipe, trust: bool) -> list[str]:
    call = ("user_pass(mod, tvm.transform.PassContext.current())" if recipe.arity >= 2
            else "user_pass(mod)")
    if recipe.saved and not trust:
        stop = ("this reproducer was made from a saved trace: the user pass's code "
                "(SAVED_PASS_CODE above) came from the trace file and is not run. Read it; if "
                "you trust it, make the reproducer again with "
                "passlab.reproducer(..., trust_pass_code=True).")
        code = [f"SAVED_PASS_CODE = {literal(recipe.code)}", f"raise SystemExit({py_repr(stop)})"]
        title = "the pass: the user's function as the trace file holds it (not run)"
    else:
        code = [recipe.code]
        title = "the pass: the user's function (PASS above)"
    return [_section(title), *code, "", "",
            "class UserPassError(TypeError):",
            '    """What passlab raises for a pass that returns something else than a module."""',
            "", "",
            "def run_user_pass(mod):",
            f"    out = {call}",
            "    if not isinstance(out, tvm.IRModule):",
            f"        raise UserPassError({_NOT_A_MODULE!r}.format(",
            f"            name={py_repr(recipe.name)}, type=type(out).__name__))",
            "    return out", "", ""]


def _script(step: Any, about: dict[str, str], trace: Any, target: str, recipe: PassRecipe,
            mode: str, mod_code: str, expect: str, error: str, notes: list[str],
            expected: tuple[int, str] | None, trust: bool) -> str:
    expect_line = (error.splitlines()[0] if error else "an error") if expect == "error" else (
        "the pass runs without error")
    user = recipe.kind in ("source", "import")
    out = [*_header(about, trace, target, expect_line, error, notes),
           "import sys", "", "import tvm", "from tvm import relax  # noqa: F401 - registers Relax",
           "", ""]
    # the user's code comes first, so that its own globals cannot shadow `target` or `mod`
    if user:
        out += _user_pass_code(recipe, trust)
    out += ["target = tvm.target.Target(TARGET)", "",
            _section("the input module: what the pass received (step.before)"), mod_code, "", ""]
    if not user:
        out += [_section("the pass"), recipe.code, "", ""]
    out += [_section("run it as the build did: under the target, opt_level=3 so it runs"),
            "with target, tvm.transform.PassContext(opt_level=3):",
            f"    out = {'run_user_pass(mod)' if user else 'pass_(mod)'}", ""]
    if expect == "error":
        msg = (f"pass {step.label!r} did not fail here: the failure in the build may depend on "
               "its PassContext (config, instruments) or on state outside the module")
        out += [f"print({py_repr(msg)}, file=sys.stderr)", "sys.exit(3)"]
    else:
        same = f"ok: {step.label} ran; its output matches the recorded module"
        differs = f"ok: {step.label} ran; its output differs from the recorded module"
        if mode == "tvmscript":
            differs += (" (TVMScript does not keep every name, e.g. fc2.bias becomes fc2_bias: "
                        "reproducer(..., module='json') compares exactly)")
        out += ["import hashlib", "", "import tvm_ffi", "",
                "# the recorded output: structural hash and SHA-256 of its printed TVMScript",
                f"RECORDED_OUTPUT = {expected!r}",
                "if tvm_ffi.structural_hash(out, True, True) == RECORDED_OUTPUT[0]:",
                f"    print({py_repr(same)})",
                "elif hashlib.sha256(out.script().encode()).hexdigest() == RECORDED_OUTPUT[1]:",
                f"    print({py_repr(same + ' (same TVMScript; some variables are distinct objects)')})",
                "else:",
                f"    print({py_repr(differs)})"]
    return "\n".join(out) + "\n"


def _codegen_reproducer(trace: Any, module: str) -> Reproducer:
    """Codegen failed after every pass: compile the kernel that fails alone, or rebuild
    from the Relax pipeline's output when no single kernel does."""
    from passlab.recording.codegen import codegen_culprit

    try:
        culprit = codegen_culprit(trace)
    except Exception:  # noqa: BLE001 - the whole-module reproducer still works
        culprit = None
    if culprit is not None:
        return _kernel_reproducer(trace, culprit, module)
    last = [s for s in trace if s.depth == 0 and s.level == "relax" and s.after is not None]
    if not last:
        raise ValueError("the build failed before any pass finished: there is no module to "
                         "reproduce the failure from")
    step = last[-1]
    target = target_of(trace)
    mode, mod_code, why = module_code(step.after, module=module)
    f = trace.failure
    error = f"{f.error_type}: {f.message}"
    notes = [f"the module travels as TVM JSON: {why}"] if why and why != "asked for" else []
    about = {"PASS": "codegen",
             "STEP": (f"code generation failed after every recorded pass finished; this "
                      f"builds the output of {step.label!r} (step #{step.index}) without a "
                      "Relax pipeline")}
    out = [*_header(about, trace, target, error.splitlines()[0] if error else "an error",
                    error, notes),
           "import sys", "", "import tvm", "from tvm import relax", "",
           "target = tvm.target.Target(TARGET)", "",
           _section("the module the Relax pipeline produced"), mod_code, "", "",
           _section("TIR pipeline and code generation, as relax.build runs them"),
           "executable = relax.build(mod, target, relax_pipeline=None)",
           "print('code generation did not fail here', file=sys.stderr)", "sys.exit(3)"]
    return Reproducer("\n".join(out) + "\n", "reproduce_codegen.py", "codegen", "error", mode,
                      "codegen", error, tuple(notes))


def _kernel_reproducer(trace: Any, culprit: Any, module: str) -> Reproducer:
    """Code generation fails on one kernel: the script holds that lowered function alone
    and runs the target's code generator on it, as `tvm.tirx.build` ends."""
    mode, mod_code, why = module_code(culprit.module, module=module)
    f = trace.failure
    error = f"{f.error_type}: {f.message}"
    notes = [f"the module travels as TVM JSON: {why}"] if why and why != "asked for" else []
    about = {"PASS": "codegen", "KERNEL": culprit.kernel, "FUNCTION": culprit.function,
             "STEP": (f"code generation failed after every recorded pass finished; this "
                      f"compiles the function {culprit.function!r} of kernel "
                      f"{culprit.kernel!r} alone, as the {culprit.stage} stage left it")}
    out = [*_header(about, trace, target_of(trace),
                    error.splitlines()[0] if error else "an error", error, notes),
           "import sys", "", "import tvm", "",
           _section("the kernel's lowered function, as the code generator received it"),
           mod_code, "", "",
           _section("the target's code generator, as tvm.tirx.build runs it"),
           "target = mod[FUNCTION].attrs['target']",
           "generate = tvm.get_global_func('target.build.' + target.kind.name)",
           "generate(mod, target)",
           "print('code generation did not fail here', file=sys.stderr)", "sys.exit(3)"]
    return Reproducer("\n".join(out) + "\n", "reproduce_codegen.py",
                      f"codegen of kernel {culprit.kernel!r}", "error", mode, "codegen", error,
                      tuple(notes), kernel=culprit.kernel)
