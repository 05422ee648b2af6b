"""LLVM's own passes as steps of the trace (passlab._tvm.llvm, passlab.recording.llvm):
options, the streaming reader of LLVM's dump, the steps and what they hold, and that the
recording leaves the build, its outputs and the process's LLVM options as they were."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import passlab
from passlab._tvm import llvm as L
from passlab._tvm.codegen import split_functions
from passlab.errors import LlvmOptionError, UnknownNameError

#: TVM's runtime helpers: generated functions that belong to no TIR kernel
HELPERS = re.compile(r"^(__tvm_set_raised_\d+|__tvm_module_startup|__truncsfhf2|__extendhfsf2|\[module\])$")


@pytest.fixture(scope="module")
def llvm_build() -> passlab.Build:
    return passlab.build(passlab.models.mlp(), llvm_passes=True)


@pytest.fixture(scope="module")
def plain_build() -> passlab.Build:
    return passlab.build(passlab.models.mlp())


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, check=True)


# ------------------------------------------------------------------------- options
def test_options_are_typed_as_tvm_reads_them():
    assert L.check_options(["-vectorize-loops:bool=false", "-unroll-threshold:int=0",
                            "--force-vector-width:uint=8", "-x", "-y=FALSE",
                            "-s:string=abc"]) == (
        "-vectorize-loops:bool=false", "-unroll-threshold:int=0",
        "-force-vector-width:uint=8", "-x:bool=true", "-y:bool=false", "-s:string=abc")


@pytest.mark.parametrize("bad, said", [
    ("-pass-remarks=loop-vectorize", "-pass-remarks cannot be set through TVM 0.27's "
                                     "cl-opt: a regex option"),
    ("-pass-remarks-missed:string=.*", "regex option (std::bad_alloc"),
    ("-print-after:string=licm", "a list option"),
    ("-print-changed", "build with llvm_passes=True"),
    ("-unroll-threshold=8", "TVM reads an untyped value as true or false, and '8' is "
                            "neither; give the option's own type: -unroll-threshold:int=8"),
    ("-x:float=1", "type 'float' is not one TVM reads"),
    ("-x:int=1.5", "'1.5' is not an integer"),
    ("-x:uint=-1", "'-1' is not an unsigned integer"),
    ("-x:int=3000000000", "outside the range of an LLVM int"),
    ("-x:bool=yes", "a bool is true or false, not 'yes'"),
    ("-x:string=a,b", "cannot hold a comma"),
    ("vectorize-loops", "is not of the form TVM reads"),
])
def test_bad_options_say_what_would_be_right(bad, said):
    with pytest.raises(LlvmOptionError) as err:
        L.check_options([bad])
    assert said in str(err.value)


@pytest.mark.slow
def test_pipeline_llvm_options_checks_names_with_llvm():
    pipe = passlab.Pipeline.default("llvm").llvm_options("-vectorize-slp:bool=false")
    assert pipe.llvm_opts == ("-vectorize-slp:bool=false",)
    assert "LLVM options -vectorize-slp:bool=false" in pipe.to_text().splitlines()[0]
    assert pipe.llvm_options().llvm_opts == ()
    with pytest.raises(LlvmOptionError, match=r"LLVM 22 has no option '-vectorise-slp' "):
        passlab.Pipeline.default("llvm").llvm_options("-vectorise-slp:bool=false")
    with pytest.raises(LlvmOptionError, match="generates 'c' code"):
        passlab.Pipeline.default("c").llvm_options("-vectorize-slp:bool=false")
    assert passlab.Pipeline.default("llvm").with_llvm_passes().llvm_passes is True


# -------------------------------------------------------------------- the reader
DUMP = """\
[12:00:00] /project/src/x.cc:1: Warning: before the dump
*** IR Dump At Start ***
; ModuleID = 'TVMMod'
@g = global i32 0

; Function Attrs: noinline
define internal void @k_compute_(ptr %a) #0 {
entry:
  ret void
}

define i32 @__tvm_ffi_k(ptr %a) {
entry:
  call void @k_compute_(ptr %a)
  ret i32 0
}
*** IR Dump After SROAPass on k_compute_ omitted because no change ***
*** IR Dump After InstCombinePass on k_compute_ ***
; Function Attrs: noinline nounwind
define internal void @k_compute_(ptr %a) #0 {
entry:
  store <4 x float> zeroinitializer, ptr %a, align 16
  ret void
}
*** IR Pass PassManager<Function> on k_compute_ ignored ***
*** IR Dump After LoopRotatePass on loop %for_body in function __tvm_ffi_k ***
 (loop: %for_body)
define i32 @__tvm_ffi_k(ptr %a) {
entry:
  call void @k_compute_(ptr %a)
  br label %done
[12:00:01] /project/src/x.cc:2: Warning: in the middle
done:
  ret i32 0
}
*** IR Dump After GlobalOptPass on [module] ***
; ModuleID = 'TVMMod'

define i32 @__tvm_ffi_k(ptr %a) {
entry:
  call void @k_compute_(ptr %a)
  br label %done
done:
  ret i32 0
}
*** IR Deleted After GlobalDCEPass on k_compute_ ***
"""


def test_reader_keeps_changed_passes_with_before_and_after():
    passed: list[bytes] = []
    reader = L.DumpReader(passed.append)
    data = DUMP.encode()
    for at in range(0, len(data), 7):  # as a pipe hands it over: in arbitrary pieces
        reader.feed(data[at:at + 7])
    reader.close()
    assert b"".join(passed).decode().splitlines() == [
        "[12:00:00] /project/src/x.cc:1: Warning: before the dump",
        "[12:00:01] /project/src/x.cc:2: Warning: in the middle"]
    assert reader.headers == 5 and reader.skipped == {"SROAPass": 1}
    assert [(d.pass_name, d.scope, d.skipped) for d in reader.dumps] == [
        ("InstCombinePass", "function", 1), ("LoopRotatePass", "loop", 0),
        ("GlobalOptPass", "module", 0), ("GlobalDCEPass", "function", 0)]
    inst, rotate, opt, dce = reader.dumps
    (sym, before, after), = inst.changes
    assert sym == "k_compute_" and before.splitlines()[0] == "; Function Attrs: noinline"
    assert after.splitlines()[2:4] == ["entry:", "  store <4 x float> zeroinitializer, "
                                                 "ptr %a, align 16"]
    (sym, before, after), = rotate.changes
    assert sym == "__tvm_ffi_k" and after.endswith("done:\n  ret i32 0\n}")
    assert before is reader.start["__tvm_ffi_k"]
    # the module pass removed k_compute_ from the module and changed its globals
    assert [(s, bool(b), bool(a)) for s, b, a in opt.changes] == [
        ("k_compute_", True, False), ("[module]", True, True)]
    assert opt.changes[1][2] == "; ModuleID = 'TVMMod'"
    assert dce.changes == (("k_compute_", "", ""),)
    assert set(reader.final) == {"__tvm_ffi_k"}


BEFORE_DUMP = """\
*** IR Dump At Start ***
; ModuleID = 'm'

