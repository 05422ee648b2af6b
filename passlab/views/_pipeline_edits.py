"""Pipeline edits by position, for the Explorer's Edit pane: disable, enable, remove,
move up/down, insert a registered function or a TVM pass made without arguments.

Positions index ``list(pipeline)`` because names repeat (the TIR pipeline runs
``s_tir.ThreadSync`` three times); each edit applies to the pipeline the previous ones
made. Every function returns a new Pipeline; a bad edit raises an error that says what
would be right.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from passlab import _tvm
from passlab._tvm.passinfo import pass_constructors
from passlab.errors import unknown
from passlab.pipeline import PassEntry, Pipeline

__all__ = ["ACTIONS", "Edit", "apply_edit", "known_passes"]

#: What an edit can do to the pass at its position.
ACTIONS = ("disable", "enable", "remove", "up", "down", "insert")


# ------------------------------------------------------------------ known passes
def known_passes() -> tuple[str, ...]:
    """Names of the TVM passes an edit can insert ("FoldConstant", "tirx.VectorizeLoop"):
    the constructors of ``tvm.relax.transform``, ``tvm.tirx.transform`` and
    ``tvm.s_tir.transform`` that need no arguments."""
    return tuple(pass_constructors())


def _tvm_pass(name: str, target: str) -> Any:
    ctor = pass_constructors().get(name)
    if ctor is None:
        raise unknown("pass to insert", name, known_passes(), extra=(
            "Insert a TVM pass made without arguments, or register your own with "
            "explorer.register_pass(fn, name=...)."))
    with _tvm.target(target):
        return ctor()


# ------------------------------------------------------------------------- edits
@dataclass(frozen=True)
class Edit:
    """One pending change: ``action`` (see :data:`ACTIONS`) on the pass at ``position``
    of ``list(pipeline)``; an insert puts pass ``name`` ``where`` ("before"/"after") it."""

    action: str
    position: int
    name: str = ""
    where: str = "after"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Edit:
        """An edit from the front end's JSON, e.g. ``{"action": "disable", "position": 9}``."""
        extra = set(d) - {"action", "position", "name", "where"}
        if extra or not isinstance(d.get("position"), int):
            raise ValueError(f"an edit is {{'action': str, 'position': int, 'name': str, "
                             f"'where': 'before' or 'after'}}, not {dict(d)!r}")
        return cls(str(d.get("action")), d["position"], str(d.get("name", "")),
                   str(d.get("where", "after")))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_text(self, pipeline: Pipeline | None = None) -> str:
        """e.g. "disable #9 FoldConstant" (the name when ``pipeline`` is given)."""
        at = f"#{self.position}"
        if pipeline is not None and 0 <= self.position < len(pipeline):
            at += f" {pipeline[self.position].name}"
        if self.action == "insert":
            return f"insert {self.name} {self.where} {at}"
        return {"up": "move up", "down": "move down"}.get(self.action, self.action) + " " + at


def apply_edit(pipe: Pipeline, edit: Edit,
               registered: Mapping[str, Callable] | None = None) -> Pipeline:
    """``pipe`` with ``edit`` applied (a new Pipeline); a bad edit raises an error that
    says what would be right."""
    if edit.action not in ACTIONS:
        raise ValueError(f"unknown edit action {edit.action!r}; actions are {', '.join(ACTIONS)}")
    si, pi = pipe.position(edit.position)
    stages = [s.passes for s in pipe.all_stages]
    entry = stages[si][pi]
    if edit.action in ("disable", "enable"):
        stages[si] = stages[si][:pi] + (dataclasses.replace(
            entry, enabled=edit.action == "enable"),) + stages[si][pi + 1:]
    elif edit.action == "remove":
        stages[si] = stages[si][:pi] + stages[si][pi + 1:]
    elif edit.action in ("up", "down"):
        _move(pipe, stages, si, pi, -1 if edit.action == "up" else 1)
    else:
        stages[si] = _insert(pipe, stages[si], si, pi, edit, registered or {})
    for k, (stage, passes) in enumerate(zip(pipe.all_stages, stages)):
        if passes is not stage.passes:
            pipe = pipe.with_passes(k, passes)
    return pipe


def _move(pipe: Pipeline, stages: list[tuple[PassEntry, ...]], si: int, pi: int,
          step: int) -> None:
    entry = stages[si][pi]
    moved = dataclasses.replace(entry, note=(entry.note + "; " if entry.note else "") + "moved")
    rest = stages[si][:pi] + stages[si][pi + 1:]
    to = pi + step
    if 0 <= to <= len(rest):
        stages[si] = rest[:to] + (moved,) + rest[to:]
        return
    sj = si + step  # across a stage boundary, Relax to Relax or TIR to TIR only
    relax = len(pipe.stages)
    if not 0 <= sj < len(stages) or (si < relax) != (sj < relax):
        side = "first" if step < 0 else "last"
        raise ValueError(f"{entry.name!r} is the {side} pass of its "
                         f"{'Relax' if si < relax else 'TIR'} stages: it cannot move "
                         f"{'up' if step < 0 else 'down'}; move it the other way, or remove "
                         "it and insert the pass where you want it")
    stages[si] = rest
    stages[sj] = stages[sj] + (moved,) if step < 0 else (moved,) + stages[sj]


def _insert(pipe: Pipeline, passes: tuple[PassEntry, ...], si: int, pi: int, edit: Edit,
            registered: Mapping[str, Callable]) -> tuple[PassEntry, ...]:
    if edit.where not in ("before", "after"):
        raise ValueError(f"insert where={edit.where!r}: use 'before' or 'after'")
    anchor = passes[pi].name
    if pipe.all_stages[si].name == "codegen":
        raise ValueError(f"cannot insert a pass next to {anchor!r}: the codegen stage holds "
                         "source emitters (IRModule -> str), not passes; insert into a TIR "
                         "stage (e.g. after a tirx pass) instead")
    note = f"inserted {edit.where} {anchor}"
    if edit.name in registered:
        new = PassEntry(edit.name, registered[edit.name], "user", True, note)
    else:
        made = _tvm_pass(edit.name, pipe.target)
        new = PassEntry(_tvm.pass_name(made), made, "user", True, note)
    at = pi if edit.where == "before" else pi + 1
    return passes[:at] + (new,) + passes[at:]
