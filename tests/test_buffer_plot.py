"""The liveness picture (BufferReport.plot), before/after on one axis (compare=), the
per-pass line (PassTable.plot) and the picture in the explorer's Buffers pane."""

from __future__ import annotations

import re

import pytest

from passlab.analysis.buffers import buffers
from passlab.errors import UnknownNameError

tvm = pytest.importorskip("tvm")
from relax_snapshots import snapshots  # noqa: E402
from tvm import relax  # noqa: E402


def blocks(svg: str) -> list[str]:
    """data-name of every drawn block (tensor or storage), in drawing order."""
    return re.findall(r'<g class="pb-block[^"]*" data-name="([^"]*)"', svg)


def inner(svg: str) -> list[str]:
    return re.findall(r'<g class="pb-tensor" data-name="([^"]*)"', svg)


def titles(svg: str) -> list[str]:
    return re.findall(r"<title>(.*?)</title>", svg, re.S)


# ------------------------------------------------------------------ before planning
def test_one_block_per_tensor_before_planning():
    r = buffers(snapshots("mlp")["FuseTIR"])
    p = r.plot()
    svg = p.to_svg()
    assert blocks(svg) == ["permute_dims", "lv", "permute_dims1", "gv"]
    assert svg.count('class="pb-block pb-peak"') == 2  # permute_dims and lv make the peak
    assert inner(svg) == []
    # the blocks stack up to the report's own timeline, bar for bar
    assert p.panels[0].timeline == r.timeline == (2048, 2560, 1536, 1664, 128)
    assert p.panels[0].ticks == ("transpose", "fused_matmul_add_relu", "transpose1",
                                 "fused_matmul1_add1", "return")
    assert ("tensor lv: 512 B, 4x32 float32\nproducer: fused_matmul_add_relu\n"
            "consumers: fused_matmul1_add1\nlive: bindings 1-3") in titles(svg)
    assert "peak 2.5 KiB = permute_dims 2.0 KiB + lv 512 B" in titles(svg)
    assert ">peak 2.5 KiB</text>" in svg
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="passlab-bufplot"')


def test_axis_labels_are_level_whole_and_never_overlap():
    # issue 34 item 9: the labels were rotated by 60 degrees and cut at 22 characters
    svg = buffers(snapshots("mlp")["FuseTIR"]).plot().to_svg()
    assert "rotate(" not in svg and "\u2026" not in svg
    labels = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="middle" '
                        r'font-size="10"><title>[^<]*</title>([^<]*)</text>', svg)
    # the peak's column (binding 1) first, then left to right on two staggered rows; a
    # label that would overlap one placed is left out, its name still on hover
    assert [name for *_, name in labels] == ["fused_matmul_add_relu", "transpose",
                                             "transpose1", "return"]
    for row in {y for _, y, _ in labels}:
        spans = sorted((float(x) - 3.05 * len(n), float(x) + 3.05 * len(n))
                       for x, y, n in labels if y == row)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no overlap
    strips = re.findall(r'<rect [^>]*fill="transparent"><title>([^<]*)</title></rect>', svg)
    assert strips == ["transpose", "fused_matmul_add_relu", "transpose1",
                      "fused_matmul1_add1", "return"]


def test_text_fallback_and_mimebundle():
    p = buffers(snapshots("mlp")["FuseTIR"]).plot()
    assert p.to_text().splitlines() == [
        "forward: 4 tensors, total 3.6 KiB; peak 2.5 KiB = permute_dims 2.0 KiB + lv 512 B "
        "(at binding 1)",
        "",
        "forward: live bytes per binding with a call (# = share of the largest)",
        "peak: the most bytes of tensors live at one binding (a tensor lives from the binding "
        "that creates it to its last use); one colour per tensor",
        "    0 transpose                    ################################           2.0 KiB",
        "    1 fused_matmul_add_relu        ########################################   2.5 KiB"
        "  <- peak",
        "    2 transpose1                   ########################                   1.5 KiB",
        "    3 fused_matmul1_add1           ##########################                 1.6 KiB",
        "    4 return                       ##                                           128 B"]
    bundle = p._repr_mimebundle_()
    assert bundle["text/plain"] == p.to_text()
    assert bundle["text/html"].startswith('<div class="passlab-bufplot-box"')
    assert bundle["text/html"].count("<svg") == 1


def test_every_tensor_of_a_larger_model_is_drawn():
    for stage in ("input", "FuseTIR", "CallTIRRewrite"):
        r = buffers(snapshots("transformer")[stage])
        assert blocks(r.plot().to_svg()) == [t.name for t in r.tensors], stage


