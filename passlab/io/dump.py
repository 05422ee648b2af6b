"""DumpIR-style folders: the module after each pass as numbered TVMScript files.

A dump never touches files it did not write: the folder's manifest
(`.passlab-dump.json`) lists what an earlier dump wrote, and only those files are
replaced. A non-empty folder without a manifest is refused unless `overwrite=True`
(then files of the same names are replaced and the rest are kept). The new dump is
written into a temporary folder next to the target and moved in at the end, so a
failure half-way leaves the earlier dump as it was. Names come from IR and pass names:
file names are cut to a safe length (with a short hash), header comments are escaped
to one line each, and a module whose names are not plain identifiers is written as
comments, so that no dump file runs code. No file is written through a symbolic link:
each is created new (`O_EXCL | O_NOFOLLOW`) in the temporary folder and renamed over
the old name, which replaces a link instead of writing to its target, and a folder whose
manifest is a link is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from passlab.io._files import write_new as _write_new
from passlab.io.reproducer import unsafe_string
from passlab.recording.trace import Trace

__all__ = ["export_dump", "MANIFEST"]

#: The file that lists what a dump wrote (and may therefore replace next time).
MANIFEST = ".passlab-dump.json"
_MAX_NAME = 60  # characters of a pass label in a file name; far below any file system's limit


def _safe(name: str) -> str:
    """A file-name part for a pass label: ASCII letters, digits, `_` and `-`; long or
    rewritten names keep a short hash of the original so that two never collide."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "pass"
    if len(safe) > _MAX_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[:_MAX_NAME - 9]}_{digest}"
    return safe


def _one_line(text: str | None) -> str:
    """`text` for a comment: control characters (newlines too) escaped as in `repr`."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _earlier(out: Path, overwrite: bool) -> list[Path]:
    """Files of an earlier dump in `out` (to replace); refuses a foreign folder."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise NotADirectoryError(f"{out} is a file, not a folder: give trace.dump() a folder")
    manifest = out / MANIFEST
    if manifest.is_symlink():
        raise FileExistsError(
            f"{manifest} is a symbolic link (to {os.readlink(manifest)!r}), not a manifest "
            "passlab wrote; a dump never reads or writes through links: remove the link, or "
            "dump into a new folder")
    if manifest.is_file():
        try:
            names = json.loads(manifest.read_text()).get("files", [])
        except (ValueError, AttributeError):
            names = []
        # only plain names inside this folder, whatever the manifest says
        return [out / n for n in names if isinstance(n, str) and n == Path(n).name
                and n not in ("", ".", "..")]
    if any(out.iterdir()) and not overwrite:
        raise FileExistsError(
            f"{out} is not empty and holds no passlab dump (no {MANIFEST}); dump into a new "
            "or empty folder, or pass overwrite=True to write into it anyway (files of the "
            "same names are replaced, other files are kept)")
    return []


def export_dump(trace: Trace, folder: str | os.PathLike, *, all_steps: bool = False,
                overwrite: bool = False) -> tuple[Path, ...]:
    """Write the module after each pass as numbered TVMScript files, for diff tools.

    `000_input.py` is the module the build started from; then one file per pass of
    the main chain that changed the module (`all_steps=True`: every main-chain pass
    that finished), numbered in order (`001_LegalizeOps.py`, ...), each headed by a
    comment naming the step. `passes.txt` holds the pass table and, for a failed
    build, `failure.txt` what failed. The files of an earlier dump into `folder`
    are replaced; other files are never deleted.

    Raises
    ------
    FileExistsError
        `folder` holds files but no earlier dump, and `overwrite` is False.

    Examples
    --------
    >>> import tempfile, passlab
    >>> from passlab.io import export_dump
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> files = export_dump(trace, tempfile.mkdtemp())
    >>> [f.name for f in files[:3]]
    ['000_input.py', '001_LegalizeOps.py', '002_AnnotateTIROpPattern.py']
    """
    out = Path(folder)
    old = _earlier(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".passlab-dump-", dir=out.parent))
    try:
        names = _write_all(trace, tmp, all_steps)
        out.mkdir(exist_ok=True)
        for path in old:
            if path.is_file() or path.is_symlink():
                path.unlink()
        _write_new(tmp / MANIFEST, json.dumps({"written_by": "passlab", "files": names},
                                              indent=1) + "\n")
        for name in [*names, MANIFEST]:
            os.replace(tmp / name, out / name)  # replaces a link by that name, not its target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tuple(out / n for n in names if n.endswith(".py"))


def _write_all(trace: Trace, out: Path, all_steps: bool) -> list[str]:
    main = [s for s in trace if s.on_main_chain and s.after is not None
            and (all_steps or s.changed)]
    first = trace.input if trace.input is not None else next(
        (s.before for s in trace if s.on_main_chain), None)
    width = max(3, len(str(len(main))))
    written: list[str] = []
    head = f"# target {_one_line(trace.target)}"
    if first is not None:
        written.append(_write_module(out / f"{0:0{width}d}_input.py", first,
                                     f"# passlab dump: the input module\n{head}"))
    for n, s in enumerate(main, 1):
        ch = s.functions_changed
        what = "; ".join(f"{k}: {', '.join(v)}" for k, v in
                         (("added", ch.added), ("removed", ch.removed), ("modified", ch.modified))
                         if v) or ("module attributes changed" if ch.attrs else "no change")
        ms = "" if s.seconds is None else f", {s.seconds * 1e3:.2f} ms"
        text = (f"# passlab dump: after step #{s.index} {_one_line(s.label)} (stage "
                f"{_one_line(s.stage)}, {_one_line(s.origin)} pass{ms})\n"
                f"# {_one_line(what)}\n{head}")
        written.append(_write_module(out / f"{n:0{width}d}_{_safe(s.label)}.py", s.after, text))
    _write_new(out / "passes.txt", trace.to_text() + "\n")
    written.append("passes.txt")
    if trace.failure is not None:
        _write_new(out / "failure.txt", trace.failure.to_text() + "\n")
        written.append("failure.txt")
    return written


def _write_module(path: Path, mod: Any, header: str) -> str:
    try:
        bad = unsafe_string(mod)
        body = mod.script()
    except Exception as exc:  # noqa: BLE001 - one unprintable module must not stop a dump
        bad, body = None, (f"# could not print this module as TVMScript: "
                           f"{_one_line(f'{type(exc).__name__}: {exc}')}")
    if bad is not None:
        # TVM prints names raw: a name with a newline would make code lines
        body = ("# this module holds names that are not plain identifiers (e.g. "
                f"{_one_line(repr(bad[:60]))}), so it is written as comments only\n"
                + "\n".join(f"# {_one_line(line)}" for line in body.splitlines()))
    _write_new(path, f"{header}\n\n{body}\n")
    return path.name
