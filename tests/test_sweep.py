"""passlab.sweep: models x pipelines in worker processes, one row per job (issue 17)."""

from __future__ import annotations

import json
import os
import re

import pytest
import sweep_test_passes as user

import passlab
from passlab import Pipeline
from passlab.errors import SweepError
from passlab.research._sweep_jobs import (
    COLUMNS,
    check_from_recipe,
    check_recipe,
    is_baseline,
    pipeline_from_recipe,
    pipeline_recipe,
)

# columns that do not depend on where or when a job ran
STABLE = ["model", "pipeline", "status", "error", "passes", "kernels", "peak_bytes",
          "peak_bytes_unplanned", "max_abs_diff"]


def small_models() -> dict:
    return {
        "mlp": "mlp",
        "transformer": passlab.models.transformer(layers=1, seq_len=8, hidden=32, heads=2,
                                                  ffn=64, vocab=64),
        "resnet": passlab.models.resnet(image=8, width=4, blocks=(1,)),
    }


def three_pipelines() -> dict:
    return {
        "default": Pipeline.default("llvm"),
        "counted": Pipeline.default("llvm").insert(user.count_kernels, after="legalize"),
        "broken": Pipeline.default("llvm").insert(user.broken, after="legalize"),
    }


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    return passlab.sweep(small_models(), three_pipelines(), workers=2, out=out), out


# ------------------------------------------------------------------ recipes (fast)
def test_pipeline_recipe_round_trip():
    pipe = (Pipeline.default("llvm").insert(user.count_kernels, after="FuseTIR")
            .disable("FoldConstant").remove("ComputePrimValue"))
    recipe = pipeline_recipe(pipe)
    json.dumps(recipe)  # plain data
    back = pipeline_from_recipe(recipe)
    assert back.rows() == pipe.rows()
    assert back["count_kernels"].pass_ is user.count_kernels
    assert [e.pass_ is not None for e in back] == [True] * len(pipe)
    assert is_baseline(pipeline_recipe(Pipeline.default("llvm")))
    assert not is_baseline(recipe)
    assert not is_baseline(pipeline_recipe(Pipeline.default("llvm", variant="build")))


def test_pass_from_a_notebook_cell_is_refused_with_advice():
    def local_pass(mod):
        return mod

    with pytest.raises(SweepError, match=r"user pass 'local_pass' cannot travel to a worker "
                                         r"process: it is defined inside another function; "
                                         r"define it at the top level of a module"):
        pipeline_recipe(Pipeline.default("llvm").insert(local_pass, after="legalize"))
    local_pass.__module__, local_pass.__qualname__ = "__main__", "local_pass"
    with pytest.raises(SweepError, match=r"it is defined in __main__ \(a notebook cell"):
        passlab.sweep(["mlp"], {"mine": Pipeline.default("llvm").insert(local_pass,
                                                                       after="legalize")})
    with pytest.raises(SweepError, match="it is a lambda"):
        pipeline_recipe(Pipeline.default("llvm").insert(lambda m: m, after="legalize"))


def test_check_recipes():
    checks = [passlab.checks.well_formed(), passlab.checks.no_ops_after("relax.nn.", "FuseOps"),
              passlab.checks.immutable_modules(), user.few_functions]
    recipes = [check_recipe(c) for c in checks]
    assert [r.get("factory", r.get("qualname")) for r in recipes] == [
        "well_formed", "no_ops_after", "immutable_modules", "few_functions"]
    assert recipes[1]["args"] == {"prefix": "relax.nn.", "after": "FuseOps"}
    back = [check_from_recipe(r) for r in recipes]
    assert [c.name if hasattr(c, "name") else c.__name__ for c in back] == [
        "well_formed", "no relax.nn.* ops after FuseOps", "immutable_modules", "few_functions"]
    with pytest.raises(SweepError, match="check 'f' cannot travel"):
        check_recipe(passlab.checks.predicate(lambda m: True, "f"))


def test_bad_arguments():
    with pytest.raises(SweepError, match="pipelines is a dict name -> passlab.Pipeline"):
        passlab.sweep(["mlp"], Pipeline.default("llvm"))
    with pytest.raises(SweepError, match="two models are called 'mlp'"):
        passlab.sweep(["mlp", "mlp"], {"default": "fused"})


# ------------------------------------------------------------------- sweeps (slow)
@pytest.mark.slow
def test_three_models_three_pipelines(swept):
    result, out = swept
    assert result.counts == {"ok": 6, "failed": 3}
    assert (result.ran, result.reused, result.baseline) == (9, 0, "default")
    df = result.to_dataframe()
    assert list(df.columns) == list(COLUMNS)
    assert [(r.model, r.pipeline, r.status) for r in result] == [
        (m, p, "failed" if p == "broken" else "ok")
        for m in ("mlp", "transformer", "resnet") for p in ("default", "counted", "broken")]
    for r in result:
        if r.pipeline == "broken":
            assert r.error == "broken: ValueError: broken on purpose"
            assert (r.kernels, r.peak_bytes, r.max_abs_diff) == (None, None, None)
        else:
            assert r.error == "" and r.max_abs_diff == 0.0 and r.build_s > 0
        assert os.path.isfile(r.trace) and os.path.isfile(r.report)
        assert r.trace == str(out / r.model / r.pipeline / "trace.zip")
    for m in ("mlp", "transformer", "resnet"):
        default, counted = result[m, "default"], result[m, "counted"]
        assert counted.passes == default.passes + 1  # the inserted pass
        assert (counted.kernels, counted.peak_bytes) == (default.kernels, default.peak_bytes)
    mlp = result["mlp", "default"]
    # the MLP's sizes are hand-computable (see passlab.models.mlp)
    assert (mlp.kernels, mlp.peak_bytes, mlp.peak_bytes_unplanned) == (4, 2688, 2560)
    assert mlp.passes == len(passlab.build("mlp").trace.top_level())
    # a failed job keeps its trace, with the failing pass
    failed = passlab.load_trace(result["mlp", "broken"].trace)
    assert failed.failure.step.name == "broken"