define void @f() {
entry:
  ret void
}

define void @g() {
entry:
  ret void
}
*** IR Dump Before SROAPass on f ***
define void @f() {
entry:
  ret void
}
*** IR Dump After SROAPass on f ***
define void @f() {
entry:
  br label %x
x:
  ret void
}
*** IR Pass LoopFullUnrollPass invalidated ***
*** IR Dump After EarlyCSEPass on f omitted because no change ***
*** IR Dump Before InstCombinePass on f ***
define void @f() {
entry:
  br label %y
y:
  ret void
}
*** IR Dump After InstCombinePass on f ***
define void @f() {
entry:
  ret void
}
*** IR Dump Before GlobalDCEPass on [module] ***
; ModuleID = 'm'

define void @f() {
entry:
  ret void
}

define void @g() {
entry:
  ret void
}
*** IR Dump After GlobalDCEPass on [module] ***
; ModuleID = 'm'

define void @f() {
entry:
  ret void
}
"""


def test_reader_takes_the_text_before_from_llvm():
    # -print-before-changed: LLVM prints what it compared each change with. A pass LLVM
    # did not report (it fully unrolled a loop: "invalidated") changed f between its two
    # printed changes: the second step's text before is LLVM's, not f's previous change
    reader = L.DumpReader()
    data = BEFORE_DUMP.encode()
    for at in range(0, len(data), 5):
        reader.feed(data[at:at + 5])
    reader.close()
    assert reader.headers == 4 and reader.skipped == {"EarlyCSEPass": 1}
    assert [(d.pass_name, d.skipped) for d in reader.dumps] == [
        ("SROAPass", 0), ("InstCombinePass", 1), ("GlobalDCEPass", 0)]
    sroa, inst, dce = reader.dumps
    ((sym, before, after),) = sroa.changes
    assert sym == "f" and before is reader.start["f"]  # equal to the kept text: that object
    assert after.splitlines()[2] == "  br label %x"
    ((sym, before, after),) = inst.changes
    assert before.splitlines()[2] == "  br label %y" and before is not sroa.changes[0][2]
    assert after == reader.start["f"]
    assert dce.changes == (("g", reader.start["g"], ""),)  # f and the module text: unchanged
    assert set(reader.final) == {"f"}


def test_function_stats_count_instructions_blocks_and_vectors():
    text = textwrap.dedent("""\
        define void @f(ptr %a) {
          %x = load float, ptr %a
            #dbg_value(float %x, !1, !DIExpression(), !2)
          br label %vector.body

        vector.body:                                      ; preds = %0
          %w = load <8 x float>, ptr %a, align 4
          %m = fmul <8 x float> %w, %w
          store <8 x float> %m, ptr %a
          %c = icmp eq <4 x i32> zeroinitializer, zeroinitializer
          ret void
        }""")
    stats = L.function_stats(text)
    assert (stats.instructions, stats.blocks, stats.vector_instructions) == (7, 2, 4)
    assert stats.vector_types == (("<8 x float>", 3), ("<4 x i32>", 1))
    assert L.vector_types(text) == {"<8 x float>": 3, "<4 x i32>": 1}
    assert L.function_stats("") == L.FunctionStats()


# ---------------------------------------------------------------- recorded builds
@pytest.mark.slow
def test_changed_steps_equal_an_independent_count(llvm_build):
    # the same build in a child process with TVM's own relax.build and -print-changed,
    # its stderr captured here: the changed dumps and every dump header, counted by grep
    out = _child("""
        import tvm, passlab
        from tvm import relax
        t = tvm.target.Target({"kind": "llvm", "cl-opt": ["-print-changed"]})
        relax.build(passlab.models.mlp(), t,
                    relax_pipeline=relax.get_default_pipeline(tvm.target.Target("llvm")))
    """)
    headers = [ln for ln in out.stderr.splitlines()
               if ln.startswith(("*** IR Dump After ", "*** IR Deleted After "))]
    changed = [h for h in headers if not h.endswith("omitted because no change ***")]
    trace = llvm_build.trace
    assert len(changed) > 100
    assert len(trace.llvm_steps()) == len(changed) == trace.llvm_summary.changed
    assert trace.llvm_summary.runs == len(headers)
    assert [s.name for s in trace.llvm_steps()] == [
        re.match(r"\*\*\* IR (?:Dump|Deleted) After (.+?) on ", h).group(1) for h in changed]


def test_each_step_maps_to_a_kernel_of_the_executable(llvm_build):
    trace = llvm_build.trace
    code = trace.code
    codegen = next(s for s in trace if s.code is not None)
    kernels_hit = set()
    for s in trace.llvm_steps():
        assert (s.level, s.stage, s.kind, s.parent, s.depth) == ("llvm", "llvm", "inner",
                                                                  codegen.index, 1)
        assert s.changed and s.functions_changed.names == s.llvm.symbols
        for f in s.llvm.functions:
            if HELPERS.match(f.symbol):
                assert f.kernel is None
            else:
                assert f.kernel in code.kernels, f.symbol
                assert code.kernel(f.kernel, "llvm")  # the executable has its code
        kernels_hit.update(s.llvm.kernels)
        # a step that touched no kernel touched only TVM's helpers or the module text
        if not s.llvm.kernels:
            assert all(HELPERS.match(sym) for sym in s.llvm.symbols)
    assert kernels_hit == set(code.kernels)
    assert {s.name for s in trace.llvm_steps("fused_matmul_add_relu")} >= {
        "SROAPass", "InstCombinePass", "LoopVectorizePass", "SLPVectorizerPass"}


def test_last_text_of_each_function_is_the_executables(llvm_build):
    last: dict[str, str] = {}
    for s in llvm_build.trace.llvm_steps():
        for f in s.llvm.functions:
            last[f.symbol] = f.after
    final = split_functions(llvm_build.trace.code.text("llvm"), "llvm")
    metadata = re.compile(r"!\d+")  # the executable's module has a few more metadata nodes

    def norm(text: str) -> str:
        lines = [ln for ln in text.splitlines() if not ln.startswith("; Function Attrs")]
        return metadata.sub("!N", "\n".join(lines))

    changed = [sym for sym in last if sym in final]
    assert len(changed) >= len(llvm_build.trace.code.kernels)
    for sym in changed:
        assert norm(last[sym]) == norm(final[sym]), sym


def test_recording_changes_neither_code_nor_outputs(llvm_build, plain_build):
    def norm(text: str) -> str:  # TVM names its TBAA nodes by buffer addresses
        return re.sub(r'!"0x[0-9a-f]+"', '!"0x"', text)

    assert norm(llvm_build.source("llvm")) == norm(plain_build.source("llvm"))
    assert norm(llvm_build.source("asm")) == norm(plain_build.source("asm"))
    np.testing.assert_array_equal(llvm_build.run(), plain_build.run())
    assert plain_build.trace.llvm_steps() == () or len(plain_build.trace.llvm_steps()) == 0
    assert plain_build.trace.llvm_summary is None
    assert len(llvm_build.trace) - len(plain_build.trace) == len(llvm_build.trace.llvm_steps())


@pytest.mark.slow
def test_nothing_leaks_and_llvm_options_are_restored():
    # in a fresh process: the recorded build prints nothing; a later plain TVM build,
    # the assembly and a run print nothing either (LLVM's options are back to default)
    out = _child("""
        import sys, tvm, passlab
        from tvm import relax
        b = passlab.build(passlab.models.mlp(), llvm_passes=True)
        assert len(b.trace.llvm_steps()) > 100
        b.source("asm"); b.run()
        ex = relax.build(passlab.models.mlp(), tvm.target.Target("llvm"))
        ex.mod.imports[0].inspect_source("asm")
        plain = passlab.build(passlab.models.mlp())
        print(len(plain.trace.llvm_steps()), plain.trace.llvm_summary)
    """)
    assert out.stderr == ""
    assert out.stdout.split() == ["0", "None"]


def test_each_kernel_compiles_its_own_functions_only():
    # a kernel named as the start of another's name: each symbol is its longest match's
    import tvm

    from passlab._tvm.codegen import kernel_of

    kernels = ["fused_add", "fused_add_relu"]
    empty = tvm.tirx.PrimFunc([], tvm.tirx.Evaluate(0))
    host = tvm.IRModule({tvm.ir.GlobalVar(name): empty for name in (
        "__tvm_ffi_fused_add", "fused_add_compute_", "__tvm_ffi_fused_add_relu",
        "fused_add_relu_compute_", "__tvm_ffi__shared_helper")})
    jobs = L.kernel_modules(host, kernels, lambda symbol: kernel_of(symbol, kernels))
    assert [(k, sorted(gv.name_hint for gv in mod.functions)) for k, mod in jobs] == [
        ("fused_add", ["__tvm_ffi_fused_add", "fused_add_compute_"]),
        ("fused_add_relu", ["__tvm_ffi_fused_add_relu", "fused_add_relu_compute_"])]


def test_one_kernels_llvm_passes_compiled_alone(llvm_build):
    mine = passlab.build(passlab.models.mlp(), llvm_passes="fused_matmul_add_relu")
    assert mine.trace.llvm_summary.kernels == ("fused_matmul_add_relu",)
    assert llvm_build.trace.llvm_summary.kernels == ()
    kernels = {k for s in mine.trace.llvm_steps() for k in s.llvm.kernels}
    assert kernels == {"fused_matmul_add_relu"}
    assert len(mine.trace.llvm_steps()) < len(llvm_build.trace.llvm_steps())

    def compute(trace):  # the kernel's loops: the passes and the text they end with
        steps = [(s.name, f.after) for s in trace.llvm_steps() for f in s.llvm.functions
                 if f.symbol == "fused_matmul_add_relu_compute_"]
        return [n for n, _ in steps], re.sub(r"!\d+", "!N", steps[-1][1])

    assert compute(mine.trace) == compute(llvm_build.trace)
    with pytest.raises(KeyError, match="unknown kernel 'fused_matmul'; did you mean") as err:
        passlab.build(passlab.models.mlp(), llvm_passes=["fused_matmul"])
    assert err.value.trace.code.kernels == mine.trace.code.kernels  # the build is kept
    with pytest.warns(RuntimeWarning, match="LLVM's passes were not recorded: ValueError: "
                                            "this trace does not hold the host_finalize"):
        named = passlab.build(passlab.models.mlp(), tir_pipeline="default", llvm_passes=True)
    assert named.trace.llvm_summary is None and named.run().shape == (4, 8)
    with pytest.raises(TypeError, match="llvm_passes is True, False, a kernel's name"):
        passlab.build(passlab.models.mlp(), llvm_passes=3)


@pytest.fixture(scope="module")
def per_kernel_build() -> passlab.Build:
    return passlab.build(passlab.models.mlp(), llvm_passes="per-kernel")


def _llvm_shape(trace):
    """An LLVM recording's steps as (name, kernels, functions' symbols and after-texts
    with metadata numbers and TVM's TBAA addresses made equal)."""
    def norm(text: str) -> str:
        return re.sub(r'!"0x[0-9a-f]+"', '!"0x"', re.sub(r"!\d+", "!N", text))

    return [(s.name, s.llvm.kernels, [(f.symbol, norm(f.after)) for f in s.llvm.functions])
            for s in trace.llvm_steps()]