# ------------------------------------------------------------------- after planning
def test_one_block_per_storage_with_its_tensors_inside_after_planning():
    r = buffers(snapshots("mlp")["StaticPlanBlockMemory"])
    p = r.plot()
    svg = p.to_svg()
    assert blocks(svg) == ["storage", "storage1", "alloc3"]
    assert inner(svg) == ["alloc", "alloc2", "alloc1"]  # alloc3 is its own storage
    assert p.panels[0].timeline == r.timeline
    assert "storage storage: 2.0 KiB, live: bindings 1-12\nholds: alloc, alloc2" in titles(svg)
    assert "peak 2.6 KiB = storage 2.0 KiB + storage1 512 B + alloc3 128 B" in titles(svg)
    # colour by storage: a storage and the tensors in it share one colour
    colour = re.search(r'data-name="storage"><title>[^<]*</title><path d="[^"]*" '
                       r'fill="(#[0-9a-f]{6})"', svg).group(1)
    assert svg.count(f'fill="{colour}" fill-opacity=".75"') == 2
    assert "colour = storage, tensors drawn inside at offset 0" in p.to_text()


def test_resnet_storages():
    r = buffers(snapshots("resnet")["StaticPlanBlockMemory"])
    svg = r.plot().to_svg()
    assert blocks(svg) == [a.name for a in r.storages] and len(r.storages) == 5
    assert sorted(inner(svg)) == sorted(t.name for t in r.tensors if t.storage)


# ------------------------------------------------------------------- compare
def test_compare_on_one_axis_shows_both_totals_and_the_saving():
    snaps = snapshots("mlp")
    a, b = buffers(snaps["CallTIRRewrite"]), buffers(snaps["StaticPlanBlockMemory"])
    p = a.plot(compare=b, names=("CallTIRRewrite", "StaticPlanBlockMemory"))
    assert p.shared_axis and [q.ticks for q in p.panels] == [
        ("transpose", "fused_matmul_add_relu", "transpose1", "fused_matmul1_add1", "return")] * 2
    assert p.headline() == [
        "CallTIRRewrite: forward: 4 allocations, total 3.6 KiB; peak 2.5 KiB = alloc 2.0 KiB "
        "+ alloc1 512 B (at binding 3)",
        "StaticPlanBlockMemory: forward: 3 allocations, total 2.6 KiB; peak 2.6 KiB = storage "
        "2.0 KiB + storage1 512 B + alloc3 128 B (at binding 11)",
        "StaticPlanBlockMemory allocates 1.0 KiB less than CallTIRRewrite: 4 -> 3 "
        "allocations, total -1.0 KiB (-28%), peak +128 B (+5%)"]
    svg = p.to_svg()
    assert blocks(svg) == ["alloc", "alloc1", "alloc2", "alloc3", "storage", "storage1", "alloc3"]
    assert ">kernel calls in program order</text>" in svg
    # on the kernel-call axis, each column holds what is live at that call
    assert p.panels[1].timeline == (2048, 2560, 2560, 2688, 128)
    assert p.to_text().splitlines()[:3] == p.headline()


def test_compare_names_default_to_the_steps(mlp_build):
    trace = mlp_build.trace
    a, b = buffers(trace.find("CallTIRRewrite")), buffers(trace.find("StaticPlanBlockMemory"))
    assert (a.source, b.source) == ("CallTIRRewrite", "StaticPlanBlockMemory")
    assert a.plot(compare=b).headline()[2].startswith(
        "StaticPlanBlockMemory allocates 1.0 KiB less than CallTIRRewrite")
    with pytest.raises(TypeError, match="compare= takes another BufferReport"):
        a.plot(compare=trace)


def test_compare_different_kernels_keeps_two_axes():
    snaps = snapshots("mlp")
    p = buffers(snaps["input"]).plot(compare=buffers(snaps["FuseTIR"]))
    assert not p.shared_axis
    assert p.to_svg().count("bindings in program order") == 2


# ---------------------------------------------------------------------- symbolic
def test_symbolic_sizes_without_bounds_draw_a_lower_bound():
    r = buffers(snapshots("dyn")["StaticPlanBlockMemory"])
    p = r.plot()
    svg = p.to_svg()
    assert len(blocks(svg)) == len(r.storages) == 11
    symbolic = [a for a in r.storages if a.bytes is None]
    assert len(symbolic) == 9 and svg.count('stroke-dasharray="4 3"') == 9
    assert ("lower bound drawn: sizes that depend on n count as 0 (dashed lines); "
            "buffers(..., bounds={'n': ...}) draws them to scale") in p.to_text()
    assert p.headline()[0].startswith("forward: 11 allocations, total >= 80.0 KiB; peak >= 80.0 KiB")
    assert ">peak &gt;= 80.0 KiB</text>" in svg


def test_symbolic_sizes_with_bounds_are_drawn_to_scale():
    r = buffers(snapshots("dyn")["StaticPlanBlockMemory"], bounds={"n": 128})
    p = r.plot()
    svg = p.to_svg()
    assert len(blocks(svg)) == 11 and 'stroke-dasharray="4 3"' not in svg
    assert "drawn with bounds n=128" in p.to_text() and "lower bound" not in p.to_text()
    assert p.panels[0].timeline == r.timeline and max(r.timeline) == r.peak_bytes == 475136
    assert ">peak 464.0 KiB</text>" in svg


