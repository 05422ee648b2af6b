"""Saved traces cannot crash the process: the IR graph is checked before TVM reads it
and what TVM loaded is checked before any view touches it. The crafted files of issue 11
(each crashed the interpreter with SIGSEGV) are refused with a TraceFileError naming the
node and field, and a mutation fuzzer loads and views random edits of a real trace in
child processes: no signal, no hang, every failure a TraceFileError."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trace_mutants import load_error as error
from trace_mutants import make_mutants, read_members, run_mutants, with_ir

from passlab.io import load_trace, save_trace
from passlab.io import validate as limits

RIGHT = ("A trace file is the zip archive written by trace.save(path) (format "
         "'passlab-trace', version 1 or lower).")
#: Mutants of the CI run (fixed seed): 30-90 s on a shared 2-core machine.
FUZZ_MUTANTS, FUZZ_SEED = 300, 11


@pytest.fixture(scope="module")
def saved(mlp_build, tmp_path_factory) -> Path:
    return save_trace(mlp_build.trace, tmp_path_factory.mktemp("fuzz") / "mlp.trace.zip")


def first(nodes, type_key: str) -> int:
    return next(i for i, n in enumerate(nodes) if n["type"] == type_key)


_VIEW = """
import sys, passlab
from passlab.errors import TraceFileError
try:
    t = passlab.load_trace(sys.argv[1])
    t.to_text(), t.changed(), t.to_html()
    print("loaded")
except TraceFileError as exc:
    print("refused:", exc)
