"""passlab.backend: declaring a backend, where its passes land in the pipeline, preview,
full builds with the host fallback, and the errors a user can cause."""

from __future__ import annotations

import doctest
import re
import warnings

import numpy as np
import pytest

import passlab
from passlab import backend as backend_mod
from passlab.backend import Backend, PartitionWarning, apply_backend, preview
from passlab.errors import UnknownNameError

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402
from tvm.relax.dpl import is_op, wildcard  # noqa: E402


def matmul():
    return is_op("relax.matmul")(wildcard(), wildcard())


def npu(**kw) -> Backend:
    kw.setdefault("patterns", [("dense", matmul())])
    return Backend("npu", **kw)


def identity(mod):
    return mod


def user_rows(pipe: passlab.Pipeline) -> list[tuple[str, str, str]]:
    return [(r["stage"], r["name"], r["note"]) for r in pipe.rows() if r["origin"] == "user"]


# ------------------------------------------------------------------------ declaring
def test_pattern_names_take_the_backend_prefix():
    conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    b = Backend("npu", patterns=[("conv2d_relu", is_op("relax.nn.relu")(conv)),
                                 ("npu.dense", matmul()), "example_npu.conv2d"])
    assert [p.name for p in b.fusion_patterns()] == [
        "npu.conv2d_relu", "npu.dense", "npu.conv2d"]


def test_registered_sets_keep_their_order_and_names():
    from tvm.relax.backend.pattern_registry import get_patterns_with_prefix

    b = Backend("tensorrt")
    assert b.pattern_names == tuple(p.name for p in get_patterns_with_prefix("tensorrt"))
    assert len(b.pattern_names) == 52
    assert len(Backend("example_npu").pattern_names) == 19


def test_single_pattern_and_check_function():
    seen = []

    def check(ctx) -> bool:
        seen.append(ctx)
        return False  # refuse every match

    b = Backend("npu", patterns=("dense", matmul(), check))
    assert b.pattern_names == ("npu.dense",)
    with pytest.warns(PartitionWarning):
        trace = b.preview(passlab.models.mlp())
    assert seen, "the check function was called"
    assert not [gv for gv, f in trace.top_level()[-1].after.functions_items()
                if f.attrs is not None and "Codegen" in f.attrs]


def test_passes_are_normalized_by_phase_order():
    b = npu(passes={"after_fusion": identity, "before_partition": [identity, identity]})
    assert [(p, len(ps)) for p, ps in b.passes] == [("before_partition", 2), ("after_fusion", 1)]
    assert b.phase("after_partition") == ()
    assert repr(b) == ("Backend('npu', patterns=['dense'], passes={before_partition: 2, "
                       "after_fusion: 1}, codegen='auto')")


@pytest.mark.parametrize("make, error, text", [
    (lambda: Backend("n.p", patterns=[("a", matmul())]), ValueError,
     "a backend name must be an identifier without dots (it becomes the 'Codegen' attribute "
     "and the prefix of pattern names), not 'n.p'"),
    (lambda: npu(passes={"after_fusoin": [identity]}), UnknownNameError,
     "unknown phase 'after_fusoin'; did you mean 'after_fusion', 'tir_after_lowering'? Known "
     "phase names: before_partition, after_partition, after_fusion, before_lowering, "
     "after_memory_plan, tir_before_lowering, tir_after_lowering, codegen."),
    (lambda: npu(passes={"after_fusion": [42]}), TypeError,
     "a pass of phase 'after_fusion' must be a TVM pass or a function IRModule -> IRModule, "
     "not int"),
    (lambda: Backend("npu", patterns="tensorrtt"), UnknownNameError,
     "unknown pattern set 'tensorrtt'; did you mean 'tensorrt'? Known pattern set names: "
     "example_npu, tensorrt. One registered pattern can be named in full (e.g. "
     "'example_npu.conv2d'); give (name, pattern) tuples for your own patterns."),
    (lambda: Backend("npu", patterns=[("a", "relax.matmul")]), TypeError,
     "pattern 'a': the second item must be a tvm.relax.dpl pattern (e.g. "
     "is_op('relax.nn.relu')(wildcard())), not str"),
    (lambda: Backend("npu", patterns=[42]), TypeError,
     "cannot use 42 as a pattern of backend 'npu': give (name, pattern), (name, pattern, "
     "check), a FusionPattern or the name of a registered pattern set"),
    (lambda: Backend("npu"), ValueError,
     "backend 'npu' has no patterns, and none are registered under its name: give "
     "patterns=[(name, pattern), ...] or the name of a registered set (tensorrt, example_npu)"),
    (lambda: npu(codegen="extern"), UnknownNameError,
     "unknown codegen mode 'extern'; did you mean 'external'? Known codegen mode names: "
     "auto, external, host, none."),
])
def test_bad_declarations_say_what_would_be_right(make, error, text):
    with pytest.raises(error) as err:
        make()
    assert str(err.value) == text


