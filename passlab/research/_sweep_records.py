"""A sweep's folder: where each job keeps its files, and its record of a finished job.

Each job's files live in `out/<model>-<hash>/<pipeline>-<hash>/`: its trace, report and
outputs (written by its build process, `passlab.research._sweep_build`) and `job.json`,
the record of its row (written here, in the sweep's process, when the row comes back). A
record is read back, never through a link, only for the very job that wrote it (key,
labels, files in place), so that running a sweep again builds only what is missing.
`out` may be shared: nothing here writes or reads through a link (`passlab.io._files`).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from passlab.errors import SweepError, UnsafePathError
from passlab.io._files import Folder
from passlab.research._sweep_jobs import COLUMNS, FILES, job_place

__all__ = ["job_folder", "part", "check_links", "check_out", "read_record", "write_record"]

_RECORD = "job.json"
_FORMAT = "passlab-sweep-job"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:48] or "job"


def part(name: str) -> str:
    return f"{_safe(name)}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def job_folder(out: Path, model: str, pipeline: str) -> Path:
    """Where a job keeps its files: `out/<model>-<hash>/<pipeline>-<hash>`. The names
    are cut to safe characters, and the hash of the exact label keeps two labels that
    differ only in the characters cut ("my model", "my_model") in two folders."""
    return out / part(model) / part(pipeline)


def check_links(job: dict[str, Any]) -> None:
    """Refuse, before anything is built, a job whose folder or files in `out` are links
    (or not plain folders and files): a job never writes through them."""
    root, parts = job_place(job)
    try:
        for depth in range(1, len(parts) + 1):
            with Folder(root, parts[:depth]) as folder:
                if depth == len(parts):
                    for name in (_RECORD, *FILES):
                        folder.check(name)
    except FileNotFoundError:
        return  # not made yet: the job makes it
    except UnsafePathError as exc:
        raise SweepError(f"out: {exc} (a sweep never writes through links in its out "
                         "folder)") from None


def check_out(folder: Path) -> None:
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
_MAX_RECORD = 16 << 20  # bytes of a job.json: a few KiB are written


def read_record(job: dict[str, Any]) -> tuple[dict[str, Any], list[Any] | None] | None:
    """The row of an earlier run of this very job, if it finished (a timeout counts as
    unfinished when this sweep allows more time). Files are read without following
    links; anything unexpected in the folder means "not finished"."""
    if job["folder"] is None:
        return None
    try:
        with Folder(*job_place(job)) as folder:
            return _record_in(job, folder)
    except (OSError, ValueError, KeyError, MemoryError):
        return None


def _record_in(job: dict[str, Any], folder: Folder
               ) -> tuple[dict[str, Any], list[Any] | None] | None:
    import numpy as np

    raw = folder.read(_RECORD, _MAX_RECORD)
    rec = None if raw is None else json.loads(raw)
    if not isinstance(rec, dict) or rec.get("format") != _FORMAT or rec.get("key") != job["key"]:
        return None
    # the record of this very job: its labels, and files that are still where it says
    if (rec.get("model"), rec.get("pipeline")) != (job["model"], job["pipeline"]) \
            or not isinstance(rec.get("row"), dict):
        return None
    here = Path(job["folder"])
    for column in ("trace", "report"):
        kept = rec["row"].get(column)
        if kept is not None and (not isinstance(kept, str) or Path(kept).parent != here
                                 or not folder.check(Path(kept).name)):
            return None
    if rec["row"].get("status") == "timeout" and (
            job["timeout"] is None or job["timeout"] > (rec.get("timeout") or 0)):
        return None
    outputs = None
    if rec.get("outputs"):
        if rec["outputs"] != "outputs.npz":
            return None
        data = folder.read("outputs.npz")
        if data is None:
            return None
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            outputs = [z[f"arr_{i}"] for i in range(len(z.files))]
    row = {c: rec["row"].get(c) for c in COLUMNS}
    return row, outputs


def write_record(job: dict[str, Any], row: dict[str, Any]) -> None:
    """`job.json` in the job's folder, whole or absent, never through a link."""
    rec = dict(format=_FORMAT, version=1, key=job["key"], model=job["model"],
               pipeline=job["pipeline"], timeout=job["timeout"],
               row={c: row.get(c) for c in COLUMNS},
               outputs="outputs.npz" if row.get("outputs") is not None else None)
    with Folder(*job_place(job), create=True) as folder:
        folder.write(_RECORD, json.dumps(rec, indent=1).encode())