def test_llvm_passes_recorded_after_a_plain_build(plain_build, per_kernel_build):
    later = plain_build.with_llvm_passes("per-kernel")
    # nothing ran again: the executable, the Relax and TIR steps are the build's own
    assert later.executable is plain_build.executable
    assert all(a is b for a, b in zip(later.trace, plain_build.trace, strict=False))
    assert len(later.trace) > len(plain_build.trace)
    assert plain_build.trace.llvm_summary is None  # the build itself is untouched
    # and the LLVM steps are those the same build records when asked up front
    assert later.trace.llvm_summary.kernels == per_kernel_build.trace.llvm_summary.kernels
    assert _llvm_shape(later.trace) == _llvm_shape(per_kernel_build.trace)
    one = plain_build.with_llvm_passes("transpose", progress=False)
    assert one.trace.llvm_summary.kernels == ("transpose",)
    assert {k for s in one.trace.llvm_steps() for k in s.llvm.kernels} == {"transpose"}
    assert plain_build.with_llvm_passes(False) is plain_build
    with pytest.raises(ValueError, match=r"already holds LLVM's passes \(for the kernels "
                                         r"transpose\): to record other kernels, build again"):
        one.with_llvm_passes(True)
    with pytest.raises(UnknownNameError, match="no_such_kernel"):
        plain_build.with_llvm_passes("no_such_kernel")
    assert plain_build.trace.llvm_summary is None


