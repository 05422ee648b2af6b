"""passlab.attribute (issue 25): which pass costs or saves run time. Structure and the
order of effects, not timings: the slowed kernel (a transpose, there with and without
fusion, so disabling FuseOps keeps it slow) does 60,000x its work (about 8 ms a run),
far above the noise of 2 shared cores (small kernels there vary by 100s of us; at 5,000x,
about a millisecond, a loaded machine once ranked FuseOps first, and at 20,000x, 2.8 ms,
so did CI: a run preempted for a scheduler time slice gains milliseconds)."""

from __future__ import annotations

import pytest
from attribute_test_passes import identity, slow_transpose

import passlab
from passlab.errors import SweepError, UnknownNameError
from passlab.research.attribute import COLUMNS, Attribution


def _kernels_called(build: passlab.Build) -> int:
    """Distinct kernels the entry function calls, from the IR the VM runs."""
    import tvm

    final = [s for s in build.trace if s.kind == "pass" and s.level == "relax"][-1].after
    prims = {gv.name_hint for gv, f in final.functions_items()
             if isinstance(f, tvm.tirx.PrimFunc)}
    called: set[str] = set()

    def visit(e):
        if isinstance(e, tvm.relax.Call) and isinstance(e.op, tvm.ir.GlobalVar) \
                and e.op.name_hint in prims:
            called.add(e.op.name_hint)

    tvm.relax.analysis.post_order_visit(final[build.entry], visit)
    return len(called)


@pytest.fixture(scope="module")
def slowed() -> Attribution:
    pipe = passlab.Pipeline.default("llvm").insert(slow_transpose, after="legalize")
    return passlab.attribute("mlp", pipe, passes=["FuseOps", "slow_transpose", "LegalizeOps"],
                             repeat=5, workers=2)


@pytest.mark.slow
def test_the_slow_pass_comes_first_with_its_kernel(slowed):
    assert slowed.status == "ok" and slowed.model == "mlp" and slowed.target == "llvm"
    first = slowed[0]
    assert first.pass_ == "slow_transpose" and first.status == "ok"
    assert first.moved[0][0] == "transpose" and first.moved[0][1] > 0
    assert first.delta_s > 0 and first.run_s > first.run_s_without
    assert first.delta_s == pytest.approx(first.run_s - first.run_s_without)
    assert first.delta_pct == pytest.approx(first.delta_s / first.run_s_without)
    assert first.kernels == first.kernels_without == 4
    assert first.max_abs_diff == 0.0  # same work, done TIMES times
    assert first.reused is False  # its kernels differ from the full pipeline's
    # both pipelines timed in alternation in the variant's job: the same load on both
    assert first.paired and slowed["FuseOps"].paired and not slowed["LegalizeOps"].paired


@pytest.mark.slow
def test_disabling_fuseops_adds_exactly_the_unfused_kernels(slowed, mlp_build):
    unfused = passlab.build("mlp", passlab.Pipeline.default("llvm").disable("FuseOps"))
    row = slowed["FuseOps"]
    assert row.status == "ok" and row.max_abs_diff < 1e-5
    assert (row.kernels, row.kernels_without) == (_kernels_called(mlp_build),
                                                  _kernels_called(unfused))
    assert row.kernels_without - row.kernels == 3  # matmul, add, relu apart: 7 - 4


@pytest.mark.slow
def test_a_pass_the_build_needs_is_a_build_fails_row(slowed):
    row = slowed["LegalizeOps"]
    assert row.status == "build fails" and row.error
    assert row.run_s_without is None and row.delta_s is None and row.moved == ()
    assert slowed[-1] is row  # failures last


@pytest.mark.slow
def test_attribution_views(slowed):
    df = slowed.to_dataframe()
    assert list(df.columns) == list(COLUMNS)
    assert df["pass"].tolist() == ["slow_transpose", "FuseOps", "LegalizeOps"]
    assert df["status"].tolist() == ["ok", "ok", "build fails"]
    text = slowed.to_text()
    assert text.splitlines()[0] == slowed.summary()
    assert "2 ok, 1 build fails" in slowed.summary()
    assert "transpose +" in text
    html = slowed.to_html()
    # the pass and "moved most" cells wrap at their names' parts (the table fits an output)
    assert "<table" in html and '<td class="passlab-wrap">slow_<wbr>transpose</td>' in html
    assert html.count('class="passlab-wrap"') == 2 * len(slowed)
    with pytest.raises(UnknownNameError, match="did you mean 'FuseOps'"):
        slowed["FuseOp"]


def test_attribute_bad_input():
    with pytest.raises(UnknownNameError, match="did you mean 'FuseOps'"):
        passlab.attribute("mlp", passes=["FuseOp"])
    with pytest.raises(SweepError, match="already disabled"):
        passlab.attribute("mlp", passlab.Pipeline.default("llvm").disable("FuseOps"),
                          passes="FuseOps")
    with pytest.raises(ValueError, match="repeat must be an int of at least 1"):
        passlab.attribute("mlp", repeat=0)
    with pytest.raises(SweepError, match="cannot travel to a worker process"):
        passlab.attribute("mlp", passlab.Pipeline.default("llvm").insert(
            lambda mod: mod, after="legalize"), passes=["FuseOps"])


