"""The Relax pipeline as data: stages of passes that a user can edit, then build.

TVM keeps its per-target pipelines as lists of passes per stage
(``tvm.relax.backend.<target>.pipeline``: library_dispatch, legalize, dataflow_lower,
finalize). :class:`Pipeline` holds those lists as immutable data, lets a user insert their
own passes before or after a named pass or at a stage boundary, remove, replace or disable
passes, and hands TVM one module pass, so that TVM's TIR pipeline and codegen still run
(and are recorded) unchanged.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from passlab import _render, _tvm
from passlab.errors import UserPassError, unknown

__all__ = ["Pipeline", "PassEntry", "Stage", "UserPassError"]

#: Name of the single module pass a Pipeline hands to ``relax.build``.
ROOT_NAME = "passlab.pipeline"

#: Conveniences served by a higher layer (``with_backend``: :mod:`passlab.backend`),
#: registered by ``passlab/__init__.py`` so that this module never imports upwards.
_UPPER: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class PassEntry:
    """One pass of a pipeline.

    ``origin`` is "tvm" for TVM's own passes and "user" for inserted or replacing ones;
    ``note`` says what the user did ("inserted after FuseTIR", "replaces FoldConstant").
    """

    name: str
    pass_: Any
    origin: str = "tvm"
    enabled: bool = True
    note: str = ""

    def to_pass(self, on_error: Callable | None = None):
        """The TVM pass to run: TVM passes as they are, plain functions wrapped in a
        module pass that checks their result.

        ``on_error(name, exc)`` sees a plain function's exception before TVM turns it
        into a RuntimeError, so that a build can hand the user the original one.
        """
        if _tvm.is_pass(self.pass_):
            return self.pass_
        return _tvm.module_pass(_checked(self.pass_, self.name, on_error), self.name)


@dataclass(frozen=True)
class Stage:
    name: str
    passes: tuple[PassEntry, ...]


def _checked(fn: Callable, name: str, on_error: Callable | None) -> Callable:
    takes_ctx = positional_arity(fn) >= 2

    def run(mod, ctx):
        try:
            out = fn(mod, ctx) if takes_ctx else fn(mod)
            if not _tvm.is_module(out):
                raise UserPassError(
                    f"user pass {name!r} returned {type(out).__name__}, not an IRModule; "
                    "a pass must return the (possibly new) module, e.g. `return mod`."
                )
        except BaseException as exc:
            if on_error is not None:
                on_error(name, exc)
            raise
        return out

    return run


def positional_arity(fn: Callable) -> int:
    """How many positional parameters ``fn`` takes (1 when it cannot be told): a user
    pass taking two is called as ``fn(mod, ctx)``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _user_entry(p: Any, name: str | None, note: str) -> PassEntry:
    if _tvm.is_pass(p):
        if name is not None and name != _tvm.pass_name(p):
            raise ValueError(
                f"a TVM pass keeps its own name: TVM records this one as "
                f"{_tvm.pass_name(p)!r}, so name={name!r} would not match its steps; drop "
                "name=, or build the pass with that name (tvm.transform.module_pass(..., "
                "name=...))")
        return PassEntry(_tvm.pass_name(p), p, "user", True, note)
    if callable(p):
        n = name or getattr(p, "__name__", None) or type(p).__name__
        if n == "<lambda>":
            n = "user_lambda"
        return PassEntry(n, p, "user", True, note)
    raise TypeError(
        f"a user pass must be a TVM pass (tvm.transform.Pass) or a function "
        f"IRModule -> IRModule, not {type(p).__name__}"
    )