def test_a_large_module_is_recorded_per_kernel(monkeypatch, llvm_build, per_kernel_build):
    from passlab.recording import llvm as recording

    # the MLP's lowered module (0.28 MB) is recorded whole by llvm_passes=True ...
    assert llvm_build.trace.llvm_summary.kernels == ()
    assert not any("per kernel" in n for n in llvm_build.trace.notes)
    # ... and a module over WHOLE_MODULE_MAX_BYTES per kernel, which the notes say
    monkeypatch.setattr(recording, "WHOLE_MODULE_MAX_BYTES", 50_000)
    auto = passlab.build(passlab.models.mlp(), llvm_passes=True)
    assert auto.trace.llvm_summary.kernels == per_kernel_build.trace.llvm_summary.kernels
    assert _llvm_shape(auto.trace) == _llvm_shape(per_kernel_build.trace)
    note = next(n for n in auto.trace.notes if n.startswith("LLVM's passes were recorded "
                                                             "per kernel"))
    assert re.search(r"the lowered module is 0\.\d MB, over passlab\.recording\.llvm\."
                     r"WHOLE_MODULE_MAX_BYTES \(0\.1 MB\).*llvm_passes='whole-module' "
                     r"records it as one module", note)
    # "whole-module" records the module as the build compiled it, however large
    whole = passlab.build(passlab.models.mlp(), llvm_passes="whole-module")
    assert whole.trace.llvm_summary.kernels == ()
    assert _llvm_shape(whole.trace) == _llvm_shape(llvm_build.trace)
    with pytest.raises(ValueError, match="'whole-module' records the whole module and takes "
                                         "no kernel names beside it"):
        passlab.build(passlab.models.mlp(), llvm_passes=["whole-module", "transpose"])


def _compute_passes(trace, kernel="fused_matmul_add_relu"):
    """The passes that changed a kernel's compute function (LLVM's names, without the
    occurrence) and the text they ended with (metadata numbers aside)."""
    steps = [(s.name.partition("#")[0], f.after) for s in trace.llvm_steps()
             for f in s.llvm.functions if f.symbol == f"{kernel}_compute_"]
    return [n for n, _ in steps], re.sub(r"!\d+", "!N", steps[-1][1])


def test_per_kernel_records_every_kernel_compiled_alone(per_kernel_build, llvm_build):
    trace = per_kernel_build.trace
    kernels = trace.code.kernels
    summary = trace.llvm_summary
    assert summary.kernels == tuple(kernels)
    assert len(trace.llvm_steps()) == summary.changed
    assert summary.runs == summary.changed + sum(n for _, n in summary.unchanged)
    # one module per kernel, recorded one after another in the kernels' order
    touched = [s.llvm.kernels for s in trace.llvm_steps() if s.llvm.kernels]
    assert all(len(ks) == 1 for ks in touched)
    runs = [ks[0] for n, ks in enumerate(touched) if n == 0 or ks != touched[n - 1]]
    assert runs == list(kernels)
    for s in trace.llvm_steps():
        assert all(f.kernel in kernels or HELPERS.match(f.symbol) for f in s.llvm.functions)
    # the same function passes as the kernel compiled alone, and as in the whole module
    alone = passlab.build(passlab.models.mlp(), llvm_passes="fused_matmul_add_relu")
    assert _compute_passes(trace) == _compute_passes(alone.trace) == _compute_passes(
        llvm_build.trace)
    assert summary.runs > llvm_build.trace.llvm_summary.runs  # module passes once a kernel


@pytest.mark.slow
def test_cli_records_llvm_passes_per_kernel(tmp_path, capsys):
    from passlab.cli import main

    assert main(["report", "mlp", "--llvm-per-kernel", "-o", str(tmp_path / "r.html")]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("LLVM: "))
    assert re.fullmatch(r"LLVM: \d+ of its [\d,]+ pass runs changed the IR \([\d.]+ s to "
                        r"record\)", line)


def _recordings(build, **kwargs):
    """`record_kernels` of every kernel of `build`, texts with TVM's TBAA node names (buffer
    addresses, different in each process) made equal."""
    import tvm

    from passlab._tvm.codegen import kernel_of
    from passlab.recording.codegen import _final_module

    host = _final_module(build.trace, "host_finalize")
    kernels = list(build.trace.code.kernels)
    got = L.record_kernels(host, tvm.target.Target("llvm"), kernels,
                           lambda symbol: kernel_of(symbol, kernels), **kwargs)

    def norm(text: str) -> str:
        return re.sub(r'!"0x[0-9a-f]+"', '!"0x"', text)

    return [(r.kernel, r.headers, r.skipped,
             [(d.pass_name, d.target, d.scope, d.skipped,
               [(sym, norm(b), norm(a)) for sym, b, a in d.changes]) for d in r.dumps])
            for r in got]