def test_backend_text_and_html():
    b = npu(passes={"after_partition": [identity],
                    "before_partition": [relax.transform.FoldConstant()]})
    assert b.to_text() == """\
Backend 'npu': 1 pattern, codegen auto (host: no relax.ext.npu registered)
kind     name          where
-------  ------------  ----------------
pattern  npu.dense     priority 1
pass     FoldConstant  before_partition
pass     identity      after_partition"""
    bundle = b._repr_mimebundle_()
    assert bundle["text/plain"] == b.to_text()
    assert "<caption>Backend &#x27;npu&#x27;: 1 pattern" in bundle["text/html"]


def test_phase_lookup_has_close_matches():
    with pytest.raises(UnknownNameError, match="did you mean 'after_partition'"):
        npu().phase("after_partiton")


# ------------------------------------------------------------------- pipeline edits
def test_apply_backend_places_every_phase():
    b = npu(passes={p: [relax.transform.Normalize()] if p == "after_memory_plan" else [identity]
                    for p in backend_mod.PHASES})
    pipe = passlab.Pipeline.default("llvm").with_backend(b)
    assert user_rows(pipe) == [
        ("legalize", "identity", "backend npu: before_partition"),
        ("legalize", "partition_for_npu",
         "backend npu: FuseOpsByPattern + MergeCompositeFunctions, 1 patterns"),
        ("legalize", "identity", "backend npu: after_partition"),
        ("legalize", "host_fallback_npu",
         "backend npu: no codegen, regions inlined back for the host"),
        ("legalize", "identity", "backend npu: after_fusion"),
        ("dataflow_lower", "identity", "backend npu: before_lowering"),
        ("finalize", "Normalize", "backend npu: after_memory_plan"),
        ("s_tir", "identity", "backend npu: tir_before_lowering"),
        ("tirx", "identity", "backend npu: tir_after_lowering"),
        ("codegen", "npu", "backend npu: codegen"),
    ]
    names = pipe.names
    assert names[names.index("host_fallback_npu") + 1] == "LegalizeOps"
    assert names[names.index("StaticPlanBlockMemory") + 1] == "Normalize"
    assert names[names.index("FuseTIR") + 1] == "identity"
    assert pipe.stage("dataflow_lower").passes[0].name == "identity"
    assert apply_backend(passlab.Pipeline.default("llvm"), b).rows() == pipe.rows()


def test_apply_backend_keeps_the_original_and_takes_a_name():
    base = passlab.Pipeline.default("llvm", "build")
    pipe = base.with_backend("tensorrt")
    assert not base.edited
    assert [e.name for e in pipe.stage("legalize").passes] == [
        "partition_for_tensorrt", "host_fallback_tensorrt", "LegalizeOps"]


def test_registered_codegen_runs_runcodegen():
    tvm.register_global_func("relax.ext.passlab_test_npu", lambda *args: [], override=True)
    b = Backend("passlab_test_npu", patterns=[("dense", matmul())])
    assert b.codegen_registered()
    pipe = passlab.Pipeline.default("llvm").with_backend(b)
    assert [e.name for e in pipe.user_passes] == [
        "partition_for_passlab_test_npu", "codegen_for_passlab_test_npu"]


def test_external_codegen_that_is_not_registered_is_an_error():
    with pytest.raises(ValueError) as err:
        passlab.Pipeline.default("llvm").with_backend(npu(codegen="external"))
    assert str(err.value) == (
        "backend 'npu' asks for codegen='external', but TVM has no codegen 'relax.ext.npu' "
        "registered; register one, or use codegen='host' to compile the regions for the host, "
        "or preview() to stop at partitioning")


def test_apply_backend_rejects_non_pipelines():
    with pytest.raises(TypeError, match="apply_backend needs a passlab.Pipeline, not str"):
        apply_backend("llvm", npu())
    with pytest.raises(TypeError, match="a backend is a passlab.backend.Backend or the name"):
        passlab.Pipeline.default("llvm").with_backend(3)


# ---------------------------------------------------------------------- partitioning
def test_partition_keeps_a_forward_entry_named_forward():
    out = npu().partition(passlab.models.mlp())
    names = sorted(gv.name_hint for gv in out.get_global_vars())
    assert names[0] == "forward" and len(names) == 3
    assert all(re.fullmatch(r"fused_relax_matmul\d*_npu", n) for n in names[1:])
    assert out["forward"].attrs["global_symbol"] == "forward"
    assert int(out["forward"].attrs["num_input"]) == 1
    assert backend_mod.composite_names(out) == ["npu.dense", "npu.dense"]


