"""Sweeps: many models times many pipelines, each build in a worker process.

`sweep` builds every model with every pipeline while recording, runs each build on
the same seeded inputs as the baseline (the unmodified default pipeline) and gathers one
row per job: status, failing pass, build time, main-chain length, kernels, peak temporary
memory before and after memory planning, and the largest output difference from the
baseline. Jobs are plain data (`passlab.research._sweep_jobs`), so a local process
pool or a Dask cluster (`client.get_executor()`) can run them; each
runs in a build process watched by its worker, so a crash or a timeout is a row, not the
end of the sweep. With `out=` each job keeps its trace file, its report and a small
JSON record, and running the same sweep again only builds what is missing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import astuple, dataclass, replace
from pathlib import Path
from typing import Any

from passlab import _render
from passlab.errors import SweepError, first_line
from passlab.pipeline import Pipeline
from passlab.recording.build import max_abs_diff
from passlab.research._sweep_jobs import (
    COLUMNS,
    check_recipe,
    empty_row,
    ignore_interrupts,
    is_baseline,
    job_key,
    model_spec,
    pipeline_recipe,
    run_job,
)

__all__ = ["sweep", "Sweep", "SweepRow", "COLUMNS", "job_folder"]

_RECORD = "job.json"
_FORMAT = "passlab-sweep-job"
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
        path.write_text(
            f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{_render.esc(title)}"
            f"</title></head><body style=\"font-family: sans-serif\"><h1>{_render.esc(title)}"
            f"</h1>{self._table_html(path.parent.resolve())}</body></html>\n")
        return path

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


def _inputs(inputs: Any, label: str) -> tuple[int, list[Any] | None]:
    import numpy as np

    if inputs is None:
        return 0, None
    if isinstance(inputs, int):
        return inputs, None
    if isinstance(inputs, Mapping):
        given = inputs.get(label)
        return 0, None if given is None else [np.asarray(a) for a in given]
    return 0, [np.asarray(a) for a in inputs]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:48] or "job"


def job_folder(out: Path, model: str, pipeline: str) -> Path:
    """Where a job keeps its files: `out/<model>-<hash>/<pipeline>-<hash>`. The names
    are cut to safe characters, and the hash of the exact label keeps two labels that
    differ only in the characters cut ("my model", "my_model") in two folders."""
    def part(name: str) -> str:
        return f"{_safe(name)}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"

    return out / part(model) / part(pipeline)


def _check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not math.isfinite(timeout) or timeout <= 0:
        raise SweepError(f"timeout is the seconds one job may take: a positive number (or "
                         f"None for no limit), not {timeout!r}")
    return float(timeout)


def _check_out(folder: Path) -> None:
    """Refuse an `out` folder that cannot be written, before anything is built."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".passlab-probe-"):
            pass
    except OSError as exc:
        raise SweepError(f"out={str(folder)!r} cannot be written ({type(exc).__name__}: "
                         f"{exc.strerror or exc}); give a folder this process can create and "
                         "write (every worker writes its jobs' files there)") from None