@pytest.mark.slow
def test_kernels_recorded_by_worker_processes_are_the_same(plain_build):
    # two worker processes record every kernel while this one only waits
    assert _recordings(plain_build, workers=2, in_process=False) == _recordings(
        plain_build, workers=1)


@pytest.mark.slow
def test_kernels_are_recorded_here_when_workers_fail(plain_build, tmp_path, monkeypatch):
    import os
    import stat

    expected = _recordings(plain_build, workers=1)

    def python(name: str, script: str) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path)

    # a worker that cannot start, and one that dies on its first kernel: this process
    # records every kernel itself
    for exe in (python("dead", "exit 3\n"), python("dies", "echo ready\nread job\nexit 3\n")):
        monkeypatch.setattr(sys, "executable", exe)
        assert _recordings(plain_build, workers=3, in_process=False) == expected
    # an error in a worker's recording is raised here, naming the kernel
    monkeypatch.setattr(sys, "executable", python("fails", "echo ready\nread job\n"
                                                   "echo '{\"error\": \"ValueError: no\"}'\n"))
    with pytest.raises(RuntimeError, match=r"recording LLVM's passes in a worker process "
                                           r"failed: kernel \w+: ValueError: no"):
        _recordings(plain_build, workers=2, in_process=False)
    monkeypatch.setenv(L.WORKERS_ENV, "0")
    with pytest.raises(ValueError, match="PASSLAB_LLVM_WORKERS='0': the number of processes"):
        L.worker_count(None, 4)
    monkeypatch.setenv(L.WORKERS_ENV, "3")
    assert (L.worker_count(None, 4), L.worker_count(None, 2), L.worker_count(5, 9)) == (3, 2, 5)
    monkeypatch.delenv(L.WORKERS_ENV)
    assert 1 <= L.worker_count(None, 100) <= L.MAX_WORKERS
    assert os.environ.get(L.WORKERS_ENV) is None


