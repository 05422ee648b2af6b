"""Issue 22, saved traces: sub-byte tensors, memory bombs, long strings and surrogates,
accepted-but-unusable IR, zip containers, format versions, and traces passlab itself
writes (cumsum kernels, weights, long source names) that must load back."""

from __future__ import annotations

import base64
import bz2
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trace_mutants import load_error as error
from trace_mutants import read_members, write_members
from trace_mutants import with_ir as edit_ir

import passlab
from passlab._tvm.tensors import tensor_bytes
from passlab.io import TraceFileError, load_trace, save_trace
from passlab.io import validate as limits

RIGHT = ("A trace file is the zip archive written by trace.save(path) (format "
         "'passlab-trace', version 1 or lower).")
#: The memory and time any trace file may take to load and render (README, security).
BUDGET_BYTES, BUDGET_SECONDS = 1 << 30, 60


@pytest.fixture(scope="module")
def saved(mlp_build, tmp_path_factory) -> Path:
    return save_trace(mlp_build.trace, tmp_path_factory.mktemp("trust2") / "mlp.trace.zip")


@pytest.fixture(scope="module")
def with_tensors(tmp_path_factory) -> tuple[passlab.Build, Path]:
    """The MLP with its weights bound as constants (6 tensor constants)."""
    build = passlab.build(passlab.models.with_constant_weights(passlab.models.mlp()))
    return build, build.trace.save(tmp_path_factory.mktemp("trust2") / "weights.trace.zip")


def edit_meta(src: Path, out: Path, edit) -> Path:
    m = read_members(src)
    data = json.loads(m["trace.json"])
    edit(data)
    m["trace.json"] = json.dumps(data).encode()
    return write_members(out, m)


def first(nodes, type_key: str) -> int:
    return next(i for i, n in enumerate(nodes) if n["type"] == type_key)


# ----------------------------------------------------------- 1. sub-byte tensors
def _tensor(code: int, bits: int, count: int, nbytes: int) -> dict:
    """An ffi.Tensor node in TVM's saved form: ``count`` elements of (code, bits), with
    ``nbytes`` of data declared and present."""
    blob = struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 1, code, bits, 1) + \
        struct.pack("<qq", count, nbytes) + b"\x07" * nbytes
    return {"type": "ffi.Tensor", "data": base64.b64encode(blob).decode()}


_CHILD = """
import gc, sys
import passlab
from passlab.errors import TraceFileError
for path in sys.argv[1:]:
    try:
        passlab.load_trace(path)
        print("loaded")
    except TraceFileError as exc:
        print("refused:", str(exc).split(": ", 1)[1][:160])
junk = [bytearray(n % 200) for n in range(300000)]  # a corrupt heap shows in malloc/free
del junk
gc.collect()
print("healthy")
"""


