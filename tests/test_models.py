"""Tests of passlab.models: the built-in networks, ``by_name``, the one model resolution
``as_module``, and the one entry-function rule every analysis shares.

Importers (ONNX, PyTorch, TVMScript files) have their own tests in test_importers.py.
"""

from __future__ import annotations

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

import passlab
from passlab import _tvm
from passlab.errors import ModelFormatError, UnknownNameError
from passlab.models import NAMES, as_module, by_name, resolve_model


def signature(mod):
    """(entry, num_input, [(name, shape, dtype) of the inputs], return type text)."""
    f = mod["forward"]
    n = int(f.attrs["num_input"])
    return n, [(p, s, d) for p, s, d in _tvm.params(f)[:n]], str(f.ret_ty)


# ------------------------------------------------------------------- built-ins
BUILTIN = {
    "mlp": (1, [("x", (4, 16), "float32")], 'R.Tensor((4, 8), dtype="float32")', 5),
    "resnet": (1, [("x", (1, 3, 32, 32), "float32")], 'R.Tensor((1, 10), dtype="float32")',
               103),
    "transformer": (1, [("tokens", (1, 16), "int32")],
                    'R.Tensor((1, 16, 128), dtype="float32")', 18),
    "transformer-dynamic": (1, [("tokens", (1, "n"), "int32")],
                            'R.Tensor((1, n, 128), dtype="float32")', 18),
    "mobilenet": (1, [("x", (1, 3, 224, 224), "float32")],
                  'R.Tensor((1, 1000), dtype="float32")', 263),
}


def test_names_are_the_built_ins():
    assert tuple(BUILTIN) == NAMES


@pytest.mark.parametrize("name", list(BUILTIN))
def test_each_built_in_builds_its_module(name):
    mod = by_name(name)
    assert isinstance(mod, tvm.IRModule)
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["forward"]
    n, inputs, ret, n_params = BUILTIN[name]
    assert signature(mod) == (n, inputs, ret)
    assert len(mod["forward"].params) == n_params  # inputs, then every weight
    tvm.relax.analysis.well_formed(mod)


def test_sizes_are_parameters():
    mod = passlab.models.mlp(batch=2, features=3, hidden=5, classes=7)
    assert signature(mod) == (1, [("x", (2, 3), "float32")], 'R.Tensor((2, 7), dtype="float32")')
    assert [s for _, s, _ in _tvm.params(mod["forward"])[1:]] == [(5, 3), (5,), (7, 5), (7,)]


def test_by_name_lists_close_matches():
    with pytest.raises(UnknownNameError) as err:
        by_name("resent")
    assert err.value.close_matches == ("resnet",)
    assert str(err.value) == ("unknown model 'resent'; did you mean 'resnet'? Known model "
                              "names: mlp, resnet, transformer, transformer-dynamic, mobilenet.")
    with pytest.raises(KeyError):  # an UnknownNameError is a KeyError and a ValueError
        by_name("transformer-dyn")


def test_with_constant_weights_binds_every_weight():
    mod = passlab.models.with_constant_weights(passlab.models.mlp())
    assert [p.name for p in mod["forward"].params] == ["x"]
    again = passlab.models.with_constant_weights(passlab.models.mlp())
    tvm.ir.assert_structural_equal(mod, again)  # the same seed binds the same values
    other = passlab.models.with_constant_weights(passlab.models.mlp(), seed=1)
    with pytest.raises(ValueError, match="StructuralEqual check failed"):
        tvm.ir.assert_structural_equal(mod, other)


# ----------------------------------------------------------------- as_module
MLP_SCRIPT = passlab.models.mlp().script()


def test_as_module_of_a_module_is_the_module():
    mod = passlab.models.mlp()
    assert as_module(mod) is mod
    assert resolve_model is as_module


def test_as_module_of_a_name():
    tvm.ir.assert_structural_equal(as_module("mlp"), passlab.models.mlp())


def test_as_module_of_script_text_and_path(tmp_path):
    tvm.ir.assert_structural_equal(as_module(MLP_SCRIPT), passlab.models.mlp())
    path = tmp_path / "mlp.py"
    path.write_text(MLP_SCRIPT)
    tvm.ir.assert_structural_equal(as_module(str(path)), passlab.models.mlp())
    tvm.ir.assert_structural_equal(as_module(path), passlab.models.mlp())  # a PathLike


def test_as_module_of_an_unknown_name_lists_names_and_file_types():
    with pytest.raises(UnknownNameError) as err:
        as_module("mpl")
    assert err.value.close_matches == ("mlp",)
    assert str(err.value).startswith("unknown model 'mpl'; did you mean 'mlp'?")
    assert str(err.value).endswith("A model is a built-in name or the path of a .onnx, .pt2, "
                                   ".py file.")


def test_as_module_of_bad_input():
    with pytest.raises(TypeError, match=r"cannot use 'int' objects as models: a model is a "
                                        r"built-in model name \(mlp, resnet, "):
        as_module(42)
    with pytest.raises(ModelFormatError, match=r"could not parse the text given as the model "
                                               r"as TVMScript"):
        as_module("@I.ir_module\nclass Broken:\n    oops(\n")
    with pytest.raises(FileNotFoundError, match="no model file"):
        as_module("missing/model.onnx")


# ---------------------------------------------------------- one entry function
# fmt: off
@I.ir_module
class MainAndForward:  # no num_input attribute: "main" is the entry, then "forward"
    @R.function
    def forward(x: R.Tensor((4, 4), "float32")) -> R.Tensor((4, 4), "float32"):
        y = R.matmul(x, x)
        return y

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.nn.relu(x)
        return y
# fmt: on


def mlp_with_main():
    """The built-in mlp, whose ``forward`` has ``num_input``, plus a ``main``."""
    mlp = passlab.models.mlp()
    funcs = {gv.name_hint: f for gv, f in mlp.functions_items()}
    funcs["main"] = MainAndForward["main"]
    return tvm.IRModule(funcs, attrs=mlp.attrs)


@pytest.mark.parametrize(("make", "entry", "out_shape"), [
    (lambda: MainAndForward, "main", (2, 3)),
    (mlp_with_main, "forward", (4, 8)),
], ids=["main-over-forward", "num_input-first"])
def test_build_and_analyses_pick_the_same_function(make, entry, out_shape):
    mod = make()
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["forward", "main"]
    assert _tvm.entry_function(mod) == entry
    build = passlab.build(mod)
    assert build.entry == entry
    assert build.run().shape == out_shape  # Build.run calls the entry
    step = build.trace.find("FuseTIR")
    assert passlab.fused_graph(step).function == entry
    assert passlab.partitions(step).function == entry
    # buffers covers every Relax function unless told one (documented), the entry too
    assert set(passlab.buffers(step).functions) == {"forward", "main"}
    assert passlab.buffers(step, function=build.entry).functions == (entry,)


def test_entry_rule_without_main_or_forward():
    @I.ir_module
    class Two:
        @R.function
        def a(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def b(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

    with pytest.raises(ValueError, match=r"cannot tell which function to run: the module "
                                         r"has the public Relax functions \['a', 'b'\]; "
                                         r"pass function='name'\."):
        _tvm.entry_function(Two)
    assert _tvm.entry_function(Two, strict=False) == "a"
    one = tvm.IRModule({"b": Two["b"]})
    assert _tvm.entry_function(one) == "b"  # the only public function