@dataclass(frozen=True)
class Pipeline:
    """TVM's Relax pipeline for a target, as stages of passes, plus the user's edits.

    Every edit returns a new Pipeline; the original is unchanged.

    Examples
    --------
    >>> import passlab
    >>> pipe = passlab.Pipeline.default("llvm")
    >>> pipe = pipe.insert(lambda mod: mod, after="legalize", name="inspect")
    >>> [e.name for e in pipe.stage("legalize").passes][-2:]
    ['FuseTIR', 'inspect']
    """

    target: str
    variant: str
    stages: tuple[Stage, ...]

    # ------------------------------------------------------------------ construction
    @classmethod
    def default(cls, target: Any = "llvm", variant: str = "fused") -> Pipeline:
        """TVM's default Relax pipeline for ``target``.

        ``variant="fused"`` (default) is ``relax.get_default_pipeline(target)``, with
        FuseOps and FuseTIR; ``variant="build"`` is what ``relax.build``/``tvm.compile``
        run on CPU when given no pipeline (``default_build_pipeline``: no fusion).
        ``Pipeline.relax_build_variant(target)`` says which one ``relax.build`` uses.
        """
        tgt = _tvm.target(target)
        stages = tuple(
            Stage(name, tuple(PassEntry(_tvm.pass_name(p), p) for p in passes))
            for name, passes in _tvm.stage_passes(tgt, variant)
        )
        return cls(_tvm.target_label(target, tgt), variant, stages)

    @staticmethod
    def relax_build_variant(target: Any = "llvm") -> str:
        """The variant that ``relax.build(mod, target)`` runs when given no pipeline."""
        return _tvm.relax_build_variant(_tvm.target(target))

    # ----------------------------------------------------------------------- lookup
    def __iter__(self) -> Iterator[PassEntry]:
        for stage in self.stages:
            yield from stage.passes

    def __len__(self) -> int:
        return sum(len(s.passes) for s in self.stages)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self)

    @property
    def stage_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise unknown("stage", name, self.stage_names)

    def _locate(self, name: str) -> tuple[int, int]:
        """(stage index, pass index) of the first pass called ``name``."""
        for si, stage in enumerate(self.stages):
            for pi, entry in enumerate(stage.passes):
                if entry.name == name:
                    return si, pi
        raise unknown(
            "pass or stage", name, self.names + self.stage_names,
            extra=f"(pipeline for {self.target}, variant {self.variant!r})",
        )

    def __getitem__(self, name: str) -> PassEntry:
        si, pi = self._locate(name)
        return self.stages[si].passes[pi]

    # ------------------------------------------------------------------------- edits
    def _with(self, si: int, passes: tuple[PassEntry, ...]) -> Pipeline:
        stages = list(self.stages)
        stages[si] = dataclasses.replace(stages[si], passes=passes)
        return dataclasses.replace(self, stages=tuple(stages))

    def insert(
        self,
        pass_: Any,
        *,
        before: str | None = None,
        after: str | None = None,
        name: str | None = None,
    ) -> Pipeline:
        """Insert a user pass before or after a pass or a stage.

        ``after="legalize"`` puts it at the end of the legalize stage: after the default
        graph-level optimizations and fusion, before dataflow lowering and memory
        planning. ``before="FuseOps"`` puts it just before FuseOps. ``pass_`` is a TVM
        pass or a function ``IRModule -> IRModule``.
        """
        if (before is None) == (after is None):
            raise ValueError(
                "insert() needs exactly one of before= or after=, naming a pass "
                f"(e.g. 'FuseTIR') or a stage ({', '.join(self.stage_names)})"
            )
        anchor = before if before is not None else after
        where = "before" if before is not None else "after"
        entry = _user_entry(pass_, name, f"inserted {where} {anchor}")
        if anchor in self.stage_names and anchor not in self.names:
            si = self.stage_names.index(anchor)
            old = self.stages[si].passes
            return self._with(si, (entry,) + old if before else old + (entry,))
        si, pi = self._locate(anchor)
        old = self.stages[si].passes
        at = pi if before is not None else pi + 1
        return self._with(si, old[:at] + (entry,) + old[at:])

    def remove(self, name: str) -> Pipeline:
        """Drop the first pass called ``name``."""
        si, pi = self._locate(name)
        old = self.stages[si].passes
        return self._with(si, old[:pi] + old[pi + 1 :])

    def replace(self, name: str, pass_: Any, *, new_name: str | None = None) -> Pipeline:
        """Run ``pass_`` in place of the first pass called ``name``."""
        si, pi = self._locate(name)
        old = self.stages[si].passes
        entry = _user_entry(pass_, new_name, f"replaces {name}")
        return self._with(si, old[:pi] + (entry,) + old[pi + 1 :])

    def disable(self, name: str) -> Pipeline:
        """Keep the pass in the pipeline, shown as disabled, but do not run it."""
        return self._set_enabled(name, False)

    def enable(self, name: str) -> Pipeline:
        return self._set_enabled(name, True)

    def _set_enabled(self, name: str, enabled: bool) -> Pipeline:
        si, pi = self._locate(name)
        old = self.stages[si].passes
        entry = dataclasses.replace(old[pi], enabled=enabled)
        return self._with(si, old[:pi] + (entry,) + old[pi + 1 :])

    def with_backend(self, backend: Any) -> Pipeline:
        """This pipeline with an accelerator backend applied: partitioning by its
        patterns and its passes at their phases (see :class:`passlab.Backend`)."""
        return _UPPER["with_backend"](self, backend)

    # ------------------------------------------------------------------------- build
    def to_pass(self, on_error: Callable | None = None):
        """One module pass running every enabled pass, stage by stage, under the target.

        Each stage is a ``Sequential`` named after the stage, so recorded traces show
        the stage boundaries.
        """
        tgt = _tvm.target(self.target)
        stages = [
            _tvm.sequential([e.to_pass(on_error) for e in s.passes if e.enabled], s.name)
            for s in self.stages
        ]

        def run(mod, _ctx):
            with tgt:
                for stage in stages:
                    mod = stage(mod)
            return mod

        return _tvm.module_pass(run, ROOT_NAME)

    @property
    def user_passes(self) -> tuple[PassEntry, ...]:
        return tuple(e for e in self if e.origin == "user")

    @property
    def edited(self) -> bool:
        """True when the user inserted, replaced or disabled anything."""
        return any(e.origin == "user" or not e.enabled for e in self)

    # ------------------------------------------------------------------------ views
    def rows(self) -> list[dict[str, Any]]:
        out, i = [], 0
        for stage in self.stages:
            for entry in stage.passes:
                out.append(
                    dict(index=i, stage=stage.name, name=entry.name, origin=entry.origin,
                         enabled=entry.enabled, note=entry.note)
                )
                i += 1
        return out

    def to_dataframe(self):
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("index")

    def _table(self) -> tuple[list[str], list[list[str]], list[str]]:
        header = ["#", "stage", "pass", ""]
        body, classes = [], []
        for r in self.rows():
            mark = "" if r["enabled"] else "disabled"
            if r["origin"] == "user":
                mark = (mark + " " if mark else "") + f"+ user: {r['note']}"
            body.append([str(r["index"]), r["stage"], r["name"], mark])
            classes.append("user" if r["origin"] == "user" else ("off" if not r["enabled"] else ""))
        return header, body, classes

    def to_text(self) -> str:
        header, body, _ = self._table()
        title = f"Pipeline for {self.target} (variant {self.variant!r}), {len(self)} passes"
        return title + "\n" + _render.text_table(header, body)

    def to_html(self) -> str:
        header, body, classes = self._table()
        title = f"Pipeline for {self.target} (variant {self.variant!r}), {len(self)} passes"
        return _render.html_table(header, body, classes, caption=title)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return _render.mimebundle(self)

    def __repr__(self) -> str:
        n_user = len(self.user_passes)
        return (
            f"<Pipeline {self.target!r} variant={self.variant!r}: {len(self)} passes in "
            f"{len(self.stages)} stages, {n_user} user pass{'es' if n_user != 1 else ''}>"
        )

    def __str__(self) -> str:
        return self.to_text()
