"""Which pass made it faster: each pass's effect on run time, by building without it.

`attribute` builds the model with the full pipeline and once more for each pass of
its main chain (or the passes named) with that pass disabled, checks every variant's
outputs against the full pipeline's on the same seeded inputs, profiles each one
(`passlab.research.profile`) and tabulates what each pass costs or saves. The
builds are sweep jobs run by the job engine `sweep` uses (`passlab.research._jobs`):
the same argument checks, worker processes (passlab's own, or any
`concurrent.futures.Executor` such as Dask's `client.get_executor()`) and interrupt
contract; a variant that fails to build, crashes or runs out of time is a row, not the
end, and so is a crash of the full pipeline's own job (each variant is timed against
its own build of the full pipeline). When the full pipeline cannot be built in time, or
at all, the variants still running are stopped and the rest not started: each would
build it again and fail the same way.
A build process keeps the full pipeline's build: each variant is re-run from it
(`passlab.research.rerun`: the recorded module before the disabled pass is where
it resumes), and a variant whose Relax pipeline ends in kernels already compiled there
skips TIR lowering and codegen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab._render import Displayable
from passlab._sequence import NamedSequence
from passlab.errors import SweepError, WorkerError, unknown
from passlab.pipeline import Pipeline
from passlab.recording.build import max_abs_diff
from passlab.research._jobs import (
    check_executor,
    check_progress,
    check_timeout,
    check_workers,
    job_bar,
    job_inputs,
    run_jobs,
)
from passlab.research._profile_plot import seconds_text
from passlab.research._sweep_jobs import job_key, model_spec, pipeline_recipe

__all__ = ["attribute", "Attribution", "PassEffect", "COLUMNS", "STATUSES"]

#: ``Attribution.to_dataframe()`` columns, in order (issue 25's contract, then extras).
COLUMNS = ("pass", "status", "max_abs_diff", "kernels", "kernels_without", "run_s",
           "run_s_without", "delta_s", "delta_pct", "moved", "spread", "error", "reused",
           "paired")

#: What a row's ``status`` can be.
STATUSES = ("ok", "outputs differ", "build fails", "run fails", "timeout", "crashed")

#: Outputs agree when ``|a - b| <= ATOL + RTOL * |b|`` everywhere (numpy's allclose).
RTOL, ATOL = 1e-4, 1e-5

_FULL = "(full pipeline)"

#: The full pipeline's own job ended so: how the summary says it.
_VERB = {"timeout": "timed out", "build fails": "failed to build", "run fails": "failed to run",
         "crashed": "crashed", "interrupted": "did not finish (interrupted)"}

#: When the full pipeline's own job ends so, the variants are stopped: each needs that
#: build (to be re-run from it and timed against it) and would fail the same way.
_STOPS = ("timeout", "build fails", "run fails")


@dataclass(frozen=True)
class PassEffect:
    """One pass: the model built without it against the full pipeline, both timed in
    alternation in the same job (so `run_s`, the full pipeline's, is measured per row).
    `delta_s` is `run_s - run_s_without` (positive: the pass costs time, negative: it saves it),
    `delta_pct` that as a share of `run_s_without`; `kernels` /
    `kernels_without` count the kernels a run calls; `moved` the kernels whose time
    per run changed most, as `(kernel, seconds with the pass - without)`; `spread`
    the larger of the two end-to-end spreads; `reused` whether the build without the
    pass ended in the full pipeline's kernels and skipped TIR lowering and codegen;
    `paired` whether the two were timed in alternation (else: in their own jobs)."""

    pass_: str
    status: str
    max_abs_diff: float | None
    kernels: int | None
    kernels_without: int | None
    run_s: float | None
    run_s_without: float | None
    delta_s: float | None
    delta_pct: float | None
    moved: tuple[tuple[str, float], ...]
    spread: float | None
    error: str
    reused: bool | None = None
    paired: bool = False

    def to_dict(self) -> dict[str, Any]:
        values = [getattr(self, "pass_" if c == "pass" else c) for c in COLUMNS]
        return dict(zip(COLUMNS, values))


@dataclass(frozen=True, eq=False)
class Attribution(NamedSequence[PassEffect], Displayable):
    """The effect of each pass on run time (see `attribute`): rows that built and
    ran first, largest `|delta_s|` first, then the failures; indexed by position or
    pass name. `run_s` and `kernels` are the full pipeline's; `status` and `error`
    those of its own job ("interrupted" when it had not finished); `not_run` the passes
    whose variant did not finish (stopped or interrupted)."""

    rows: tuple[PassEffect, ...]
    model: str
    target: str
    run_s: float | None
    kernels: int | None
    status: str
    error: str = ""
    seconds: float = 0.0
    not_run: tuple[str, ...] = ()

    def _items(self) -> tuple[PassEffect, ...]:
        return self.rows

    def _by_name(self, name: str) -> PassEffect:
        for r in self.rows:
            if r.pass_ == name:
                return r
        raise unknown("pass", name, [r.pass_ for r in self.rows],
                      extra="(the passes this attribution disabled)")

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        opts = sum(1 for r in self.rows if r.pass_.startswith("-"))  # LLVM options
        what = " and ".join(x for x in (
            f"{len(self.rows) - opts} pass{'' if len(self.rows) - opts == 1 else 'es'} disabled"
            if len(self.rows) > opts else "",
            f"{opts} LLVM option{'s' if opts != 1 else ''} set" if opts else "") if x)
        done = (f"{what or '0 passes disabled'} one at a time "
                f"({', '.join(f'{n} {s}' for s, n in counts.items())})")
        left = ""
        if self.not_run:
            names = ", ".join(self.not_run[:4]) + (", ..." if len(self.not_run) > 4 else "")
            left = f"; {len(self.not_run)} not run ({names})"
        if self.status != "ok":
            head = (f"{self.model} on {self.target}: the full pipeline's job "
                    f"{_VERB.get(self.status, self.status)}"
                    f"{': ' + self.error if self.error else ''}")
            if not self.rows:
                return f"{head}; nothing to attribute{left}"
            return (f"{head}; {done}, each timed against its own build of the full "
                    f"pipeline{left}, {self.seconds:.1f} s")
        return (f"{self.model} on {self.target}: {seconds_text(self.run_s or 0.0)} per run "
                f"with the full pipeline ({self.kernels} kernels); {done}{left}, "
                f"{self.seconds:.1f} s")

    _HEADER = ("pass", "status", "delta", "delta %", "without", "kernels", "spread",
               "max |diff|", "moved most")

    def _cells(self) -> list[list[str]]:
        def opt(v: Any, fmt: Callable[[Any], str]) -> str:
            return "" if v is None else fmt(v)

        out = []
        for r in self.rows:
            moved = ", ".join(f"{k} {'+' if d >= 0 else '-'}{seconds_text(abs(d))}"
                              for k, d in r.moved)
            out.append([r.pass_, r.status, opt(r.delta_s, lambda v: ("+" if v >= 0 else "-")
                                               + seconds_text(abs(v))),
                        opt(r.delta_pct, lambda v: f"{v:+.1%}"),
                        opt(r.run_s_without, seconds_text),
                        "" if r.kernels_without is None
                        else f"{r.kernels} -> {r.kernels_without}",
                        opt(r.spread, lambda v: f"{v:.0%}"),
                        opt(r.max_abs_diff, lambda v: f"{v:.3g}"), moved or r.error[:80]])
        return out

    def to_text(self) -> str:
        return self.summary() + "\n" + _render.text_table(self._HEADER, self._cells())

    def to_html(self) -> str:
        # the pass names and the kernels each moved most wrap at their token
        # boundaries: the table fits a notebook's output, not wider than it
        return _render.html_table(self._HEADER, self._cells(), caption=self.summary(),
                                  wrap=(0, len(self._HEADER) - 1))

    def to_dataframe(self) -> Any:
        """One row per pass with the `COLUMNS` (pandas)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows], columns=list(COLUMNS))

    def __repr__(self) -> str:
        return f"<Attribution: {len(self.rows)} passes of {self.model} on {self.target}>"


