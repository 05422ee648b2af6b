"""Reproducers: written scripts run with plain Python, in an empty folder, without passlab
on the path, and fail (or run) like the recorded pass did."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import tvm
from tvm import relax

import passlab
from passlab import Pipeline
from passlab.io import load_trace, save_trace
from passlab.io.reproducer import PassRecipe, function_recipe, reproducer

LIMIT = 3  # a module-level constant the pass below uses: carried into the script


def _too_many(mod) -> bool:
    return len(mod.functions) > LIMIT


def broken(mod):
    if _too_many(mod):
        raise ValueError(f"my pass is broken: {len(mod.functions)} functions")
    return mod


_LOCK = threading.Lock()  # not carryable: a pass using it travels by import path


def locked(mod):
    with _LOCK:
        raise RuntimeError("locked pass fails")


def run_scripts(paths, cwd) -> list[subprocess.CompletedProcess]:
    """Run each script with plain ``python`` (no PYTHONPATH: passlab's tree is not on the
    path), all at once: most of each run is importing TVM."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    procs = [subprocess.Popen([sys.executable, str(p)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
             for p in paths]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    return out


def run_script(path, cwd) -> subprocess.CompletedProcess:
    return run_scripts([path], cwd)[0]


def _failed(pipe, model=None) -> passlab.BuildError:
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(model or passlab.models.mlp(), pipe)
    return err.value


def test_failing_user_pass_travels_as_source_and_fails_the_same(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(broken, after="FuseOps"))
    r = reproducer(err)
    assert (r.expect, r.recipe, r.mode, r.notes) == ("error", "source", "tvmscript", ())
    assert r.error == "ValueError: my pass is broken: 10 functions"
    assert "LIMIT = 3\n" in r.text and "def _too_many(mod)" in r.text
    assert "import passlab" not in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == "ValueError: my pass is broken: 10 functions"


def test_lambda_returning_non_module_fails_with_passlab_message(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(lambda mod: 3, after="FuseOps", name="bad"))
    r = reproducer(err.trace)
    assert "user_pass = lambda mod: 3\n" in r.text
    out = run_script(r.write(tmp_path / "bad.py"), tmp_path)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last == f"UserPassError: {err.trace.failure.message}"


def test_closure_values_are_carried(tmp_path):
    def make(limit):
        def limited(mod):
            if len(mod.functions) > limit:
                raise ValueError(f"more than {limit} functions")
            return mod
        return limited

    err = _failed(Pipeline.default("llvm").insert(make(4), after="FuseOps"))
    r = reproducer(err)
    assert r.recipe == "source" and "limit = 4\n" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stderr.strip().splitlines()[-1] == "ValueError: more than 4 functions"


def test_notebook_cell_function_travels_as_source(tmp_path):
    """IPython keeps each cell's source in linecache under a made-up file name and runs
    it in __main__: the same here, without starting IPython."""
    import linecache

    src = ("THRESH = 2\n\n\ndef cell_pass(mod):\n    if len(mod.functions) > THRESH:\n"
           "        raise ValueError('from a notebook cell')\n    return mod\n")
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns: dict = {"__name__": "__main__"}
    exec(compile(src, name, "exec"), ns)  # noqa: S102
    err = _failed(Pipeline.default("llvm").insert(ns["cell_pass"], after="FuseOps"))
    r = reproducer(err)
    assert (r.recipe, r.notes) == ("source", ())
    assert "THRESH = 2\n\ndef cell_pass(mod):" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stderr.strip().splitlines()[-1] == "ValueError: from a notebook cell"


def test_uncarryable_global_falls_back_to_import_path(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(locked, after="FuseOps"))
    r = reproducer(err)
    assert r.recipe == "import"
    assert r.notes == ("the pass is imported from test_reproducer, which must be importable "
                       "where the script runs: its source alone is not enough (it uses '_LOCK' "
                       "(a lock), which the script cannot carry)",)
    assert "from test_reproducer import locked as user_pass\n" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stderr.strip().splitlines()[-1] == "RuntimeError: locked pass fails"


def test_pass_without_source_says_so(tmp_path):
    ns: dict = {}
    exec("def nosource(mod):\n    raise ValueError('no source')\n", ns)  # noqa: S102
    err = _failed(Pipeline.default("llvm").insert(ns["nosource"], after="FuseOps"))
    r = reproducer(err)
    assert r.recipe == "missing"
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().startswith("passlab could not carry the pass 'nosource': the "
                                         "source of nosource is not available")


def test_cpp_pass_failure_reproduces(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(relax.transform.MergeCompositeFunctions(),
                                                  before="LegalizeOps"))
    r = reproducer(err)
    assert r.recipe == "tvm" and "pass_ = tvm.relax.transform.MergeCompositeFunctions()" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.returncode == 1
    assert 'ValueError: Cannot find global var "main" in the Module' in out.stderr


def test_codegen_failure_reproduces_from_the_pipeline_output(tmp_path):
    err = _failed(Pipeline.default("llvm").remove("LegalizeOps"))
    assert err.step is None
    r = reproducer(err)
    assert (r.label, r.expect, r.recipe) == ("codegen", "error", "codegen")
    assert "relax.build(mod, target, relax_pipeline=None)" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.returncode == 1
    assert "CodeGenVM cannot emit this Relax operator directly" in out.stderr


