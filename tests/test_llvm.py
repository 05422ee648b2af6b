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
from passlab.errors import LlvmOptionError

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
