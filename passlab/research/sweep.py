"""Sweeps: many models times many pipelines, each build in a worker process.

`sweep` builds every model with every pipeline while recording, runs each build on
the same seeded inputs as the baseline (the unmodified default pipeline) and gathers one
row per job: status, failing pass, build time, main-chain length, kernels, peak temporary
memory before and after memory planning, and the largest output difference from the
baseline. Jobs are plain data (`passlab.research._sweep_jobs`) run by the job engine
that `attribute` shares (`passlab.research._jobs`): on passlab's own worker processes or
any executor (a Dask cluster's `client.get_executor()`); each runs in a build process
watched by its worker, so a crash or a timeout is a row, not the end of the sweep. With
`out=` each job keeps its trace file, its report and a small JSON record, and running the
same sweep again only builds what is missing; every file is written beside its name and
renamed over it, never through a link (`passlab.io._files`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Any

from passlab import _render
from passlab.errors import SweepError, WorkerError, first_line
from passlab.io._files import write_file
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
from passlab.research._sweep_jobs import (
    COLUMNS,
    check_recipe,
    is_baseline,
    job_key,
    model_spec,
    pipeline_recipe,
)
from passlab.research._sweep_records import (
    check_links,
    check_out,
    job_folder,
    part,
    read_record,
    write_record,
)

__all__ = ["sweep", "Sweep", "SweepRow", "COLUMNS", "job_folder"]

_FAILED = ("failed", "timeout", "crashed")


@dataclass(frozen=True)
class SweepRow:
    """One job of a sweep: a model built with a pipeline (see `COLUMNS`)."""

    model: str
    pipeline: str
    status: str
    error: str
    build_s: float | None
    passes: int | None
    kernels: int | None
    peak_bytes: int | None
    peak_bytes_unplanned: int | None
    max_abs_diff: float | None
    trace: str | None
    report: str | None
    run_s: float | None = None  # sweep(profile=...): end-to-end median, seconds
    run_s_vs_default: float | None = None  # run_s / the baseline row's run_s

    def to_dict(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, astuple(self)))


@dataclass(frozen=True)
class Sweep(_render.Displayable):
    """The rows of a sweep, in model-major order; `ran` jobs were built now and
    `reused` were read from an earlier run's records in `out`."""

    rows: tuple[SweepRow, ...]
    baseline: str
    out: Path | None = None
    ran: int = 0
    reused: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        # run time against the baseline pipeline of the same model (profiled sweeps)
        base = {r.model: r.run_s for r in self.rows if r.pipeline == self.baseline}
        rows = []
        for r in self.rows:
            ref = base.get(r.model)
            rows.append(r if r.run_s is None or not ref
                        else replace(r, run_s_vs_default=r.run_s / ref))
        object.__setattr__(self, "rows", tuple(rows))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[SweepRow]:
        return iter(self.rows)

    def __getitem__(self, key: int | tuple[str, str]) -> SweepRow:
        """A row by position or by `(model, pipeline)`."""
        if isinstance(key, tuple):
            for r in self.rows:
                if (r.model, r.pipeline) == key:
                    return r
            raise KeyError(f"no row for model {key[0]!r} with pipeline {key[1]!r}; rows: "
                           + ", ".join(f"{r.model}/{r.pipeline}" for r in self.rows))
        return self.rows[key]

    @property
    def counts(self) -> dict[str, int]:
        """How many rows have each status."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def to_dataframe(self):
        """One row per job with exactly the `COLUMNS` (pandas)."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows], columns=list(COLUMNS))

    # ----------------------------------------------------------------------- views
    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts.items())
        where = f"; files in {self.out}" if self.out is not None else ""
        return (f"Sweep of {len(self.rows)} jobs ({counts}); {self.ran} built now, "
                f"{self.reused} from earlier records, {self.seconds:.1f} s; baseline: "
                f"pipeline {self.baseline!r}{where}")

    def _cells(self, r: SweepRow) -> list[str]:
        def num(v: Any, fmt: str) -> str:
            return "" if v is None else format(v, fmt)

        return [r.model, r.pipeline, r.status, num(r.build_s, ".2f"), num(r.passes, "d"),
                num(r.kernels, "d"),
                "" if r.peak_bytes is None else _render.human_bytes(r.peak_bytes),
                "" if r.peak_bytes_unplanned is None
                else _render.human_bytes(r.peak_bytes_unplanned),
                num(r.max_abs_diff, ".3g"), r.error]

    _HEADER = ("model", "pipeline", "status", "build s", "passes", "kernels", "peak",
               "peak unplanned", "max |diff|", "error")

    def to_text(self) -> str:
        rows = [c[:-1] + [c[-1][:100]] for c in (self._cells(r) for r in self.rows)]
        return self.summary() + "\n" + _render.text_table(self._HEADER, rows)

    def to_html(self, path: str | os.PathLike | None = None) -> Any:
        """The table as HTML (failures highlighted, links to each job's report); with
        `path`, write an index page there that links every job's report and trace,
        and return the path."""
        if path is None:
            return self._table_html(None)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        title = f"passlab sweep: {len(self.rows)} jobs"
        page = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>"
                f"{_render.esc(title)}</title></head><body style=\"font-family: sans-serif\">"
                f"<h1>{_render.esc(title)}</h1>{self._table_html(path.parent.resolve())}"
                "</body></html>\n")
        return write_file(path, page.encode("utf-8"))  # never through a link at `path`

    def _table_html(self, base: Path | None) -> str:
        def link(target: str | None, text: str) -> str:
            if not target:
                return ""
            href = Path(target).resolve()
            # relative links work in a page (index.html) and in a notebook whose folder
            # holds ``out``; file:// links only where the browser allows them
            here = base if base is not None else Path.cwd()
            shown = (os.path.relpath(href, here) if here in href.parents or base is not None
                     else href.as_uri())
            return f'<a href="{_render.esc(shown)}">{_render.esc(text)}</a>'

        head = "".join(f"<th>{_render.esc(h)}</th>" for h in self._HEADER + ("files",))
        body = []
        for r in self.rows:
            cells = self._cells(r)
            tds = "".join(f'<td class="num">{_render.esc(c)}</td>' if i in range(3, 9)
                          else f"<td>{_render.esc(c)}</td>" for i, c in enumerate(cells))
            files = " ".join(x for x in (link(r.report, "report"), link(r.trace, "trace")) if x)
            cls = "failed" if r.status in _FAILED else ""
            body.append(f'<tr class="{cls}" data-status="{_render.esc(r.status)}">{tds}'
                        f"<td>{files}</td></tr>")
        return (f'<style>{_render.CSS}</style><table class="passlab-table"><caption>'
                f"{_render.esc(self.summary())}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>")

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts.items())
        return f"<Sweep: {len(self.rows)} jobs, {counts}>"


