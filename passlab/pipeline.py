"""The pipeline as data: Relax and TIR stages of passes that a user can edit, then build.

TVM keeps its per-target pipelines as lists of passes per stage
(`tvm.relax.backend.<target>.pipeline`: library_dispatch, legalize, dataflow_lower,
finalize), and its TIR pipeline as a registered factory (stages here: s_tir, tirx,
host_finalize, device_finalize, plus codegen for the user's source emitters).
`Pipeline` holds those lists as immutable data, lets a user insert their own
passes before or after a named pass or at a stage boundary, remove, replace or disable
passes, and hands TVM one module pass for the Relax stages (`to_pass`) and a TIR
pipeline registered under a fresh name for each build (`to_tir`).

Edits by position (`Edit`, `Pipeline.apply_edit`) are how the Explorer's Edit
pane changes a pipeline: positions index `list(pipeline)` because names repeat (the TIR
pipeline runs `s_tir.ThreadSync` three times).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab._tvm import llvm as _llvm
from passlab._tvm import tir as _tir
from passlab._tvm.passinfo import pass_constructors
from passlab.errors import LlvmOptionError, UserPassError, unknown

__all__ = ["EDIT_ACTIONS", "Edit", "Pipeline", "PassEntry", "Stage", "UserPassError",
           "known_passes"]

#: Name of the single module pass a Pipeline hands to ``relax.build``.
ROOT_NAME = "passlab.pipeline"

#: Conveniences served by a higher layer (``with_backend``: :mod:`passlab.backend`),
#: registered by ``passlab/__init__.py`` so that this module never imports upwards.
_UPPER: dict[str, Callable[..., Any]] = {}


#: What an :class:`Edit` can do to the pass at its position.
EDIT_ACTIONS = ("disable", "enable", "remove", "up", "down", "insert")


def known_passes() -> tuple[str, ...]:
    """Names of the TVM passes an edit can insert ("FoldConstant", "tirx.VectorizeLoop"):
    the constructors of `tvm.relax.transform`, `tvm.tirx.transform` and
    `tvm.s_tir.transform` that need no arguments."""
    return tuple(pass_constructors())


@dataclass(frozen=True)
class Edit:
    """One pending change: `action` (see `EDIT_ACTIONS`) on the pass at
    `position` of `list(pipeline)`; an insert puts pass `name` `where`
    ("before"/"after") it. `Pipeline.apply_edit` applies it."""

    action: str
    position: int
    name: str = ""
    where: str = "after"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Edit:
        """An edit from the front end's JSON, e.g. `{"action": "disable", "position": 9}`."""
        extra = set(d) - {"action", "position", "name", "where"}
        if extra or not isinstance(d.get("position"), int):
            raise ValueError(f"an edit is {{'action': str, 'position': int, 'name': str, "
                             f"'where': 'before' or 'after'}}, not {dict(d)!r}")
        return cls(str(d.get("action")), d["position"], str(d.get("name", "")),
                   str(d.get("where", "after")))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_text(self, pipeline: Pipeline | None = None) -> str:
        """e.g. "disable #9 FoldConstant" (the name when `pipeline` is given)."""
        at = f"#{self.position}"
        if pipeline is not None and 0 <= self.position < len(pipeline):
            at += f" {pipeline[self.position].name}"
        if self.action == "insert":
            return f"insert {self.name} {self.where} {at}"
        return {"up": "move up", "down": "move down"}.get(self.action, self.action) + " " + at


