"""provenance: operator calls of the input -> kernels after fusion and lowering, and back."""

from __future__ import annotations

import pytest

import passlab

tvm = pytest.importorskip("tvm")
from tvm.script import ir as I  # noqa: E402
from tvm.script import relax as R  # noqa: E402


@pytest.fixture(scope="module")
def resnet_trace(resnet_build):
    return resnet_build.trace  # the session's build: provenance only reads it


def test_provenance_of_a_hand_made_trace_of_snapshots():
    from snapshot_trace import snapshot_trace

    trace = snapshot_trace("mlp")
    assert [s.label for s in trace.main_chain()] == [
        "LegalizeOps", "FuseOps", "FuseTIR", "CallTIRRewrite", "StaticPlanBlockMemory"]
    prov = passlab.provenance(trace)
    assert [(o.op, o.kernels, o.fate) for o in prov] == [
        ("permute_dims", ("transpose",), "kernel"),
        ("matmul", ("fused_matmul_add_relu",), "kernel"),
        ("add", ("fused_matmul_add_relu",), "kernel"),
        ("relu", ("fused_matmul_add_relu",), "kernel"),
        ("permute_dims1", ("transpose1",), "kernel"),
        ("matmul1", ("fused_matmul1_add1",), "kernel"),
        ("add1", ("fused_matmul1_add1",), "kernel")]
    assert prov.ops_of("fused_matmul_add_relu") == ("matmul", "add", "relu")
    # stopped before fusion, each operator ends in its own legalized kernel
    early = passlab.provenance(snapshot_trace("mlp", ("LegalizeOps",)))
    assert early.kernels_of("relu") == ("relu",) and early.kernels_of("matmul1") == ("matmul1",)


def test_mlp_ops_map_to_their_kernels_and_back(mlp_build):
    prov = passlab.provenance(mlp_build)
    assert [(o.op, o.operator, o.kernels, o.fate) for o in prov] == [
        ("permute_dims", "permute_dims", ("transpose",), "kernel"),
        ("matmul", "matmul", ("fused_matmul_add_relu",), "kernel"),
        ("add", "add", ("fused_matmul_add_relu",), "kernel"),
        ("relu", "nn.relu", ("fused_matmul_add_relu",), "kernel"),
        ("permute_dims1", "permute_dims", ("transpose1",), "kernel"),
        ("matmul1", "matmul", ("fused_matmul1_add1",), "kernel"),
        ("add1", "add", ("fused_matmul1_add1",), "kernel")]
    assert prov.ops_of("fused_matmul1_add1") == ("matmul1", "add1")
    assert prov["relu"].history[0][1] == "calls relu"
    with pytest.raises(passlab.UnknownNameError, match="unknown kernel 'fused_matmul'"):
        prov.ops_of("fused_matmul")
    with pytest.raises(passlab.UnknownNameError, match="unknown operator call 'relu9'"):
        prov.kernels_of("relu9")


def test_resnet_every_op_reaches_a_kernel_and_every_fused_kernel_has_its_ops(resnet_trace):
    prov = passlab.provenance(resnet_trace)
    assert prov.kernels_of("relu") == ("fused_batch_norm_relu",)
    assert all(o.kernels or o.note for o in prov)
    after = resnet_trace.find("FuseTIR").after
    fused = sorted(gv.name_hint for gv in after.get_global_vars()
                   if gv.name_hint.startswith("fused_"))
    for kernel in fused:
        ops = prov.ops_of(kernel)
        operators = {prov[o].operator.split(".")[-1] for o in ops}
        # the kernel's name lists the operators it holds (batch_norm, add, relu ...)
        assert ops and all(name in kernel for name in operators), (kernel, ops)
    # a fused kernel called twice holds the operators of both groups
    assert len(prov.ops_of("fused_batch_norm_relu")) >= 4
    frame = prov.to_dataframe()
    assert list(frame.columns) == ["op", "operator", "kernels", "fate", "note"]
    assert len(frame) == len(prov) == 70


def test_runtime_functions_are_not_kernels_and_uncalled_kernels_say_not_called(resnet_trace):
    # ResNet's flatten: LegalizeOps makes it call the kernel `reshape`, LowerRuntimeBuiltin
    # makes that call vm.builtin.reshape and leaves the kernel in the module, uncalled
    prov = passlab.provenance(resnet_trace)
    assert prov["reshape"].fate == "builtin"
    assert prov["reshape"].kernels == ("vm.builtin.reshape",)
    assert "vm.builtin.reshape" not in prov.kernels and len(prov.kernels) == 25
    assert prov.builtins == ("vm.builtin.reshape",)
    assert prov.uncalled == ("reshape",)
    with pytest.raises(passlab.UnknownNameError) as err:
        prov.ops_of("reshape")
    assert str(err.value) == (
        "kernel 'reshape' is not called: the module still defines it, but no function "
        "calls it, so it holds no operator call of the input (reshape ran in it until "
        "LowerRuntimeBuiltin, which made it call vm.builtin.reshape).")
    assert prov.ops_of("vm.builtin.reshape") == ("reshape",)


def test_resnet_each_fused_kernel_holds_its_calls_times_its_ops(resnet_trace):
    # FuseOps names its new calls "lv", "lv1" ... like the batch_norm bindings of the input:
    # the downsample batch_norm lv7 once went to the wrong kernel, one that also calls a
    # batch_norm. Count: the ops of a fused function x its calls in the entry
    from tvm import relax

    from passlab import _tvm
    from passlab._tvm import ir

    prov = passlab.provenance(resnet_trace)
    assert prov.kernels_of("lv7") == ("fused_batch_norm1_batch_norm1_add1_relu1",)
    fused = resnet_trace.find("FuseOps").after
    calls: dict[str, int] = {}
    for b in ir.iter_bindings(fused[_tvm.entry_function(fused)]):
        if isinstance(b.value, relax.Call) and isinstance(b.value.op, relax.GlobalVar):
            name = b.value.op.name_hint
            calls[name] = calls.get(name, 0) + 1
    checked = 0
    for name, n in calls.items():
        if not name.startswith("fused_"):
            continue
        ops = sum(1 for b in ir.iter_bindings(fused[name]) if isinstance(b.value, relax.Call))
        assert len(prov.ops_of(name)) == ops * n, (name, ops, n, prov.ops_of(name))
        checked += 1
    assert checked >= 5


def test_folded_and_dead_operators_say_why():
    @I.ir_module
    class M:
        @R.function
        def main(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
            R.func_attr({"num_input": 1})
            with R.dataflow():
                a = R.add(x, x)
                unused = R.multiply(x, x)  # noqa: F841 - dead code on purpose
                b = R.nn.relu(a)
                R.output(b)
            return b

    prov = passlab.provenance(passlab.build(M).trace)
    assert prov["unused"].fate == "removed"
    assert prov["unused"].note == "removed by FoldConstant (its result was unused)"
    assert prov.kernels_of("a") == prov.kernels_of("b") == ("fused_add_relu",)
    constant = passlab.models.with_constant_weights(passlab.models.mlp())
    prov = passlab.provenance(passlab.build(constant).trace)
    assert (prov["permute_dims"].fate, prov["permute_dims"].note) == (
        "folded", "folded by FoldConstant")
    text = prov.to_text()
    assert text.splitlines()[0] == ("Provenance of 7 operator calls of forward: 2 kernels, "
                                    "2 gone")
    assert "<table" in prov.to_html() and "folded by FoldConstant" in prov.to_html()