# ------------------------------------------------------------------------ records
def _read_record(job: dict[str, Any]) -> tuple[dict[str, Any], list[Any] | None] | None:
    """The row of an earlier run of this very job, if it finished (a timeout counts as
    unfinished when this sweep allows more time)."""
    import numpy as np

    if job["folder"] is None:
        return None
    folder = Path(job["folder"])
    try:
        rec = json.loads((folder / _RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != _FORMAT or rec.get("key") != job["key"]:
        return None
    # the record of this very job: its labels, and files that are still where it says
    if (rec.get("model"), rec.get("pipeline")) != (job["model"], job["pipeline"]) \
            or not isinstance(rec.get("row"), dict):
        return None
    for column in ("trace", "report"):
        kept = rec["row"].get(column)
        if kept is not None and (not isinstance(kept, str) or Path(kept).parent != folder
                                 or not Path(kept).is_file()):
            return None
    if rec["row"].get("status") == "timeout" and (
            job["timeout"] is None or job["timeout"] > (rec.get("timeout") or 0)):
        return None
    outputs = None
    if rec.get("outputs"):
        try:
            with np.load(folder / rec["outputs"], allow_pickle=False) as z:
                outputs = [z[f"arr_{i}"] for i in range(len(z.files))]
        except (OSError, ValueError, KeyError):
            return None
    row = {c: rec["row"].get(c) for c in COLUMNS}
    return row, outputs


def _write_record(job: dict[str, Any], row: dict[str, Any]) -> None:
    folder = Path(job["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    rec = dict(format=_FORMAT, version=1, key=job["key"], model=job["model"],
               pipeline=job["pipeline"], timeout=job["timeout"],
               row={c: row.get(c) for c in COLUMNS},
               outputs="outputs.npz" if row.get("outputs") is not None else None)
    tmp = folder / (_RECORD + ".tmp")
    tmp.write_text(json.dumps(rec, indent=1))
    os.replace(tmp, folder / _RECORD)  # a record is whole or absent


# ------------------------------------------------------------------------- sweep
def _progress(progress: Any) -> Callable[[SweepRow, int, int], None] | None:
    if progress is True:
        def show(row: SweepRow, done: int, total: int) -> None:
            took = "" if row.build_s is None else f" in {row.build_s:.1f} s"
            err = f": {row.error[:80]}" if row.status != "ok" else ""
            print(f"[{done}/{total}] {row.model} / {row.pipeline}: {row.status}{took}{err}",
                  file=sys.stderr, flush=True)
        return show
    return progress or None


def sweep(models: Any, pipelines: Mapping[str, Pipeline | str], *, inputs: Any = None,
          workers: int | None = None, executor: Executor | None = None,
          out: str | os.PathLike | None = None, checks: Sequence[Any] = (),
          timeout: float | None = None, profile: bool | int = False,
          progress: bool | Callable[[SweepRow, int, int], None] = False,
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
        Processes of the local pool (default: the CPU count). Ignored with `executor`.
    executor
        Any `concurrent.futures.Executor` instead of the local pool, e.g. Dask's
        `Client.get_executor()` (Ray ships none). It must not be shared with work that
        needs its workers' full attention: each job runs in a build process its worker
        starts once and reuses.
    out
        A folder that keeps each job's trace (`trace.zip`), report (`report.html`),
        outputs and record (`job.json`); a sweep run again with the same `out` only
        builds jobs without a finished record. `result.to_html(out / "index.html")`
        writes a page linking them all.
    checks
        Checks for every build: `passlab.checks.well_formed()`, `no_ops_after(...)`,
        `immutable_modules()` or importable functions `(step) -> str | None`.
    timeout
        Seconds one job may take (a positive number; None: no limit); a job over time is
        killed and becomes a "timeout" row. Its build process also stops itself a few
        seconds after the limit, whatever happens to its worker.
    progress
        True prints one line per finished job on stderr; a callable gets `(row, done,
        total)`.
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
        A malformed argument (a timeout that is not a positive number, an `out` folder
        that cannot be written, a pass that cannot travel to a worker ...), before
        anything is built.
    KeyboardInterrupt
        Ctrl-C stops the sweep within seconds: the local pool's workers and their build
        processes are killed, and `.sweep` holds the rows that had finished (their
        records stay in `out`, so running the sweep again resumes).

    Notes
    -----
    Each job's files are in `out/<model>-<hash>/<pipeline>-<hash>/` (see
    `job_folder`). A worker process of the local pool that dies (the OOM killer, a
    pass that kills its parent) breaks the pool: the jobs lost with it run again on a
    fresh pool, one at a time, and the job that kills its worker again is a "crashed"
    row. Every build process dies with its worker.

    The local pool starts its workers with "spawn" (TVM and `fork` do not mix), and a
    spawned worker imports the main module: a script that calls `sweep` needs the
    `if __name__ == "__main__":` guard (notebooks need nothing).

    Examples
    --------
    >>> import passlab
    >>> result = passlab.sweep(["mlp"], {"default": "fused", "unfused": "build"}, workers=1)
    >>> [(r.pipeline, r.status, r.max_abs_diff < 1e-5) for r in result]
    [('default', 'ok', True), ('unfused', 'ok', True)]
    """
    start = time.perf_counter()
    timeout = _check_timeout(timeout)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise SweepError(f"workers is how many worker processes to start: an int >= 1 (or "
                         f"None for the CPU count), not {workers!r}")
    if not isinstance(profile, bool) and (not isinstance(profile, int) or profile < 1):
        raise SweepError(f"profile is True, False or a number of repeats (an int >= 1), "
                         f"not {profile!r}")
    recipes, base = _pipelines(pipelines)
    check_data = [check_recipe(c) for c in checks]
    folder = None if out is None else Path(out).resolve()
    labelled = _models(models, trust)
    if folder is not None:
        _check_out(folder)
    jobs = []
    for label, spec in labelled:
        for name, recipe in recipes.items():
            job = dict(model=label, pipeline=name, model_spec=spec, pipeline_recipe=recipe,
                       checks=check_data, inputs=_inputs(inputs, label), timeout=timeout,
                       folder=None if folder is None else str(job_folder(folder, label, name)))
            if profile:
                job["profile"] = dict(repeat=10 if profile is True else int(profile))
            job["key"] = job_key(job)
            jobs.append(job)
    results: dict[int, tuple[dict[str, Any], list[Any] | None]] = {}
    for i, job in enumerate(jobs):
        found = _read_record(job)
        if found is not None:
            results[i] = found
    reused = len(results)
    todo = [i for i in range(len(jobs)) if i not in results]
    show = _progress(progress)

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

    if todo:
        try:
            _run(jobs, todo, results, workers, executor, show, len(jobs) - len(todo))
        except KeyboardInterrupt as exc:
            # Ctrl-C: the workers and their build processes are gone; the rows that
            # finished stay (and their records in ``out``, so a rerun resumes)
            exc.sweep = result()  # type: ignore[attr-defined]
            raise
    return result()


def _lost_row(job: dict[str, Any], why: str) -> dict[str, Any]:
    return empty_row(job["model"], job["pipeline"]) | dict(status="crashed", outputs=None,
                                                           error=why)


def _local_pool(size: int) -> ProcessPoolExecutor:
    import multiprocessing

    # spawn: TVM and fork do not mix (its thread pool and LLVM state are per process);
    # workers ignore Ctrl-C: the sweep's own process decides, and takes them down
    return ProcessPoolExecutor(max_workers=size, mp_context=multiprocessing.get_context("spawn"),
                               initializer=ignore_interrupts)


def _abandon(pool: Executor, own: bool, futures: Mapping[Any, int]) -> None:
    """Stop now: kill a local pool's workers (their build processes die with them), or
    cancel what a foreign executor has not started."""
    for fut in futures:
        fut.cancel()
    if own:
        # ProcessPoolExecutor has no public way to stop running jobs before Python 3.14
        # (terminate_workers); its process table is the same from 3.8 to 3.13
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                proc.kill()
            except (OSError, AttributeError):
                pass
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.join(5)
        pool.shutdown(wait=False, cancel_futures=True)


def _completed(futures: Iterable[Any], poll: float = 0.25) -> Iterator[Any]:
    """The futures as they finish, as `as_completed` yields them, but waiting at most
    `poll` seconds at a time: Python runs a signal's handler in the main thread only,
    and when the kernel hands a Ctrl-C to another thread (one of the executor's, when the
    main thread has SIGINT blocked) an untimed wait sleeps on until the next job ends,
    which for a hanging job is its timeout."""
    order = {fut: n for n, fut in enumerate(futures)}
    left = set(order)
    while left:
        done, left = wait(left, timeout=poll, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=order.__getitem__)  # a batch in submission order


def _run(jobs: list[dict[str, Any]], todo: list[int],
         results: dict[int, tuple[dict[str, Any], list[Any] | None]], workers: int | None,
         executor: Executor | None, show: Any, done: int) -> None:
    """Run the jobs `todo`. On the local pool, jobs lost when a worker process dies (the
    OOM killer, a pass that kills its parent) run again on a fresh pool; a pool of one
    worker runs jobs in order, so there the first lost job is the one that killed it: a
    "crashed" row, and the others run again."""
    own = executor is None
    size = max(1, min(workers or os.cpu_count() or 1, len(todo)))

    def finish(i: int, row: dict[str, Any]) -> None:
        nonlocal done
        outs = row.pop("outputs", None)
        results[i] = (row, outs)
        if jobs[i]["folder"] is not None:
            _write_record(jobs[i], row | dict(outputs=outs))
        done += 1
        if show is not None:
            show(_row(row), done, len(jobs))

    pending = list(todo)
    while pending:
        pool = _local_pool(size) if own else executor
        assert pool is not None
        futures: dict[Any, int] = {}
        lost: list[int] = []
        broken = ""
        try:
            for i in pending:
                futures[pool.submit(run_job, jobs[i])] = i
            for fut in _completed(futures):
                i = futures[fut]
                try:
                    row = fut.result()
                except Exception as exc:  # noqa: BLE001 - the engine lost the job
                    if own and isinstance(exc, BrokenProcessPool):  # run it again
                        lost.append(i)
                        broken = f"{type(exc).__name__}: {first_line(exc)}"
                        continue
                    row = _lost_row(jobs[i], f"the executor lost the job: "
                                             f"{type(exc).__name__}: {first_line(exc)}")
                finish(i, row)
        except BaseException:
            _abandon(pool, own, futures)
            raise
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
        lost.sort()  # submission order
        if lost and size == 1:
            culprit = lost.pop(0)
            finish(culprit, _lost_row(jobs[culprit], (
                "the worker process died while running this job, and its build process "
                f"with it ({broken})")))
        size = 1  # run what was lost one at a time, to tell the culprit
        pending = lost
