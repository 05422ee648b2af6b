"""Invariant checks over a recorded build: which pass first broke a rule.

A check is a callable `(step) -> str | None`: None when the module after the step is
fine, else a sentence saying what is wrong. `run_checks` applies each check to
the main chain of a trace (`kind == "pass"`, finished steps), in order, and reports
the first step that violates it.

Checks run after the build, on the recorded snapshots, rather than inside it as a second
PassInstrument: they cost nothing while TVM runs, cannot break or reorder a build (an
instrument that raises aborts the build, and one raising in `enter_pass_ctx` drops
every instrument), work on loaded and failed traces alike, and see exactly the modules
the trace shows. What only TVM can see while a pass runs, a pass that mutates its input
in place, is left to TVM itself: `immutable_modules` turns on
`testing.immutable_module`, which makes such a pass fail.

`run_checks` always checks well-formedness after the user's own passes
(`step.origin == "user"`): TVM's passes trust their input, so an ill-formed module
from a user pass usually fails much later, somewhere else (often in code generation).
A check that already fails on a user pass's input, with the same message, was broken by
an earlier pass, not by the user's: it is reported once as pre-existing (`Violation.since` names the pass
after which it first fails), and only a violation the user pass brings is its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab.errors import CheckError, unknown
from passlab.pipeline import positional_arity

__all__ = ["Check", "Violation", "run_checks", "well_formed", "no_ops_after", "predicate",
           "immutable_modules", "CheckError"]


@dataclass(frozen=True)
class Check:
    """A named rule `fn(step) -> str | None` over the main chain of a trace.

    `start` names the pass from which the rule holds (inclusive; None: from the first
    pass); `user_only` restricts it to the user's passes; `config` is PassContext
    config a build must set for the rule (see `immutable_modules`).
    """

    name: str
    fn: Callable[[Any], str | None] = field(repr=False)
    start: str | None = None
    user_only: bool = False
    config: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, step: Any) -> str | None:
        return self.fn(step)


@dataclass(frozen=True)
class Violation(_render.Displayable):
    """The first step after which `check` does not hold, and why.

    `preexisting` is True when the check already failed, with the same message, on
    that (user) step's input:
    `since` is then the main-chain step after which it first fails (None when that is
    not known: e.g. it fails on the build's input itself), and the step is not to blame.
    """

    check: str
    step: Any = field(repr=False)
    message: str
    preexisting: bool = False
    since: Any = field(default=None, repr=False)

    def to_text(self) -> str:
        s = self.step
        who = "user pass" if s.origin == "user" else "pass"
        if self.preexisting:
            where = ("on the module this pass receives" if self.since is None else
                     f"after pass {self.since.label!r} (step #{self.since.index}, stage "
                     f"{self.since.stage})")
            return (f"check {self.check!r} already fails before {who} {s.label!r} (step "
                    f"#{s.index}), not because of it: it first fails {where}: {self.message}")
        return (f"check {self.check!r} fails after {who} {s.label!r} (step #{s.index}, stage "
                f"{s.stage}): {self.message}")

    def to_html(self) -> str:
        return f'<div class="passlab-error">{_render.esc(self.to_text())}</div>'


def as_check(obj: Any) -> Check:
    """A `Check` from a Check or a plain callable `(step) -> str | None`."""
    if isinstance(obj, Check):
        return obj
    if callable(obj):
        return Check(getattr(obj, "__name__", None) or type(obj).__name__, obj)
    raise TypeError(f"a check is a passlab.checks.Check or a function (step) -> str | None, "
                    f"not {type(obj).__name__}")


def run_checks(trace: Any, checks: Iterable[Any] = (), *, user_passes: bool = True
               ) -> tuple[Violation, ...]:
    """The first violating step of each check, in the order the checks were given.

    Only finished main-chain steps are checked. With `user_passes` (default), a
    well-formedness check also runs after every user pass unless `checks` already
    holds `well_formed`.

    Examples
    --------
    >>> import passlab
    >>> from passlab.recording.checks import run_checks, well_formed, no_ops_after
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> run_checks(trace, [well_formed(), no_ops_after("relax.nn.", after="LegalizeOps")])
    ()
    """
    all_checks = [as_check(c) for c in checks]
    if user_passes and not any(c.name == "well_formed" for c in all_checks):
        all_checks.append(dataclasses.replace(well_formed(), name="well_formed (user passes)",
                                              user_only=True))
    main = [s for s in trace if s.on_main_chain and s.after is not None and not s.failed]
    out = []
    for check in all_checks:
        begin: int | None = 0
        if check.start is not None:
            begin = next((i for i, s in enumerate(main) if s.name == check.start), None)
            if begin is None:
                if trace.failure is None:
                    raise unknown("pass", check.start, [s.name for s in main],
                                  extra=f"(check {check.name!r} starts after it, but the "
                                        "trace's main chain does not run it)")
                continue  # the build failed before reaching it: nothing to check
        old: Violation | None = None  # reported once, however many user passes follow
        for k in range(begin or 0, len(main)):
            s = main[k]
            if check.user_only and s.origin != "user":
                continue
            message = _apply(check, s)
            if not message:
                continue
            if check.user_only and _apply(check, _Input(s)) == message:
                if old is None:
                    old = Violation(check.name, s, message, preexisting=True,
                                    since=_first_failing(check, main, k))
                    out.append(old)
                continue  # the user pass did not break it; a later one still may
            out.append(Violation(check.name, s, message))
            break
    return tuple(out)


def _apply(check: Check, step: Any) -> str | None:
    try:
        message = check(step)
    except Exception as exc:  # noqa: BLE001 - a check that crashes is a finding too
        message = f"the check itself raised {type(exc).__name__}: {exc}"
    return str(message) if message else None


class _Input:
    """A step seen from its input: `after` is the step's `before` module, so that any
    check (a function of a step) can be asked whether it held before the step ran."""

    def __init__(self, step: Any):
        self._step = step

    @property
    def after(self) -> Any:
        return self._step.before

    def __getattr__(self, name: str) -> Any:
        return getattr(self._step, name)


def _first_failing(check: Check, main: list[Any], k: int) -> Any:
    """The earliest step of the run of main-chain steps before `main[k]` after which
    `check` fails (None when it fails on the build's input already)."""
    first = None
    for j in range(k - 1, -1, -1):
        if not _apply(check, main[j]):
            return first
        first = main[j]
    return None if first is None or _apply(check, _Input(first)) else first


# -------------------------------------------------------------------- the checks
def _error_text(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__


def _relax_module_problem(mod: Any) -> str | None:
    relax = _tvm.relax()
    try:
        relax.analysis.well_formed(mod)
    except Exception as exc:  # TVM raises ValueError/InternalError with the first problem
        return _error_text(exc)
    for name, func in _tvm.functions(mod).items():
        if _tvm.is_relax_function(func) and func.ret_ty is not None:
            # well_formed does not compare a function's declared return type with its body
            res = relax.analysis.type_base_check(func.ret_ty, func.body.ty)
            if res == relax.analysis.BaseCheckResult.FAIL_L0:
                return (f"function {name} declares return type {func.ret_ty} but its body "
                        f"has type {func.body.ty}")
    return None


def _prim_func_problem(func: Any) -> str | None:
    import tvm

    try:
        tvm.s_tir.analysis.verify_well_formed(func, True)
    except Exception as exc:  # noqa: BLE001
        return _error_text(exc)
    return None


def well_formed() -> Check:
    """TVM's well-formedness rules after each pass.

    Relax: `tvm.relax.analysis.well_formed` on the whole module (a call to a global
    function needs the module) plus a return-type check; TIR: S-TIR's
    `verify_well_formed` on every PrimFunc. Results are cached per module and per
    function object, so a trace's shared snapshots are checked once.
    """
    modules = _tvm.ObjectCache(_relax_module_problem)
    prims = _tvm.ObjectCache(_prim_func_problem)

    def check(step: Any) -> str | None:
        mod = step.after
        if _tvm.has_relax_function(mod):
            problem = modules(mod)
            if problem:
                return problem
        for name, func in _tvm.functions(mod).items():
            if _tvm.is_prim_func(func):
                problem = prims(func)
                if problem:
                    return f"PrimFunc {name}: {problem}"
        return None

    return Check("well_formed", check)


def _ops_in(func: Any) -> tuple[str, ...]:
    relax = _tvm.relax()
    import tvm

    found: dict[str, None] = {}

    def visit(expr: Any) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            found[expr.op.name] = None

    relax.analysis.post_order_visit(func.body, visit)
    return tuple(found)


def no_ops_after(prefix: str = "relax.nn.", after: str = "LegalizeOps") -> Check:
    """No Relax operator whose name starts with `prefix` in the module produced by the
    pass `after` or by any later pass ("no high-level ops after LegalizeOps").

    Operator names are TVM's (`relax.nn.conv2d`, `relax.matmul`); a broad prefix such
    as `"relax."` also matches the lowering ops that stay (`relax.call_tir`).
    """
    ops = _tvm.ObjectCache(_ops_in)

    def check(step: Any) -> str | None:
        for name, func in _tvm.functions(step.after).items():
            if _tvm.is_relax_function(func):
                bad = [op for op in ops(func) if op.startswith(prefix)]
                if bad:
                    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
                    return f"function {name} still calls {bad[0]}{more} after {after}"
        return None

    return Check(f"no {prefix}* ops after {after}", check, start=after)


def predicate(fn: Callable[..., Any], name: str | None = None, *, after: str | None = None,
              on: str = "module") -> Check:
    """A check from a user function that says whether a rule holds after each pass.

    `fn(mod)` (`on="module"`, the module after the pass; `fn(mod, step)` works too)
    or `fn(step)` (`on="step"`, e.g. a `passlab.research.predicates` predicate)
    returns True or None when the rule holds, False or a message when it does not.
    `after` limits it to that pass and later ones.

    Examples
    --------
    >>> import passlab
    >>> from passlab.recording.checks import predicate, run_checks
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> small = predicate(lambda mod: len(mod.functions) < 20, "under 20 functions")
    >>> run_checks(trace, [small])
    ()
    """
    if on not in ("module", "step"):
        raise ValueError(f"on must be 'module' or 'step', not {on!r}")
    label = name or getattr(fn, "name", None) or getattr(fn, "__name__", None) or "predicate"
    takes_step = on == "module" and positional_arity(fn) >= 2

    def check(step: Any) -> str | None:
        if on == "step":
            res = fn(step)
        else:
            res = fn(step.after, step) if takes_step else fn(step.after)
        if res is None or res is True:
            return None
        if res is False:
            return f"{label} is false after {step.label}"
        return str(res)

    return Check(label, check, start=after)


def immutable_modules() -> Check:
    """No pass may modify the module it receives in place.

    TVM enforces this itself during the build (PassContext config
    `testing.immutable_module`): a pass that mutates its input, e.g. with
    `mod.update_func`, fails with `Immutable module has been modified in pass: NAME`,
    and the build's error names it. Without this check such a pass also rewrites the
    recorded `before` of its own step. After the build there is nothing left to check.
    """
    return Check("immutable_modules", lambda step: None,
                 config={"testing.immutable_module": True})


def context_config(checks: Iterable[Any]) -> dict[str, Any]:
    """PassContext config the given checks need during the build."""
    out: dict[str, Any] = {}
    for c in checks:
        out.update(as_check(c).config)
    return out
