from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import tvm
from tvm.ir.instrument import PassTimingInstrument, pass_instrument

import passlab
from passlab import Pipeline


def test_seed_story_user_pass_after_fusion_sees_fused_functions(mlp_build):
    """Seed 1: run my own pass after the default optimizations (legalize + fusion),
    before the transition to memory planning / lowering."""
    seen = {}

    def inspect_fused(mod):
        fns = {gv.name_hint: f for gv, f in mod.functions.items()}
        seen["kernels"] = sorted(n for n in fns if n.startswith("fused_"))
        seen["prim_funcs"] = sorted(n for n, f in fns.items() if isinstance(f, tvm.tirx.PrimFunc))
        seen["alloc_in_main"] = "alloc_storage" in fns["forward"].script()
        return mod

    pipe = Pipeline.default("llvm").insert(inspect_fused, after="legalize")
    b = passlab.build(passlab.models.mlp(), pipe)
    assert seen["kernels"] == ["fused_matmul1_add1", "fused_matmul_add_relu"]
    assert seen["prim_funcs"] == ["fused_matmul1_add1", "fused_matmul_add_relu",
                                  "transpose", "transpose1"]
    assert seen["alloc_in_main"] is False  # before memory planning
    step = b.trace.find("inspect_fused")
    assert (step.stage, step.origin, step.kind, step.changed) == ("legalize", "user", "pass", False)
    # the step just before it in the main chain is FuseTIR, the one after RewriteDataflowReshape
    main = [s.name for s in b.trace.top_level()]
    i = main.index("inspect_fused")
    assert main[i - 1:i + 2] == ["FuseTIR", "inspect_fused", "RewriteDataflowReshape"]
    assert passlab.max_abs_diff(b.run(), mlp_build.run()) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", passlab.models.NAMES)
def test_edited_pipeline_gives_same_outputs_for_every_builtin_model(name, request):
    mod = passlab.models.by_name(name)
    # the default build: the session's where there is one (it is what passlab.build(mod)
    # makes), else built here
    shared = {"mlp": "mlp_build", "resnet": "resnet_build"}.get(name)
    plain = request.getfixturevalue(shared) if shared else passlab.build(mod)
    assert plain.pipeline.to_text() == Pipeline.default("llvm").to_text()
    ref = plain.run(shapes={"n": 12})
    calls = []

    def count(mod):
        calls.append(len(mod.functions))
        return mod

    pipe = (Pipeline.default("llvm").insert(count, after="legalize")
            .insert(count, before="FuseOps", name="count_before_fuse"))
    edited = passlab.build(mod, pipe).run(shapes={"n": 12})
    unfused = passlab.build(mod, "build").run(shapes={"n": 12})
    assert len(calls) == 2
    assert np.isfinite(ref).all()
    d = passlab.max_abs_diff(edited, ref)
    print(f"{name}: max abs diff edited vs unmodified = {d}")
    assert d == 0.0
    assert passlab.max_abs_diff(unfused, ref) < 1e-4


def _timing_tree(text: str) -> list[tuple[int, str]]:
    out = []
    for line in text.splitlines():
        m = re.match(r"^(\t*)(.+?): \d+us \[", line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
    return out


def test_recorded_tree_equals_pass_timing_instrument(resnet_build):
    """Names, order and nesting of every pass call equal TVM's own PassTimingInstrument
    for the same build."""
    from passlab._tvm.tir import registered

    pipe = resnet_build.pipeline
    timing = PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[timing]), \
            registered(pipe.to_tir().stages, pipe) as tir_name:
        tvm.relax.build(resnet_build.module, tvm.target.Target("llvm"),
                        relax_pipeline=pipe.to_pass(), tir_pipeline=tir_name)
        tree = _timing_tree(timing.render())
    # the final codegen step holds the generated code: no pass call of its own
    assert resnet_build.trace[-1].name == "codegen"
    recorded = [(s.depth, s.name) for s in resnet_build.trace[:-1]]
    assert len(recorded) > 80
    assert recorded == tree