# ------------------------------------------------------------------ attribute
def _passes(pipe: Pipeline, passes: Sequence[str] | None) -> list[str]:
    if passes is None:
        return list(dict.fromkeys(e.name for e in pipe.relax_passes if e.enabled))
    if isinstance(passes, str):
        passes = [p.strip() for p in passes.split(",") if p.strip()]
    names = list(dict.fromkeys(passes))
    for name in names:
        entry = pipe[name]  # UnknownNameError with close matches for a misspelt name
        if not entry.enabled:
            raise SweepError(f"pass {name!r} is already disabled in this pipeline: there is "
                             "nothing to attribute to it; enable it, or leave it out")
    if not names:
        raise SweepError("passes names no pass; give pass names (e.g. ['FuseOps']) or None "
                         "for every enabled pass of the Relax pipeline")
    return names


def _llvm_variants(pipe: Pipeline, options: Sequence[str] | str) -> tuple[str, ...]:
    """`options` checked and typed (`Pipeline.llvm_options`), one variant each."""
    if isinstance(options, str):
        options = [options]
    checked = pipe.llvm_options(*options).llvm_opts if options else ()
    if len(set(checked)) != len(checked):
        raise SweepError(f"llvm_options names an option twice: {list(options)!r}")
    return tuple(checked)


