"""Build.profile: the structure of a profile, and times where they are known.

Times on 2 shared cores say little; what is exact is which kernels ran, how often, what
they link to, and that the parts add up as the profile says they do. A synthetic program
whose kernels spin known numbers of iterations checks that in-place times rank and sum
as they should."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import passlab
from passlab.errors import DeviceUnavailableError, UnknownNameError
from passlab.research._profile_plot import seconds_text as _ms
from passlab.research.blame import blame
from passlab.research.profile import COLUMNS, Profile


def _call_sites(build: passlab.Build) -> Counter:
    """Kernel calls the entry function makes, counted in the IR the VM runs (the module
    the Relax pipeline ended with): each binding whose value calls a PrimFunc."""
    import tvm

    final = [s for s in build.trace if s.kind == "pass" and s.level == "relax"][-1].after
    prims = {gv.name_hint for gv, f in final.functions_items()
             if isinstance(f, tvm.tirx.PrimFunc)}
    counts: Counter = Counter()

    def visit(e):
        if isinstance(e, tvm.relax.Call) and isinstance(e.op, tvm.ir.GlobalVar) \
                and e.op.name_hint in prims:
            counts[e.op.name_hint] += 1

    tvm.relax.analysis.post_order_visit(final[build.entry], visit)
    return counts


@pytest.fixture(scope="module")
def mlp_profile(mlp_build) -> Profile:
    return mlp_build.profile(repeat=3, budget_s=0)


@pytest.fixture(scope="module")
def resnet_profile(resnet_build) -> Profile:
    return resnet_build.profile(repeat=3, budget_s=0)


def _check_structure(build: passlab.Build, prof: Profile) -> None:
    sites = _call_sites(build)
    kernels = {gv.name_hint for gv, f in build._kernels.tir_mod.functions_items()
               if not (f.attrs and "tirx.is_host_func" in f.attrs)}  # not shape functions
    # each kernel once: the called ones as rows, the others named apart
    assert sorted([k.kernel for k in prof] + list(prof.not_called)) == sorted(kernels)
    assert {k.kernel: k.calls for k in prof} == {k: n for k, n in sites.items() if k in kernels}
    assert list(prof.not_called) == sorted(k for k in kernels if k not in sites)
    assert all(k.calls > 0 for k in prof)
    trace = build.trace
    prov = passlab.provenance(trace)
    labels = {s.label for s in trace}
    for k in prof:
        assert k.median_s >= 0 and k.min_s <= k.median_s <= k.max_s
        assert k.in_place_s == k.median_s
        assert k.ci_low_s <= k.median_s <= k.ci_high_s
        assert k.total_s == pytest.approx(k.calls * k.median_s)
        whole = max(prof.instrumented_s, prof.kernels_s + prof.overhead_s)
        assert k.share == pytest.approx(k.total_s / whole)
        assert 0 <= k.share <= 1
        assert k.alone_s is not None and k.alone_s > 0
        assert k.in_place_ratio == pytest.approx(k.median_s / k.alone_s)
        assert k.noisy == (k.ci_low_s < k.median_s * (1 - k.ci_target)
                           or k.ci_high_s > k.median_s * (1 + k.ci_target))
        b = blame(trace, k.kernel, kind="function")
        assert k.passes == tuple(dict.fromkeys(s.label for s in (*b.created_by,
                                                                  *b.rewritten_by)))
        assert k.passes and set(k.passes) <= labels
        assert k.ops == prov.ops_of(k.kernel) and k.ops
        for op in k.ops:
            assert k.kernel in prov[op].kernels
        assert k.bytes > 0
    assert [k.total_s for k in prof] == sorted((k.total_s for k in prof), reverse=True)
    _check_adds_up(prof)
    text = prof.summary()
    assert "the runtime's own work" in text
    assert any(w in text for w in ("is unattributed", "within its noise", "more than its noise"))
    assert "%" not in text.split(". ")[0] or prof.unattributed_s >= 0  # no share above 100%
    assert sum(prof.builtins.values()) > 0
    assert all(not name.startswith("fused_") for name in prof.builtins)


def _check_adds_up(prof: Profile) -> None:
    """The in-place parts make up the instrumented run, by construction; every share is in
    [0, 1]; what is left is not below zero by more than the run's noise."""
    assert prof.end_to_end_s > 0 and prof.overhead_s > 0 and prof.hook_cost_s >= 0
    assert prof.kernels_s == pytest.approx(sum(k.total_s for k in prof))
    assert prof.kernels_s + prof.overhead_s + prof.unattributed_s == \
        pytest.approx(prof.instrumented_s, rel=1e-12, abs=1e-15)
    assert prof.instrumented_s == pytest.approx(  # never below 0, noise or not
        max(0.0, prof.instrumented_raw_s - prof.hook_cost_s))
    assert prof.gap_s == prof.unattributed_s  # the old name
    assert all(0 <= k.share <= 1 for k in prof) and sum(k.share for k in prof) <= 1 + 1e-12
    assert prof.instrumented_s >= 0
    assert prof.unattributed_s >= -prof.noise_s
    assert prof.slowdown == pytest.approx(prof.instrumented_raw_s / prof.end_to_end_s)
    assert prof.repeat >= 3 and prof.plain_runs >= 3