def test_trace_structure(mlp_build):
    t = mlp_build.trace
    root = t[0]
    assert (root.name, root.depth, root.parent, root.kind) == ("passlab.pipeline", 0, None, "container")
    assert [s.name for s in t.children(root)] == [s.name for s in mlp_build.pipeline.stages]
    fuse = t.find("FuseOps")
    assert (fuse.depth, fuse.stage, t[fuse.parent].name) == (2, "legalize", "legalize")
    assert fuse.functions_changed.added == ("fused_matmul_add_relu", "fused_matmul1_add1")
    assert fuse.functions_changed.modified == ("forward",)
    # FuseTIR is itself a Sequential: its children are inner steps
    inner = t.children(t.find("FuseTIR"))
    assert [s.name for s in inner] == ["ExpandTupleArguments", "RemoveUnusedParameters",
                                      "FuseTIRInner", "DeadCodeElimination"]
    assert all(s.kind == "inner" for s in inner)
    # the main chain is coherent: each pass's input is the previous pass's output
    relax_chain = [s for s in t.top_level() if s.level == "relax"]
    for a, b in zip(relax_chain, relax_chain[1:]):
        assert a.after.same_as(b.before), (a.name, b.name)
    assert t.find("DeadCodeElimination", 1).occurrence == 1
    assert t.find("DeadCodeElimination#1") is t.find("DeadCodeElimination", 1)
    assert {s.stage for s in t} == {"relax", "library_dispatch", "legalize", "dataflow_lower",
                                    "finalize", "tir", "s_tir", "tirx", "host_finalize",
                                    "codegen"}
    assert t.find("tirx.MakePackedAPI").stage == "tirx"
    assert t.find("tirx.MakePackedAPI").level == "tir"


def test_build_keeps_user_context_and_instruments():
    calls = []

    @pass_instrument
    class Mine:
        def run_after_pass(self, mod, info):
            calls.append(info.name)

    cfg = {"relax.FuseOps.max_depth": 1}
    model = passlab.models.mlp()
    with tvm.transform.PassContext(opt_level=3, config=cfg, instruments=[Mine()]):
        seen = {}

        def probe(mod):
            ctx = tvm.transform.PassContext.current()
            seen.update(opt=ctx.opt_level, cfg=dict(ctx.config), n=len(ctx.instruments))
            return mod

        b = passlab.build(model, Pipeline.default("llvm").insert(probe, before="FuseOps"))
    assert seen == {"opt": 3, "cfg": {"relax.FuseOps.max_depth": 1}, "n": 2}
    assert "FuseOps" in calls and len(calls) == len(b.trace) - 1  # + the codegen step
    # max_depth=1 means FuseOps fuses nothing: the user's config reached TVM
    assert not any(n.startswith("fused_") for n in b.trace.find("FuseOps").after.get_global_vars()
                   for n in [n.name_hint])


def test_user_pass_that_raises_keeps_trace_and_original_type():
    def broken(mod):
        raise ValueError("my pass is broken")

    pipe = Pipeline.default("llvm").insert(broken, after="FuseOps")
    with pytest.raises(ValueError) as err:
        passlab.build(passlab.models.mlp(), pipe)
    e = err.value
    assert isinstance(e, passlab.BuildError)
    assert str(e).startswith("pass 'broken' (step #11, in passlab.pipeline > legalize > broken) "
                             "failed: ValueError: my pass is broken")
    assert isinstance(e.original, ValueError) and e.step.name == "broken"
    assert e.step.failed and e.step.after is None
    # every step up to and including the failing pass's input is kept
    assert e.step.before.same_as(e.trace.find("FuseOps").after)
    assert [s.name for s in e.trace if s.failed] == ["passlab.pipeline", "legalize", "broken"]
    assert e.trace.failure.enclosing == ("passlab.pipeline", "legalize")


def test_user_pass_returning_non_module():
    pipe = Pipeline.default("llvm").insert(lambda mod: 3, after="FuseOps", name="bad")
    with pytest.raises(TypeError, match="user pass 'bad' returned int, not an IRModule"):
        passlab.build(passlab.models.mlp(), pipe)


def test_tvm_pass_failure_is_named():
    # FuseTIR on a module that was never legalized: TVM's C++ raises inside the pass
    pipe = Pipeline.default("llvm").remove("LegalizeOps").remove("FuseOps")
    pipe = pipe.insert(tvm.relax.transform.VMShapeLower(), before="AnnotateTIROpPattern")
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(passlab.models.mlp(), pipe)
    assert err.value.step is not None or err.value.trace.failure.where == "codegen"
    assert err.value.trace.failure.message