def _moved(with_: dict[str, float], without: dict[str, float], n: int = 3
           ) -> tuple[tuple[str, float], ...]:
    names = set(with_) | set(without)
    deltas = [(k, with_.get(k, 0.0) - without.get(k, 0.0)) for k in names]
    deltas.sort(key=lambda kd: (-abs(kd[1]), kd[0]))
    return tuple(deltas[:n])


def _status(row: dict[str, Any]) -> str:
    if row["status"] in ("timeout", "crashed"):
        return row["status"]
    if row["status"] == "failed":
        return "run fails" if str(row.get("error", "")).startswith("run:") else "build fails"
    prof = row.get("profile") or {}
    return "run fails" if "error" in prof or "run_s" not in prof else "ok"


def _close(mine: list[Any] | None, ref: list[Any] | None) -> tuple[float | None, bool]:
    import numpy as np

    if mine is None or ref is None:
        return None, True
    try:
        diff = max_abs_diff(tuple(mine), tuple(ref))
    except ValueError:  # another structure or shape: no number, and not the same
        return None, False
    same = all(np.allclose(np.asarray(a, "float64"), np.asarray(b, "float64"), rtol=RTOL,
                           atol=ATOL) for a, b in zip(mine, ref))
    return diff, same


def attribute(model: Any, pipeline: Pipeline | None = None, *,
              passes: Sequence[str] | str | None = None,
              llvm_options: Sequence[str] | str = (), inputs: Any = None,
              repeat: int = 10, workers: int | None = None, executor: Executor | None = None,
              timeout: float | None = None,
              progress: bool | Callable[[str, str, int, int], None] | None = None,
              reuse_prefix: bool = True) -> Attribution:
    """What each pass does to run time: build without it, check, profile, compare.

    Parameters
    ----------
    model
        A built-in model name, a model file, an IRModule (anything `sweep` takes).
    pipeline
        The full pipeline (default `Pipeline.default("llvm")`); with a user pass inserted,
        its row answers "what did my pass cost". Its passes must be importable (they run
        in worker processes, as in `passlab.sweep`).
    passes
        Pass names to disable one at a time (a list, or "A,B"); default: every enabled
        pass of the Relax pipeline (none when `llvm_options` are given: `passes=None`
        then means none, a list still names them).
    llvm_options
        LLVM options to set one at a time, each a row named by the option
        (`Pipeline.llvm_options`): `["-vectorize-loops:bool=false",
        "-vectorize-slp:bool=false"]` answers what LLVM's loop and SLP vectorizers buy
        the model (its `delta_s` is the time with them minus without). These variants
        are built from the model (their Relax and TIR pipelines are the full one's).
    inputs
        None (seeded random inputs and weights), a seed (an int >= 0), or input arrays.
    repeat
        Repeats of every timing (medians and spreads are over these): an int >= 1.
    workers, executor, timeout
        As for `passlab.sweep`, checked the same way: a positive number of seconds (or
        None), an int >= 1 (or None), a `concurrent.futures.Executor` (or None).
    progress
        None (default): a bar (jobs done of all, failures so far, time left) in Jupyter
        or on a terminal; True: a bar on standard error anyway; False: nothing; a
        callable gets `(pass, status, done, total)` after each job instead (`pass` is
        "(full pipeline)" for the full pipeline's own job).
    reuse_prefix
        True (default): each variant is re-run from the full pipeline's build
        (`passlab.research.rerun`), reusing its recorded modules up to the disabled
        pass and its compiled kernels where they come out the same; False builds every
        variant from the model (the rows are the same, only slower to get).

    Returns
    -------
    Attribution
        Rows with the `COLUMNS`, largest effect first. When the full pipeline's own
        job times out or fails to build or run, `status` says so and the variants not
        finished by then are in `not_run` (each would need that build); when it
        crashes, the variants go on, each timed against its own build of the full
        pipeline (their outputs are then not compared).

    Raises
    ------
    SweepError
        A malformed argument, before any process starts.
    WorkerError
        The worker processes could not start, or the executor's workers all died;
        `.attribution` (and `.partial`) holds the rows that had finished.
    KeyboardInterrupt
        Ctrl-C stops every process of the call within a second; `.attribution` (and
        `.partial`) holds the rows that had finished.

    Examples
    --------
    >>> import passlab
    >>> a = passlab.attribute("mlp", passes=["FuseOps"], repeat=2, workers=1)  # doctest: +SKIP
    >>> a["FuseOps"].status, a["FuseOps"].kernels, a["FuseOps"].kernels_without  # doctest: +SKIP
    ('ok', 4, 7)
    """
    import time

    start = time.perf_counter()
    pipe = Pipeline.default("llvm") if pipeline is None else pipeline
    if not isinstance(pipe, Pipeline):
        raise TypeError(f"pipeline must be a passlab.Pipeline, not {type(pipe).__name__}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int of at least 1, not {repeat!r}")
    timeout = check_timeout(timeout)
    workers = check_workers(workers)
    check_executor(executor)
    check_progress(progress)
    if not isinstance(reuse_prefix, bool):
        raise SweepError(f"reuse_prefix is True or False, not {reuse_prefix!r}")
    opts = _llvm_variants(pipe, llvm_options)
    names = [] if opts and passes is None else _passes(pipe, passes)
    spec, label = model_spec(model)
    label = label or "model"
    given = job_inputs(inputs, label, by_label=False)
    variants = ([(_FULL, pipe)] + [(n, pipe.disable(n)) for n in names]
                + [(o, pipe.llvm_options(*pipe.llvm_opts, o)) for o in opts])
    names = names + list(opts)
    full = pipeline_recipe(pipe)
    jobs = []
    for name, p in variants:
        job: dict[str, Any] = dict(
            model=label, pipeline=name, model_spec=spec, pipeline_recipe=pipeline_recipe(p),
            checks=[], inputs=given, timeout=timeout, folder=None,
            profile=dict(repeat=repeat), prefix=reuse_prefix and name not in opts,
            reuse=f"attribute:{spec.get('sha') or label}:{pipe.target}:{id(pipe)}",
            # each variant is timed against the full pipeline in its own job too
            baseline=True if name == _FULL else full)
        job["key"] = job_key(job)
        jobs.append(job)
    results: dict[int, tuple[dict[str, Any], list[Any] | None]] = {}
    shown = job_bar(progress, len(jobs), 0, "attribute")

    def finish(i: int, row: dict[str, Any]) -> bool:
        results[i] = (row, row.pop("outputs", None))
        status = _status(row)
        what = "full pipeline" if i == 0 else f"without {names[i - 1]}"
        shown.update(failed=status != "ok", note=f"{what}: {status}")
        if callable(progress):
            progress(_FULL if i == 0 else names[i - 1], status, len(results), len(jobs))
        return i == 0 and status in _STOPS

    def result() -> Attribution:
        not_run = tuple(names[i - 1] for i in range(1, len(jobs)) if i not in results)
        return _assemble(results, names, label, str(pipe.target), not_run,
                         time.perf_counter() - start)

    try:
        run_jobs(jobs, range(len(jobs)), finish, workers=workers, executor=executor)
    except (KeyboardInterrupt, WorkerError) as exc:
        shown.close()
        exc.attribution = exc.partial = result()  # type: ignore[union-attr]
        raise
    shown.close()
    return result()