def _row(data: dict[str, Any]) -> SweepRow:
    values: dict[str, Any] = {c: data.get(c) for c in COLUMNS}
    return SweepRow(**values)


# --------------------------------------------------------------------- arguments
def _models(models: Any, trust: bool = False) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(models, Mapping):
        items = [(str(k), model_spec(v, trust)[0]) for k, v in models.items()]
    else:
        if isinstance(models, (str, os.PathLike)) or not isinstance(models, Sequence):
            models = [models]
        items = []
        for i, m in enumerate(models):
            spec, label = model_spec(m, trust)
            items.append((label or f"model{i}", spec))
    labels = [label for label, _ in items]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise SweepError(f"two models are called {twice[0]!r}; give them names with a dict "
                         "({'name': model, ...})")
    if not items:
        raise SweepError("a sweep needs at least one model")
    return items


def _pipelines(pipelines: Any) -> tuple[dict[str, dict[str, Any]], str]:
    """Recipes by name, and the baseline's name (added as "default" when none is the
    unmodified default pipeline)."""
    if isinstance(pipelines, Pipeline) or not isinstance(pipelines, Mapping):
        raise SweepError("pipelines is a dict name -> passlab.Pipeline (or 'fused'/'build'), "
                         "e.g. {'default': Pipeline.default('llvm'), 'mine': pipe}")
    recipes: dict[str, dict[str, Any]] = {}
    for name, pipe in pipelines.items():
        if isinstance(pipe, str):
            pipe = Pipeline.default("llvm", variant=pipe)
        recipes[str(name)] = pipeline_recipe(pipe)
    targets = {r["target"] for r in recipes.values()} or {"llvm"}
    if len(targets) > 1:
        raise SweepError(f"the pipelines are for several targets ({', '.join(sorted(targets))})"
                         "; sweep one target at a time (the baseline is its default pipeline)")
    base = next((n for n, r in recipes.items() if is_baseline(r)), None)
    if base is None:
        base = "default" if "default" not in recipes else "baseline"
        recipes = {base: pipeline_recipe(Pipeline.default(targets.pop())), **recipes}
    return recipes, base