@pytest.mark.slow
def test_per_kernel_workers_leak_nothing():
    import os

    code = textwrap.dedent("""
        import passlab
        b = passlab.build(passlab.models.resnet(image=16, width=8, blocks=(1,)),
                          llvm_passes="per-kernel")
        print(len(b.trace.llvm_steps()), len(b.trace.llvm_summary.kernels))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, check=True, env={**os.environ, L.WORKERS_ENV: "2"})
    assert out.stderr == ""
    steps, kernels = map(int, out.stdout.split())
    assert steps > 100 and kernels > 4


def test_llvm_steps_by_kernel_and_bad_names(llvm_build):
    trace = llvm_build.trace
    mine = trace.llvm_steps("transpose")
    assert len(mine) and all("transpose" in s.llvm.kernels for s in mine)
    with pytest.raises(KeyError, match="unknown kernel 'transpos'; did you mean 'transpose'"):
        trace.llvm_steps("transpos")
    step = trace.llvm_steps()[0]
    assert "not timed" in step.to_text()
    summary = trace.llvm_summary
    assert summary.runs == summary.changed + sum(n for _, n in summary.unchanged)
    assert json.loads(json.dumps(summary.to_dict()))["changed"] == summary.changed


def test_options_reach_the_build_and_are_recorded():
    def x_float(build: passlab.Build) -> int:
        return build.source("llvm").count("x float>")

    base = passlab.Pipeline.default("llvm")
    counts = {}
    for opts in [(), ("-vectorize-loops:bool=false",), ("-vectorize-slp:bool=false",)]:
        b = passlab.build(passlab.models.mlp(), base.llvm_options(*opts))
        assert b.pipeline.llvm_opts == opts
        counts[opts] = x_float(b)
    assert list(counts.values()) == [1084, 932, 156]


# -------------------------------------------------------------------- saved traces
def _rewrite(src, dst, **members):
    import zipfile

    with zipfile.ZipFile(src) as z:
        data = {i.filename: z.read(i.filename) for i in z.infolist()}
    for name, value in members.items():
        name = name.replace("_", ".")
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value if isinstance(value, bytes) else json.dumps(value).encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        for name, blob in data.items():
            z.writestr(name, blob)
    return dst


@pytest.fixture(scope="module")
def saved_llvm(llvm_build, tmp_path_factory):
    return llvm_build.trace.save(tmp_path_factory.mktemp("llvm") / "mlp.trace.zip")


def test_saved_trace_keeps_llvm_steps_and_options(llvm_build, saved_llvm, tmp_path):
    import zipfile

    loaded = passlab.load_trace(saved_llvm)
    before = [(s.index, s.name, s.seconds, s.llvm) for s in llvm_build.trace.llvm_steps()]
    assert [(s.index, s.name, s.seconds, s.llvm) for s in loaded.llvm_steps()] == before
    assert loaded.llvm_summary == llvm_build.trace.llvm_summary
    with zipfile.ZipFile(saved_llvm) as z:
        sizes = {i.filename: i.file_size for i in z.infolist()}
        lines = z.read("llvm.txt").decode().split("\n")
    assert set(sizes) == {"trace.json", "ir.json", "llvm.json", "llvm.txt"}
    # each distinct line once: far less than the texts the steps hold
    held = {id(t): t for s in llvm_build.trace.llvm_steps() for f in s.llvm.functions
            for t in (f.before, f.after)}
    every = [ln for t in held.values() if t for ln in t.split("\n")]
    assert len(lines) == len(set(lines)) and set(lines) == set(every)
    assert len(lines) < len(every) / 3
    # the pipeline's LLVM options travel too; a trace without LLVM steps has no members
    pipe = passlab.Pipeline.default("llvm").llvm_options("-unroll-threshold:int=0")
    plain = passlab.build(passlab.models.mlp(), pipe).trace.save(tmp_path / "p.zip")
    with zipfile.ZipFile(plain) as z:
        assert "llvm.json" not in z.namelist()
    back = passlab.load_trace(plain)
    assert back.pipeline.llvm_opts == ("-unroll-threshold:int=0",)
    assert back.pipeline.llvm_passes is False and back.llvm_summary is None


@pytest.mark.parametrize("change, said", [
    (dict(llvm_txt=None), "has llvm.json but no llvm.txt"),
    (dict(llvm_json={"texts": [[0, 10**9]], "steps": [], "summary": None}),
     "has a run of lines 0..999999999, outside"),
    (dict(llvm_json={"texts": [], "steps": [], "summary": None}),
     "a saved step of stage 'llvm' has no record"),
    (dict(llvm_json=[1, 2]), "it is not an object"),
    (dict(llvm_txt=b"\xff\xfe"), "content is corrupt"),
])
def test_crafted_llvm_members_are_refused(saved_llvm, tmp_path, change, said):
    bad = _rewrite(saved_llvm, tmp_path / "bad.zip", **change)
    with pytest.raises(passlab.errors.TraceFileError, match=re.escape(said)):
        passlab.load_trace(bad)


def test_runs_that_would_make_huge_texts_are_refused(saved_llvm, tmp_path, monkeypatch):
    import zipfile

    from passlab.io import _llvm_json

    with zipfile.ZipFile(saved_llvm) as z:
        data = json.loads(z.read("llvm.json"))
        n = len(z.read("llvm.txt").decode().split("\n"))
    # every text made of every line, 1,000 times over: a memory bomb of references
    data["texts"] = [[0, n] * 1000 for _ in data["texts"]]
    bad = _rewrite(saved_llvm, tmp_path / "bomb.zip", llvm_json=data)
    with pytest.raises(passlab.errors.TraceFileError, match="MAX_LLVM_CHARS"):
        passlab.load_trace(bad)
    monkeypatch.setattr(_llvm_json, "MAX_LLVM_CHARS", 10)
    with pytest.raises(passlab.errors.TraceFileError, match="more than 10 characters"):
        passlab.load_trace(saved_llvm)


# ----------------------------------------------------------------------- analyses
def test_llvm_diff_of_a_step_and_of_a_span(llvm_build):
    from passlab.analysis import ModuleDiff, diff, llvm_diff

    trace = llvm_build.trace
    lv = trace.find("LoopVectorizePass")
    d = diff(lv)  # diff() of an LLVM step is its LLVM IR diff
    assert isinstance(d, ModuleDiff) and d.title == "LoopVectorizePass"
    (fd,) = d
    assert (fd.name, fd.status, fd.kind) == ("fused_matmul_add_relu_compute_", "modified",
                                             "llvm")
    assert fd.before_text == lv.llvm.functions[0].before
    assert fd.after_text == lv.llvm.functions[0].after
    assert "vector.body:" in fd.after_text and "vector.body:" not in fd.before_text
    assert d.to_text().splitlines()[1].startswith(
        "diff a/fused_matmul_add_relu_compute_ b/fused_matmul_add_relu_compute_ (llvm, ")
    html = d.to_html()
    assert 'data-kind="llvm"' in html and '<span class="tok-kt">float</span>' in html
    # a span: each function from before the first pass that changed it to after the last
    steps = trace.llvm_steps("fused_matmul_add_relu")
    span = llvm_diff(steps[0], steps[-1])
    first = {f.symbol: f.before for s in reversed(steps) for f in s.llvm.functions}
    assert span["fused_matmul_add_relu_compute_"].before_text == first[
        "fused_matmul_add_relu_compute_"]
    assert len(llvm_diff(steps[0], steps[-1], function="__tvm_ffi_fused_matmul_add_relu")) == 1
    with pytest.raises(KeyError, match="unknown function 'nope'"):
        llvm_diff(lv, function="nope")
    with pytest.raises(TypeError, match="takes a step of LLVM's pipeline"):
        llvm_diff(trace[0])


def test_llvm_table_counts_instructions_blocks_and_vectors(llvm_build):
    from passlab.analysis import llvm_table

    trace = llvm_build.trace
    table = llvm_table(trace)
    lv = trace.find("LoopVectorizePass")
    (row,) = [r for r in table if r.index == lv.index]
    f = lv.llvm.functions[0]
    b, a = L.function_stats(f.before), L.function_stats(f.after)
    assert (row.instructions, row.blocks, row.vector_instructions) == (
        (b.instructions, a.instructions), (b.blocks, a.blocks),
        (b.vector_instructions, a.vector_instructions))
    assert row.vector_instructions[0] == 0 < row.vector_instructions[1]
    assert len(table) == sum(1 for s in trace.llvm_steps() for f in s.llvm.functions
                             if f.symbol != "[module]")
    by_pass = {name: rest for name, *rest in table.by_pass()}
    assert by_pass["SROAPass"][1] < 0  # SROA removes the stack traffic
    assert list(table.to_dataframe().columns)[:3] == ["index", "step", "function"]
    mine = llvm_table(trace, kernel="transpose")
    assert mine and {r.kernel for r in mine} == {"transpose"}


def test_explain_strip_of_an_llvm_step(llvm_build):
    lv = llvm_build.trace.find("LoopVectorizePass")
    e = lv.explain()
    assert e.card.name == "LoopVectorizePass" and e.card.source == "passlab"
    b = L.function_stats(lv.llvm.functions[0].before)
    a = L.function_stats(lv.llvm.functions[0].after)
    assert e.sentence == (
        f"LoopVectorizePass changed fused_matmul_add_relu_compute_ of kernel "
        f"fused_matmul_add_relu: instructions {b.instructions} \u2192 {a.instructions}; "
        f"basic blocks {b.blocks} \u2192 {a.blocks}; vector instructions 0 \u2192 "
        f"{a.vector_instructions}; new vector types <4 x float>, <4 x i32>.")
    other = llvm_build.trace.find("PostOrderFunctionAttrsPass").explain()
    assert other.card.source == "llvm" and other.card.doc == "llvm::PostOrderFunctionAttrsPass"
    assert "LLVM pass: llvm::LoopVectorizePass" in passlab.explain("LoopVectorizePass").to_text()


def test_vectorization_per_kernel_read_and_measured(llvm_build):
    from passlab.analysis import vectorization

    v = vectorization(llvm_build.trace, measure=True)
    assert [k.kernel for k in v] == list(llvm_build.trace.code.kernels)
    relu = v["fused_matmul_add_relu"]
    assert (relu.loop_vectorized, relu.slp_vectorized, relu.widest) == (True, True,
                                                                       "<4 x float>")
    assert relu.steps == tuple(s.index for s in llvm_build.trace.llvm_steps(
        "fused_matmul_add_relu") if s.name.partition("#")[0] in (
        "LoopVectorizePass", "SLPVectorizerPass"))
    assert dict(relu.loop_created)["<4 x float>"] == 129 and relu.before_llvm == ()
    assert v["transpose"].final == () and not v["transpose"].loop_vectorized
    assert v["fused_matmul1_add1"].slp_vectorized and not v["fused_matmul1_add1"].loop_vectorized
    # what disappears without each vectorizer, against builds with the option
    for opt, share in (("-vectorize-loops:bool=false", "loop_share"),
                       ("-vectorize-slp:bool=false", "slp_share")):
        other = passlab.build(passlab.models.mlp(),
                              passlab.Pipeline.default("llvm").llvm_options(opt))
        fns = split_functions(other.source("llvm"), "llvm")
        for k in v:
            left = sum(sum(L.vector_types(t).values()) for sym, t in fns.items()
                       if sym.removeprefix("__tvm_ffi_").startswith(k.kernel + "_")
                       or sym.removeprefix("__tvm_ffi_") == k.kernel)
            assert getattr(k, share) == k.vector_types - left, (opt, k.kernel)
    # the functions whose vector code a vectorizer's steps created are the kernels that
    # lose vector code without it
    assert {k.kernel for k in v if k.loop_created} == {k.kernel for k in v if k.loop_share}
    assert {k.kernel for k in v if k.slp_created} == {k.kernel for k in v if k.slp_share}
    assert "cannot be switched on through TVM 0.27" in v.to_text()
    with pytest.raises(ValueError, match="needs a trace recorded with LLVM's passes"):
        vectorization(passlab.build(passlab.models.mlp()).trace)


def test_blame_goes_on_into_llvm(llvm_build, plain_build):
    from passlab.research import blame

    b = blame(llvm_build.trace, "fused_matmul_add_relu")
    assert [s.label for s in b.vectorized_by] == ["LoopVectorizePass", "SLPVectorizerPass#1"]
    assert {e.function for e in b.llvm_events} == {"fused_matmul_add_relu_compute_",
                                                   "__tvm_ffi_fused_matmul_add_relu"}
    mine = llvm_build.trace.llvm_steps("fused_matmul_add_relu")
    assert [e.step.index for e in b.llvm_events] == [
        s.index for s in mine for f in s.llvm.functions if f.kernel == "fused_matmul_add_relu"]
    assert b.summary().endswith(
        "In LLVM: vectorized by LoopVectorizePass (fused_matmul_add_relu_compute_), "
        "SLPVectorizerPass#1 (fused_matmul_add_relu_compute_); "
        f"{len({e.step.index for e in b.llvm_events}) - 2} LLVM pass runs rewrote its "
        "functions (SimplifyCFGPass, SROAPass, EarlyCSEPass, IPSCCPPass, GlobalOptPass, ...)")
    assert "In LLVM: not vectorized by LLVM" in blame(llvm_build.trace, "transpose").summary()
    # without LLVM's passes the history ends at the last TIR pass, as before
    plain = blame(plain_build.trace, "fused_matmul_add_relu")
    assert plain.llvm_events == () and "LLVM" not in plain.summary()
    assert [e.step.index for e in b if e.step.llvm is None] == [e.step.index for e in plain]


def test_cli_report_records_llvm_passes_and_checks_options(tmp_path, capsys):
    from passlab.cli import main
    from passlab.views._report_state import read_report

    out = tmp_path / "r.html"
    assert main(["report", "mlp", "--llvm-passes", "--llvm-option=-unroll-threshold:int=0",
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    llvm = next(line for line in printed if line.startswith("LLVM: "))
    assert re.fullmatch(r"LLVM: \d+ of its [\d,]+ pass runs changed the IR \([\d.]+ s to "
                        r"record\)", llvm)
    data, blocks = read_report(out.read_text())
    rows = [r for r in data["state"]["steps"] if r["stage"] == "llvm"]
    assert len(rows) == 40 and next(r for r in data["state"]["steps"] if r.get("llvm"))
    assert all(f"diff:{r['i']}:side-by-side" in blocks for r in rows)
    assert main(["report", "mlp", "--llvm-option=-pass-remarks=x", "-o", str(out)]) == 2
    assert "--llvm-option: LLVM option -pass-remarks cannot be set" in capsys.readouterr().err


@pytest.mark.slow
def test_attribute_measures_what_llvms_vectorizers_buy():
    opts = ["-vectorize-loops:bool=false", "-vectorize-slp:bool=false"]
    a = passlab.attribute("mlp", llvm_options=opts, repeat=3, workers=1, progress=False)
    assert sorted(r.pass_ for r in a) == sorted(opts)
    assert " 2 LLVM options set one at a time (2 ok)" in a.summary()
    for r in a:
        assert r.status == "ok" and r.max_abs_diff is not None and r.max_abs_diff < 1e-5
        assert r.kernels == r.kernels_without == 4 and r.reused is not True
        assert r.delta_s == pytest.approx(r.run_s - r.run_s_without)
    both = passlab.attribute("mlp", passes=["FuseOps"], llvm_options=opts[0], repeat=2,
                             workers=1, progress=False)
    assert sorted(r.pass_ for r in both) == sorted(["FuseOps", opts[0]])
    assert "1 pass disabled and 1 LLVM option set one at a time" in both.summary()
    with pytest.raises(LlvmOptionError, match="-pass-remarks cannot be set"):
        passlab.attribute("mlp", llvm_options=["-pass-remarks=x"], workers=1)


# -------------------------------------------------------------------------- views
def test_pass_list_has_an_llvm_group_under_codegen(llvm_build):
    from passlab.views import explorer_list as listing

    trace = llvm_build.trace
    llvm = [s.index for s in trace.llvm_steps()]
    codegen = next(s for s in trace if s.code is not None)
    closed = listing.visible(trace)
    opened = listing.visible(trace, show_llvm=True)
    assert not set(llvm) & set(closed) and codegen.index in closed
    assert opened == closed + llvm  # the group follows the codegen row, in LLVM's order
    found = listing.visible(trace, show_llvm=True, search="vectorize")
    assert found == [i for i in opened if "vectorize" in trace[i].label.lower()]
    assert [trace[i].label for i in found if trace[i].llvm is not None] == [
        "SLPVectorizerPass", "LoopVectorizePass", "SLPVectorizerPass#1", "LoopVectorizePass#1"]
    assert listing.visible(trace, show_llvm=True, stage="llvm") == llvm
    rows = {r["i"]: r for r in listing.rows(trace)}
    assert rows[codegen.index]["llvm"] == len(llvm)
    assert sum("llvm" in r for r in rows.values()) == 1
    lv = trace.find("LoopVectorizePass")
    assert (rows[lv.index]["stage"], rows[lv.index]["ms"], rows[lv.index]["summary"]) == (
        "llvm", None, "~1")


def test_explorer_opens_the_llvm_group_and_shows_llvm_diffs(llvm_build):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    ex = Explorer(llvm_build)
    shown = list(ex.visible)
    ex.show_llvm = True
    assert ex.visible == shown + [s.index for s in llvm_build.trace.llvm_steps()]
    ex.selected = llvm_build.trace.find("SLPVectorizerPass").index
    assert 'data-kind="llvm"' in ex.diff_html and "tok-kt" in ex.diff_html
    assert "SLPVectorizerPass changed" in ex.explain_html
    ex.show_llvm = False
    assert ex.visible == shown


def test_kernel_panel_says_what_llvm_did(llvm_build, plain_build):
    from passlab.views import explorer_panes as panes

    def panel(build):
        r = panes.PaneRenderer(build.trace)
        idx = build.trace.find("FuseTIR").index
        node = next(n for n in r.graph(idx).nodes if n.label == "fused_matmul_add_relu")
        return r.kernel_links(idx, node.id)

    html = panel(llvm_build)
    lv, slp = (llvm_build.trace.find(n) for n in ("LoopVectorizePass", "SLPVectorizerPass#1"))
    assert ('<div class="plx-kernel-llvm"><b>LLVM</b>: vectorized by LoopVectorize and '
            "SLPVectorizer; widest &lt;4 x float&gt;, 441 vector types (") in html
    assert f'data-step="{lv.index}"' in html and f'data-step="{slp.index}"' in html
    assert "plx-kernel-llvm" not in panel(plain_build)


def test_report_lists_and_diffs_a_bounded_llvm_group(llvm_build, tmp_path):
    from passlab.views._report_state import REPORT_LLVM, llvm_kept, read_report

    trace = llvm_build.trace
    kept = llvm_kept(list(trace.llvm_steps()))
    assert len(kept) == REPORT_LLVM == 40
    firsts = [s for s in trace.llvm_steps() if s.name in (
        "LoopVectorizePass", "SLPVectorizerPass", "LoopUnrollPass")]
    assert set(firsts) <= set(kept)
    data, blocks = read_report(trace.write_report(tmp_path / "r.html").read_text())
    rows = [r["i"] for r in data["state"]["steps"] if r["stage"] == "llvm"]
    assert rows == [s.index for s in kept]
    assert all(f"diff:{i}:side-by-side" in blocks and f"explain:{i}" in blocks for i in rows)
    assert data["state"]["show_llvm"] is False
    full, _ = read_report(trace.write_report(tmp_path / "f.html", full=True).read_text())
    assert sum(r["stage"] == "llvm" for r in full["state"]["steps"]) == len(trace.llvm_steps())


def test_ab_comparison_names_the_llvm_options_and_counts_vector_types(plain_build):
    from passlab.research import compare

    pipe = passlab.Pipeline.default("llvm").llvm_options("-vectorize-loops:bool=false")
    other = passlab.build(passlab.models.mlp(), pipe)
    c = compare(plain_build, other, names=("default", "no LV"))
    assert c.llvm_options == ((), ("-vectorize-loops:bool=false",))
    assert c.summary().endswith("; LLVM options: default none, no LV "
                                "-vectorize-loops:bool=false")
    d = c.delta("vector types")
    assert (d.a, d.b) == tuple(sum(L.vector_types(b.source("llvm")).values())
                               for b in (plain_build, other))
    assert d.a > d.b and not c.identical
    # the functions differ only in the target attribute TIR carries from BindTarget on
    assert c.first_difference.name == "tirx.BindTarget"


@pytest.mark.slow
def test_a_progress_bar_on_stderr_does_not_mix_with_llvms_dump(llvm_build):
    out = _child("""
        import passlab
        b = passlab.build(passlab.models.mlp(), llvm_passes=True, progress=True)
        print(len(b.trace.llvm_steps()))
    """)
    assert int(out.stdout) == len(llvm_build.trace.llvm_steps())
    last = out.stderr.strip().splitlines()[-1]
    assert re.search(r"95 pass calls recorded, \d+ of LLVM's [\d,]+ pass runs", last)
    assert "*** IR" not in out.stderr and "define " not in out.stderr


def test_a_failed_recording_keeps_the_build(monkeypatch):
    from passlab.recording import llvm as recording

    def broken(*args, **kwargs):
        raise RuntimeError("LLVM said no")

    monkeypatch.setattr(recording._llvm, "record_codegen", broken)
    with pytest.warns(RuntimeWarning, match="LLVM's passes were not recorded: RuntimeError: "
                                            "LLVM said no"):
        b = passlab.build(passlab.models.mlp(), llvm_passes=True)
    assert b.trace.llvm_summary is None and len(b.trace.llvm_steps()) == 0
    assert b.trace.notes[-1] == "LLVM's passes were not recorded: RuntimeError: LLVM said no"
    assert b.run().shape == (4, 8)


def test_an_llvm_step_has_no_reproducer_and_says_why(llvm_build):
    step = llvm_build.trace.find("LoopVectorizePass")
    with pytest.raises(ValueError, match="LoopVectorizePass is one of LLVM's own passes, run "
                                         "inside TVM's LLVM code generator: TVM cannot run it "
                                         "alone"):
        passlab.reproducer(step)
