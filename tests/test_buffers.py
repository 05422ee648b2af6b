"""buffers: tensor tables, liveness peaks, agreement with estimate_memory_usage, bad input."""

from __future__ import annotations

import importlib
import re
from types import SimpleNamespace

import pytest

from passlab.analysis.buffers import BufferReport, buffers
from passlab.errors import UnknownNameError

tvm = pytest.importorskip("tvm")
from relax_snapshots import snapshots  # noqa: E402
from tvm import relax  # noqa: E402


def estimate(mod: tvm.IRModule) -> list[tuple[int, str]]:
    """(count, GiB text) of each function's "With memory planning" line."""
    text = relax.analysis.estimate_memory_usage(mod)
    pattern = r"With memory planning, there are (\d+) constant-size .* total size (\S+) GB"
    return [(int(n), gib) for n, gib in re.findall(pattern, text)]


def rows(report: BufferReport) -> list[tuple]:
    return [(t.name, t.kind, t.producer, t.consumers, t.bytes, t.defined, t.first_use,
             t.last_use) for t in report.tensors]


# ----------------------------------------------------------------------------- MLP
def test_mlp_after_fusetir_tensors_and_peak():
    r = buffers(snapshots("mlp")["FuseTIR"])
    assert rows(r) == [
        ("permute_dims", "intermediate", "transpose", ("fused_matmul_add_relu",), 2048, 0, 0, 1),
        ("lv", "intermediate", "fused_matmul_add_relu", ("fused_matmul1_add1",), 512, 1, 1, 3),
        ("permute_dims1", "intermediate", "transpose1", ("fused_matmul1_add1",), 1024, 2, 2, 3),
        ("gv", "output", "fused_matmul1_add1", (), 128, 3, 3, 4)]
    assert r.timeline == (2048, 2560, 1536, 1664, 128)
    assert (r.peak_bytes, r.peak_exact, r.peak_binding) == (2560, True, 1)
    assert [t.name for t in r.peak_tensors] == ["permute_dims", "lv"]
    assert (r.allocations, r.total_bytes) == ((), 3712)
    assert [(p.name, p.kind, p.bytes) for p in r.params] == [
        ("x", "input", 256), ("fc1.weight", "weight", 2048), ("fc1.bias", "weight", 128),
        ("fc2.weight", "weight", 1024), ("fc2.bias", "weight", 32)]
    # TVM's own estimate sees nothing before CallTIRRewrite
    assert estimate(snapshots("mlp")["FuseTIR"]) == [(0, "0.0")]


def test_mlp_before_legalization():
    r = buffers(snapshots("mlp")["input"])
    assert r.peak_bytes == 2560
    assert [t.name for t in r.peak_tensors] == ["permute_dims", "matmul"]
    assert r["gv"].name == "add1"  # lookup by alias


def test_mlp_after_planning_reports_the_planner_storages():
    r = buffers(snapshots("mlp")["StaticPlanBlockMemory"])
    assert [(a.name, a.op, a.bytes, a.tensors) for a in r.allocations] == [
        ("storage", "relax.memory.alloc_storage", 2048, ("alloc", "alloc2")),
        ("storage1", "relax.memory.alloc_storage", 512, ("alloc1",)),
        ("alloc3", "relax.builtin.alloc_tensor", 128, ("alloc3",))]
    assert [(t.name, t.aliases, t.storage) for t in r.tensors] == [
        ("alloc", ("permute_dims",), "storage"), ("alloc1", ("lv",), "storage1"),
        ("alloc2", ("permute_dims1",), "storage"), ("alloc3", ("gv",), None)]
    assert (r.total_bytes, r.peak_bytes, r.peak_binding) == (2688, 2688, 11)
    # after planning the peak counts storages, each live from its first to its last user
    assert r.planned
    assert [(a.name, a.bytes, a.first_use, a.last_use) for a in r.storages] == [
        ("storage", 2048, 1, 12), ("storage1", 512, 5, 12), ("alloc3", 128, 11, 14)]
    assert [a.name for a in r.peak_storages] == ["storage", "storage1", "alloc3"]
    assert [t.name for t in r.peak_tensors] == ["alloc1", "alloc2", "alloc3"]
    assert r.timeline == (0, 2048, 2048, 2048, 2048, 2560, 2560, 2560, 2560, 2560, 2560,
                          2688, 2688, 128, 128)  # binding 0 allocates, nobody uses it yet
    assert r.to_text().splitlines()[:4] == [
        "buffers of forward: 4 tensors in 3 storages, peak 2.6 KiB (2688 B) at binding 11 "
        "(alloc3) of forward",
        "live at peak (3 storages, summing to the peak): storage 2.0 KiB [holds alloc2], "
        "storage1 512 B [holds alloc1], alloc3 128 B",
        "allocations: 3 constant-size, 2.6 KiB",
        "peak: the most bytes of storages live at one binding (after memory planning; a "
        "storage lives from its first to its last user)"]