@dataclass(frozen=True)
class PassEntry:
    """One pass of a pipeline.

    `origin` is "tvm" for TVM's own passes and "user" for inserted or replacing ones;
    `note` says what the user did ("inserted after FuseTIR", "replaces FoldConstant").
    """

    name: str
    pass_: Any
    origin: str = "tvm"
    enabled: bool = True
    note: str = ""

    def to_pass(self, on_error: Callable | None = None):
        """The TVM pass to run: TVM passes as they are, plain functions wrapped in a
        module pass that checks their result.

        `on_error(name, exc)` sees a plain function's exception before TVM turns it
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


def _check_emitters(entries: tuple[PassEntry, ...]) -> None:
    for e in entries:
        if _tvm.is_pass(e.pass_):
            raise TypeError(
                f"the codegen stage takes source emitters, functions IRModule -> str run "
                f"on the lowered TIR module, not TVM passes ({e.name!r}); put a pass in a "
                "TIR stage instead (e.g. after='tirx')")


def positional_arity(fn: Callable) -> int:
    """How many positional parameters `fn` takes (1 when it cannot be told): a user
    pass taking two is called as `fn(mod, ctx)`."""
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
class Pipeline(NamedSequence[PassEntry], _render.Displayable):
    """TVM's Relax pipeline for a target, as stages of passes, plus the user's edits.

    Every edit returns a new Pipeline; the original is unchanged.

    Examples
    --------
    >>> import passlab
    >>> pipe = passlab.Pipeline.default("llvm")
    >>> pipe = pipe.insert(lambda mod: mod, after="legalize", name="inspect")
    >>> [e.name for e in pipe.stage("legalize").passes][-2:]
    ['FuseTIR', 'inspect']
    >>> pipe.tir_stage_names
    ('s_tir', 'tirx', 'host_finalize', 'device_finalize', 'codegen')
    >>> pipe.disable("tirx.VectorizeLoop")["tirx.VectorizeLoop"].enabled
    False
    """

    target: str
    variant: str
    stages: tuple[Stage, ...]
    tir_stages: tuple[Stage, ...] = ()
    """The TIR stages (`passlab._tvm.tir.TIR_STAGES`); `stages` are the Relax
    ones. Lookup and edits cover both."""
    llvm_opts: tuple[str, ...] = ()
    """LLVM command-line options for this pipeline's code generation, typed as TVM reads
    them (`-vectorize-loops:bool=false`); set with `llvm_options`."""
    llvm_passes: bool = False
    """Whether a build records LLVM's own passes as steps (`with_llvm_passes`; the same
    as `passlab.build(..., llvm_passes=True)`)."""

    # ------------------------------------------------------------------ construction
    @classmethod
    def default(cls, target: Any = "llvm", variant: str = "fused") -> Pipeline:
        """TVM's default pipeline for `target`: its Relax stages, then its TIR stages.

        `variant="fused"` (default) is `relax.get_default_pipeline(target)`, with
        FuseOps and FuseTIR; `variant="build"` is what `relax.build`/`tvm.compile`
        run on CPU when given no pipeline (`default_build_pipeline`: no fusion).
        `Pipeline.relax_build_variant(target)` says which one `relax.build` uses.
        The TIR stages are TVM's default TIR pipeline as the current PassContext's config
        makes it (`tirx.disable_vectorize` and the like drop or change passes).
        """
        tgt = _tvm.target(target)
        stages = tuple(
            Stage(name, tuple(PassEntry(_tvm.pass_name(p), p) for p in passes))
            for name, passes in _tvm.stage_passes(tgt, variant)
        )
        tir_stages = tuple(
            Stage(name, tuple(PassEntry(_tvm.pass_name(p), p, note=note) for p, note in passes))
            for name, passes in _tir.stage_passes()
        )
        return cls(_tvm.target_label(target, tgt), variant, stages, tir_stages)

    @staticmethod
    def relax_build_variant(target: Any = "llvm") -> str:
        """The variant that `relax.build(mod, target)` runs when given no pipeline."""
        return _tvm.relax_build_variant(_tvm.target(target))

    # ----------------------------------------------------------------------- lookup
    # a sequence of every stage's passes in order; ``pipe["FuseOps"]`` is the first
    # pass of that name
    # (Relax entries first, then TIR: positions of Relax entries do not move when the
    # TIR stages are edited)
    def _items(self) -> tuple[PassEntry, ...]:
        return tuple(e for stage in self.all_stages for e in stage.passes)

    def _by_name(self, name: str) -> PassEntry:
        si, pi = self._locate(name)
        return self.all_stages[si].passes[pi]

    @property
    def all_stages(self) -> tuple[Stage, ...]:
        """The Relax stages, then the TIR stages."""
        return self.stages + self.tir_stages

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self)

    @property
    def stage_names(self) -> tuple[str, ...]:
        """Names of every stage, Relax then TIR."""
        return tuple(s.name for s in self.all_stages)

    @property
    def tir_stage_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.tir_stages)

    @property
    def relax_passes(self) -> tuple[PassEntry, ...]:
        return tuple(e for stage in self.stages for e in stage.passes)

    @property
    def tir_passes(self) -> tuple[PassEntry, ...]:
        return tuple(e for stage in self.tir_stages for e in stage.passes)

    def stage(self, name: str) -> Stage:
        for s in self.all_stages:
            if s.name == name:
                return s
        raise unknown("stage", name, self.stage_names)

    def _locate(self, name: str) -> tuple[int, int]:
        """(stage index in `all_stages`, pass index) of the first pass called `name`."""
        for si, stage in enumerate(self.all_stages):
            for pi, entry in enumerate(stage.passes):
                if entry.name == name:
                    return si, pi
        raise unknown(
            "pass or stage", name, self.stage_names + tuple(dict.fromkeys(self.names)),
            extra=f"(pipeline for {self.target}, variant {self.variant!r})",
        )

    def position(self, position: int) -> tuple[int, int]:
        """(stage index in `all_stages`, pass index) of `list(self)[position]`: the
        way to name one of several passes of the same name (`s_tir.ThreadSync` runs
        three times in the TIR stage)."""
        i = position
        if i >= 0:
            for si, stage in enumerate(self.all_stages):
                if i < len(stage.passes):
                    return si, i
                i -= len(stage.passes)
        raise IndexError(f"no pass at position {position}: this pipeline has {len(self)} "
                         f"passes, positions 0..{len(self) - 1}")

    # ------------------------------------------------------------------------- edits
    def with_passes(self, stage: int, passes: tuple[PassEntry, ...]) -> Pipeline:
        """This pipeline with stage number `stage` (in `all_stages`) holding
        `passes` instead (the codegen stage only source emitters)."""
        return self._with(stage, tuple(passes))

    def _with(self, si: int, passes: tuple[PassEntry, ...]) -> Pipeline:
        n = len(self.stages)
        if si >= n:  # a TIR stage
            if self.tir_stages[si - n].name == _tir.CODEGEN:
                _check_emitters(passes)
            tir = list(self.tir_stages)
            tir[si - n] = dataclasses.replace(tir[si - n], passes=passes)
            return dataclasses.replace(self, tir_stages=tuple(tir))
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

        `after="legalize"` puts it at the end of the legalize stage: after the default
        graph-level optimizations and fusion, before dataflow lowering and memory
        planning. `before="FuseOps"` puts it just before FuseOps. `pass_` is a TVM
        pass or a function `IRModule -> IRModule`.
        """
        if (before is None) == (after is None):
            raise ValueError(
                "insert() needs exactly one of before= or after=, naming a pass "
                f"(e.g. 'FuseTIR') or a stage ({', '.join(self.stage_names)})"
            )
        anchor = before if before is not None else after
        assert anchor is not None  # exactly one of them was given (checked above)
        where = "before" if before is not None else "after"
        entry = _user_entry(pass_, name, f"inserted {where} {anchor}")
        if anchor in self.stage_names and anchor not in self.names:
            si = self.stage_names.index(anchor)
            old = self.all_stages[si].passes
            return self._with(si, (entry,) + old if before else old + (entry,))
        si, pi = self._locate(anchor)
        old = self.all_stages[si].passes
        at = pi if before is not None else pi + 1
        return self._with(si, old[:at] + (entry,) + old[at:])

    def remove(self, name: str) -> Pipeline:
        """Drop the first pass called `name`."""
        si, pi = self._locate(name)
        old = self.all_stages[si].passes
        return self._with(si, old[:pi] + old[pi + 1 :])

    def replace(self, name: str, pass_: Any, *, new_name: str | None = None) -> Pipeline:
        """Run `pass_` in place of the first pass called `name`."""
        si, pi = self._locate(name)
        old = self.all_stages[si].passes
        entry = _user_entry(pass_, new_name, f"replaces {name}")
        return self._with(si, old[:pi] + (entry,) + old[pi + 1 :])

    def disable(self, name: str) -> Pipeline:
        """Keep the pass in the pipeline, shown as disabled, but do not run it."""
        return self._set_enabled(name, False)

    def enable(self, name: str) -> Pipeline:
        return self._set_enabled(name, True)

    def _set_enabled(self, name: str, enabled: bool) -> Pipeline:
        si, pi = self._locate(name)
        old = self.all_stages[si].passes
        entry = dataclasses.replace(old[pi], enabled=enabled)
        return self._with(si, old[:pi] + (entry,) + old[pi + 1 :])

    def apply_edit(self, edit: Edit,
                   registered: Mapping[str, Callable] | None = None) -> Pipeline:
        """This pipeline with `edit` applied (an `Edit` by position; an insert
        names a function of `registered` or a TVM pass made without arguments); a bad
        edit raises an error that says what would be right."""
        if edit.action not in EDIT_ACTIONS:
            raise ValueError(f"unknown edit action {edit.action!r}; actions are "
                             f"{', '.join(EDIT_ACTIONS)}")
        si, pi = self.position(edit.position)
        stages = [s.passes for s in self.all_stages]
        entry = stages[si][pi]
        if edit.action in ("disable", "enable"):
            stages[si] = stages[si][:pi] + (dataclasses.replace(
                entry, enabled=edit.action == "enable"),) + stages[si][pi + 1:]
        elif edit.action == "remove":
            stages[si] = stages[si][:pi] + stages[si][pi + 1:]
        elif edit.action in ("up", "down"):
            self._move(stages, si, pi, -1 if edit.action == "up" else 1)
        else:
            stages[si] = self._insert_at(stages[si], si, pi, edit, registered or {})
        pipe = self
        for k, (stage, passes) in enumerate(zip(self.all_stages, stages)):
            if passes is not stage.passes:
                pipe = pipe.with_passes(k, passes)
        return pipe

    def _move(self, stages: list[tuple[PassEntry, ...]], si: int, pi: int, step: int) -> None:
        entry = stages[si][pi]
        moved = dataclasses.replace(entry, note=(entry.note + "; " if entry.note else "")
                                    + "moved")
        rest = stages[si][:pi] + stages[si][pi + 1:]
        to = pi + step
        if 0 <= to <= len(rest):
            stages[si] = rest[:to] + (moved,) + rest[to:]
            return
        sj = si + step  # across a stage boundary, Relax to Relax or TIR to TIR only
        relax = len(self.stages)
        if not 0 <= sj < len(stages) or (si < relax) != (sj < relax):
            side = "first" if step < 0 else "last"
            raise ValueError(f"{entry.name!r} is the {side} pass of its "
                             f"{'Relax' if si < relax else 'TIR'} stages: it cannot move "
                             f"{'up' if step < 0 else 'down'}; move it the other way, or "
                             "remove it and insert the pass where you want it")
        stages[si] = rest
        stages[sj] = stages[sj] + (moved,) if step < 0 else (moved,) + stages[sj]

    def _insert_at(self, passes: tuple[PassEntry, ...], si: int, pi: int, edit: Edit,
                   registered: Mapping[str, Callable]) -> tuple[PassEntry, ...]:
        if edit.where not in ("before", "after"):
            raise ValueError(f"insert where={edit.where!r}: use 'before' or 'after'")
        anchor = passes[pi].name
        if self.all_stages[si].name == _tir.CODEGEN:
            raise ValueError(f"cannot insert a pass next to {anchor!r}: the codegen stage "
                             "holds source emitters (IRModule -> str), not passes; insert "
                             "into a TIR stage (e.g. after a tirx pass) instead")
        note = f"inserted {edit.where} {anchor}"
        if edit.name in registered:
            new = PassEntry(edit.name, registered[edit.name], "user", True, note)
        else:
            ctor = pass_constructors().get(edit.name)
            if ctor is None:
                raise unknown("pass to insert", edit.name, known_passes(), extra=(
                    "Insert a TVM pass made without arguments, or register your own with "
                    "explorer.register_pass(fn, name=...)."))
            with _tvm.target(self.target):
                made = ctor()
            new = PassEntry(_tvm.pass_name(made), made, "user", True, note)
        at = pi if edit.where == "before" else pi + 1
        return passes[:at] + (new,) + passes[at:]

    def llvm_options(self, *opts: str) -> Pipeline:
        """This pipeline with LLVM command-line options for its code generation (one
        build's: LLVM's options are process-global, TVM sets them for the code generator
        and puts the old values back), e.g. `-vectorize-loops:bool=false`,
        `-vectorize-slp:bool=false`, `-unroll-threshold:int=0`. Each is written as TVM's
        target reads it, `-name:type=value` with type bool, int, uint or string
        (`-name` alone is `-name:bool=true`); an option LLVM does not know, one of
        another form, and the options that crash TVM 0.27's parser (regex and list
        options such as `-pass-remarks`) raise `passlab.errors.LlvmOptionError`.
        Replaces the options set before; `llvm_options()` clears them. Only llvm
        targets (and a GPU target's llvm host code) read them.

        Examples
        --------
        >>> import passlab
        >>> pipe = passlab.Pipeline.default("llvm").llvm_options("-vectorize-loops:bool=false")
        >>> pipe.llvm_opts
        ('-vectorize-loops:bool=false',)
        """
        checked = _llvm.check_options(list(opts))
        if checked:
            tgt = _tvm.target(self.target)
            host = tgt.host if tgt.host is not None else tgt
            if host.kind.name != "llvm":
                raise LlvmOptionError(
                    f"LLVM options need an LLVM code generator; target {self.target!r} "
                    f"generates {host.kind.name!r} code (build for 'llvm')")
            unknown_names = _llvm.unknown_options(_llvm.codegen_target(host, checked))
            if unknown_names:
                raise LlvmOptionError(
                    f"LLVM {_llvm.llvm_version()} has no option "
                    f"{', '.join(repr('-' + n) for n in unknown_names)} (TVM would ignore "
                    "it with a log line); LLVM's own options are listed by `opt "
                    "--help-hidden`, e.g. -vectorize-loops, -vectorize-slp, "
                    "-unroll-threshold, -force-vector-width")
        return dataclasses.replace(self, llvm_opts=checked)

    def with_llvm_passes(self, on: bool = True) -> Pipeline:
        """This pipeline with its builds recording LLVM's own passes (SROA, InstCombine,
        the loop and SLP vectorizers, ...) as steps of the trace, nested under the
        codegen step (as `passlab.build(..., llvm_passes=True)` does). Recording costs a
        second code generation during which LLVM prints every function it changes."""
        return dataclasses.replace(self, llvm_passes=bool(on))

    def with_backend(self, backend: Any) -> Pipeline:
        """This pipeline with an accelerator backend applied: partitioning by its
        patterns and its passes at their phases (see `passlab.Backend`)."""
        return _UPPER["with_backend"](self, backend)

    # ------------------------------------------------------------------------- build
    def to_pass(self, on_error: Callable | None = None):
        """One module pass running every enabled pass, stage by stage, under the target.

        Each stage is a `Sequential` named after the stage, so recorded traces show
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

    def to_tir(self, on_error: Callable | None = None) -> _tir.TirPipeline:
        """The TIR stages' enabled passes, for `passlab._tvm.build`: it registers them
        with `tvm.tirx.register_tir_pipeline` under a fresh name for one build. The
        `codegen` stage is not part of it (its emitters run on the generated module)."""
        stages = [(s.name, [e.to_pass(on_error) for e in s.passes if e.enabled])
                  for s in self.tir_stages if s.name != _tir.CODEGEN]
        key = _tir.content_key([(s.name, s.passes) for s in self.tir_stages])
        return _tir.TirPipeline(stages, key, self)

    @property
    def emitters(self) -> tuple[PassEntry, ...]:
        """The enabled entries of the `codegen` stage: functions `IRModule -> str`
        run on the lowered TIR module after the build; their text is recorded in the
        trace's `codegen` step under the entry's name."""
        return tuple(e for s in self.tir_stages if s.name == _tir.CODEGEN
                     for e in s.passes if e.enabled)

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
        for stage in self.all_stages:
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
            elif r["note"]:  # a TVM pass changed by the PassContext config
                mark = (mark + " " if mark else "") + r["note"]
            body.append([str(r["index"]), r["stage"], r["name"], mark])
            classes.append("user" if r["origin"] == "user" else ("off" if not r["enabled"] else ""))
        return header, body, classes

    def _title(self) -> str:
        llvm = (f"; LLVM options {' '.join(self.llvm_opts)}" if self.llvm_opts else "") + (
            "; LLVM's passes recorded" if self.llvm_passes else "")
        return (f"Pipeline for {self.target} (variant {self.variant!r}), {len(self)} passes "
                f"({len(self.relax_passes)} Relax, {len(self.tir_passes)} TIR){llvm}")

    def to_text(self) -> str:
        header, body, _ = self._table()
        return self._title() + "\n" + _render.text_table(header, body)

    def to_html(self) -> str:
        header, body, classes = self._table()
        return _render.html_table(header, body, classes, caption=self._title())

    def __repr__(self) -> str:
        n_user = len(self.user_passes)
        return (
            f"<Pipeline {self.target!r} variant={self.variant!r}: {len(self)} passes in "
            f"{len(self.all_stages)} stages, {n_user} user pass{'es' if n_user != 1 else ''}>"
        )

    def __str__(self) -> str:
        return self.to_text()