# ------------------------------------------------------------------------ escaping
def test_hostile_names_are_escaped():
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("f", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x), name_hint="y<script>alert(1)</script>")
            out = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(out)
    svg = buffers(bb.get()).plot().to_svg()
    assert "<script>" not in svg and "y&lt;script&gt;alert(1)&lt;/script&gt;" in svg


def test_unknown_function():
    r = buffers(snapshots("mlp")["FuseOps"])
    with pytest.raises(UnknownNameError, match="unknown function 'main'"):
        r.plot(function="main")
    assert blocks(r.plot(function="fused_matmul_add_relu").to_svg()) == ["matmul", "add", "gv"]


# ---------------------------------------------------------------- over the passes
def test_pass_table_plot_of_the_peak(mlp_build):
    from passlab.analysis.table import pass_table

    table = pass_table(mlp_build.trace, ir_lines=False)
    p = table.plot("peak")
    plan = mlp_build.trace.find("StaticPlanBlockMemory").index
    assert p.moves() == [(plan, "StaticPlanBlockMemory", 2560.0, 2688.0)]
    assert p.to_text().splitlines() == [
        "peak_bytes over 18 passes of the main chain: from 2.5 KiB to 2.6 KiB, at most 2.6 KiB",
        f"  #{plan} StaticPlanBlockMemory: 2.5 KiB -> 2.6 KiB"]
    svg = p.to_svg(mark=plan)
    assert {t for t in titles(svg) if t.startswith("stage ")} == {
        "stage library_dispatch", "stage legalize", "stage dataflow_lower", "stage finalize"}
    assert svg.count('class="pc-point pc-moved"') == 1 and ">StaticPlanBlockMemory</text>" in svg
    assert svg.count('class="pc-mark"') == 1
    assert "#11 FuseTIR (legalize): 2.5 KiB" in titles(svg)
    with pytest.raises(UnknownNameError, match="unknown column 'peek'; did you mean 'peak'"):
        table.plot("peek")


def test_pass_table_plot_of_another_column(mlp_build):
    from passlab.analysis.table import pass_table

    p = pass_table(mlp_build.trace, memory=False, ir_lines=False).plot("kernels")
    assert p.column == "prim_funcs_after"
    fuse_tir = next(m for m in p.moves() if m[1] == "FuseTIR")
    assert fuse_tir[2:] == (7.0, 4.0)


# ------------------------------------------------------------------------- views
def test_explorer_buffers_pane_shows_the_picture_above_the_table(mlp_build):
    from passlab.views import explorer_panes as panes

    r = panes.PaneRenderer(mlp_build.trace)
    html = r.pane("buffers", mlp_build.trace.find("StaticPlanBlockMemory").index)
    assert html.index('class="passlab-bufplot"') < html.index("<table")
    assert "Peak across the pipeline: moved by StaticPlanBlockMemory (2.5 KiB \u2192 2.6 KiB)" \
        in html
    assert "storage storage: 2.0 KiB" in html


@pytest.mark.slow
def test_explorer_bound_slider_redraws_with_bounds():
    pytest.importorskip("anywidget")
    import passlab
    from passlab.views.explorer import Explorer

    build = passlab.build(passlab.models.by_name("transformer-dynamic"))
    step = build.trace.find("StaticPlanBlockMemory").index
    ex = Explorer(build, tab="buffers", selected=step)
    assert ex.symbols == ["n"]
    assert "lower bound drawn" in ex.buffers_html and "peak &gt;= 80.0 KiB" in ex.buffers_html
    ex.bounds = {"n": 128}  # what the slider sends
    assert "drawn with bounds n=128" in ex.buffers_html
    assert ">peak 464.0 KiB</text>" in ex.buffers_html
    ex.selected = build.trace.find("FuseTIR").index  # the bound applies to every pass
    assert ex.symbols == ["n"] and "drawn with bounds n=128" in ex.buffers_html


def test_a_change_that_rounds_to_nothing_is_not_a_move():
    from passlab.analysis._column_plot import ColumnPlot

    mib = 1024 * 1024
    rows = ((0, "A", "s", 6.1 * mib, True), (1, "LegalizeOps", "s", 6.1 * mib + 300, True),
            (2, "B", "s", 6.1 * mib + 600, True), (3, "Plan", "s", 4.7 * mib, True))
    p = ColumnPlot("peak_bytes", rows)
    assert [(m[1], p._fmt(m[2]), p._fmt(m[3])) for m in p.moves()] == [
        ("Plan", "6.1 MiB", "4.7 MiB")]
    # small steps that add up to a visible change are a move at the pass that tips it
    creep = tuple((k, f"P{k}", "s", 10240.0 + 30 * k, True) for k in range(5))
    assert [m[1] for m in ColumnPlot("peak_bytes", creep).moves()] == ["P2"]