@pytest.mark.parametrize("model, stage, count, total", [
    ("mlp", "CallTIRRewrite", 4, 3712),
    ("mlp", "StaticPlanBlockMemory", 3, 2688),
    ("resnet", "CallTIRRewrite", 40, 1177128),
    ("resnet", "StaticPlanBlockMemory", 5, 197160),
    ("transformer", "CallTIRRewrite", 36, 499712),
    ("transformer", "StaticPlanBlockMemory", 6, 106496),
])
def test_allocations_agree_with_estimate_memory_usage(model, stage, count, total):
    mod = snapshots(model)[stage]
    r = buffers(mod)
    assert (len(r.allocations), r.total_bytes) == (count, total)
    assert estimate(mod) == [(count, f"{total / 2**30:.4}")]


def test_resnet_peaks():
    snaps = snapshots("resnet")
    assert buffers(snaps["FuseTIR"]).peak_bytes == 196608
    planned = buffers(snaps["StaticPlanBlockMemory"])
    assert planned.peak_bytes == 196608 and planned.peak_exact


# ------------------------------------------------------------------- dynamic shapes
def test_dynamic_transformer_after_planning_is_partial_without_bounds():
    mod = snapshots("dyn")["StaticPlanBlockMemory"]
    with pytest.raises(AttributeError):  # TVM's estimate cannot size symbolic storages
        relax.analysis.estimate_memory_usage(mod)
    r = buffers(mod)
    assert (r.peak_exact, r.unknown_symbols, r.peak_bytes) == (False, ("n",), 81920)
    assert [(a.bytes, a.size) for a in r.dynamic_allocations][:3] == [
        (None, "256 * n"), (None, "256 * n"), (None, "768 * n")]
    assert [a.bytes for a in r.allocations] == [49152, 32768]
    assert r["alloc"].bytes is None and r["alloc"].size == "256 * n"
    assert "peak >= 80.0 KiB (81920 B)" in r.to_text()
    assert "pass bounds={'n': ...}" in r.to_text()
    assert r.symbols == ("n",)
    assert repr(r).endswith("peak_bytes>=81920)")


def test_bounds_evaluate_symbolic_sizes():
    r = buffers(snapshots("dyn")["StaticPlanBlockMemory"], bounds={"n": 128})
    assert r.peak_exact and r.unknown_symbols == ()
    assert r["alloc"].bytes == 128 * 256
    assert [a.bytes for a in r.dynamic_allocations][:3] == [32768, 32768, 98304]
    assert (r.peak_bytes, r.total_bytes) == (475136, 540672)
    # with n at the static model's length, unplanned sizes match the static model exactly
    dyn = buffers(snapshots("dyn")["CallTIRRewrite"], bounds={"n": 16})
    static = buffers(snapshots("transformer")["CallTIRRewrite"])
    assert (dyn.total_bytes, dyn.peak_bytes) == (static.total_bytes, static.peak_bytes)
    assert len(dyn.allocations) + len(dyn.dynamic_allocations) == len(static.allocations)