def test_partition_sets_other_public_functions_aside():
    """MergeCompositeFunctions fails on a module with two public Relax functions."""
    mod = passlab.models.mlp()
    other = passlab.models.mlp(batch=2)["forward"].with_attr("global_symbol", "main")
    both = tvm.IRModule({mod.get_global_var("forward"): mod["forward"],
                         tvm.ir.GlobalVar("main"): other})
    out = npu().partition(both)
    assert out["main"].same_as(other)
    assert len([f for _, f in out.functions_items()
                if f.attrs is not None and "Codegen" in f.attrs]) == 2


def test_partition_without_merge_makes_one_region_per_match():
    out = backend_mod.partition(passlab.models.mlp(), npu(), merge=False)
    codegen = sorted(gv.name_hint for gv, f in out.functions_items()
                     if f.attrs is not None and "Codegen" in f.attrs)
    assert len(codegen) == 2


# ---------------------------------------------------------------------------- preview
def test_preview_records_up_to_the_partition_phase():
    seen = {}

    def count_regions(mod):
        seen["regions"] = sorted(gv.name_hint for gv, f in mod.functions_items()
                                 if f.attrs is not None and "Codegen" in f.attrs)
        return mod

    b = npu(passes={"after_partition": [count_regions], "after_fusion": [identity]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = b.preview(passlab.models.mlp())
    main = [(s.name, s.origin) for s in trace if s.kind == "pass"]
    assert main == [("DispatchSampling", "tvm"), ("DispatchSortScan", "tvm"),
                    ("partition_for_npu", "user"), ("count_regions", "user")]
    assert len(seen["regions"]) == 2  # TVM numbers the names (fused_relax_matmul11_npu)
    assert all(re.fullmatch(r"fused_relax_matmul\d*_npu", n) for n in seen["regions"])
    inner = [s.name for s in trace.children(trace.find("partition_for_npu"))]
    assert inner == ["NormalizeGlobalVar", "FuseOpsByPattern", "MergeCompositeFunctions",
                     "NormalizeGlobalVar"]
    assert trace.pipeline.names[-2:] == ("partition_for_npu", "count_regions")
    assert trace.warnings == ()


def test_preview_warns_about_patterns_that_matched_nothing():
    conv3d = is_op("relax.nn.conv3d")(wildcard(), wildcard())
    b = Backend("npu", patterns=[("dense", matmul()), ("conv3d", conv3d)])
    with pytest.warns(PartitionWarning) as rec:
        trace = b.preview(passlab.models.mlp())
    msg = "backend 'npu': 1 of its patterns matched nothing: npu.conv3d"
    assert [str(w.message) for w in rec] == [msg]
    assert trace.warnings == (msg,)


def test_preview_warns_when_nothing_matched():
    b = Backend("npu", patterns=[("conv3d", is_op("relax.nn.conv3d")(wildcard(), wildcard()))])
    with pytest.warns(PartitionWarning, match=r"backend 'npu': none of its 1 patterns matched "
                                              r"\(npu.conv3d\); nothing is offloaded"):
        b.preview(passlab.models.mlp())


def test_registered_sets_do_not_warn_per_pattern():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        preview(passlab.models.resnet(), "tensorrt")


def test_preview_failure_keeps_the_trace_and_the_exception_class():
    def broken(mod):
        raise ValueError("the NPU does not like this graph")

    with pytest.raises(passlab.BuildError) as err:
        npu(passes={"after_partition": [broken]}).preview(passlab.models.mlp())
    assert isinstance(err.value, ValueError)
    assert err.value.step.name == "broken"
    assert err.value.trace.find("partition_for_npu").changed


# ------------------------------------------------------------------------ full builds
def test_host_fallback_build_matches_the_plain_build():
    mod = passlab.models.mlp()
    b = passlab.build(mod, passlab.Pipeline.default("llvm").with_backend(npu()))
    ref = passlab.build(mod)
    assert passlab.max_abs_diff(b.run(), ref.run()) == 0.0
    fallback = b.trace.find("host_fallback_npu")
    assert fallback.origin == "user"
    removed = fallback.functions_changed.removed
    assert len(removed) == 2 and all(n.endswith("_npu") for n in removed)


def test_host_fallback_build_of_a_cnn_with_tensorrt_patterns():
    mod = passlab.models.resnet(width=8, blocks=(1, 1))
    b = passlab.build(mod, passlab.Pipeline.default("llvm").with_backend("tensorrt"))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(b.run(x), passlab.build(mod).run(x), rtol=1e-5, atol=1e-5)
    assert b.trace.find("partition_for_tensorrt").functions_changed.added


def test_codegen_none_fails_where_tvm_fails_and_keeps_the_trace():
    pipe = passlab.Pipeline.default("llvm", "build").with_backend(npu(codegen="none"))
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(passlab.models.mlp(), pipe)
    assert err.value.step.name == "VMShapeLower"
    assert err.value.trace.find("partition_for_npu").changed


def test_docstring_examples():
    result = doctest.testmod(backend_mod, extraglobs={"passlab": passlab},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