HEALTHY = ["LegalizeOps", "FuseOps", "FuseTIR", "tirx.BindTarget", "s_tir.ThreadSync#1"]


def test_healthy_passes_run_and_match(mlp_build, tmp_path):
    t = mlp_build.trace
    paths = []
    for name in HEALTHY:
        r = reproducer(t.find(name), t)
        assert (r.expect, r.recipe, r.mode) == ("ok", "tvm", "tvmscript"), name
        paths.append(r.write(tmp_path))
    for name, out in zip(HEALTHY, run_scripts(paths, tmp_path)):
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"ok: {name} ran; its output matches the recorded module"


def test_stage_passes_come_from_the_backend_pipeline(mlp_build):
    t = mlp_build.trace
    r = reproducer(t.find("FuseOps"), t)
    assert ("pass_ = [p for p in backend_pipeline.legalize_passes(target)\n"
            "         if p.info.name == 'FuseOps'][0]") in r.text


def test_json_module_is_exact(mlp_build, tmp_path):
    t = mlp_build.trace
    r = reproducer(t.find("tirx.MakePackedAPI"), t, module="json")
    assert r.mode == "json" and "tvm.ir.load_json(" in r.text
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stdout.strip() == ("ok: tirx.MakePackedAPI ran; its output matches the "
                                  "recorded module")


def test_module_with_constants_travels_as_json(tmp_path):
    mod = passlab.models.with_constant_weights(passlab.models.mlp())
    t = passlab.build(mod).trace
    r = reproducer(t.find("FoldConstant"), t)
    assert r.mode == "json"
    assert any("metadata" in n or "parse" in n for n in r.notes)
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stdout.strip() == "ok: FoldConstant ran; its output matches the recorded module"


def test_inner_pass_reproduced_through_its_enclosing_pass(tmp_path):
    def drop_relu(mod):
        return tvm.IRModule({gv: f for gv, f in mod.functions.items() if gv.name_hint != "relu"},
                            attrs=mod.attrs)

    err = _failed(Pipeline.default("llvm").insert(drop_relu, after="FuseOps"))
    assert (err.step.name, err.step.kind) == ("FuseTIRInner", "inner")
    r = reproducer(err)
    assert r.notes[0].startswith("FuseTIRInner cannot be rebuilt on its own")
    assert "runs the pass it ran inside, FuseTIR" in r.notes[0]
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.returncode == 1
    assert 'There is no definition of I.GlobalVar("relu")' in out.stderr


def test_loaded_trace_keeps_user_pass_recipe(tmp_path):
    err = _failed(Pipeline.default("llvm").insert(broken, after="FuseOps"))
    loaded = load_trace(save_trace(err.trace, tmp_path / "t.zip"))
    entry = loaded.pipeline["broken"]
    assert entry.pass_ is None and entry.recipe.kind == "source"
    # code read from a file is only run when asked for (tests/security/ checks the default)
    r = reproducer(loaded, trust_pass_code=True)
    assert r.text == reproducer(err).text  # the same script, from the file alone
    out = run_script(r.write(tmp_path), tmp_path)
    assert out.stderr.strip().splitlines()[-1] == "ValueError: my pass is broken: 10 functions"


def test_reproducer_object_and_errors(mlp_build, tmp_path):
    t = mlp_build.trace
    r = reproducer(t.find("FuseOps"), t)
    assert str(r) == r.text == r.to_text()
    assert r.name == f"reproduce_{t.find('FuseOps').index:03d}_FuseOps.py"
    assert r.write(tmp_path) == tmp_path / r.name
    assert r.to_html().startswith('<div class="passlab-note">reproducer for FuseOps (ok, module '
                                  'as tvmscript)</div><pre>')
    assert set(r._repr_mimebundle_()) == {"text/plain", "text/html"}
    alone = reproducer(t.find("FuseOps"))  # the step knows its trace (step.owner)
    assert alone.text == r.text and "no trace given" not in " ".join(alone.notes)
    with pytest.raises(ValueError, match="this trace did not fail; give the step to reproduce"):
        reproducer(t)
    with pytest.raises(TypeError, match="reproducer\\(\\) takes a Step, Trace or BuildError"):
        reproducer(42)
    with pytest.raises(ValueError, match="module must be 'auto', 'json' or 'tvmscript'"):
        reproducer(t, module="pickle")


def test_recipes():
    assert function_recipe(broken, "broken").kind == "source"
    r = PassRecipe("tvm", "FuseOps", "pass_ = tvm.relax.transform.FuseOps()")
    assert PassRecipe.from_dict(r.to_dict()) == r
    from passlab.io.recipes import _by_name

    tgt = tvm.target.Target("llvm")
    assert _by_name("tirx.Filter", 0, tgt).kind == "missing"
    assert _by_name("sequential", 0, tgt).notes == ("it is a wrapper that only sequences other "
                                                    "passes",)
    flatten = _by_name("tirx.FlattenBuffer", 0, tgt)
    assert flatten.code == "pass_ = tvm.tirx.transform.FlattenBuffer()"
    assert _by_name("s_tir.ThreadSync", 2, tgt).code == (
        "pass_ = tvm.s_tir.transform.ThreadSync('warp')")
