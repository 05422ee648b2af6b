"""passlab.analysis.partitions: regions, coverage and traffic of partitioned modules, the
same groups as TVM's own partition_for_tensorrt, renderings and comparisons."""

from __future__ import annotations

import doctest
import functools
import importlib

import pytest

import passlab
from passlab.analysis.partitions import compare_backends, partitions
from passlab.backend import Backend
from passlab.errors import UnknownNameError
from passlab.models.importers import load

partitions_mod = importlib.import_module("passlab.analysis.partitions")  # the module

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402
from tvm.relax.dpl import is_op, wildcard  # noqa: E402

TINY = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            o = R.exp(z)
            R.output(o)
        return o
"""


def npu() -> Backend:
    return Backend("npu", patterns=[("dense", is_op("relax.matmul")(wildcard(), wildcard())),
                                    ("relu", is_op("relax.nn.relu")(wildcard()))])


@functools.cache
def tiny_report():
    return partitions(npu().partition(load(TINY)))


# ------------------------------------------------------------------ exact numbers
def test_tiny_module_coverage_is_exact():
    """matmul 2x4 @ 4x3: 2*6*4 = 48 FLOPs, reads 32 + 48 B, writes 24 B; relu: 6 FLOPs,
    24 + 24 B; exp (host): 6 FLOPs, 24 + 24 B."""
    r = tiny_report()
    assert [(o.op, o.backend, o.composite, o.flops, o.bytes) for o in r.ops] == [
        ("matmul", "npu", "npu.dense", 48, 104), ("nn.relu", "npu", "npu.relu", 6, 48),
        ("exp", None, None, 6, 48)]
    c = r.coverage()
    assert (c.regions, c.ops, c.ops_total, c.flops, c.flops_total, c.bytes, c.bytes_total,
            c.bytes_in, c.bytes_out) == (1, 2, 3, 54, 60, 152, 200, 80, 24)
    assert (round(c.ops_pct, 4), c.flops_pct, c.bytes_pct) == (66.6667, 90.0, 76.0)
    host = r.coverage("host")
    assert (host.ops, host.flops, host.bytes) == (1, 6, 48)


def test_tiny_module_region_and_crossings():
    (region,) = r = tiny_report()
    assert region.name == "fused_relax_matmul_relax_nn_relu_npu"
    assert (region.backend, region.var, region.composites, region.op_names) == (
        "npu", "lv", ("npu.dense", "npu.relu"), ("matmul", "nn.relu"))
    assert [(c.direction, c.tensor, c.kind, c.shape, c.bytes, c.peer) for c in r.crossings] == [
        ("in", "x", "input", (2, 4), 32, "parameter"),
        ("in", "w", "weight", (4, 3), 48, "parameter"),
        ("out", "lv", "activation", (2, 3), 24, "host")]
    assert r["lv"] is region and r[region.name] is region and r[0] is region


def test_tiny_module_text_is_exact():
    assert tiny_report().to_text() == """\
Partitions of main: 1 offloaded region (npu), 3 operator calls, 104 B crossing host/accelerator

backend  regions  ops  ops %  FLOPs  FLOPs %  bytes  bytes %  traffic in  traffic out
-------  -------  ---  -----  -----  -------  -----  -------  ----------  -----------
npu            1  2/3  66.7%     54    90.0%  152 B    76.0%        80 B         24 B
host              1/3  33.3%      6    10.0%   48 B    24.0%

Regions
#  region                                backend  call  composites  ops              inputs  outputs  bytes in  bytes out  FLOPs
-  ------------------------------------  -------  ----  ----------  ---------------  ------  -------  --------  ---------  -----
0  fused_relax_matmul_relax_nn_relu_npu  npu      lv             2  matmul, nn.relu       2        1      80 B       24 B     54