def test_one_analysis_per_module_and_bounds():
    # every view of the buffers after one pass (the pane, each kernel panel's links, a
    # report's snapshots) shares one analysis; other bounds or functions are their own
    cache = importlib.import_module("passlab.analysis.buffers")  # the package's name is the function
    cache.clear_cache()
    mod = snapshots("dyn")["StaticPlanBlockMemory"]
    first = buffers(mod, bounds={"n": 128})
    assert buffers(mod, bounds={"n": 128}) is first
    other = buffers(mod, bounds={"n": 16})
    assert other is not first and other.peak_bytes < first.peak_bytes
    assert buffers(mod) is not first and buffers(mod).peak_exact is False
    step = SimpleNamespace(name="StaticPlanBlockMemory", label="StaticPlanBlockMemory #3",
                           after=mod, before=None)
    by_step = buffers(step, bounds={"n": 128})  # the same analysis, the step's label
    assert by_step.source == "StaticPlanBlockMemory #3" and first.source == ""
    assert by_step.tensors is first.tensors
    cache.clear_cache()
    assert buffers(mod, bounds={"n": 128}) is not first
    assert rows(buffers(mod, bounds={"n": 128})) == rows(first)


# ------------------------------------------------------- the peak adds up, everywhere
def _listed(r: BufferReport) -> int:
    """The bytes of what the report lists as live at the peak."""
    items = r.peak_storages if r.planned else r.peak_tensors
    return sum(x.bytes or 0 for x in items)


@pytest.mark.parametrize("model", [
    "mlp", "transformer", "dyn",
    pytest.param("resnet", marks=pytest.mark.slow),
    pytest.param("mobilenet", marks=pytest.mark.slow)])
def test_peak_equals_the_sum_of_what_is_live_at_the_peak(model):
    """Every snapshot of the CPU pipeline with a Relax function, before and after planning
    (and the symbolic model with and without bounds)."""
    planned = unplanned = 0
    for name, mod in snapshots(model).items():
        for bounds in ([None, {"n": 64}] if model == "dyn" else [None]):
            r = buffers(mod, bounds=bounds)
            assert _listed(r) == r.peak_bytes, (model, name, bounds)
            assert r.peak_bytes == max(r.timeline)
            if r.planned:
                planned += 1
                assert {t.storage or t.name for t in r.peak_tensors} <= {
                    a.name for a in r.peak_storages}
            else:
                unplanned += 1
                assert r.peak_storages == ()
            if name == "StaticPlanBlockMemory":
                assert r.planned
            if name in ("FuseTIR", "CallTIRRewrite"):
                assert not r.planned
    assert planned >= 4 and unplanned >= 10


def test_peak_text_lists_what_adds_up():
    r = buffers(snapshots("resnet")["StaticPlanBlockMemory"])
    assert (r.peak_bytes, [a.bytes for a in r.peak_storages]) == (196608, [65536] * 3)
    line = r.to_text().splitlines()[1]
    assert line.startswith("live at peak (3 storages, summing to the peak): storage 64.0 KiB")


def test_bad_bounds():
    mod = snapshots("dyn")["FuseTIR"]
    with pytest.raises(UnknownNameError, match="unknown symbolic variable 'm'"):
        buffers(mod, bounds={"m": 3})
    with pytest.raises(TypeError, match="non-negative int"):
        buffers(mod, bounds={"n": -1})
    with pytest.raises(TypeError, match="mapping"):
        buffers(mod, bounds=[("n", 1)])


# --------------------------------------------------------------------- whole module
def test_whole_module_covers_every_relax_function():
    mod = snapshots("mlp")["FuseOps"]
    r = buffers(mod)
    assert r.functions == ("forward", "fused_matmul1_add1", "fused_matmul_add_relu")
    assert [(t.function, t.name) for t in r.tensors if t.function != "forward"] == [
        ("fused_matmul1_add1", "matmul1"), ("fused_matmul1_add1", "gv"),
        ("fused_matmul_add_relu", "matmul"), ("fused_matmul_add_relu", "add"),
        ("fused_matmul_add_relu", "gv")]
    one = buffers(mod, function="fused_matmul_add_relu")
    assert (one.functions, one.peak_bytes) == (("fused_matmul_add_relu",), 1024)