@pytest.mark.slow
def test_display_and_index_page(swept):
    result, out = swept
    text = result.to_text()
    assert text.splitlines()[0].startswith("Sweep of 9 jobs (6 ok, 3 failed); 9 built now, 0 "
                                           "from earlier records")
    passes = result["mlp", "default"].passes
    assert re.search(rf"^mlp\s+default\s+ok\s+[\d.]+\s+{passes}\s+4\s+2.6 KiB\s+2.5 KiB\s+0$",
                     text, re.M)
    html = result._repr_mimebundle_()["text/html"]
    assert html.count('<tr class="failed" data-status="failed">') == 3
    assert html.count('<tr class="" data-status="ok">') == 6
    index = result.to_html(out / "index.html")
    page = index.read_text()
    assert page.count('<a href="mlp/broken/report.html">report</a>') == 1
    assert len(re.findall(r'<a href="[^"]+/report.html">report</a>', page)) == 9
    assert len(re.findall(r'<a href="[^"]+/trace.zip">trace</a>', page)) == 9


@pytest.mark.slow
def test_peak_bytes_equal_a_single_build(swept):
    result, _ = swept
    model = small_models()["transformer"]
    trace = passlab.build(model, three_pipelines()["counted"]).trace
    row = result["transformer", "counted"]
    assert row.peak_bytes == passlab.buffers(trace.find("StaticPlanBlockMemory")).peak_bytes
    assert row.peak_bytes_unplanned == passlab.buffers(trace.find("CallTIRRewrite")).peak_bytes
    assert row.passes == len(trace.top_level())
    assert row.peak_bytes > 0 and row.kernels > 0


@pytest.mark.slow
def test_resumed_sweep_reruns_nothing(swept):
    result, out = swept
    records = sorted(out.glob("*/*/job.json"))
    assert len(records) == 9
    stamps = [p.stat().st_mtime_ns for p in records]
    again = passlab.sweep(small_models(), three_pipelines(), workers=2, out=out)
    assert (again.ran, again.reused) == (0, 9)
    assert again.to_dataframe().equals(result.to_dataframe())
    assert [p.stat().st_mtime_ns for p in records] == stamps
    # an edited pipeline is a new job; the others are still reused
    pipes = three_pipelines() | {"counted": Pipeline.default("llvm").insert(
        user.count_kernels, after="FuseOps")}
    edited = passlab.sweep({"mlp": "mlp"}, pipes, workers=1, out=out)
    assert (edited.ran, edited.reused) == (1, 2)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(swept):
    distributed = pytest.importorskip("dask.distributed")
    result, _ = swept
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        on_dask = passlab.sweep(small_models(), three_pipelines(),
                                executor=client.get_executor())
    assert on_dask.to_dataframe()[STABLE].equals(result.to_dataframe()[STABLE])
    assert [r.trace for r in on_dask] == [None] * 9  # no out=: no files


@pytest.mark.slow
def test_crash_and_timeout_are_rows():
    die = {name: Pipeline.default("llvm").insert(fn, after="legalize")
           for name, fn in (("exits", user.exits), ("killed", user.killed),
                            ("sleeps", user.sleeps))}
    result = passlab.sweep(["mlp"], die, workers=1, timeout=15)
    assert [(r.pipeline, r.status, r.error) for r in result] == [
        ("default", "ok", ""),
        ("exits", "crashed", "the build process exited with status 3 while running pass "
                             "'exits'"),
        ("killed", "crashed", "the build process was killed by signal SIGKILL while "
                              "running pass 'killed'"),
        ("sleeps", "timeout", "timed out after 15 s while running pass 'sleeps'"),
    ]


@pytest.mark.slow
def test_cli_sweep(tmp_path, capsys):
    from passlab.cli import main

    spec = "mine=default+sweep_test_passes:count_kernels@after=legalize"
    status = main(["sweep", "mlp", "--pipeline", "default", "--pipeline", spec,
                   "--workers", "1", "-o", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    lines = out.splitlines()
    assert re.fullmatch(r"\[1/2\] mlp / default: ok in [\d.]+ s", lines[0])
    assert re.fullmatch(r"\[2/2\] mlp / mine: ok in [\d.]+ s", lines[1])
    table = re.findall(r"^mlp\s+(default|mine)\s+ok\s+[\d.]+\s+(\d+)\s+4\s+2.6 KiB\s+2.5 KiB\s+0$",
                       out, re.M)
    assert [name for name, _ in table] == ["default", "mine"]
    assert int(table[1][1]) == int(table[0][1]) + 1  # the inserted pass
    assert lines[-1] == (f"wrote {tmp_path / 'index.html'} (every job's report and trace "
                         "are linked from it)")
    assert main(["sweep", "mlp", "--pipeline", "x=fused"]) == 2
    assert "is not of the form NAME=BASE" in capsys.readouterr().err