def test_mlp_profile_structure(mlp_build, mlp_profile):
    _check_structure(mlp_build, mlp_profile)
    assert mlp_profile["fused_matmul_add_relu"].ops == ("matmul", "add", "relu")
    assert mlp_profile["fused_matmul_add_relu"].flops is not None
    # 4x16 @ 16x32 floats + bias + relu in, 4x32 out: every argument's bytes per call
    assert mlp_profile["fused_matmul_add_relu"].bytes == 4 * (4 * 16 + 16 * 32 + 32 + 4 * 32)
    assert mlp_profile.entry == "forward" and mlp_profile.target == "llvm"
    with pytest.raises(TypeError):  # results are immutable
        mlp_profile.builtins["vm.builtin.alloc_tensor"] = 0


@pytest.mark.slow
def test_resnet_profile_structure(resnet_build, resnet_profile):
    _check_structure(resnet_build, resnet_profile)
    assert max(k.calls for k in resnet_profile) > 1  # a kernel shared by several layers
    assert resnet_profile.builtins["vm.builtin.alloc_storage"] >= 1
    # the reshape kernel stays in the library; the VM runs vm.builtin.reshape instead:
    # named apart, not a timed row
    assert resnet_profile.not_called == ("reshape",)
    assert resnet_profile.builtins["vm.builtin.reshape"] == 1
    with pytest.raises(UnknownNameError, match="'reshape' is in the library but this run "
                                               "does not call it: see not_called"):
        resnet_profile["reshape"]
    assert "1 kernel in the library not called by this run: reshape." in \
        resnet_profile.summary()
    assert "def reshape" in resnet_profile.tir("reshape")  # its code is still there


def test_profile_views(mlp_profile):
    df = mlp_profile.to_dataframe()
    assert list(df.columns) == list(COLUMNS)
    assert COLUMNS[:16] == ("kernel", "calls", "median_s", "min_s", "max_s", "total_s",
                            "share", "bytes", "flops", "gflops", "gbps", "sources", "ops",
                            "passes", "noisy", "spread")  # the old contract, first
    assert len(df) == 4 and df["calls"].tolist() == [k.calls for k in mlp_profile]
    assert df.loc[0, "sources"] == mlp_profile[0].sources
    assert df["in_place_s"].tolist() == df["median_s"].tolist()
    text = mlp_profile.to_text()
    assert text.splitlines()[0] == mlp_profile.summary()
    assert mlp_profile.summary().startswith(mlp_profile.sentence())
    assert mlp_profile.sentence().startswith(
        f"forward on llvm (cpu{mlp_profile.device[3:]}): "
        + ("of the " if mlp_profile.unattributed_s >= 0 else "4 kernels take "))
    assert all(k.kernel in text for k in mlp_profile)
    header = text.splitlines()[1].split()
    assert header[:9] == ["kernel", "calls", "per", "call", "+-", "per", "run", "share",
                          "alone"]
    html = mlp_profile.to_html()
    assert "<table" in html and "fused_matmul_add_relu" in html
    # it fits the output: long lists cut short in the cell, whole on hover; a wide table
    # scrolls in its box
    k = mlp_profile["fused_matmul_add_relu"]
    assert (f'text-overflow:ellipsis;white-space:nowrap" title="{", ".join(k.passes)}">'
            f'{", ".join(k.passes[:3])} +{len(k.passes) - 3}</td>') in html
    assert '<div style="overflow-x:auto;max-width:100%"><table' in html
    assert html.count("<tr>") == 1 + len(mlp_profile)
    assert all(row.count("<td") == 13 for row in html.split("<tr>")[2:])
    bundle = mlp_profile._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def _bars(svg: str) -> list[tuple[str, float]]:
    import re

    return [(kind, float(w)) for kind, w in re.findall(
        r'<g class="pp-bar pp-(\w+)">.*?<rect x="\d+" y="[\d.]+" width="([\d.]+)"', svg)]