# ------------------------------------------------------------------------ rendering
def test_html_escapes_hostile_names():
    x = relax.Var('x"<b>&', relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f<script>", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x), name_hint="y</td><script>alert(1)</script>")
            out = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(out)
    page = buffers(bb.get()).to_html()
    assert "<script>" not in page
    assert "y&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "buffers of f&lt;script&gt;" in page


def test_mimebundle_and_dataframe(monkeypatch):
    r = buffers(snapshots("mlp")["StaticPlanBlockMemory"])
    assert r._repr_mimebundle_()["text/html"].count("<table") == 2
    with_plot = r.to_html(plot=True)
    assert with_plot.count("<table") == 2 and with_plot.count('class="passlab-bufplot"') == 1
    assert with_plot.index("<svg") < with_plot.index("<table")  # the picture above the tables
    monkeypatch.setattr(BufferReport, "to_html", lambda self: 1 / 0)
    assert "ZeroDivisionError" in r._repr_mimebundle_()["text/html"]
    df = r.to_dataframe()
    assert list(df["name"]) == ["alloc", "alloc1", "alloc2", "alloc3"]
    assert list(r.to_dataframe("allocations")["bytes"]) == [2048, 512, 128]
    assert list(r.to_dataframe("allocations")["first_use"]) == [1, 5, 11]


def test_bad_input():
    mod = snapshots("mlp")["FuseTIR"]
    with pytest.raises(UnknownNameError, match="unknown function 'main'"):
        buffers(mod, function="main")
    with pytest.raises(TypeError, match="tvm.IRModule or a Step"):
        buffers(42)
    step = SimpleNamespace(name="FuseTIR", before=None, after=mod)
    assert buffers(step).peak_bytes == 2560


def test_a_planned_peak_above_the_tensors_peak_says_why(mlp_build):
    r = buffers(mlp_build.trace.find("StaticPlanBlockMemory"))
    assert (r.peak_bytes, r.tensor_peak_bytes) == (2688, 2560)
    note = ("why the peak rose: planning needs 2.6 KiB where at most 2.5 KiB of tensors are "
            "live at once (+128 B): a storage is as big as the largest tensor it ever holds "
            "and stays live from its first to its last user, so at the peak storage 2.0 KiB "
            "holding 1.0 KiB")
    assert r.planned_peak_note() == note and note in r.to_text().splitlines()
    before = buffers(mlp_build.trace.find("FuseTIR"))
    assert before.tensor_peak_bytes == before.peak_bytes == 2560
    assert before.planned_peak_note() == ""


def test_buffers_never_print_a_kernel_for_the_ops_its_name_hides(monkeypatch):
    # a fused kernel whose name says no operator ("fused_mystery") has its ops read off
    # its printed block names, for the graph; the buffers (a step's Explain strip) never
    # ask for them, and printing DenseNet-121's 62 such kernels cost 120-320 ms
    from passlab._tvm import walk
    from passlab.analysis.graph import fused_graph

    text = snapshots("mlp")["FuseTIR"].script().replace("fused_matmul_add_relu",
                                                        "fused_mystery")
    mod = tvm.script.from_source(text)
    printed = []
    names = walk._BLOCK_NAMES
    monkeypatch.setattr(walk, "_BLOCK_NAMES", lambda f: (printed.append(f), names(f))[1])
    report = buffers(mod)
    assert (report.peak_bytes, [t.producer for t in report.tensors]) == (
        2560, ["transpose", "fused_mystery", "transpose1", "fused_matmul1_add1"])
    assert printed == []
    g = fused_graph(mod)
    assert [(n.label, n.kind, n.ops) for n in g.nodes] == [
        ("x", "input", ()), ("fused_mystery", "fused", ("matmul", "T_add", "compute")),
        ("fused_matmul1_add1", "fused", ("matmul", "add")), ("output", "output", ())]
    assert len(printed) == 1
