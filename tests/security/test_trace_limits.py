"""Bounded resources on any trace file: zip members are capped while they inflate, the
number of members is capped, and every number in trace.json that sizes something is
checked on load, so that a small file can neither exhaust memory nor fail later with a
TypeError or AttributeError."""

from __future__ import annotations

import copy
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from passlab.io import TraceFileError, load_trace, save_trace
from passlab.io import validate as limits

RIGHT = ("A trace file is the zip archive written by trace.save(path) (format "
         "'passlab-trace', version 1 or lower).")


@pytest.fixture(scope="module")
def saved(mlp_build, tmp_path_factory) -> Path:
    return save_trace(mlp_build.trace, tmp_path_factory.mktemp("limits") / "mlp.trace.zip")


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def rewrite(saved: Path, out: Path, meta=None, extra: dict[str, bytes] | None = None) -> Path:
    m = members(saved)
    if meta is not None:
        data = json.loads(m["trace.json"])
        meta(data)
        m["trace.json"] = json.dumps(data).encode()
    m.update(extra or {})
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in m.items():
            z.writestr(name, data)
    return out


def error(path: Path) -> str:
    with pytest.raises(TraceFileError) as err:
        load_trace(path)
    return str(err.value)


# ---------------------------------------------------------------------- zip bombs
def deflated_spaces(mib: int) -> bytes:
    """A raw deflate stream of ``mib`` MiB of spaces, built without compressing them all:
    after a full flush the compressor's state is reset, so each MiB compresses to the
    same bytes."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = co.compress(b" " * 2**20) + co.flush(zlib.Z_FULL_FLUSH)
    return block * mib + co.flush()


def raw_zip(path: Path, entries: list[tuple[str, bytes, int, bool]]) -> Path:
    """A zip archive written by hand: (name, stored bytes, declared size, deflated).
    The declared uncompressed size may lie; CRCs are not computed (a lying member is
    never read to its end)."""
    out, central = bytearray(), bytearray()
    for name, data, size, deflated in entries:
        method, crc, raw = (8 if deflated else 0), zlib.crc32(data) if not deflated else 0, \
            name.encode()
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(data),
                           size, len(raw), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc,
                               len(data), size, len(raw), 0, 0, 0, 0, 0, len(out)) + raw
        out += head + raw + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                      len(out), 0)
    path.write_bytes(bytes(out + central + end))
    return path


_MEASURE = """
import resource, sys, time
import tvm, tvm_ffi.serialization
from passlab.io import TraceFileError, load_trace
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    load_trace(sys.argv[1])
    print("loaded")
except TraceFileError as exc:
    print("refused", time.perf_counter() - t0,
          resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, str(exc), sep="\\n")
"""


def measure(path: Path) -> tuple[float, float, str]:
    """Load ``path`` in a fresh process: (seconds, KiB of peak RSS growth, message)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True,
                         text=True, timeout=300, check=True).stdout.split("\n", 3)
    assert out[0] == "refused", out
    return float(out[1]), float(out[2]), out[3].strip()


@pytest.mark.slow
def test_zip_bomb_is_refused_quickly_with_bounded_memory(saved, tmp_path):
    bomb = deflated_spaces(1100)  # 1.1 MiB that inflate to 1,100 MiB
    assert len(bomb) < 1.2 * 2**20
    trace_json = members(saved)["trace.json"]
    honest = raw_zip(tmp_path / "bomb.zip", [("trace.json", trace_json, len(trace_json), False),
                                             ("ir.json", bomb, 1100 * 2**20, True)])
    seconds, kib, msg = measure(honest)
    assert msg == (f"{honest} is not a readable passlab trace: its ir.json inflates to more "
                   f"than {limits.MAX_IR_JSON_BYTES:,} bytes, the most passlab reads "
                   f"(passlab.io.validate.MAX_IR_JSON_BYTES). {RIGHT}")
    assert seconds < 5 and kib < 50 * 1024
    # a header that lies about the size: inflating stops at the declared size
    liar = raw_zip(tmp_path / "liar.zip", [("trace.json", trace_json, len(trace_json), False),
                                           ("ir.json", bomb, 1000, True)])
    seconds, kib, msg = measure(liar)
    assert msg.startswith(f"{liar} is not a readable passlab trace: it is not a complete zip "
                          "archive (Bad CRC-32 for file 'ir.json')")
    assert seconds < 5 and kib < 50 * 1024
    # and trace.json has its own, smaller cap
    meta_bomb = raw_zip(tmp_path / "meta.zip", [("trace.json", bomb, 1100 * 2**20, True)])
    assert error(meta_bomb) == (
        f"{meta_bomb} is not a readable passlab trace: its trace.json inflates to more than "
        f"{limits.MAX_TRACE_JSON_BYTES:,} bytes, the most passlab reads "
        f"(passlab.io.validate.MAX_TRACE_JSON_BYTES). {RIGHT}")