def test_the_chart_never_draws_a_negative_bar(mlp_profile):
    import dataclasses

    svg = mlp_profile.plot().to_svg()
    labels = [b[0] for b in mlp_profile.plot().bars]
    assert labels[:4] == [k.kernel for k in mlp_profile]
    assert "var(--jp-" in svg and "currentColor" in svg
    assert all(v >= 0 for _, v, _, _ in mlp_profile.plot().bars)
    assert all(w >= 1.0 for _, w in _bars(svg))
    # a negative rest: written under the title, no bar
    neg = dataclasses.replace(mlp_profile, unattributed_s=-2e-6,
                              instrumented_ci=(mlp_profile.instrumented_s - 1e-6,
                                               mlp_profile.instrumented_s + 1e-6))
    plot = neg.plot()
    assert [b[0] for b in plot.bars][-1] == "runtime overhead"
    assert plot.title.splitlines()[1] == "unattributed -2 us (not drawn: below zero)"
    assert neg.sentence().endswith(
        f"4 kernels take {_ms(neg.kernels_s)} and the runtime's own work "
        f"{_ms(neg.overhead_s)}, 2 us more than the {_ms(neg.instrumented_s)} instrumented "
        "run, more than its noise (+-1 us).")
    assert "unattributed -2 us (not drawn" in plot.to_text()
    pos = dataclasses.replace(mlp_profile, unattributed_s=3e-6)
    assert [b[:2] for b in pos.plot().bars][-2:] == [
        ("runtime overhead", mlp_profile.overhead_s), ("unattributed", 3e-6)]
    assert "and 3 us" in pos.sentence() and "between calls is unattributed." in pos.sentence()


def test_by_source_counts_each_kernel_once_per_level(mlp_profile):
    by = mlp_profile.by_source()
    assert by.level == "module"
    assert sum(t for _, _, t, _ in by.rows) == pytest.approx(mlp_profile.kernels_s)
    names = [s for s, *_ in by.rows]
    assert sorted(names) == sorted({s for k in mlp_profile for s in k.sources})
    assert list(by.to_dataframe().columns) == ["source", "kernels", "total_s", "share"]
    relu = next(r for r in by.rows if r[0] == "relu")
    k = mlp_profile["fused_matmul_add_relu"]
    assert relu[1] == ("fused_matmul_add_relu",) and relu[2] == pytest.approx(k.total_s / 3)
    with pytest.raises(ValueError, match="level 'layer' is not one of 'module', 'node'"):
        mlp_profile.by_source("layer")