@pytest.mark.slow
def test_cli_attribute_prints_the_pass_table(capsys, monkeypatch):
    from passlab.cli import main

    monkeypatch.setenv("PASSLAB_PROGRESS", "1")  # the bar, though stderr is no terminal
    assert main(["attribute", "mlp", "--passes", "FuseOps", "--workers", "1",
                 "--repeat", "1"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("mlp on llvm: ") and "1 pass disabled" in lines[0]
    assert lines[3].split()[:2] == ["FuseOps", "ok"] and "4 -> 7" in lines[3]
    bar = captured.err.split("\r")[-1]
    assert bar.startswith("attribute: 100%|") and "| 2/2 [" in bar
    assert bar.rstrip().endswith(", without FuseOps: ok]")


@pytest.mark.slow
def test_profiled_sweep_has_run_time_columns():
    result = passlab.sweep(["mlp"], {"default": "fused", "unfused": "build"}, workers=1,
                           profile=2)
    df = result.to_dataframe()
    assert list(df.columns[-2:]) == ["run_s", "run_s_vs_default"]
    base, unfused = result["mlp", "default"], result["mlp", "unfused"]
    assert base.run_s > 0 and unfused.run_s > 0 and base.run_s_vs_default == 1.0
    assert unfused.run_s_vs_default == pytest.approx(unfused.run_s / base.run_s)


def test_sweep_profile_argument_is_checked():
    with pytest.raises(SweepError, match="profile is True, False or a number of repeats"):
        passlab.sweep(["mlp"], {"default": "fused"}, profile=0.5)


@pytest.mark.slow
def test_variants_with_the_same_kernels_reuse_them():
    # FoldConstant has nothing to fold in the MLP (its weights are parameters): the build
    # without it ends in the same kernels and skips TIR lowering and codegen
    a = passlab.attribute("mlp", passes=["FoldConstant", "FuseOps"], repeat=1, workers=1)
    assert (a["FoldConstant"].status, a["FoldConstant"].reused) == ("ok", True)
    assert (a["FuseOps"].status, a["FuseOps"].reused) == ("ok", False)
    assert a["FoldConstant"].kernels == a["FoldConstant"].kernels_without == 4


@pytest.mark.slow
def test_prefix_reuse_gives_the_same_rows():
    # each variant re-run from the full pipeline's recorded prefix (the default) against
    # each one built from the model: the same statuses, kernels, outputs and errors; a
    # user pass that is the last Relax pass too (its re-run runs no Relax pass: the
    # profile starts from the module it resumed from)
    names = ["LegalizeOps", "FoldConstant", "FuseOps", "FuseTIR", "identity"]
    pipe = passlab.Pipeline.default("llvm").insert(identity, after="finalize")

    def rows(a):
        return {r.pass_: (r.status, r.max_abs_diff, r.kernels, r.kernels_without, r.reused,
                          r.error) for r in a}

    reused = passlab.attribute("mlp", pipe, passes=names, repeat=1, workers=1)
    built = passlab.attribute("mlp", pipe, passes=names, repeat=1, workers=1,
                              reuse_prefix=False)
    assert rows(reused) == rows(built)
    assert rows(reused)["FuseOps"][:4] == ("ok", 0.0, 4, 7)
    assert rows(reused)["LegalizeOps"][0] == "build fails"
    assert rows(reused)["identity"][:5] == ("ok", 0.0, 4, 4, True)


# ------------------------------------------- the job engine sweep shares (issue 35)
@pytest.mark.parametrize(("argument", "value", "message"), [
    ("timeout", -5, "timeout is the seconds one job may take: a positive number"),
    ("timeout", 0, "timeout is the seconds one job may take: a positive number"),
    ("timeout", float("nan"), "timeout is the seconds one job may take: a positive number"),
    ("timeout", float("inf"), "timeout is the seconds one job may take: a positive number"),
    ("timeout", "5", "timeout is the seconds one job may take: a positive number"),
    ("workers", 0, r"workers is how many worker processes to start: an int >= 1"),
    ("workers", -1, r"workers is how many worker processes to start: an int >= 1"),
    ("workers", 1.5, r"workers is how many worker processes to start: an int >= 1"),
    ("workers", True, r"workers is how many worker processes to start: an int >= 1"),
    ("executor", "dask", "executor is a concurrent.futures.Executor"),
    ("progress", "yes", "progress is None .a bar in Jupyter or on a terminal., True"),
    ("inputs", -1, r"inputs as a seed is an int >= 0, not -1"),
    ("inputs", 1.5, "inputs is None .seeded random inputs., a seed"),
    ("inputs", "x.npy", "inputs is None .seeded random inputs., a seed"),
    ("reuse_prefix", "no", "reuse_prefix is True or False, not 'no'"),
])
def test_attribute_refuses_what_sweep_refuses_before_any_work(argument, value, message,
                                                              monkeypatch):
    """Before: timeout=-5, 0 and nan made every job "time out after -5 s"; inf crashed
    every job with an OverflowError; workers=0 and -1 were accepted."""
    from passlab.research import _jobs

    def started(*_a, **_k):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(_jobs, "_Worker", started)
    with pytest.raises(SweepError, match=message):
        passlab.attribute("mlp", passes=["FuseOps"], **{argument: value})
    if argument in ("timeout", "workers"):  # the same words from sweep
        with pytest.raises(SweepError, match=message):
            passlab.sweep(["mlp"], {"default": "fused"}, **{argument: value})


@pytest.mark.slow
def test_a_full_pipeline_that_times_out_stops_the_variants():
    """Before: with a hanging pass and timeout=40 every variant ran to its own timeout
    after the full pipeline's had (130.6 s for 4 variants). Each variant needs the full
    pipeline's build: the ones running are stopped, the rest never start (one worker
    here: a variant started beside the full pipeline may time out with it, a row)."""
    import time

    from sweep_test_passes import hangs

    pipe = passlab.Pipeline.default("llvm").insert(hangs, after="legalize")
    start = time.monotonic()
    a = passlab.attribute("mlp", pipe, passes=["FuseOps", "FoldConstant", "LegalizeOps"],
                          timeout=10, workers=1, progress=False)
    took = time.monotonic() - start
    assert (a.status, a.error, len(a), a.not_run) == (
        "timeout", "timed out after 10 s while running pass 'hangs'", 0,
        ("FuseOps", "FoldConstant", "LegalizeOps"))
    assert a.summary() == (
        "mlp on llvm: the full pipeline's job timed out: timed out after 10 s while running "
        "pass 'hangs'; nothing to attribute; 3 not run (FuseOps, FoldConstant, LegalizeOps)")
    assert took < 40, f"{took:.0f} s: the variants ran to their own timeouts"


@pytest.mark.slow
def test_a_crash_of_the_full_pipelines_job_keeps_the_other_rows(tmp_path, monkeypatch):
    """Before: the crash of the full pipeline's job (its build process killed from
    outside) discarded every finished row: status "crashed", 0 rows. Each variant is
    timed against its own build of the full pipeline, so its row stands."""
    from sweep_test_passes import crashes_once

    monkeypatch.setenv("PASSLAB_TEST_ONCE", str(tmp_path / "once"))
    pipe = passlab.Pipeline.default("llvm").insert(crashes_once, after="legalize")
    a = passlab.attribute("mlp", pipe, passes=["FuseOps"], repeat=1, workers=1,
                          progress=False)
    assert (a.status, a.error, a.run_s, a.kernels) == (
        "crashed", "the build process was killed by signal SIGKILL while running pass "
                   "'crashes_once'", None, None)
    row = a["FuseOps"]
    assert (row.status, row.paired, row.kernels_without, row.max_abs_diff) == (
        "ok", True, 7, None)
    assert row.run_s > 0 and row.run_s_without > 0
    assert row.delta_s == pytest.approx(row.run_s - row.run_s_without)
    assert row.error == "outputs not compared: the full pipeline's own job crashed"
    assert a.summary().startswith(
        "mlp on llvm: the full pipeline's job crashed: the build process was killed by "
        "signal SIGKILL while running pass 'crashes_once'; 1 pass disabled one at a time "
        "(1 ok), each timed against its own build of the full pipeline, ")


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_rows(tmp_path, monkeypatch):
    """Before: the KeyboardInterrupt carried nothing (`vars(e) == {}`) although two jobs
    had finished."""
    import os
    import signal
    import threading
    import time

    from sweep_test_passes import hangs_unfused
    from test_sweep import gone_within

    pids = tmp_path / "pids"
    monkeypatch.setenv("PASSLAB_TEST_PIDFILE", str(pids))
    pipe = passlab.Pipeline.default("llvm").insert(hangs_unfused, after="FuseOps")
    sent = []

    def interrupt_when_hanging():
        end = time.monotonic() + 300
        while not pids.exists() and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(0.5)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_when_hanging, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            passlab.attribute("mlp", pipe, passes=["FoldConstant", "FuseOps"], repeat=1,
                              workers=1, progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - sent[0] < 10
    partial = info.value.attribution
    assert info.value.partial is partial
    assert (partial.status, partial.not_run, [(r.pass_, r.status) for r in partial]) == (
        "ok", ("FuseOps",), [("FoldConstant", "ok")])
    assert partial.run_s > 0 and partial.kernels == 4
    [pid] = [int(p) for p in pids.read_text().split()]
    assert gone_within(pid, 5)  # the hanging build process was killed