def test_member_is_capped_while_it_inflates(saved, tmp_path, monkeypatch):
    # the streaming check on its own: the header says 10 bytes (within the cap) and the
    # reader, unlike CPython's zipfile, does not stop there (simulated by opening the
    # member through its true directory entry)
    path = rewrite(saved, tmp_path / "t.zip")
    real_getinfo, real_open = zipfile.ZipFile.getinfo, zipfile.ZipFile.open

    def lying_getinfo(self, name):
        info = copy.copy(real_getinfo(self, name))
        info.file_size = 10
        return info

    def open_in_full(self, name, *args, **kwargs):
        return real_open(self, real_getinfo(self, getattr(name, "filename", name)), *args,
                         **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "getinfo", lying_getinfo)
    monkeypatch.setattr(zipfile.ZipFile, "open", open_in_full)
    monkeypatch.setattr(limits, "MAX_IR_JSON_BYTES", 100_000)
    assert error(path) == (
        f"{path} is not a readable passlab trace: its ir.json inflates to more than 100,000 "
        f"bytes, the most passlab reads (passlab.io.validate.MAX_IR_JSON_BYTES). {RIGHT}")


def test_too_many_members(saved, tmp_path):
    junk = {f"junk{k}.txt": b"x" for k in range(limits.MAX_MEMBERS)}
    path = rewrite(saved, tmp_path / "many.zip", extra=junk)
    assert error(path) == (
        f"{path} is not a readable passlab trace: the archive holds more than "
        f"{limits.MAX_MEMBERS} members; a trace has 2 and passlab reads at most "
        f"{limits.MAX_MEMBERS} (passlab.io.validate.MAX_MEMBERS). {RIGHT}")
    # the directory is counted, not the end record's claim: 65,535 or 2 alike
    for claim in (65535, 2):
        claims = bytearray(path.read_bytes())
        at = claims.rfind(b"PK\x05\x06")
        claims[at + 8:at + 12] = struct.pack("<HH", claim, claim)
        fake = tmp_path / f"claims{claim}.zip"
        fake.write_bytes(bytes(claims))
        assert f"the archive holds more than {limits.MAX_MEMBERS} members" in error(fake)
    ok = rewrite(saved, tmp_path / "few.zip",
                 extra={f"junk{k}.txt": b"x" for k in range(limits.MAX_MEMBERS - 2)})
    assert len(load_trace(ok)) == len(load_trace(saved))


# ----------------------------------------------------------------- trace.json
def _step(n: int, **values):
    def edit(d):
        d["steps"][n].update(values)
    return edit


BAD_NUMBERS = [
    # (edit, exact message after "trace.json: ")
    (_step(5, depth=10**9), "step 5 has depth 1000000000, not an integer in 0..5 (a step is "
                            "nested in steps that started before it)"),
    (_step(5, depth=-1), "step 5 has depth -1, not an integer in 0..5 (a step is nested in "
                         "steps that started before it)"),
    (_step(5, depth=2.5), "step 5 has depth 2.5, not an integer in 0..5 (a step is nested in "
                          "steps that started before it)"),
    (_step(5, parent=10**9), "step 5 has parent 1000000000: a nested step's parent is the "
                             "index of an earlier step, a top-level step (depth 0) has none"),
    (_step(0, index=-3), f"step record 0 has index -3, not an integer in "
                         f"0..{limits.MAX_STEPS - 1}"),
    (_step(4, index=3), "step record 4 has index 3, not above the previous one (3): steps "
                        "are saved in order"),
    (_step(3, index=10**12), f"step record 3 has index 1000000000000, not an integer in "
                             f"0..{limits.MAX_STEPS - 1}"),
    (_step(4, occurrence=10**9), "step 4 has occurrence 1000000000, not an integer in 0..4"),
    (_step(4, seconds=-1.0), "step 4 has seconds -1.0, not a non-negative number (only a "
                             "failed step or an LLVM step, whose passes are not timed, may have null)"),
    (_step(4, seconds=None), "step 4 has seconds None, not a non-negative number (only a "
                             "failed step or an LLVM step, whose passes are not timed, may have null)"),
    (_step(4, seconds="fast"), "step 4 has seconds 'fast', not a non-negative number (only a "
                               "failed step or an LLVM step, whose passes are not timed, may have null)"),
    (_step(4, seconds=float("inf")), "step 4 has seconds inf, not a non-negative number "
                                     "(only a failed step or an LLVM step, whose passes are not timed, may have null)"),
    (_step(4, before=75), "step 4's 'before' is 75, not null or a module id in 0..74"),
    (_step(4, after=-1), "step 4's 'after' is -1, not null or a module id in 0..74"),
    (_step(4, failed="no"), "step 4's 'failed' is not true or false"),
    (_step(4, kind="wrapper"), "step 4 has kind 'wrapper' and origin 'tvm': kinds are pass, "
                               "container, inner, origins tvm, user"),
    (lambda d: d.update(input=10**9), "'input' is 1000000000, not null or a module id in "
                                      "0..74"),
    (lambda d: d.update(steps={"0": {}}), "'steps' is not a list of step records"),
]