def test_by_source_levels_of_a_pytorch_and_an_onnx_model(mlp_profile):
    # a PyTorch call carries (module path, export node); an ONNX one its node name
    import dataclasses

    k = mlp_profile[0]
    torch_k = dataclasses.replace(
        k, sources=("model.q_proj", "addmm", "model.k_proj", "addmm_1"),
        source_groups=(("model.q_proj", "addmm"), ("model.k_proj", "addmm_1")))
    onnx_k = dataclasses.replace(
        mlp_profile[1], sources=("/layer1/conv1/Conv", "/layer1/relu/Relu"),
        source_groups=(("/layer1/conv1/Conv",), ("/layer1/relu/Relu",)))
    prof = dataclasses.replace(mlp_profile, kernels=(torch_k, onnx_k))
    for level, expect in (("module", {"model.q_proj", "model.k_proj", "/layer1/conv1",
                                      "/layer1/relu"}),
                          ("node", {"addmm", "addmm_1", "/layer1/conv1/Conv",
                                    "/layer1/relu/Relu"})):
        rows = prof.by_source(level).rows
        assert {r[0] for r in rows} == expect
        assert sum(r[2] for r in rows) == pytest.approx(torch_k.total_s + onnx_k.total_s)
        assert sum(r[3] for r in rows) <= 1 + 1e-12
    module = dict((r[0], r[2]) for r in prof.by_source("module").rows)
    assert module["model.q_proj"] == pytest.approx(torch_k.total_s / 2)  # not / 4


def test_profile_links_to_code(mlp_profile):
    assert "T.prim_func" in mlp_profile.tir("fused_matmul_add_relu")
    assert "define" in mlp_profile.code("fused_matmul_add_relu", "llvm")


def test_profile_bad_input(mlp_build, mlp_profile):
    with pytest.raises(UnknownNameError, match="did you mean 'fused_matmul_add_relu'"):
        mlp_profile["fused_matmul_add_rel"]
    with pytest.raises(TypeError, match=r"forward\(\) takes 5 arguments, 6 were given"):
        mlp_build.profile(*mlp_build.inputs(), np.zeros(1))


@pytest.mark.parametrize("kwargs, message", [
    (dict(repeat=0), "repeat must be a whole number of at least 1, not 0"),
    (dict(repeat=float("nan")), "repeat must be a whole number of at least 1, not nan"),
    (dict(repeat=1.5), "repeat must be a whole number of at least 1, not 1.5"),
    (dict(repeat=True), "repeat must be a whole number of at least 1, not True"),
    (dict(repeat=-3), "repeat must be a whole number of at least 1, not -3"),
    (dict(number=float("nan")), r"number must be a whole number of at least 1 \(or None: "
                                r"as many calls as fill min_repeat_ms\), not nan"),
    (dict(number=0), "number must be a whole number of at least 1"),
    (dict(number=True), "number must be a whole number of at least 1"),
    (dict(min_repeat_ms=float("nan")), "min_repeat_ms must be a finite number at least 0 "
                                       r"\(milliseconds"),
    (dict(min_repeat_ms=-1), "min_repeat_ms must be a finite number at least 0"),
    (dict(min_repeat_ms=True), "min_repeat_ms must be a finite number at least 0"),
    (dict(seed=-1), "seed must be a whole number of at least 0, not -1"),
    (dict(seed=1.5), "seed must be a whole number of at least 0, not 1.5"),
    (dict(target=0), "target must be a finite number above 0 and at most 1"),
    (dict(target=float("inf")), "target must be a finite number above 0 and at most 1"),
    (dict(budget_s=-5), "budget_s must be a finite number at least 0"),
    (dict(budget_s=float("nan")), "budget_s must be a finite number at least 0"),
    (dict(alone="yes"), "alone must be True or False, not 'yes'"),
])
def test_every_bad_argument_is_refused_before_any_work(mlp_build, kwargs, message,
                                                       monkeypatch):
    from passlab._tvm import timing

    def no_work(*a, **k):
        raise AssertionError("profile() started work before checking its arguments")

    monkeypatch.setattr(timing, "machine", no_work)
    monkeypatch.setattr(timing, "device", no_work)
    with pytest.raises(ValueError, match=message):
        mlp_build.profile(**kwargs)


def test_profile_given_inputs_and_number(mlp_build):
    x = np.ones((4, 16), "float32")
    prof = mlp_build.profile(x, repeat=1, number=3, budget_s=0, alone=False)
    assert prof.repeat == 1 and len(prof) == 4 and prof.end_to_end_s > 0
    assert all(k.alone_s is None and k.in_place_ratio is None for k in prof)