def test_bad_model_and_target():
    with pytest.raises(TypeError, match="cannot use .int. objects as models: a model is a built-in"):
        passlab.build(42)
    with pytest.raises(ValueError, match="unknown model 'resnt'; did you mean 'resnet'"):
        passlab.build("resnt")
    with pytest.raises(ValueError, match="differs from the pipeline's target"):
        passlab.build("mlp", Pipeline.default("llvm"), target="cuda")
    with pytest.raises(TypeError, match="pipeline must be a passlab.Pipeline"):
        passlab.build("mlp", [1, 2])


def test_tvmscript_model_and_run_with_inputs():
    src = '''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            z = R.add(x, y)
            w = R.multiply(z, z)
            R.output(w)
        return w
'''
    b = passlab.build(src)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(b.run(x, x), (2 * x) ** 2)
    assert b.trace.find("FuseOps").functions_changed.added == ("fused_add_multiply",)
    with pytest.raises(TypeError, match="main\\(\\) takes 2 arguments, 3 were given"):
        b.run(x, x, x)


def test_recorder_bug_becomes_warning_not_failed_build(monkeypatch):
    from passlab.recording import recorder

    rec = recorder.Recorder()
    rec.state.events = None  # corrupt: the next callback cannot append its event
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tvm.transform.PassContext(instruments=[rec]):
            out = tvm.relax.transform.LegalizeOps()(passlab.models.mlp())
    assert isinstance(out, tvm.IRModule)
    assert rec.state.broken.startswith("AttributeError")
    assert any("recorder failed" in str(x.message) for x in w)


def test_record_context_manager():
    model = passlab.models.mlp()
    with passlab.record() as rec:
        tvm.relax.transform.LegalizeOps()(model)
    assert [s.name for s in rec.trace] == ["LegalizeOps"]
    assert rec.trace[0].functions_changed.modified == ("forward",)


def test_tir_build_inside_fold_constant_is_recorded_as_inner_steps():
    mod = passlab.models.with_constant_weights(passlab.models.mlp())
    assert [p.name for p in mod["forward"].params] == ["x"]
    b = passlab.build(mod)
    t = b.trace
    fold = t.find("FoldConstant")
    assert fold.changed and fold.functions_changed.modified == ("forward",)
    inside = [s for s in t if s.index > fold.index and _has_ancestor(t, s, fold)]
    assert len(inside) > 20  # a whole TIR build per folded call
    assert {s.kind for s in inside} == {"inner"} and {s.stage for s in inside} == {"legalize"}
    assert "tirx.MakePackedAPI" in {s.name for s in inside}
    # none of them leaks into the main chain, which stays coherent
    chain = [s for s in t.top_level() if s.level == "relax"]
    for a, c in zip(chain, chain[1:]):
        assert a.after.same_as(c.before)
    # same weights as parameters: same outputs
    plain = passlab.models.mlp()
    ref = passlab.build(plain)
    args = ref.inputs()
    bound = tvm.relax.transform.BindParams("forward", {
        p.name: tvm.runtime.tensor(a) for p, a in zip(plain["forward"].params[1:], args[1:])})(plain)
    np.testing.assert_allclose(passlab.build(bound).run(args[0]), ref.run(*args), rtol=1e-5, atol=1e-5)


def _has_ancestor(trace, step, anc) -> bool:
    p = step.parent
    while p is not None:
        if p == anc.index:
            return True
        p = trace[p].parent
    return False


def test_progress_callable_and_bar(capsys):
    seen = []
    passlab.build(passlab.models.mlp(), progress=lambda name, n: seen.append((name, n)))
    names = [n for n, _ in seen]
    assert names[:3] == ["passlab.pipeline", "library_dispatch", "DispatchSampling"]
    assert "FuseOps" in names and "s_tir.StmtSimplify" in names
    assert "CanonicalizeRelaxBindings" not in names  # nested deeper than the main chain
    assert capsys.readouterr().err == ""
    # the default on a stderr that is not a terminal (capsys): nothing
    passlab.build(passlab.models.mlp())
    assert capsys.readouterr().err == ""
    # asked for: tqdm's bar, which reaches the pipeline's passes + codegen
    pipe = passlab.Pipeline.default("llvm")
    passlab.build(passlab.models.mlp(), pipe, progress=True)
    err = capsys.readouterr().err
    total = len(pipe.relax_passes) + len(pipe.tir_passes) + 1
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("build for llvm: 100%"), last
    assert f" {total}/{total} [" in last and "95 pass calls recorded]" in last
