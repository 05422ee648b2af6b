"""Build.profile (issue 25): the structure of a profile, not its timings.

Times on 2 shared cores say little; what is exact is which kernels ran, how often, what
they link to, and that the parts add up as the profile says they do."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import passlab
from passlab.errors import DeviceUnavailableError, UnknownNameError
from passlab.research.blame import blame
from passlab.research.profile import COLUMNS, NOISY, Profile


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
    return mlp_build.profile(repeat=2)


@pytest.fixture(scope="module")
def resnet_profile(resnet_build) -> Profile:
    return resnet_build.profile(repeat=1)


def _check_structure(build: passlab.Build, prof: Profile) -> None:
    sites = _call_sites(build)
    kernels = {gv.name_hint for gv, f in build._kernels.tir_mod.functions_items()
               if not (f.attrs and "tirx.is_host_func" in f.attrs)}  # not shape functions
    assert sorted(k.kernel for k in prof) == sorted(kernels)  # each kernel once
    assert {k.kernel: k.calls for k in prof} == {k: sites.get(k, 0) for k in kernels}
    unused = [k for k in prof if k.calls == 0]
    assert all(k.total_s == 0 for k in unused) and list(prof)[len(prof) - len(unused):] == unused
    trace = build.trace
    prov = passlab.provenance(trace)
    labels = {s.label for s in trace}
    for k in prof:
        if k.calls == 0:
            continue
        assert k.median_s > 0 and k.min_s <= k.median_s <= k.max_s
        assert k.total_s == pytest.approx(k.calls * k.median_s)
        assert k.share == pytest.approx(k.total_s / prof.end_to_end_s)
        assert k.noisy == (k.spread > NOISY)
        b = blame(trace, k.kernel, kind="function")
        assert k.passes == tuple(dict.fromkeys(s.label for s in (*b.created_by,
                                                                  *b.rewritten_by)))
        assert k.passes and set(k.passes) <= labels
        assert k.ops == prov.ops_of(k.kernel) and k.ops
        for op in k.ops:
            assert k.kernel in prov[op].kernels
        assert k.bytes > 0
    assert [k.total_s for k in prof] == sorted((k.total_s for k in prof), reverse=True)
    assert [k.kernel for k in unused] == sorted(k.kernel for k in unused)
    assert prof.end_to_end_s > 0 and prof.overhead_s > 0
    assert prof.kernels_s == pytest.approx(sum(k.total_s for k in prof))
    assert prof.gap_s == pytest.approx(prof.end_to_end_s - prof.kernels_s - prof.overhead_s)
    assert "runtime overhead" in prof.summary() and "gap" in prof.summary()
    assert sum(prof.builtins.values()) > 0
    assert all(not name.startswith("fused_") for name in prof.builtins)


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
    # the reshape kernel stays in the library; the VM runs vm.builtin.reshape instead
    assert resnet_profile["reshape"].calls == 0 and resnet_profile.builtins["vm.builtin.reshape"] == 1


def test_profile_views(mlp_profile):
    df = mlp_profile.to_dataframe()
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 4 and df["calls"].tolist() == [k.calls for k in mlp_profile]
    assert df.loc[0, "sources"] == mlp_profile[0].sources
    text = mlp_profile.to_text()
    assert text.splitlines()[0] == mlp_profile.summary()
    assert all(k.kernel in text for k in mlp_profile)
    html = mlp_profile.to_html()
    assert "<table" in html and "fused_matmul_add_relu" in html
    svg = mlp_profile.plot().to_svg()
    assert svg.count('class="pp-bar') == len(mlp_profile) + 2  # + overhead and gap
    assert "var(--jp-" in svg and "currentColor" in svg
    bundle = mlp_profile._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_by_source_adds_up(mlp_profile):
    by = mlp_profile.by_source()
    assert sum(t for _, _, t, _ in by.rows) == pytest.approx(mlp_profile.kernels_s)
    names = [s for s, *_ in by.rows]
    assert sorted(names) == sorted({s for k in mlp_profile for s in k.sources})
    assert list(by.to_dataframe().columns) == ["source", "kernels", "total_s", "share"]
    relu = next(r for r in by.rows if r[0] == "relu")
    k = mlp_profile["fused_matmul_add_relu"]
    assert relu[1] == ("fused_matmul_add_relu",) and relu[2] == pytest.approx(k.total_s / 3)


def test_profile_links_to_code(mlp_profile):
    assert "T.prim_func" in mlp_profile.tir("fused_matmul_add_relu")
    assert "define" in mlp_profile.code("fused_matmul_add_relu", "llvm")


def test_profile_bad_input(mlp_build, mlp_profile):
    with pytest.raises(UnknownNameError, match="did you mean 'fused_matmul_add_relu'"):
        mlp_profile["fused_matmul_add_rel"]
    with pytest.raises(ValueError, match="repeat must be at least 1"):
        mlp_build.profile(repeat=0)
    with pytest.raises(TypeError, match=r"forward\(\) takes 5 arguments, 6 were given"):
        mlp_build.profile(*mlp_build.inputs(), np.zeros(1))


def test_profile_given_inputs_and_number(mlp_build):
    x = np.ones((4, 16), "float32")
    prof = mlp_build.profile(x, repeat=1, number=3)
    assert prof.repeat == 1 and len(prof) == 4 and prof.end_to_end_s > 0


@pytest.mark.slow
def test_c_target_times_on_the_cpu():
    b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("c"))
    prof = b.profile(repeat=1)
    assert prof.target == "c"
    assert {k.kernel: k.calls for k in prof} == dict(_call_sites(b))
    assert all(k.total_s > 0 for k in prof)


@pytest.mark.slow
def test_gpu_target_without_its_device():
    b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("cuda"))
    with pytest.raises(DeviceUnavailableError, match="no cuda device here"):
        b.profile(repeat=1)


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

    assert main(["profile", "mlp", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("forward on llvm: ") and "fused_matmul_add_relu" in out
    with pytest.raises(SystemExit):
        main(["profile", "mlp", "--repeat", "0"])
    assert "is not a whole number of at least 1" in capsys.readouterr().err


def test_cli_profile_inputs_from_npy(tmp_path, capsys):
    from passlab.cli import main

    np.save(tmp_path / "x.npy", np.ones((4, 16), "float32"))
    assert main(["profile", "mlp", "--repeat", "1", "--inputs", str(tmp_path / "x.npy")]) == 0
    assert "fused_matmul1_add1" in capsys.readouterr().out
    (tmp_path / "bad.npy").write_text("not numpy")
    assert main(["profile", "mlp", "--inputs", str(tmp_path / "bad.npy")]) == 2
    assert "not a readable .npy array file" in capsys.readouterr().err


def test_cli_report_profile(tmp_path, capsys):
    from passlab.cli import main

    out = tmp_path / "r.html"
    assert main(["report", "mlp", "--profile", "--repeat", "1", "-o", str(out)]) == 0
    assert "forward on llvm: " in capsys.readouterr().out
    assert '<section id="pl-runtime">' in out.read_text()


@pytest.mark.slow
def test_dynamic_shapes_keep_their_shape_function_in_the_overhead():
    b = passlab.build("transformer-dynamic")
    prof = b.profile(repeat=1)
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

    bare = profile(mlp_build, repeat=1, links=False, overhead=False)
    assert [(k.kernel, k.calls, k.bytes) for k in sorted(bare, key=lambda k: k.kernel)] == \
        [(k.kernel, k.calls, k.bytes) for k in sorted(mlp_profile, key=lambda k: k.kernel)]
    assert all(k.sources == k.ops == k.passes == () for k in bare)
    assert bare.end_to_end_s > 0 and math.isnan(bare.overhead_s) and math.isnan(bare.gap_s)