def test_more_runs_while_the_interval_is_wide_until_the_budget(mlp_build):
    # a target no run can meet: runs are added until the budget is spent
    start = __import__("time").perf_counter()
    prof = mlp_build.profile(repeat=3, target=1e-9, budget_s=0.6, alone=False)
    took = __import__("time").perf_counter() - start
    assert prof.repeat > 3 and prof.plain_runs > 3 and took < 30
    assert prof.ci_target == 1e-9 and all(k.noisy for k in prof if k.median_s > 0)
    noisy = sum(k.noisy for k in prof)
    assert f"{noisy} kernel{'s' if noisy > 1 else ''} noisy (interval wider than +-0%)" \
        in prof.summary()
    # no budget: exactly `repeat` runs of each kind, however wide the intervals
    exact = mlp_build.profile(repeat=3, target=1e-9, budget_s=0, alone=False)
    assert exact.repeat == 3 and exact.plain_runs == 3


def test_a_profile_belongs_to_its_build(mlp_build, mlp_profile, tmp_path):
    other = passlab.build("transformer")
    with pytest.raises(ValueError, match=r"write_report: this profile was measured on "
                                         r"another build \(llvm, 4 kernels, 2 of them not in "
                                         r"this trace, e\.g\. 'fused_matmul1_add1'\); a "
                                         r"profile belongs to the build it timed"):
        other.trace.write_report(tmp_path / "r.html", profile=mlp_profile)
    assert not (tmp_path / "r.html").exists()
    with pytest.raises(TypeError, match="write_report: profile must be a passlab Profile"):
        mlp_build.trace.write_report(tmp_path / "r.html", profile="fast")
    # the same build's trace takes it
    mlp_build.trace.write_report(tmp_path / "ok.html", profile=mlp_profile)


@pytest.mark.slow
def test_c_target_times_on_the_cpu():
    b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("c"))
    prof = b.profile(repeat=3, budget_s=0)
    assert prof.target == "c"
    assert {k.kernel: k.calls for k in prof} == dict(_call_sites(b))
    assert all(k.alone_s > 0 for k in prof)
    _check_adds_up(prof)


@pytest.mark.slow
def test_gpu_target_without_its_device():
    b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("cuda"))
    with pytest.raises(DeviceUnavailableError, match="no cuda device here"):
        b.profile(repeat=1)
    with pytest.raises(DeviceUnavailableError, match="cannot run this 'cuda' build"):
        b.run()


def test_report_has_a_run_time_section(mlp_build, mlp_profile, tmp_path):
    out = mlp_build.trace.write_report(tmp_path / "r.html", profile=mlp_profile)
    html = out.read_text()
    assert html.count('<section id="pl-runtime">') == 1 and "<h2>Run time</h2>" in html
    assert "Time per source operator" in html and 'class="passlab-profile-plot"' in html
    # the report's Profile tab holds the same kernel table as the Explorer's pane
    from passlab.views._report_state import read_report

    data, kept = read_report(html)
    assert 'class="passlab-table plx-profile-table"' in kept["profile"]
    assert "fused_matmul_add_relu" in kept["profile"] and "need a kernel" in kept["profile"]
    plain = mlp_build.trace.write_report(tmp_path / "plain.html").read_text()
    assert 'id="pl-runtime"' not in plain
    data, kept = read_report(plain)
    assert "profile" not in data["blocks"] and "--profile" in data["notes"]["profile"]