# ------------------------------------------------------------------------- sweep
def sweep(models: Any, pipelines: Mapping[str, Pipeline | str], *, inputs: Any = None,
          workers: int | None = None, executor: Executor | None = None,
          out: str | os.PathLike | None = None, checks: Sequence[Any] = (),
          timeout: float | None = None, profile: bool | int = False,
          progress: bool | Callable[[SweepRow, int, int], None] | None = None,
          trust: bool = False) -> Sweep:
    """Build every model with every pipeline, in parallel, and tabulate the results.

    Parameters
    ----------
    models
        Built-in model names, model file paths, IRModules (or anything
        `passlab.load` takes), as a list or a dict `label -> model`.
    pipelines
        A dict `name -> Pipeline` (or a variant name, "fused" or "build"). The
        unmodified `Pipeline.default(target)` is the baseline for `max_abs_diff`;
        when none of them is, it is added as "default". User passes must be importable
        (defined in a module, not a notebook cell): jobs travel to other processes.
    inputs
        None (random inputs and weights, seed 0, the same for every pipeline), a seed, a
        list of input arrays for every model, or a dict `label -> arrays`.
    workers
        How many of passlab's worker processes to start (an int >= 1; default: the CPU
        count). Checked, then ignored, with `executor`.
    executor
        Any `concurrent.futures.Executor` instead of passlab's workers, e.g. Dask's
        `Client.get_executor()` (Ray ships none). It must not be shared with work that
        needs its workers' full attention: each job runs in a build process its worker
        starts once and reuses.
    out
        A folder that keeps each job's trace (`trace.zip`), report (`report.html`),
        outputs and record (`job.json`); a sweep run again with the same `out` only
        builds jobs without a finished record. `result.to_html(out / "index.html")`
        writes a page linking them all. No file is written through a link: a link (or
        anything but a plain file or folder) where a job's folder or files go is
        refused, naming it.
    checks
        Checks for every build: `passlab.checks.well_formed()`, `no_ops_after(...)`,
        `immutable_modules()` or importable functions `(step) -> str | None`.
    timeout
        Seconds one job may take (a positive number; None: no limit); a job over time is
        killed and becomes a "timeout" row. Its build process also stops itself a few
        seconds after the limit, whatever happens to its worker.
    progress
        None (default): a bar (jobs done of all, failures so far, time left) in Jupyter
        or on a terminal; True: a bar on standard error anyway; False: nothing; a
        callable gets `(row, done, total)` after each job instead.
    profile
        True (or a number of repeats; True is 10) times each build that ran
        (`passlab.Build.profile`, in its build process): the rows get `run_s`,
        the end-to-end median, and `run_s_vs_default`, its ratio to the baseline's.
    trust
        Model files that can run code when read (`.pt2` archives with pickles) are
        refused unless True; see `passlab.load`.

    Returns
    -------
    Sweep
        Rows with the `COLUMNS`; `.to_dataframe()`, `.to_html(path)`.

    Raises
    ------
    SweepError
        A malformed argument (a timeout that is not a positive number, workers that are
        not an int >= 1, an `out` folder that cannot be written or holds a link where a
        job's files go, a pass that cannot travel to a worker ...), before anything is
        built.
    WorkerError
        The worker processes could not start, or the executor's workers all died: the
        message names the cause and the way out; `.sweep` (and `.partial`) holds the
        rows that had finished.
    KeyboardInterrupt
        Ctrl-C stops the sweep within a second: every worker and build process of the
        call is killed, and `.sweep` (and `.partial`) holds the rows that had finished
        (their records stay in `out`, so running the sweep again resumes).

    Notes
    -----
    Each job's files are in `out/<model>-<hash>/<pipeline>-<hash>/` (see
    `job_folder`). A worker that dies (the OOM killer, a pass that kills its parent)
    takes one job with it: that job is a "crashed" row, a fresh worker takes the rest.
    Every process of the call dies with the caller, even when it is killed with
    SIGKILL (see `passlab.research._supervise`).

    passlab's workers are fresh `python -c` processes that import passlab, not your
    program: a script needs no `if __name__ == "__main__":` guard for them, and a
    program read from standard input works (an `executor=` process pool that starts
    workers with "spawn" still needs both).

    Examples
    --------
    >>> import passlab
    >>> result = passlab.sweep(["mlp"], {"default": "fused", "unfused": "build"}, workers=1)
    >>> [(r.pipeline, r.status, r.max_abs_diff < 1e-5) for r in result]
    [('default', 'ok', True), ('unfused', 'ok', True)]
    """
    start = time.perf_counter()
    timeout = check_timeout(timeout)
    workers = check_workers(workers)
    check_executor(executor)
    check_progress(progress)
    if not isinstance(profile, bool) and (not isinstance(profile, int) or profile < 1):
        raise SweepError(f"profile is True, False or a number of repeats (an int >= 1), "
                         f"not {profile!r}")
    if not isinstance(trust, bool):
        raise SweepError(f"trust is True or False, not {trust!r}")
    recipes, base = _pipelines(pipelines)
    check_data = [check_recipe(c) for c in checks]
    folder = None if out is None else Path(out).resolve()
    labelled = _models(models, trust)
    if folder is not None:
        check_out(folder)
    jobs = []
    for label, spec in labelled:
        given = job_inputs(inputs, label)
        for name, recipe in recipes.items():
            job: dict[str, Any] = dict(
                model=label, pipeline=name, model_spec=spec, pipeline_recipe=recipe,
                checks=check_data, inputs=given, timeout=timeout, folder=None)
            if folder is not None:
                parts = [part(label), part(name)]
                job.update(folder=str(folder.joinpath(*parts)), out=str(folder), parts=parts)
                check_links(job)
            if profile:
                job["profile"] = dict(repeat=10 if profile is True else int(profile))
            job["key"] = job_key(job)
            jobs.append(job)
    results: dict[int, tuple[dict[str, Any], list[Any] | None]] = {}
    for i, job in enumerate(jobs):
        found = read_record(job)
        if found is not None:
            results[i] = found
    reused = len(results)
    todo = [i for i in range(len(jobs)) if i not in results]

    def result() -> Sweep:
        outputs = {(jobs[i]["model"], jobs[i]["pipeline"]): results[i][1] for i in results}
        rows = []
        for i, job in enumerate(jobs):
            if i not in results:  # interrupted before it finished
                continue
            row, mine = results[i]
            ref = outputs.get((job["model"], base))
            if mine is not None and ref is not None:
                try:
                    row["max_abs_diff"] = max_abs_diff(tuple(mine), tuple(ref))
                except ValueError:  # the outputs have another structure: no number to give
                    row["max_abs_diff"] = None
            rows.append(_row(row))
        return Sweep(tuple(rows), base, folder, len(results) - reused, reused,
                     time.perf_counter() - start)

    shown = job_bar(progress, len(jobs), reused, "sweep")

    def finish(i: int, row: dict[str, Any]) -> bool:
        outs = row.pop("outputs", None)
        if jobs[i]["folder"] is not None:
            try:
                write_record(jobs[i], row | dict(outputs=outs))
            except OSError as exc:  # a link planted meanwhile, a full disk: the row stays
                note = f"record not written: {type(exc).__name__}: {first_line(exc, 1000)}"
                row["error"] = f"{row['error']}; {note}" if row["error"] else note
        results[i] = (row, outs)
        shown.update(failed=row["status"] != "ok",
                     note=f"{row['model']} / {row['pipeline']}: {row['status']}")
        if callable(progress):
            progress(_row(row), len(results), len(jobs))
        return False

    try:
        run_jobs(jobs, todo, finish, workers=workers, executor=executor)
    except (KeyboardInterrupt, WorkerError) as exc:
        # the workers and their build processes are gone; the rows that finished stay
        # (and their records in `out`, so a rerun resumes)
        shown.close()
        exc.sweep = exc.partial = result()  # type: ignore[union-attr]
        raise
    shown.close()
    return result()