def _assemble(results: dict[int, tuple[dict[str, Any], list[Any] | None]], names: list[str],
              label: str, target: str, not_run: tuple[str, ...], took: float) -> Attribution:
    """The attribution of the jobs that finished: the full pipeline's (job 0) figures
    where it finished, each variant's row where it did."""
    base, base_out = results.get(0, ({"status": "interrupted"}, None))
    base_status = "interrupted" if 0 not in results else _status(base)
    bprof: dict[str, Any] = (base.get("profile") or {}) if base_status == "ok" else {}
    error = "" if base_status in ("ok", "interrupted") else (
        base.get("error") or (base.get("profile") or {}).get("error", ""))
    rows = []
    for i, name in enumerate(names, start=1):
        if i not in results:
            continue
        row, outs = results[i]
        status = _status(row)
        diff, same = _close(outs, base_out)
        if status == "ok" and not same:
            status = "outputs differ"
        prof = row.get("profile") or {}
        # paired: both pipelines timed in alternation in the variant's job (same load)
        run_s, run_wo, spread = prof.get("paired") or (
            bprof.get("run_s"), prof.get("run_s"),
            None if "spread" not in prof or "spread" not in bprof
            else max(prof["spread"], bprof["spread"]))
        delta = None if run_wo is None or run_s is None else run_s - run_wo
        note = row.get("error") or prof.get("error", "")
        if base_out is None and outs is not None:
            note = note or f"outputs not compared: the full pipeline's own job {base_status}"
        rows.append(PassEffect(
            name, status, diff, len(bprof["calls"]) if "calls" in bprof else None,
            None if "calls" not in prof else len(prof["calls"]), run_s, run_wo,
            delta, None if delta is None or not run_wo else delta / run_wo,
            () if "kernels" not in prof or "kernels" not in bprof
            else _moved(bprof["kernels"], prof["kernels"]),
            spread, note, row.get("kernels_reused"), "paired" in prof))
    rows.sort(key=lambda r: (r.delta_s is None, -abs(r.delta_s or 0.0)))
    return Attribution(tuple(rows), label, target, bprof.get("run_s"),
                       len(bprof["calls"]) if "calls" in bprof else None, base_status, error,
                       took, not_run)