def test_cli_profile_prints_the_kernel_table(capsys):
    from passlab.cli import main

    assert main(["profile", "mlp", "--repeat", "1", "--budget", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("forward on llvm (cpu") and "fused_matmul_add_relu" in out
    with pytest.raises(SystemExit):
        main(["profile", "mlp", "--repeat", "0"])
    assert "is not a whole number of at least 1" in capsys.readouterr().err


def test_cli_profile_inputs_from_npy(tmp_path, capsys):
    from passlab.cli import main

    np.save(tmp_path / "x.npy", np.ones((4, 16), "float32"))
    assert main(["profile", "mlp", "--repeat", "1", "--budget", "0",
                 "--inputs", str(tmp_path / "x.npy")]) == 0
    assert "fused_matmul1_add1" in capsys.readouterr().out
    (tmp_path / "bad.npy").write_text("not numpy")
    assert main(["profile", "mlp", "--inputs", str(tmp_path / "bad.npy")]) == 2
    assert "not a readable .npy array file" in capsys.readouterr().err


def _forged_npy(path, count: int) -> None:
    """A .npy file of a header alone, claiming `count` float32 values."""
    import struct

    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({count},), }}"
    header += " " * (117 - len(header)) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())


def test_cli_refuses_an_npy_header_that_claims_too_much(tmp_path, capsys, monkeypatch):
    from passlab import cli
    from passlab.cli import main

    forged = tmp_path / "hdr.npy"
    _forged_npy(forged, 2 ** 40)
    assert forged.stat().st_size == 128
    loads = []
    monkeypatch.setattr(np, "load", lambda *a, **k: loads.append(a))
    assert main(["profile", "mlp", "--inputs", str(forged)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--inputs {str(forged)!r}: its header claims " in err
    assert "of float32 (1099511627776,) but the file holds 0 B of data" in err
    assert loads == []  # refused from the header, nothing read
    # a real file over the budget: refused the same way, before reading
    monkeypatch.setattr(cli, "_input_budget", lambda: 1000)
    big = tmp_path / "big.npy"
    with open(big, "wb") as f:
        from numpy.lib import format as npy

        npy.write_array(f, np.zeros(512, "float32"))
    assert main(["attribute", "mlp", "--inputs", str(big)]) == 2
    assert "--inputs: the arrays hold 2.0 KiB, more than the 1000 B passlab reads as " \
        "inputs" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_gpu_target_without_its_device_is_one_line(tmp_path, capsys):
    from passlab.cli import main

    for argv in (["profile", "mlp", "--target", "cuda"],
                 ["report", "mlp", "--target", "cuda", "--profile", "-o",
                  str(tmp_path / "r.html")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == ("passlab: error: cannot time this 'cuda' build: no cuda device here "
                       "(or this TVM has no cuda runtime); the build and its generated code "
                       "can still be inspected; build for 'llvm' to time on this CPU\n")
    assert not (tmp_path / "r.html").exists()


def test_cli_report_profile(tmp_path, capsys):
    from passlab.cli import main

    out = tmp_path / "r.html"
    assert main(["report", "mlp", "--profile", "--repeat", "1", "--budget", "0",
                 "-o", str(out)]) == 0
    assert "forward on llvm (cpu" in capsys.readouterr().out
    assert '<section id="pl-runtime">' in out.read_text()


@pytest.mark.slow
def test_dynamic_shapes_keep_their_shape_function_in_the_overhead():
    b = passlab.build("transformer-dynamic")
    prof = b.profile(repeat=3, budget_s=0)
    _check_adds_up(prof)
    assert "shape_func" not in [k.kernel for k in prof]
    assert prof.builtins["shape_func"] == _call_sites_of(b, "shape_func")
    sites = _call_sites(b)
    assert {k.kernel: k.calls for k in prof if k.calls} == \
        {k: n for k, n in sites.items() if k != "shape_func"}


def _call_sites_of(build: passlab.Build, name: str) -> int:
    return _call_sites(build)[name]


def test_model_explorer_time_overlay(mlp_build, mlp_profile, tmp_path):
    import json

    files = passlab.to_model_explorer(mlp_build.trace, tmp_path / "m.json", profile=mlp_profile)
    assert [f.name for f in files] == ["m.json", "m.bytes_out.json", "m.bytes_in.json",
                                       "m.time.json"]
    time = json.loads(files[-1].read_text())
    graphs = {g["id"]: g for g in json.loads(files[0].read_text())["graphs"]}
    fuse_tir = next(gid for gid in time if gid.endswith("FuseTIR"))
    labels = {n["id"]: n["label"] for n in graphs[fuse_tir]["nodes"]}
    assert {labels[nid]: v["value"] for nid, v in time[fuse_tir]["results"].items()} == {
        "fused_matmul_add_relu": mlp_profile["fused_matmul_add_relu"].median_s,
        "fused_matmul1_add1": mlp_profile["fused_matmul1_add1"].median_s}
    assert time[next(iter(time))]["results"] == {}  # LegalizeOps: no kernel names yet
    plain = passlab.to_model_explorer(mlp_build.trace, tmp_path / "p.json")
    assert len(plain) == 3


def test_time_colour_uses_the_profiles_totals(mlp_build, mlp_profile):
    from passlab.analysis import _graph_render
    from passlab.analysis.graph import fused_graph, kernel_times

    g = fused_graph(mlp_build.trace.find("FuseTIR"))
    times = kernel_times(g, mlp_profile)
    by_label = {n.id: n.label for n in g.nodes}
    assert times == {i: mlp_profile[by_label[i]].total_s for i in times}
    assert set(times) == {n.id for n in g.nodes if n.kind not in _graph_render.TERMINALS}
    ov = _graph_render.overlay(g, "time", times)
    slow = max(times, key=times.get)
    fast = min(times, key=times.get)
    assert (ov.lo, ov.hi) == (times[fast], times[slow])
    # the viridis ramp's ends: the slowest kernel yellow, the fastest dark violet
    assert (ov.fills[slow], ov.fills[fast]) == ("#fde725", "#440154")
    dot = g.to_dot("time", profile=mlp_profile)
    assert f'"{slow}" [shape=box, style="rounded,filled", fillcolor="#fde725"' in dot
    with pytest.raises(ValueError, match=r"overlay='time' needs a profile: "
                                         r"g.to_dot\('time', profile=build.profile\(\)\)"):
        g.to_dot("time")


def test_a_device_that_is_not_here_is_named():
    # issue 25 item 6: a GPU target times on its device, and without one says which
    from passlab._tvm import timing

    for kind, device in (("cuda", "cuda"), ("nvptx", "cuda"), ("rocm", "rocm"),
                         ("metal", "metal"), ("vulkan", "vulkan")):
        with pytest.raises(DeviceUnavailableError,
                           match=rf"cannot time this {kind!r} build: no {device} device here"):
            timing.device(kind)
    assert str(timing.device("llvm")) == str(timing.device("c")) == "cpu:0"
    with pytest.raises(DeviceUnavailableError, match="passlab knows the devices of c, cuda"):
        timing.device("hexagon")


def test_profile_without_links_or_overhead_has_the_same_kernels(mlp_build, mlp_profile):
    # what attribute() and sweep(profile=) time: no provenance or blame per build
    import math

    from passlab.research.profile import profile

    bare = profile(mlp_build, repeat=1, links=False, overhead=False, alone=False, budget_s=0)
    assert [(k.kernel, k.calls, k.bytes) for k in sorted(bare, key=lambda k: k.kernel)] == \
        [(k.kernel, k.calls, k.bytes) for k in sorted(mlp_profile, key=lambda k: k.kernel)]
    assert all(k.sources == k.ops == k.passes == () for k in bare)
    assert bare.end_to_end_s > 0 and math.isnan(bare.overhead_s) and math.isnan(bare.gap_s)
    assert math.isnan(bare.instrumented_s) and math.isnan(bare.hook_cost_s)
    assert bare.sentence().endswith("kernels take " + bare.sentence().split("take ")[1])
    assert "(hooks included)" in bare.summary()


#: Kernels that spin a known number of iterations of a dependent multiply-add (a chain no
#: compiler can shorten): spin_4m does 4x the work of spin_1m, 16x that of spin_250k,
#: which the run calls twice.
SPIN = '''
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

@I.ir_module
class Spin:
    @T.prim_func
    def spin_4m(a: T.Buffer((64,), "float32"), out: T.Buffer((1,), "float32")):
        out[0] = T.float32(0)
        for i in range(4000000):
            out[0] = out[0] * T.float32(0.999) + a[i % 64]

    @T.prim_func
    def spin_1m(a: T.Buffer((64,), "float32"), out: T.Buffer((1,), "float32")):
        out[0] = T.float32(0)
        for i in range(1000000):
            out[0] = out[0] * T.float32(0.999) + a[i % 64]

    @T.prim_func
    def spin_250k(a: T.Buffer((64,), "float32"), out: T.Buffer((1,), "float32")):
        out[0] = T.float32(0)
        for i in range(250000):
            out[0] = out[0] * T.float32(0.999) + a[i % 64]

    @R.function
    def main(x: R.Tensor((64,), "float32")):
        cls = Spin
        with R.dataflow():
            a = R.call_tir(cls.spin_4m, (x,), out_ty=R.Tensor((1,), "float32"))
            b = R.call_tir(cls.spin_1m, (x,), out_ty=R.Tensor((1,), "float32"))
            c = R.call_tir(cls.spin_250k, (x,), out_ty=R.Tensor((1,), "float32"))
            d = R.call_tir(cls.spin_250k, (x,), out_ty=R.Tensor((1,), "float32"))
            R.output(a, b, c, d)
        return (a, b, c, d)
'''


@pytest.mark.slow
def test_in_place_times_of_kernels_with_known_costs_rank_and_sum():
    b = passlab.build(SPIN)
    prof = b.profile(np.linspace(-1, 1, 64).astype("float32"), repeat=5, budget_s=0)
    assert [(k.kernel, k.calls) for k in prof] == [
        ("spin_4m", 1), ("spin_1m", 1), ("spin_250k", 2)]
    per_call = {k.kernel: k.median_s for k in prof}
    # 4x the iterations, about 4x the time: wide bounds, as a loaded machine preempts a
    # long kernel more often than a short one (18.6 ms against 1.6 ms at a load of 8.8
    # on 2 cores; 23.2 against 5.8 at 4.5)
    assert 1.5 < per_call["spin_4m"] / per_call["spin_1m"] < 30
    assert 1.5 < per_call["spin_1m"] / per_call["spin_250k"] < 30
    _check_adds_up(prof)
    assert sum(k.share for k in prof) <= 1 + 1e-9
    # the kernels are nearly all of the run: the runtime's own work is microseconds
    assert prof.kernels_s / prof.instrumented_s > 0.8
    assert prof.overhead_s < 0.01 * prof.instrumented_s
    assert prof.not_called == () and prof.hook_cost_s < 0.01 * prof.instrumented_s
    for k in prof:  # alone, the same loop: the same time within a shared machine's noise
        assert 0.1 < k.in_place_ratio < 10


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet", "transformer", "transformer-dynamic",
                                  "mobilenet"])
def test_the_parts_add_up_on_every_built_in_model(name, resnet_build):
    b = resnet_build if name == "resnet" else passlab.build(name)
    prof = b.profile(repeat=3, budget_s=0, alone=False)
    _check_adds_up(prof)
    assert prof.kernels_s > 0 and len(prof) > 0


def test_the_first_run_loads_the_machine_code_and_says_what_it_took():
    import time

    import tvm

    b = passlab.build(passlab.models.mlp())
    assert b.load_s is None  # nothing loaded yet: the build made no machine code
    b.run()
    assert b.load_s > 0 and str(b.device) == "cpu:0"
    start = time.perf_counter()  # a second VM of the same executable: the code is kept
    tvm.relax.VirtualMachine(b.executable, tvm.cpu())
    assert time.perf_counter() - start < b.load_s


def test_a_progress_bar_of_the_runs(mlp_build, capsys):
    # drawn after half a second (a quick profile shows none): 20 in-place + 20 plain
    # rounds, the plain ones timed for at least 100 ms each (2 s in all: the in-place
    # runs of the MLP take microseconds, so 20 ms plain rounds could end within 0.5 s)
    mlp_build.profile(repeat=20, budget_s=0, alone=False, min_repeat_ms=100, progress=True)
    err = capsys.readouterr().err
    assert "profiling forward" in err and "40/40" in err
    mlp_build.profile(repeat=2, budget_s=0, alone=False, progress=False)
    assert capsys.readouterr().err == ""
