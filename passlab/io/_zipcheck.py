"""The zip container of a saved trace, checked before `zipfile` reads it.

CPython's zipfile parses the whole central directory (however many entries the bytes
hold: the entry count of the end record is not used), inflates bzip2 and lzma members in
one call whatever they expand to, and raises `RuntimeError` for an encrypted member.
`check_container` walks the directory itself, exactly as zipfile will (from the end
record's size and position), stops after `MAX_MEMBERS`
entries, and refuses encrypted members, compression methods other than stored and
deflate, duplicate names and zip64 archives (passlab never writes one: its members are
far below 2 GiB). Reading is bounded by the file's own size.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import BinaryIO

from passlab.errors import TraceFileError

__all__ = ["check_container", "METHODS"]

#: Compression methods a trace member may use: stored and deflate (what passlab writes).
METHODS = {0: "stored", 8: "deflate"}
_NAMES = {12: "bzip2", 14: "lzma", 9: "deflate64", 93: "zstandard", 95: "xz", 98: "ppmd"}
_END = struct.Struct("<4s4H2LH")  # signature, disk numbers, entries, size, offset, comment
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry's fixed part
_ZIP64_LOCATOR = b"PK\x06\x07"


def _end_record(fh: BinaryIO, size: int) -> tuple[int, tuple]:
    """(offset, fields) of the end-of-central-directory record, found as zipfile finds it."""
    if size >= _END.size:
        fh.seek(size - _END.size)
        data = fh.read(_END.size)
        if data[:4] == b"PK\x05\x06" and data[-2:] == b"\x00\x00":
            return size - _END.size, _END.unpack(data)
    start = max(0, size - (1 << 16) - _END.size)
    fh.seek(start)
    tail = fh.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) < at + _END.size:
        return -1, ()
    return start + at, _END.unpack(tail[at:at + _END.size])


def check_container(path: os.PathLike | str, limit: int,
                    bad: Callable[[str], TraceFileError]) -> None:
    """Refuse an archive zipfile should not parse: more than `limit` directory entries
    (counted in the directory, not taken from the end record), encrypted members,
    methods other than stored/deflate, duplicate member names, zip64. `bad(why)` builds
    the error. An archive without an end record is left to zipfile (it says what is
    wrong)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        at, end = _end_record(fh, size)
        if at < 0:
            return
        if at >= 20:
            fh.seek(at - 20)
            if fh.read(4) == _ZIP64_LOCATOR:
                raise bad("it is a zip64 archive; a trace is a plain zip archive of two "
                          "members")
        cd_size, cd_offset = end[5], end[6]
        if cd_size > at or cd_offset + cd_size != at:
            raise bad(f"its central directory ({cd_size:,} bytes at {cd_offset:,}) does "
                      f"not end where the end record starts ({at:,}) in a file of "
                      f"{size:,} bytes")
        fh.seek(at - cd_size)
        names: set[str] = set()
        pos = count = 0
        while pos < cd_size:
            head = fh.read(_ENTRY.size)
            if len(head) < _ENTRY.size or head[:4] != b"PK\x01\x02":
                return  # zipfile says "bad magic number for central directory"
            e = _ENTRY.unpack(head)
            flags, method, name_len, extra_len, comment_len = e[5], e[6], e[12], e[13], e[14]
            count += 1
            if count > limit:
                raise bad(f"the archive holds more than {limit} members; a trace has 2 and "
                          f"passlab reads at most {limit} (passlab.io.validate.MAX_MEMBERS)")
            raw = fh.read(name_len)
            name = raw.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
            if flags & 0x41:  # traditional or strong encryption
                raise bad(f"its member {name!r:.80} is encrypted; a trace's members are not")
            if method not in METHODS:
                kind = _NAMES.get(method, f"method {method}")
                raise bad(f"its member {name!r:.80} is compressed with {kind}; passlab reads "
                          "stored and deflate members only (what trace.save writes)")
            if name in names:
                raise bad(f"it holds two members named {name!r:.80}")
            names.add(name)
            fh.seek(extra_len + comment_len, os.SEEK_CUR)
            pos += _ENTRY.size + name_len + extra_len + comment_len