Region fused_relax_matmul_relax_nn_relu_npu (npu), called as lv
composite  op       result  shape  dtype    FLOPs  bytes
---------  -------  ------  -----  -------  -----  -----
npu.dense  matmul   gv      2x3    float32     48  104 B
npu.relu   nn.relu  gv      2x3    float32      6   48 B
dir      tensor  kind        shape  dtype    bytes  from/to
-------  ------  ----------  -----  -------  -----  ---------
-> npu   x       input       2x4    float32   32 B  parameter
-> npu   w       weight      4x3    float32   48 B  parameter
-> host  lv      activation  2x3    float32   24 B  host"""


def test_unpartitioned_module_has_no_regions():
    r = partitions(load(TINY))
    assert len(r) == 0 and r.backends == ()
    assert r.summary() == "Partitions of main: 0 offloaded regions (no backend), 3 operator calls"
    with pytest.raises(ValueError, match=r"regions of 0 backends \(none\); name one"):
        r.coverage()
    assert r.coverage("host").ops == 3


def test_symbolic_sizes_count_with_bounds():
    mod = load(TINY.replace("(2, 4)", '("n", 4)').replace("(2, 3)", '("n", 3)'))
    part = npu().partition(mod)
    assert partitions(part).ops[0].bytes is None
    assert partitions(part, bounds={"n": 2}).coverage().bytes == 152


# ---------------------------------------------------------- same groups as TVM's own
def _as_main(mod):
    f = mod["forward"].with_attr("global_symbol", "main")
    return tvm.IRModule({tvm.ir.GlobalVar("main"): f})


def test_tensorrt_patterns_give_the_groups_of_partition_for_tensorrt():
    from tvm.relax.backend.contrib.tensorrt import partition_for_tensorrt

    mod = passlab.models.resnet()
    theirs = partition_for_tensorrt(_as_main(mod))
    ours = Backend("tensorrt").partition(mod)

    def codegen(m):
        return {gv.name_hint: f for gv, f in m.functions_items()
                if f.attrs is not None and "Codegen" in f.attrs}

    a, b = codegen(theirs), codegen(ours)
    assert sorted(a) == sorted(b) and len(a) == 14
    for name in a:
        tvm.ir.assert_structural_equal(a[name], b[name], map_free_vars=True)
    ra, rb = partitions(theirs), partitions(ours)
    assert [(r.name, r.op_names, r.composites) for r in ra] == [
        (r.name, r.op_names, r.composites) for r in rb]
    assert len(rb) == 18  # 14 functions, some called more than once


def test_resnet_tensorrt_numbers():
    r = partitions(passlab.backend.preview(passlab.models.resnet(), "tensorrt"))
    assert r.function == "forward" and r.backends == ("tensorrt",)
    c = r.coverage()
    assert (c.ops, c.ops_total, c.regions) == (50, 70, 18)
    stem = r[0]
    assert stem.op_names == ("nn.conv2d",)
    assert stem.flops == 2 * (16 * 32 * 32) * (3 * 3 * 3)  # 2 * outputs * MACs per output
    assert [(x.tensor, x.kind, x.bytes) for x in stem.inputs] == [
        ("x", "input", 3 * 32 * 32 * 4), ("stem.weight", "weight", 16 * 3 * 3 * 3 * 4)]
    host = sorted({o.op for o in r.host_ops})
    assert host == ["nn.batch_norm"]


def test_estimates_of_each_kind_of_op():
    est = partitions_mod.estimate_flops

    def ti(*shape):
        return partitions_mod._ir.TensorInfo(shape, "float32",
                                             partitions_mod._ir.Size(4 * len(shape), ""))

    assert est("reshape", [], [ti(2, 3)]) == 0
    assert est("add", [], [ti(2, 3)]) == 6
    assert est("nn.batch_norm", [], [ti(1, 4, 2, 2), ti(4), ti(4)]) == 24
    assert est("matmul", [], [ti(2, 3, 5)]) is None  # no input types: K is unknown


# -------------------------------------------------------------------- inputs taken
def test_trace_and_build_are_read_at_the_partition_step():
    trace = npu().preview(load(TINY))
    assert len(partitions(trace)) == 1
    build = passlab.build(load(TINY),
                          passlab.Pipeline.default("llvm").with_backend(npu()))
    assert partitions(build).coverage().ops == 2
    assert partitions(trace.find("partition_for_npu")).coverage().ops == 2


def test_after_legalize_kernels_count_roughly_with_a_note():
    build = passlab.build(load(TINY))
    r = partitions(build.trace.find("LegalizeOps"))
    assert [o.op for o in r.ops] == ["call_tir:matmul", "call_tir:relu", "call_tir:tir_exp"]
    assert r.notes and r.notes[0].startswith("kernels (call_tir) count one FLOP per output")


def test_unknown_names_have_close_matches():
    r = tiny_report()
    with pytest.raises(UnknownNameError, match="unknown function 'mian'; did you mean 'main'"):
        partitions(npu().partition(load(TINY)), function="mian")
    with pytest.raises(UnknownNameError, match="unknown region 'lw'"):
        r["lw"]
    with pytest.raises(UnknownNameError, match="unknown backend 'nup'; did you mean 'npu'"):
        r.coverage("nup")
    with pytest.raises(UnknownNameError, match="unknown table 'op'"):
        r.to_dataframe("op")
    with pytest.raises(TypeError, match="expected a tvm.IRModule or a Step"):
        partitions(42)


# ------------------------------------------------------------------------ rendering
def _odd_names_module():
    bb = relax.BlockBuilder()
    x = relax.Var("x<in>", relax.TensorType((2, 4), "float32"))
    w = relax.Var("w&amp", relax.TensorType((4, 3), "float32"))
    with bb.function("main", [x, w], attrs={"num_input": 1}):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, w), name_hint="y<b>")
            o = bb.emit_output(bb.emit(relax.op.exp(y), name_hint='z"'))
        bb.emit_func_output(o)
    return bb.get()


def test_html_escapes_every_ir_name():
    r = partitions(npu().partition(_odd_names_module()))
    html = r.to_html()
    assert "x<in>" not in html and "x&lt;in&gt;" in html
    assert "w&amp;amp" in html
    assert html.count("<details>") == 1
    assert "<caption>Partitions of main: 1 offloaded region (npu), 2 operator calls" in html


def test_mimebundle_never_raises():
    broken = partitions_mod.PartitionReport("main", (), (None,))  # type: ignore[arg-type]
    bundle = broken._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "could not display" in bundle["text/html"]
    good = tiny_report()._repr_mimebundle_()
    assert good["text/plain"] == tiny_report().to_text()


def test_dataframes():
    r = tiny_report()
    ops = r.to_dataframe()
    assert list(ops["op"]) == ["matmul", "nn.relu", "exp"]
    assert list(r.to_dataframe("regions")["bytes_in"]) == [80]
    assert list(r.to_dataframe("crossings")["tensor"]) == ["x", "w", "lv"]
    cov = r.to_dataframe("coverage")
    assert list(cov.index) == ["npu", "host"] and cov.loc["npu", "flops_pct"] == 90.0


# ----------------------------------------------------------------------- comparison
@functools.cache
def resnet_comparison():
    return compare_backends(passlab.models.resnet(), ["tensorrt", "example_npu"])


def test_compare_tensorrt_and_example_npu_on_resnet():
    cmp = resnet_comparison()
    assert [n for n, _ in cmp] == ["tensorrt", "example_npu"]
    assert len(cmp["tensorrt"]) == 18 and len(cmp["example_npu"]) == 2
    header, rows = cmp.op_rows()
    assert header == ["op", "calls", "tensorrt", "example_npu"]
    assert rows == [
        ["nn.batch_norm", "20", "0", "20"], ["nn.conv2d", "20", "20", "20"],
        ["nn.relu", "17", "17", "17"], ["add", "9", "9", "9"], ["matmul", "1", "1", "1"],
        ["nn.adaptive_avg_pool2d", "1", "1", "0"], ["permute_dims", "1", "1", "0"],
        ["reshape", "1", "1", "0"]]
    assert cmp.summary() == ("2 backends on forward: tensorrt takes 71.4% of the operators in "
                             "18 regions, example_npu takes 95.7% of the operators in 2 regions")
    text = cmp.to_text()
    assert text.startswith(cmp.summary() + "\n\nbackend ")
    assert "Operators taken" in text and "<table" in cmp.to_html()
    assert list(cmp.to_dataframe().index) == ["tensorrt", "example_npu"]
    assert cmp.to_dataframe("ops").loc["nn.batch_norm", "example_npu"] == 20


def test_compare_needs_distinct_names():
    with pytest.raises(ValueError, match="distinct names"):
        compare_backends(passlab.models.mlp(), ["tensorrt", "tensorrt"])


def test_docstring_examples():
    import passlab.backend  # noqa: F401 - the examples use it

    result = doctest.testmod(partitions_mod, extraglobs={"passlab": passlab},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