@pytest.mark.parametrize("edit,message", BAD_NUMBERS, ids=[m[:40] for _, m in BAD_NUMBERS])
def test_every_number_that_sizes_something_is_checked(saved, tmp_path, edit, message):
    path = rewrite(saved, tmp_path / "bad.zip", meta=edit)
    assert error(path) == f"{path} is not a readable passlab trace: trace.json: {message}. {RIGHT}"


def test_depth_of_a_billion_is_refused_before_any_view(saved, tmp_path):
    # the file of issue 11: to_text(all_steps=True) indented by depth and allocated
    # until the machine killed it
    path = rewrite(saved, tmp_path / "deep.zip", meta=_step(7, depth=10**9))
    assert "step 7 has depth 1000000000" in error(path)


WRONG_TYPES = [
    (lambda d: d.update(failure="oops"), "'failure' is not an object or null"),
    (lambda d: d.update(failure={"where": "pass", "message": "m", "error_type": "E",
                                 "step": "x"}),
     "failure 'step' is 'x', not null or a step index"),
    (lambda d: d.update(failure={"where": "somewhere", "message": "m", "error_type": "E"}),
     "failure 'where' is 'somewhere', not one of pass, codegen, setup"),
    (lambda d: d.update(failure={"where": "pass", "message": 3, "error_type": "E"}),
     "failure 'message', 'error_type' and 'note' are not all strings"),
    (lambda d: d.update(failure={"where": "pass", "message": "m", "error_type": "E",
                                 "enclosing": "abc"}),
     "failure 'enclosing' is not a list of pass names"),
    (lambda d: d.update(failure={"where": "pass", "message": "m", "error_type": "E",
                                 "step": 10**4}),
     "failure step 10000 is neither a saved step nor given by a 'step_record'"),
    (lambda d: d.update(versions=[1, 2]), "'versions' is not an object of names to version "
                                          "strings"),
    (lambda d: d.update(versions={"apache-tvm": 27}), "'versions' is not an object of names "
                                                      "to version strings"),
    (lambda d: d.update(warnings="careful"), "'warnings' is not a list of strings"),
    (lambda d: d.update(target=7), "'target' is not a string, an object or null"),
    (lambda d: d.update(meta=[1]), "'meta' is not an object"),
    (lambda d: d.update(meta={"notes": 5}), "meta 'notes' is not a list of strings"),
    (lambda d: d.update(meta={"kernels_reused": "yes"}), "meta 'kernels_reused' is not true "
                                                         "or false"),
    (lambda d: d.update(pipeline={"stages": 3}), "'pipeline' is not null or an object with "
                                                 "target, variant and a list of stages"),
]


@pytest.mark.parametrize("edit,message", WRONG_TYPES, ids=[m[:40] for _, m in WRONG_TYPES])
def test_fields_of_the_wrong_type_are_refused_at_load_time(saved, tmp_path, edit, message):
    path = rewrite(saved, tmp_path / "bad.zip", meta=edit)
    assert error(path) == f"{path} is not a readable passlab trace: trace.json: {message}. {RIGHT}"


def test_a_failed_step_may_have_null_seconds(saved, tmp_path):
    path = rewrite(saved, tmp_path / "failed.zip", meta=_step(4, seconds=None, failed=True))
    t = load_trace(path)
    assert (t[4].seconds, t[4].failed) == (None, True)
    assert "failed" in t.to_text(all_steps=True)