"""


def in_child(path: Path) -> str:
    """Load and view ``path`` in a child process: its output, or how it died."""
    out = subprocess.run([sys.executable, "-c", _VIEW, str(path)], capture_output=True,
                         text=True, timeout=300)
    return out.stdout.strip() if out.returncode == 0 else f"died with {out.returncode}"


# ------------------------------------------------------------ the known crashers
def test_array_that_contains_itself(tmp_path):
    # issue 11: 389 bytes that crashed inside load_trace (TVM recursed until the stack
    # overflowed)
    graph = {"root_index": 1, "nodes": [{"type": "None"}, {"type": "ffi.Array", "data": [1]}],
             "metadata": {"tvm_version": "0.27.0.post1"}}
    meta = {"format": "passlab-trace", "version": 1, "steps": [], "input": 0}
    path = tmp_path / "self.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("trace.json", json.dumps(meta))
        z.writestr("ir.json", json.dumps(graph))
    assert path.stat().st_size < 400
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node 1 "
                           "(ffi.Array): refers to 1; a reference is the index of an earlier "
                           f"node (0..0). {RIGHT}")
    assert in_child(path).startswith("refused:")


def test_relax_function_without_a_body(saved, tmp_path):
    # loaded, then crashed the report's printer
    def edit(nodes):
        nodes[first(nodes, "relax.expr.Function")]["data"]["body"] = 0  # node 0 is None

    path = with_ir(saved, tmp_path / "nobody.zip", edit)
    nodes = json.loads(read_members(path)["ir.json"])["nodes"]
    i = first(nodes, "relax.expr.Function")
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node {i} "
                           "(relax.expr.Function), field 'body': refers to node 0, which is "
                           f"null, but TVM requires a relax.expr.SeqExpr. {RIGHT}")


def test_swapped_var_fields(saved, tmp_path):
    def edit(nodes):
        d = nodes[first(nodes, "ir.Var")]["data"]
        d["ty"], d["name"] = d["name"], d["ty"]

    path = with_ir(saved, tmp_path / "swapped.zip", edit)
    nodes = json.loads(read_members(path)["ir.json"])["nodes"]
    i = first(nodes, "ir.Var")
    name = nodes[i]["data"]["ty"]
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node {i} "
                           f"(ir.Var), field 'ty': refers to node {name}, which is a ffi.String, "
                           f"but TVM requires a ir.Type. {RIGHT}")


GRAPH_EDITS = [
    # (edit of the node list -> index of the node named, message after "(type)")
    ("unregistered type", lambda n: n[first(n, "ir.Var")].update(type="runtime.Nope"),
     "ir.Var", "runtime.Nope", ": is not an IR type registered by this TVM (a trace holds IR "
     "modules: ir., relax., tirx., s_tir., prim. ... types)"),
    ("code-loading type", lambda n: n[first(n, "ir.Op")].update(type="ffi.Module"),
     "ir.Op", "ffi.Module", ": is not an IR type registered by this TVM (a trace holds IR "
     "modules: ir., relax., tirx., s_tir., prim. ... types)"),
    ("unknown field", lambda n: n[first(n, "ir.Var")]["data"].update(nickname=0),
     "ir.Var", "ir.Var", ", field 'nickname': ir.Var has no such field (its fields: span, "
     "ty, name)"),
    ("missing field", lambda n: n[first(n, "ir.Var")]["data"].pop("name"),
     "ir.Var", "ir.Var", ": lacks the required field(s) name"),
    ("integer field", lambda n: n[first(n, "relax.TensorType")]["data"].update(ndim="2"),
     "relax.TensorType", "relax.TensorType", ", field 'ndim': must be a 64-bit integer, not "
     "'2'"),
    ("bool field", lambda n: n[first(n, "relax.FuncType")]["data"].update(purity=1),
     "relax.FuncType", "relax.FuncType", ", field 'purity': must be true or false, not 1"),
    ("data type", lambda n: n[first(n, "ir.PrimType")]["data"].update(dtype="float99999999999"),
     "ir.PrimType", "ir.PrimType", ", field 'dtype': 'float99999999999' is not a data type "
     "TVM knows"),
    ("unknown operator", lambda n: n[first(n, "ir.Op")].update(data="relax.rm_rf"),
     "ir.Op", "ir.Op", ": 'relax.rm_rf' is not a ir.Op registered in this TVM"),
    ("env func", lambda n: n[first(n, "ir.EnvFunc")].update(data="ffi.ToJSONGraphString"),
     "ir.EnvFunc", "ir.EnvFunc", ": 'ffi.ToJSONGraphString' is not one of TVM's "
     "type-inference functions (tvm.relax.type.*)"),
    ("enum out of range", lambda n: n[first(n, "tirx.For")]["data"].update(kind=8283),
     "tirx.For", "tirx.For", ", field 'kind': is 8283, not in 0..4"),
    ("odd map", lambda n: n[first(n, "ffi.Map")]["data"].append(0),
     "ffi.Map", "ffi.Map", ": a map's data alternates keys and values (an even length)"),
    # typed Any, so null fits the schema; loaded, it crashed the printer (fuzz seed 9)
    ("null constant", lambda n: n[first(n, "ir.GenericConst")]["data"].update(value=0),
     "ir.GenericConst", "ir.GenericConst", ", field 'value': refers to node 0, which is "
     "null, but TVM requires a value for ir.GenericConst.value"),
]


@pytest.mark.parametrize("edit,named,key,message", [e[1:] for e in GRAPH_EDITS],
                         ids=[e[0] for e in GRAPH_EDITS])
def test_each_node_is_checked_against_tvms_reflection(saved, tmp_path, edit, named, key,
                                                      message):
    path = with_ir(saved, tmp_path / "bad.zip", edit)
    i = first(json.loads(read_members(saved)["ir.json"])["nodes"], named)
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node {i} "
                           f"({key}){message}. {RIGHT}")


def test_element_of_the_wrong_type(saved, tmp_path):
    # Function.params is Array[ir.Var]: an array of strings is refused with the element
    def edit(nodes):
        s = first(nodes, "ffi.String")
        nodes.append({"type": "ffi.Array", "data": [s]})
        f = first(nodes, "relax.expr.Function")
        nodes[f]["data"]["params"] = len(nodes) - 1  # a later node: refused as a forward ref

    path = with_ir(saved, tmp_path / "params.zip", edit)
    last = len(json.loads(read_members(saved)["ir.json"])["nodes"])  # the appended array
    assert f"field 'params': refers to {last}; a reference is the index of an earlier node" \
        in error(path)

    def edit2(nodes):
        f = first(nodes, "relax.expr.Function")
        arr = next(i for i in range(f) if nodes[i]["type"] == "ffi.Array" and nodes[i]["data"]
                   and nodes[nodes[i]["data"][0]]["type"] == "ir.IntImm")
        nodes[f]["data"]["params"] = arr
        return f, arr, nodes[arr]["data"][0]

    path = with_ir(saved, tmp_path / "params2.zip", edit2)
    f, arr, elem = edit2(json.loads(read_members(saved)["ir.json"])["nodes"])
    assert error(path) == (f"{path} is not a readable passlab trace: ir.json node {f} "
                           f"(relax.expr.Function), field 'params': refers to node {arr}, which "
                           f"has an element (node {elem}) that is a ir.IntImm, but TVM requires "
                           f"a ir.Var. {RIGHT}")


def test_deep_nesting_is_refused_before_tvm_recurses(saved, tmp_path):
    # a chain of arrays 5,000 deep crashed TVM's loader (C stack overflow)
    def edit(nodes):
        base = len(nodes)
        nodes.append({"type": "ffi.Array", "data": []})
        for k in range(5000):
            nodes.append({"type": "ffi.Array", "data": [base + k]})

    path = with_ir(saved, tmp_path / "deep.zip", edit)
    assert f"nests {limits.MAX_IR_DEPTH + 1} levels deep; at most {limits.MAX_IR_DEPTH} are " \
           "read (TVM recurses once per level)" in error(path)


def test_an_ill_formed_function_that_prints_safely_loads_with_a_warning(saved, tmp_path):
    # type-correct but wrong: a function given another function's parameters uses
    # undefined variables; TVM's own GPU builds have such functions too (thread variables)
    def edit(nodes):
        funcs = [i for i, n in enumerate(nodes) if n["type"] == "relax.expr.Function"]
        mine = {f: nodes[f]["data"]["params"] for f in funcs}
        g, f = next((g, f) for g in funcs for f in funcs if mine[g] < f and not (
            set(nodes[mine[g]]["data"]) & set(nodes[mine[f]]["data"])))
        nodes[f]["data"]["params"] = mine[g]

    path = with_ir(saved, tmp_path / "noparams.zip", edit)
    # it prints and hashes without crashing (checked in a child first), so it loads, and
    # the trace says which function TVM's check refused
    trace = load_trace(path)
    assert any("is not well formed by TVM's check (" in w for w in trace.warnings)
    assert in_child(path) == "loaded"


def test_a_loaded_prim_func_must_be_well_formed(saved, tmp_path):
    # found by the fuzzer: a TIR loop variable typed as a Relax tensor is well typed for
    # the loader (an ir.Type) but crashed TVM's printer; TVM's TIR verifier refuses it
    def edit(nodes):
        loop = first(nodes, "tirx.For")
        var = nodes[loop]["data"]["loop_var"]
        nodes[var]["data"]["ty"] = first(nodes, "relax.TensorType")

    path = with_ir(saved, tmp_path / "loopvar.zip", edit)
    msg = error(path)
    assert msg.startswith(f"{path} is not a readable passlab trace: module ")
    assert "is not well formed (" in msg and "crashes TVM's printer (SIGSEGV)" in msg
    assert in_child(path).startswith("refused:")


def test_a_checker_that_crashes_cannot_take_the_process_down(saved, tmp_path):
    # found by the fuzzer: a DeclBuffer whose buffer is a plain tensor variable is well
    # typed for the loader (an ir.Var) and crashes TVM's TIR verifier itself; the check
    # runs in a forked child, so the crash names the function and the process lives on
    def edit(nodes):
        decl = first(nodes, "tirx.DeclBuffer")
        buffer = nodes[decl]["data"]["buffer"]
        nodes[decl]["data"]["buffer"] = next(
            i for i in range(buffer) if nodes[i]["type"] == "ir.Var"
            and nodes[nodes[i]["data"]["ty"]]["type"] == "relax.TensorType")

    path = with_ir(saved, tmp_path / "declbuffer.zip", edit)
    msg = error(path)
    assert msg.startswith(f"{path} is not a readable passlab trace: module ")
    assert msg.endswith(f" crashes TVM's well-formedness check (SIGSEGV). {RIGHT}")


def test_a_function_tvm_cannot_print_is_a_note_in_every_view(saved, tmp_path):
    # a loop whose lower bound is a bool constant: well formed by TVM's check, but TVM's
    # printer raises on it (found by fuzzing, seed 9, where the report failed whole)
    def edit(nodes):
        i = first(nodes, "tirx.For")
        var_ty = nodes[nodes[i]["data"]["loop_var"]]["data"]["ty"]
        nodes[i]["data"]["min"] = max(
            k for k, x in enumerate(nodes[:i])
            if x["type"] == "ir.IntImm" and x["data"]["ty"] != var_ty
            and nodes[x["data"]["ty"]]["data"]["dtype"] == "bool")

    from passlab.analysis.ir_text import function_text
    from passlab.views.explorer_panes import PaneRenderer

    trace = load_trace(with_ir(saved, tmp_path / "odd.zip", edit))
    notes = [(s, gv.name_hint, f) for s in trace if s.after is not None
             for gv, f in s.after.functions.items()
             if function_text(f, gv.name_hint).startswith("# TVM could not print")]
    assert notes, "the edited loop is in no function"
    step, name, func = notes[0]
    text = function_text(func, name)
    assert text.startswith(f"# TVM could not print {name}: InternalError: Check failed: ")
    assert "\n" not in text
    html = PaneRenderer(trace).pane("diff", step.index)
    assert "TVM could not print" in html
    report = trace.write_report(tmp_path / "odd.html")
    assert report.stat().st_size > 100_000  # the whole report, not an error page
    assert "s_tir" in trace.to_text()


# ----------------------------------------------------------------------- fuzzing
@pytest.mark.slow
def test_mutants_never_crash_hang_or_escape(saved, tmp_path):
    what = make_mutants(saved, tmp_path, FUZZ_MUTANTS, FUZZ_SEED)
    res = run_mutants(list(what), what, timeout=120)
    print(f"{FUZZ_MUTANTS} mutants in {res.seconds:.1f} s: {dict(res.outcomes)}")
    assert res.findings == []
    assert sum(res.outcomes.values()) == FUZZ_MUTANTS
    assert set(res.outcomes) <= {"ok", "TraceFileError"}
    assert res.outcomes["TraceFileError"] > FUZZ_MUTANTS // 2  # most edits are caught
    assert res.outcomes["ok"] > 0  # and some harmless ones load


def test_the_fuzz_harness_sees_a_crash(tmp_path):
    # a child that dies is blamed on the mutant it had started, and the run goes on
    # after it: here a "mutant" that is not even a file crashes nothing, so fake a crash
    # by loading a trace whose path makes the child call os.abort()
    import trace_mutants

    ok = tmp_path / "a.zip"
    ok.write_bytes(b"not a zip")
    boom = tmp_path / "boom.zip"
    boom.write_bytes(b"not a zip")
    after = tmp_path / "c.zip"
    after.write_bytes(b"not a zip")
    child = trace_mutants._CHILD
    try:
        trace_mutants._CHILD = child.replace(
            "    try:\n", "    if path.endswith('boom.zip'):\n        import os; os.abort()\n"
            "    try:\n", 1)
        res = run_mutants([ok, boom, after], {boom: "the crash"}, timeout=120)
    finally:
        trace_mutants._CHILD = child
    assert res.children == 2
    assert res.findings == [(str(boom), "signal:SIGABRT", "the crash")]
    assert dict(res.outcomes) == {"TraceFileError": 2, "signal": 1}