def test_sub_byte_tensor_is_refused_and_the_process_stays_healthy(saved, tmp_path):
    # issue 22: 64 elements of int4 with 64 bytes declared passed the check, TVM allocated
    # 32 bytes and copied 64: "free(): invalid next size" in the parent soon after (every
    # node is checked, so the tensor need not be referenced)
    files = []
    for name, code, bits in (("bool1", 1, 1), ("int4", 0, 4), ("uint4", 1, 4), ("int6", 0, 6)):
        def edit(nodes, code=code, bits=bits):
            nodes.append(_tensor(code, bits, 64, 64))
        files.append(str(edit_ir(saved, tmp_path / f"{name}.zip", edit)))
    out = subprocess.run([sys.executable, "-c", _CHILD, *files], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "free()" not in out.stderr and "corrupt" not in out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "healthy"
    names = ["uint1", "int4", "uint4", "int6"]
    for line, name in zip(lines[:4], names):
        assert line.startswith("refused: ir.json node ")
        assert f"(ffi.Tensor): a {name} tensor of shape [64] cannot be loaded safely: TVM " \
               f"would copy 64 bytes into the {(64 * int(name[-1]) + 7) // 8} it allocates" \
               in line


@pytest.mark.parametrize("bits,lanes,shape,ok", [
    (32, 1, (4, 8), True), (8, 1, (3,), True), (16, 1, (), True), (4, 1, (1,), True),
    (4, 1, (2,), False), (1, 1, (64,), False), (6, 1, (5,), False), (12, 1, (2,), False),
    (32, 4, (2,), False), (4, 1, (0, 9), True)])
def test_byte_counts_are_tvms(bits, lanes, shape, ok):
    # copied = prod(shape) * ceil(bits / 8) (SaveDLTensor, Tensor::Load); allocated =
    # ceil(prod(shape) * bits * lanes / 8) (GetDataSize): accepted only when they agree
    copied, allocated = tensor_bytes(bits, lanes, shape)
    assert (copied == allocated) is ok


def test_a_tensor_whose_bytes_fit_still_loads(saved, tmp_path):
    def edit(nodes):
        nodes.append(_tensor(0, 4, 1, 1))  # one int4: 1 byte, copied and allocated
        nodes.append(_tensor(2, 32, 3, 12))

    loaded = load_trace(edit_ir(saved, tmp_path / "one.zip", edit))
    assert len(loaded) == len(load_trace(saved))


# --------------------------------------------------------------- 2. memory bombs
def _bomb_stream(pattern: bytes, mib: int) -> tuple[bytes, int, int]:
    """(raw deflate stream, size, CRC-32) of ``mib`` blocks of ~1 MiB of ``pattern``,
    built without compressing it all (a full flush resets the compressor, so each block
    compresses to the same bytes)."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = pattern * (2**20 // len(pattern))
    once = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    return once * mib + co.flush(), len(block) * mib, crc


def _raw_zip(path: Path, entries: list[tuple[str, bytes, int, int, int]]) -> Path:
    """(name, stored bytes, uncompressed size, method, crc) per member, written by hand."""
    out, central = bytearray(), bytearray()
    for name, data, size, method, crc in entries:
        raw = name.encode()
        out_at = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(data), size,
                           len(raw), 0) + raw + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0, crc,
                               len(data), size, len(raw), 0, 0, 0, 0, 0, out_at) + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                      len(out), 0)
    path.write_bytes(bytes(out + central + end))
    return path


def _bombs(saved: Path, folder: Path) -> dict[str, Path]:
    """The worst file of each kind, each small."""
    m = read_members(saved)
    meta = m["trace.json"]

    def stored(name: str, data: bytes) -> tuple[str, bytes, int, int, int]:
        co = zlib.compressobj(9, zlib.DEFLATED, -15)
        return name, co.compress(data) + co.flush(), len(data), 8, zlib.crc32(data)

    ir_bomb, ir_size, ir_crc = _bomb_stream(b"[],", 180)  # 180 MiB of empty lists
    meta_bomb, meta_size, meta_crc = _bomb_stream(b"[],", 60)
    out = {
        "ir values": _raw_zip(folder / "ir_values.zip", [
            stored("trace.json", meta), ("ir.json", ir_bomb, ir_size, 8, ir_crc)]),
        "trace values": _raw_zip(folder / "meta_values.zip", [
            ("trace.json", meta_bomb, meta_size, 8, meta_crc)]),
        "bzip2": folder / "bzip2.zip", "long name": folder / "name.zip",
    }
    zeros = bz2.compress(b"\0" * (64 * 2**20), 9)
    _raw_zip(out["bzip2"], [stored("trace.json", meta),
                            ("ir.json", zeros, 64 * 2**20, 12, 0)])

    def long_name(nodes):  # one 16 MiB function name
        nodes[nodes[first(nodes, "ir.GlobalVar")]["data"]["name_hint"]]["data"] = "f" * 2**24
    edit_ir(saved, out["long name"], long_name)

    def many_steps(data):  # as many top-level steps as a trace may have
        top = [r for r in data["steps"] if r["depth"] == 0]
        data["steps"] = [dict(top[k % len(top)], index=k, occurrence=0)
                         for k in range(limits.MAX_STEPS)]
        data["failure"] = None
    out["many steps"] = edit_meta(saved, folder / "steps.zip", many_steps)
    return out


_BUDGET_CHILD = """
import resource, sys, time
import passlab, tvm
from passlab.errors import TraceFileError
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
budget, start = int(sys.argv[1]), vm()
resource.setrlimit(resource.RLIMIT_AS, (start + budget, resource.RLIM_INFINITY))
for path in sys.argv[2:]:
    t0 = time.perf_counter()
    try:
        t = passlab.load_trace(path)
        t.to_text(); t.to_html()
        outcome = "loaded"
    except TraceFileError as exc:
        outcome = "refused " + str(exc).split(": ", 1)[1][:200]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{time.perf_counter() - t0:.1f}", outcome, f"(peak RSS {peak} MiB)", flush=True)
"""


@pytest.mark.slow
def test_the_worst_file_of_each_kind_stays_within_the_budget(saved, tmp_path):
    # each ran past 1 GiB before: bzip2 inflated in one call (4 GiB), `[],[],...` parsed
    # whole (4.2 GiB), a 16 MiB name printed and wrapped (3 GiB)
    bombs = _bombs(saved, tmp_path)
    assert all(p.stat().st_size < 600_000 for p in bombs.values())
    out = subprocess.run([sys.executable, "-c", _BUDGET_CHILD, str(BUDGET_BYTES),
                          *map(str, bombs.values()), str(saved)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert len(lines) == len(bombs) + 1, out.stdout
    for line in lines:
        assert float(line.split()[0]) < BUDGET_SECONDS
    why = [line.split(" ", 2)[2] if line.split()[1] == "refused" else "loaded" for line in lines]
    assert why[0].startswith(f"its ir.json holds more than {limits.MAX_IR_JSON_VALUES:,} JSON")
    assert why[1].startswith(f"its trace.json holds more than "
                             f"{limits.MAX_TRACE_JSON_VALUES:,} JSON values")
    assert why[2].startswith("its member 'ir.json' is compressed with bzip2; passlab reads "
                             "stored and deflate members only")
    assert "(ffi.String): a string that is 16,777,216 characters long; at most 65,536 are " \
           "read" in why[3]
    assert why[4:] == ["loaded", "loaded"]
    print(out.stdout)


def test_bzip2_and_lzma_members_are_refused_before_inflating(saved, tmp_path):
    m = read_members(saved)
    for method, name in ((zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "lzma")):
        path = tmp_path / f"{name}.zip"
        with zipfile.ZipFile(path, "w", method) as z:
            for member, data in m.items():
                z.writestr(member, data)
        assert error(path) == (
            f"{path} is not a readable passlab trace: its member 'trace.json' is compressed "
            f"with {name}; passlab reads stored and deflate members only (what trace.save "
            f"writes). {RIGHT}")


def test_json_values_are_counted_before_parsing(saved, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_IR_JSON_VALUES", 1000)
    assert error(saved) == (
        f"{saved} is not a readable passlab trace: its ir.json holds more than 1,000 JSON "
        f"values, the most passlab parses (passlab.io.validate.MAX_IR_JSON_VALUES). {RIGHT}")


# ------------------------------------------------------- 2c/3. strings on load
def test_a_long_function_name_is_refused(saved, tmp_path):
    def edit(nodes):
        nodes[nodes[first(nodes, "ir.GlobalVar")]["data"]["name_hint"]]["data"] = "f" * 5000

    path = edit_ir(saved, tmp_path / "name.zip", edit)
    nodes = json.loads(read_members(saved)["ir.json"])["nodes"]
    g = first(nodes, "ir.GlobalVar")
    assert error(path) == (
        f"{path} is not a readable passlab trace: ir.json node {g} (ir.GlobalVar), field "
        f"'name_hint': refers to node {nodes[g]['data']['name_hint']}, which is a name of "
        f"5,000 characters; at most 4,096 are read (passlab.io.validate.MAX_NAME). {RIGHT}")


def test_a_long_ir_string_is_refused(saved, tmp_path):
    def edit(nodes):
        nodes[first(nodes, "ffi.String")]["data"] = "s" * (limits.MAX_STRING + 1)

    path = edit_ir(saved, tmp_path / "string.zip", edit)
    i = first(json.loads(read_members(saved)["ir.json"])["nodes"], "ffi.String")
    assert error(path) == (
        f"{path} is not a readable passlab trace: ir.json node {i} (ffi.String): a string "
        f"that is 65,537 characters long; at most 65,536 are read. {RIGHT}")


def test_the_buffer_picture_wraps_a_long_word_in_linear_time():
    from passlab.analysis._buffer_plot import _CHAR_W, _wrap

    lines = _wrap("x" * 1_000_000 + " tail", 300)
    room = int((300 - 8) / _CHAR_W)
    assert "".join(lines).replace(" ", "") == "x" * 1_000_000 + "tail"
    assert max(map(len, lines)) <= room


@pytest.mark.parametrize("where,message", [
    ("name", "the string at steps[3].name holds a lone UTF-16 surrogate (not text)"),
    ("target", "the string at target holds a lone UTF-16 surrogate (not text)"),
    ("warnings", "the string at warnings[0] holds a lone UTF-16 surrogate (not text)"),
])
def test_lone_surrogates_are_refused(saved, tmp_path, where, message):
    # they loaded, then to_html and terminal printing raised UnicodeEncodeError
    def edit(data):
        if where == "name":
            data["steps"][3]["name"] = "Fuse\ud800Ops"
        elif where == "target":
            data["target"] = "llvm\udfff"
        else:
            data["warnings"] = ["careful \ud83d"]

    path = edit_meta(saved, tmp_path / "surrogate.zip", edit)
    assert error(path) == f"{path} is not a readable passlab trace: trace.json: {message}. {RIGHT}"


def test_a_surrogate_in_the_ir_is_refused(saved, tmp_path):
    def edit(nodes):
        nodes[first(nodes, "ffi.String")]["data"] = "lv\ud800"

    path = edit_ir(saved, tmp_path / "irsur.zip", edit)
    i = first(json.loads(read_members(saved)["ir.json"])["nodes"], "ffi.String")
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node {i} "
                           f"(ffi.String): a string that holds a lone UTF-16 surrogate (not "
                           f"text). {RIGHT}")


# ------------------------------------------------- 3. accepted but unusable IR
def test_an_integer_typed_void_is_refused(saved, tmp_path):
    # loaded, then pass_table and diff raised "Cannot match type int32 vs void"
    nodes = json.loads(read_members(saved)["ir.json"])["nodes"]
    void = next(i for i, n in enumerate(nodes) if n["type"] == "ir.PrimType"
                and n["data"]["dtype"] == "")
    imm = next(i for i, n in enumerate(nodes) if n["type"] == "ir.IntImm" and i > void)

    def edit(nodes):
        nodes[imm]["data"]["ty"] = void

    path = edit_ir(saved, tmp_path / "void.zip", edit)
    msg = error(path)
    assert msg.startswith(f"{path} is not a readable passlab trace: ir.json node {imm} "
                          "(ir.IntImm): is typed '', which TVM's ir.IntImm refuses (Check "
                          "failed: (value_ty.MatchesCode(")
    assert "IntImm supports only int or uint or bool type" in msg


def test_an_operand_that_is_a_string_is_refused(saved, tmp_path):
    # a prim.Mul operand pointing to a StringImm: loaded with a warning, then pass_table
    # and diff(...).to_html() raised TVM's "`lhs` is null in the binary operator"
    def edit(nodes):
        mul = first(nodes, "prim.Mul")
        nodes[mul]["data"]["a"] = next(j for j in range(mul) if nodes[j]["type"] == "ir.StringImm")

    path = edit_ir(saved, tmp_path / "mul.zip", edit)
    msg = error(path)
    assert msg.startswith(f"{path} is not a readable passlab trace: module ")
    assert msg.endswith(" and TVM cannot print or hash it (Check failed: (lhs.defined()) is "
                        f"false: `lhs` is null in the binary operator). {RIGHT}")


# ----------------------------------------------------------- 4. zip containers
def test_an_encrypted_member_is_a_trace_file_error(saved, tmp_path):
    raw = bytearray(saved.read_bytes())
    at = raw.find(b"PK\x01\x02")
    raw[at + 8] |= 1  # the central directory's "encrypted" flag of trace.json
    path = tmp_path / "encrypted.zip"
    path.write_bytes(bytes(raw))
    assert error(path) == (f"{path} is not a readable passlab trace: its member 'trace.json' "
                           f"is encrypted; a trace's members are not. {RIGHT}")


def test_the_directory_is_bounded_by_the_file_not_the_end_record(saved, tmp_path, monkeypatch):
    # 2,000 real entries behind an end record that says 2: zipfile parsed them all
    m = read_members(saved)
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in m.items():
            z.writestr(name, data)
        for k in range(2000):
            z.writestr(f"x{k}", b"")
    raw = bytearray(path.read_bytes())
    at = raw.rfind(b"PK\x05\x06")
    raw[at + 8:at + 12] = struct.pack("<HH", 2, 2)
    path.write_bytes(bytes(raw))
    parsed = []
    real = zipfile.ZipFile._RealGetContents
    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents",
                        lambda self: parsed.append(1) or real(self))
    assert error(path) == (
        f"{path} is not a readable passlab trace: the archive holds more than "
        f"{limits.MAX_MEMBERS} members; a trace has 2 and passlab reads at most "
        f"{limits.MAX_MEMBERS} (passlab.io.validate.MAX_MEMBERS). {RIGHT}")
    assert parsed == []  # refused before zipfile read its directory


def test_two_members_of_one_name_are_refused(saved, tmp_path):
    m = read_members(saved)
    path = tmp_path / "dup.zip"
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(path, "w") as z:
        for name, data in m.items():
            z.writestr(name, data)
        z.writestr("trace.json", b"{}")
    assert error(path) == (f"{path} is not a readable passlab trace: it holds two members "
                           f"named 'trace.json'. {RIGHT}")


# ---------------------------------------------------------------- 15. versions
@pytest.mark.parametrize("version", [True, -5, 0, 1.0])
def test_the_format_version_is_a_positive_integer(saved, tmp_path, version):
    path = edit_meta(saved, tmp_path / "version.zip", lambda d: d.update(version=version))
    assert error(path) == (f"{path} is not a readable passlab trace: trace.json has format "
                           f"version {version!r}, not an integer of 1 or more. {RIGHT}")


# -------------------------------------------------- 5. passlab's own traces reload
CUMSUM = """
from tvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            s = R.cumsum(x, axis=1)
            z = R.add(s, y)
            R.output(z)
        return z
"""


def test_a_cumsum_kernel_saves_and_loads_back(tmp_path):
    # TVM puts a tirx.Axis layout object in the scan kernel: the loader refused the type
    build = passlab.build(passlab.load(CUMSUM))
    path = build.trace.save(tmp_path / "cumsum.trace.zip")
    nodes = json.loads(read_members(path)["ir.json"])["nodes"]
    assert any(n["type"] == "tirx.Axis" for n in nodes)
    assert load_trace(path).to_text() == build.trace.to_text()


def test_every_type_with_a_json_form_of_its_own_is_decided():
    # the types TVM loads through code of their own (__data_from_json__), from TVM's
    # reflection: each is read by name or content, or refused (ffi.Module loads code)
    from tvm_ffi import core
    from tvm_ffi.registry import get_registered_type_keys

    limits._core()
    own = {str(k) for k in get_registered_type_keys()
           if core._lookup_type_attr(core._lookup_or_register_type_info_from_type_key(str(k))
                                     .type_index, "__data_from_json__") is not None}
    from passlab.io._own_forms import OWN_FORM_STR

    read = OWN_FORM_STR | limits._FFI_OBJECTS
    assert read <= own | {"ffi.BigInt"}
    assert own - read == {"ffi.Module"} or own - read <= {"ffi.Module", "ffi.BigInt"}


def test_weights_are_stored_once_or_left_out(with_tensors, tmp_path):
    build, path = with_tensors
    stats = json.loads(read_members(path)["trace.json"])["stats"]
    assert (stats["tensors"], stats["stored"], stats["dropped_bytes"]) == (6, 6, 0)
    lean = build.trace.save(tmp_path / "lean.trace.zip", weights=False)
    stats = json.loads(read_members(lean)["trace.json"])["stats"]
    # the data of the six weights is left out, one empty float32 tensor stands for them all
    full = [base64.b64decode(n["data"]) for n in json.loads(read_members(path)["ir.json"])
            ["nodes"] if n["type"] == "ffi.Tensor"]
    data = sum(struct.unpack_from("<q", b, 32 + 8 * struct.unpack_from("<i", b, 24)[0])[0]
               for b in full)
    assert data == 6304
    assert (stats["tensors"], stats["stored"], stats["dropped_bytes"]) == (6, 1, data)
    loaded = load_trace(lean)
    assert loaded._meta["weights"] is False and load_trace(path)._meta["weights"] is True
    assert loaded.to_text() == build.trace.to_text()
    passlab.pass_table(loaded).to_text()  # views work on the shapes alone
    fold = loaded.find("FoldConstant")
    assert passlab.diff(fold).to_text() == passlab.diff(build.trace.find("FoldConstant")).to_text()


def test_two_tensors_of_one_content_are_stored_once(tmp_path):
    from passlab.io._tensor_store import stored_graph

    graph = {"root_index": 3, "nodes": [
        _tensor(2, 32, 2, 8), _tensor(2, 32, 2, 8), _tensor(2, 32, 3, 12),
        {"type": "ffi.Array", "data": [0, 1, 2]}], "metadata": {}}
    out, stats = stored_graph(json.loads(json.dumps(graph)), weights=True)
    assert stats == {"tensors": 3, "stored": 2, "dropped_bytes": 0, "nodes": 4, "merged": 1}
    assert out["nodes"][-1] == {"type": "ffi.Array", "data": [0, 0, 1]}
    assert out["root_index"] == 2 and len(out["nodes"]) == 3


def test_a_long_source_name_saves_and_loads_back(saved, tmp_path):
    # the kept ONNX node names of one binding join into one SourceName: 10,000
    # characters were refused by the 4,096-character limit
    m = read_members(saved)
    graph = json.loads(m["ir.json"])
    nodes = graph["nodes"]
    name = "\n".join(f"/model/layers.{k}/attention/MatMul" for k in range(400))
    assert len(name) > 4096
    # the span goes before the first Var that has none, so references still point back
    var = first(nodes, "ir.Var")
    source = {"type": "ir.SourceName", "data": name}
    span = {"type": "ir.Span", "data": {"source_name": var, "line": 1, "column": 1,
                                        "end_line": 1, "end_column": 1}}
    shift = lambda v: v + 2 if type(v) is int and v >= var else v  # noqa: E731
    from passlab.io.validate import references

    for node in nodes:
        for box, key in references(node):
            box[key] = shift(box[key])
    nodes[var:var] = [source, span]
    nodes[var + 2]["data"]["span"] = var + 1
    graph["root_index"] = shift(graph["root_index"])
    m["ir.json"] = json.dumps(graph).encode()
    path = write_members(tmp_path / "long.zip", m)
    loaded = load_trace(path)
    again = loaded.save(tmp_path / "again.zip")
    assert load_trace(again).to_text() == loaded.to_text()


def test_save_refuses_a_trace_that_would_not_load(mlp_build, tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_IR_NODES", 100)
    target = tmp_path / "big.trace.zip"
    with pytest.raises(TraceFileError) as err:
        mlp_build.trace.save(target)
    assert str(err.value) == (
        f"trace.save({str(target)!r}) refused: the file would not load back (ir.json has "
        "3,890 nodes; at most 100 are read); nothing was written. No part of it fits: its "
        "first step alone breaks the limit")
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_ctrl_c_during_the_checks_of_a_save_leaves_no_file(mlp_build, tmp_path, monkeypatch):
    """The archive is written in a thread while the checks run: stopped, it is removed."""
    target = tmp_path / "t.trace.zip"
    previous = mlp_build.trace.save(tmp_path / "keep.trace.zip")

    def interrupted(graph, what):
        raise KeyboardInterrupt

    monkeypatch.setattr(limits, "check_ir_graph", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mlp_build.trace.save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [previous.name]
    with pytest.raises(KeyboardInterrupt):
        mlp_build.trace.save(previous)  # an existing file stays as it was
    monkeypatch.undo()
    assert load_trace(previous).to_text() == mlp_build.trace.to_text()


def test_a_saved_archive_is_a_plain_zip_with_both_members(mlp_build, tmp_path):
    path = mlp_build.trace.save(tmp_path / "t.trace.zip")
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        infos = {i.filename: i for i in z.infolist()}
        assert sorted(infos) == ["ir.json", "trace.json"]
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in infos.values())
        assert all(i.external_attr >> 16 == 0o600 for i in infos.values())
        graph = json.loads(z.read("ir.json"))
        meta = json.loads(z.read("trace.json"))
    assert meta["stats"]["ir_bytes"] == infos["ir.json"].file_size
    assert graph["nodes"][graph["root_index"]]["type"] == "ffi.Array"


@pytest.mark.slow
def test_a_reproducer_of_a_weightless_trace_draws_its_weights(with_tensors, tmp_path):
    build, _ = with_tensors
    lean = load_trace(build.trace.save(tmp_path / "lean.trace.zip", weights=False))
    repro = lean.reproducer(lean.find("FoldConstant"))
    assert repro.notes[-1] == (
        "the trace was saved without its weights (trace.save(path, weights=False)): the "
        "module's tensor constants are seeded random values (seed 0) of their recorded "
        "shapes and data types")
    out = subprocess.run([sys.executable, str(repro.write(tmp_path / "r.py"))],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok: FoldConstant ran; its output matches the recorded module")


def test_an_onnx_model_with_long_node_names_saves_and_loads_back(tmp_path):
    # a valid ONNX model whose kept node names reach a SourceName of 6,000 characters
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((8, 8), 0.5, dtype="float32"), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="/encoder/" + "m" * 6000),
             helper.make_node("Relu", ["h"], ["y"], name="/encoder/relu")]
    graph = helper.make_graph(nodes, "long", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    build = passlab.build(passlab.load(model))
    path = build.trace.save(tmp_path / "onnx.trace.zip")
    names = [n["data"] for n in json.loads(read_members(path)["ir.json"])["nodes"]
             if n["type"] == "ir.SourceName"]
    assert max(map(len, names)) > 6000
    assert load_trace(path).to_text() == build.trace.to_text()


def test_a_long_failure_message_is_cut_on_save_not_refused(mlp_build, tmp_path):
    # a TVM error can quote a whole function: the trace must still save and load
    from passlab.recording.trace import Failure, Trace

    t = mlp_build.trace
    long = Failure("pass", "x" * 100_000 + "\udcff", "TVMError", t[3], (), "")
    failed = Trace(list(t), {**t._meta, "failure": long, "warnings": ["w\ud800"]})  # a copy: the build keeps its steps
    loaded = load_trace(failed.save(tmp_path / "failed.zip"))
    msg = loaded.failure.message
    assert len(msg) <= limits.MAX_STRING
    assert msg == "x" * (limits.MAX_STRING - 80) + (
        f" ... ({100_001 - limits.MAX_STRING + 80:,} more characters cut when the trace was "
        "saved)")
    assert loaded.warnings[0] == "w?"
