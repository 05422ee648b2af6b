"""A build's progress as a bar: the pipeline's passes done out of all of them (Relax, TIR
and codegen), the pass that runs and the pass calls recorded so far (nested ones
included). Drawn by `passlab._progress` (tqdm); the recorder calls it when a pass of
the main chain or a stage starts."""

from __future__ import annotations

from typing import Any

from passlab._progress import Bar, ProgressArg, bar

__all__ = ["BuildProgress", "SHOW_AFTER_S"]

#: A build's bar appears only once the build has run this long (``progress=None``), so
#: quick builds stay quiet.
SHOW_AFTER_S = 2.0

#: How far ahead of the last pass seen a started pass is looked for in the pipeline's
#: list: disabled passes do not run, and a name may repeat further on.
_LOOKAHEAD = 12


class BuildProgress:
    """The recorder's `progress(pass_name, pass_calls_so_far)` callback, drawn as a bar
    over `names` (the pipeline's passes in order, then "codegen")."""

    __slots__ = ("bar", "last_stage", "names", "pos")

    def __init__(self, names: list[str], progress: ProgressArg, desc: str,
                 last_stage: int | None = None) -> None:
        self.names = names
        self.pos = 0
        #: where the passes that run just before codegen start (TVM's host/device
        #: finalize): the note then says that codegen comes next, as it takes seconds
        self.last_stage = len(names) - 1 if last_stage is None else last_stage
        self.bar: Bar = bar(progress, total=len(names), desc=desc, unit="pass",
                            delay=SHOW_AFTER_S if progress is None else 0.0)

    def __call__(self, name: str, count: int) -> None:
        names = self.names
        for k in range(self.pos, min(self.pos + _LOOKAHEAD, len(names))):
            if names[k] == name:
                self.pos = k + 1
                late = k >= self.last_stage
                self.bar.goto(k, note=f"{name}{' (codegen next)' if late else ''}, "
                                      f"{count} pass calls", now=late)
                return
        self.bar.note(f"{name}, {count} pass calls")

    def codegen(self, count: int) -> None:
        self.bar.goto(len(self.names) - 1, note=f"codegen, {count} pass calls")

    def close(self, summary: str, done: bool) -> None:
        if done:
            self.bar.goto(len(self.names))
        self.bar.close(summary)

    @property
    def shown(self) -> bool:
        return self.bar.shown


def build_progress(pipe: Any, progress: ProgressArg, kind: str) -> BuildProgress:
    """The bar for a build of `pipe` for a target of `kind`: its Relax and TIR
    passes, then codegen."""
    names = [p.name for p in pipe.relax_passes]
    last_stage = None
    for stage in pipe.tir_stages:
        if stage.name.endswith("finalize") and last_stage is None:
            last_stage = len(names)
        names += [p.name for p in stage.passes]
    return BuildProgress([*names, "codegen"], progress, f"build for {kind}", last_stage)
