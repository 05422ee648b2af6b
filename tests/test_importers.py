"""passlab.models.importers: load() picks the importer; ONNX models build and match onnxruntime;
every way a model can be wrong gives one clear error."""

from __future__ import annotations

import doctest
import sys

import numpy as np
import pytest

import passlab
from passlab.errors import UnknownNameError
from passlab.models import importers
from passlab.models.importers import MissingImporterError, ModelFormatError, load, resolve_model

onnx = pytest.importorskip("onnx", reason="the ONNX tests need passlab[onnx]")
ort = pytest.importorskip("onnxruntime", reason="the ONNX tests need passlab[onnx]")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RTOL = 1e-4


# ----------------------------------------------------------------------- ONNX models
def _model(nodes, inputs, outputs, inits, name):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _init(rng, name, *shape, lo=-0.5, hi=0.5):
    return numpy_helper.from_array(rng.uniform(lo, hi, size=shape).astype("float32"), name)


def onnx_mlp(batch="batch"):
    """x(batch, 16) -> Gemm(32) -> Relu -> Gemm(8)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["a"]),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], transB=1)]
    return _model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        [_init(rng, "w1", 32, 16), _init(rng, "b1", 32), _init(rng, "w2", 8, 32),
         _init(rng, "b2", 8)], "mlp")


def onnx_cnn():
    """A real small CNN: Conv-BN-Relu-MaxPool, Conv-Relu, GlobalAveragePool, Flatten, Gemm;
    the batch dimension is dynamic ("N")."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "g1", "be1", "m1", "v1"], ["bn1"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["bn1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], transB=1),
    ]
    inits = [_init(rng, "w1", 8, 3, 3, 3), _init(rng, "b1", 8),
             _init(rng, "g1", 8, lo=0.5, hi=1.5), _init(rng, "be1", 8), _init(rng, "m1", 8),
             _init(rng, "v1", 8, lo=0.5, hi=1.5), _init(rng, "w2", 16, 8, 3, 3),
             _init(rng, "b2", 16), _init(rng, "wf", 10, 16), _init(rng, "bf", 10)]
    return _model(
        nodes, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits, "cnn")


def run_ort(model, **feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def weights(model) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "cnn.onnx"
    onnx.save(onnx_cnn(), str(path))
    return path


# --------------------------------------------------------------------------- ONNX
def test_onnx_mlp_builds_and_matches_onnxruntime_and_numpy():
    model = onnx_mlp()
    mod = load(model, x=(4, 16))
    assert [(p.name, [int(d) for d in p.ty.shape.values]) for p in mod["main"].params] == [
        ("x", [4, 16])]
    x = np.random.default_rng(2).standard_normal((4, 16)).astype("float32")
    got = passlab.build(mod).run(x)
    w = weights(model)
    expected = np.maximum(x @ w["w1"].T + w["b1"], 0) @ w["w2"].T + w["b2"]
    np.testing.assert_allclose(got, run_ort(model, x=x), rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-6)


def test_onnx_cnn_from_file_builds_and_matches_onnxruntime(cnn_path):
    mod = load(cnn_path, input=(2, 3, 32, 32))  # a pathlib.Path works as well as a str
    x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype("float32")
    got = passlab.build(mod).run(x)
    assert got.shape == (2, 10)
    np.testing.assert_allclose(got, run_ort(onnx_cnn(), input=x), rtol=RTOL, atol=1e-5)
    ops = {str(c.op.name) for c in _calls(mod["main"])}
    assert {"relax.nn.conv2d", "relax.nn.batch_norm", "relax.nn.max_pool2d",
            "relax.matmul"} <= ops


def _calls(func):
    from tvm import relax

    return [b.value for blk in func.body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name")]


def test_onnx_dynamic_input_without_shape_stays_symbolic():
    mod = load(onnx_mlp())
    assert str(mod["main"].params[0].ty) == 'R.Tensor((batch, 16), dtype="float32")'


def test_onnx_keep_params_in_input_makes_weights_parameters():
    model = onnx_mlp()
    mod = load(model, keep_params_in_input=True, x=(2, 16))
    main = mod["main"]
    assert [p.name for p in main.params] == ["x", "w1", "b1", "w2", "b2"]
    assert int(main.attrs["num_input"]) == 1
    values = [v.numpy() for v in main.attrs["params"]]
    x = np.ones((2, 16), "float32")
    got = passlab.build(mod).run(x, *values)
    np.testing.assert_allclose(got, run_ort(model, x=x), rtol=RTOL, atol=1e-6)


def test_onnx_weights_given_as_graph_inputs_are_inputs():
    """Some exporters list weights as graph inputs with no initializer: they stay inputs."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [], "mm")
    mod = load(model)
    assert [p.name for p in mod["main"].params] == ["x", "w"]
    x, w = np.ones((2, 3), "float32"), np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_allclose(passlab.build(mod).run(x, w), x @ w, rtol=RTOL)


def test_onnx_initializers_listed_as_inputs_are_not_inputs():
    """Older exporters also list every initializer in graph.input."""
    model = onnx_mlp()
    for init in model.graph.initializer:
        model.graph.input.append(helper.make_tensor_value_info(
            init.name, TensorProto.FLOAT, list(init.dims)))
    assert [p.name for p in load(model, x=(1, 16))["main"].params] == ["x"]


def weights_as_inputs(model):
    """``model`` as ``torch.onnx.export(..., export_params=False)`` writes it: every
    weight a graph input (named as torch names parameters), no initializer."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    inits = list(out.graph.initializer)
    del out.graph.initializer[:]
    for init in inits:
        out.graph.input.append(helper.make_tensor_value_info(
            init.name, init.data_type, list(init.dims)))
    return out


def test_onnx_weights_as_graph_inputs_are_marked_weights():
    model = weights_as_inputs(onnx_cnn())
    mod = load(model, input=(1, 3, 32, 32))
    main = mod["main"]
    assert int(main.attrs["num_input"]) == 1
    assert [p.name for p in main.params][:3] == ["input", "w1", "b1"]
    b = passlab.build(mod)
    from passlab.analysis.graph import fused_graph

    g = fused_graph(b.trace.find("FuseTIR"))
    # no weight node, and no kernel that only reshapes a weight (the conv biases)
    assert [n.kind for n in g.nodes].count("weight") == 0
    assert [(n.label, n.params) for n in g.nodes if n.kind in ("kernel", "fused")] == [
        ("fused_conv2d_add", ("w1", "b1")), ("fused_batch_norm_relu", ("g1", "be1", "m1", "v1")),
        ("max_pool2d", ()), ("fused_conv2d1_add1_relu1", ("w2", "b2")), ("mean", ()),
        ("reshape2", ()), ("fused_matmul_add2", ("wf", "bf"))]
    x = np.random.default_rng(0).uniform(size=(1, 3, 32, 32)).astype("float32")
    w = weights(onnx_cnn())
    got = b.run(x, *(w[p.name] for p in main.params[1:]))
    np.testing.assert_allclose(got, run_ort(model, input=x, **w), rtol=RTOL, atol=1e-5)


def test_inputs_name_the_real_inputs_and_come_first():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [], "mm")
    # MatMul's second operand is a weight's place: w alone is taken for a weight
    assert int(load(model)["main"].attrs["num_input"]) == 1
    both = load(model, inputs=["x", "w"])["main"]
    assert ([p.name for p in both.params], int(both.attrs["num_input"])) == (["x", "w"], 2)
    main = load(model, inputs=["w"])["main"]
    assert ([p.name for p in main.params], int(main.attrs["num_input"])) == (["w", "x"], 1)
    with pytest.raises(UnknownNameError, match=r"unknown input 'X'; did you mean 'x'\?"):
        load(model, inputs=["X"])
    with pytest.raises(TypeError, match=r"inputs= is a list of input names"):
        load(model, inputs="x")


def test_onnx_renaming_warnings_are_not_shown():
    import warnings

    model = onnx_mlp()
    for init in model.graph.initializer:
        old = init.name
        init.name = f"fc.{old}"
        for node in model.graph.node:
            node.input[:] = [f"fc.{n}" if n == old else n for n in node.input]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(model, x=(1, 16))
    assert [str(w.message) for w in caught if "Renaming" in str(w.message)] == []


# --------------------------------------------------------------------------- errors
def test_text_file_renamed_onnx_is_one_clear_error(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("hello, this is not a model\n")
    with pytest.raises(ModelFormatError) as err:
        load(path)
    assert str(err.value).startswith(f"{str(path)!r} is not an ONNX model: it does not parse "
                                     "as an ONNX protobuf (DecodeError: ")
    assert str(err.value).endswith("an ONNX model is the binary protobuf that onnx.save or "
                                   "torch.onnx.export write")


def test_empty_onnx_file_is_not_a_model(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(ModelFormatError, match=r"parses as an empty ModelProto \(ir_version 0, "
                                               r"0 nodes\)"):
        load(str(path))


def test_missing_path_names_the_file(tmp_path):
    path = tmp_path / "nope.onnx"
    with pytest.raises(FileNotFoundError) as err:
        load(str(path))
    assert str(err.value).startswith(f"no model file {str(path)!r} (looked in ")
    assert str(err.value).endswith("give the path of an existing .onnx file")


def test_unknown_extension_lists_what_is_read(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(b"\0")
    with pytest.raises(ModelFormatError) as err:
        load(path)
    assert str(err.value) == (
        f"cannot tell how to import {str(path)!r}: unknown file type '.tflite'. passlab reads "
        ".onnx (ONNX model (onnx.save, torch.onnx.export)), .pt2 (PyTorch ExportedProgram "
        "(torch.export.save)), .py (TVMScript source (IRModule.script())).")


def test_directory_is_not_a_model(tmp_path):
    folder = tmp_path / "m.onnx"
    folder.mkdir()
    with pytest.raises(ModelFormatError, match=r"is a directory, not a model file; passlab reads \.onnx"):
        load(folder)


def test_unsupported_onnx_operator_names_it_and_its_node():
    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("Reluu", ["h"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelFormatError) as err:
        load(model)
    msg = str(err.value)
    assert msg.startswith("the ONNX model uses operators TVM's ONNX importer does not support: "
                          "Reluu (did you mean Relu, PRelu, Elu?) at node 'act'. It converts ")
    assert msg.endswith("replace or decompose the others before export (e.g. a lower opset, "
                        "or onnxsim).")


_ORDER = ("ONNX requires a graph's nodes in topological order, each reading only what is "
          "made before it")


@pytest.mark.parametrize("nodes, message", [
    ([helper.make_node("Add", ["x", "y"], ["y"], name="loop")],
     "it has a cycle, each node reading the next one's output ('loop' -> 'loop'; node 'loop' "
     f"(Add) reads 'y', made by itself); {_ORDER}"),
    ([helper.make_node("Relu", ["x"], ["h"], name="in"),
      helper.make_node("Add", ["h", "z"], ["y"], name="a"),
      helper.make_node("Relu", ["y"], ["z"], name="b")],
     "it has a cycle, each node reading the next one's output ('a' -> 'b' -> 'a'; node 'a' "
     f"(Add) reads 'z', made by a node that depends on it); {_ORDER}"),
    ([helper.make_node("Relu", ["h"], ["y"], name="second"),
      helper.make_node("Relu", ["x"], ["h"], name="first")],
     "node 'second' (Relu) reads 'h' before node 'first' makes it (nodes out of order; "
     f"{_ORDER}: export the model again, or sort its nodes, e.g. with onnx-graphsurgeon's "
     "toposort())"),
    # out of order, with a cycle elsewhere: the node's own fault is said, not the cycle's
    ([helper.make_node("Relu", ["h"], ["y"], name="second"),
      helper.make_node("Relu", ["x"], ["h"], name="first"),
      helper.make_node("Add", ["y", "d"], ["c"], name="c"),
      helper.make_node("Relu", ["c"], ["d"], name="d")],
     "node 'second' (Relu) reads 'h' before node 'first' makes it (nodes out of order; "
     f"{_ORDER}: export the model again, or sort its nodes, e.g. with onnx-graphsurgeon's "
     "toposort())"),
    ([helper.make_node("Relu", ["nowhere"], ["y"])],
     f"node '#0' (Relu) reads 'nowhere', which no node, graph input or initializer makes; "
     f"{_ORDER}"),
])
def test_a_cyclic_or_unordered_onnx_graph_is_one_clear_error(tmp_path, capfd, nodes, message):
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    for given, what in ((model, "the ONNX model"), (path, repr(str(path)))):
        with pytest.raises(ModelFormatError) as err:  # was TVM's bare KeyError
            load(given)
        assert str(err.value) == f"{what} is not a valid ONNX graph: {message}"
    assert capfd.readouterr() == ("", "")  # refused before TVM's importer warns


def test_shape_for_unknown_input_lists_the_inputs():
    with pytest.raises(UnknownNameError) as err:
        load(onnx_mlp(), X=(1, 16))
    assert str(err.value) == ("unknown ONNX input 'X'; did you mean 'x'? Known ONNX input "
                              "names: x. (the ONNX model has the inputs x(batch, 16))")


@pytest.mark.parametrize("shape, error, text", [
    ((1, 15), ValueError, "input 'x' has size 16 in dimension 1 (batch, 16); the shape given "
                          "says 15"),
    ((16,), ValueError, "input 'x' has rank 2 (batch, 16), but the shape given has rank 1: (16)"),
    ("1x16", TypeError, "the shape of input 'x' must be a tuple of ints, e.g. (1, 3, 32, 32), "
                        "not '1x16'"),
])
def test_bad_shapes_say_what_is_expected(shape, error, text):
    with pytest.raises(error) as err:
        load(onnx_mlp(), x=shape)
    assert str(err.value) == text


def test_missing_onnx_package_names_the_extra(monkeypatch, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(MissingImporterError) as err:
        load(path)
    assert str(err.value).startswith("ONNX import needs the onnx package: pip install "
                                     "'passlab[onnx]' (or pip install onnx)")


def test_options_for_a_fixed_module_are_rejected():
    with pytest.raises(TypeError, match="x given, but the model is an IRModule"):
        load(passlab.models.mlp(), x=(1, 16))


def test_unknown_object_lists_what_a_model_is():
    with pytest.raises(TypeError, match=r"cannot import a builtins\.dict: a model is a "
                                        r"tvm\.IRModule, TVMScript source"):
        load({})


# ---------------------------------------------------------------- other importers
def test_irmodule_is_returned_as_is():
    mod = passlab.models.mlp()
    assert load(mod) is mod


def test_tvmscript_text_and_file(tmp_path):
    text = passlab.models.mlp().script()
    assert [gv.name_hint for gv in load(text).get_global_vars()] == ["forward"]
    path = tmp_path / "mlp.py"
    path.write_text(text)
    assert [gv.name_hint for gv in load(path).get_global_vars()] == ["forward"]
    bad = tmp_path / "bad.py"
    bad.write_text("@I.ir_module\nclass M:\n    this is not tvmscript\n")
    with pytest.raises(ModelFormatError, match=r"could not parse '.*bad\.py' as TVMScript"):
        load(bad)


def _relax_nn_module():
    from tvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return nn.relu(self.fc(x))

    return Net()


def test_relax_nn_module_with_shapes_or_spec():
    from tvm.relax.frontend import nn

    mod = load(_relax_nn_module(), x=(3, 4))
    assert [p.name for p in mod["forward"].params] == ["x", "fc.weight", "fc.bias"]
    assert str(mod["forward"].params[0].ty) == 'R.Tensor((3, 4), dtype="float32")'
    spec = {"forward": {"x": nn.spec.Tensor((5, 4), "float32")}}
    assert str(load(_relax_nn_module(), spec=spec)["forward"].params[0].ty) == (
        'R.Tensor((5, 4), dtype="float32")')


def test_relax_nn_module_errors():
    with pytest.raises(TypeError, match=r"needs its input shapes: give spec= or the shape of "
                                        r"each input of forward\(x\), e.g. load\(module, x="):
        load(_relax_nn_module())
    with pytest.raises(UnknownNameError, match="unknown input of forward\\(\\) 'y'"):
        load(_relax_nn_module(), y=(1, 4))


def test_resolve_model_takes_names_and_paths(cnn_path):
    assert [gv.name_hint for gv in resolve_model("mlp").get_global_vars()] == ["forward"]
    assert [gv.name_hint for gv in resolve_model(str(cnn_path)).get_global_vars()] == ["main"]
    with pytest.raises(UnknownNameError) as err:
        resolve_model("resnt")
    assert str(err.value).startswith("unknown model 'resnt'; did you mean 'resnet'?")
    assert str(err.value).endswith("A model is a built-in name or the path of a .onnx, .pt2, "
                                   ".py file.")
    with pytest.raises(TypeError, match=r"cannot use 'int' objects as models: a model is a built-in "
                                        r"model name \(mlp, resnet"):
        resolve_model(3)
    assert [gv.name_hint for gv in resolve_model(onnx_mlp()).get_global_vars()] == ["main"]


# -------------------------------------------------------------------------- PyTorch
def test_pt2_without_torch_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, as without it
    path = tmp_path / "m.pt2"
    path.write_bytes(b"x")
    with pytest.raises(MissingImporterError, match=r"PyTorch import needs the torch package: "
                                                   r"pip install 'passlab\[torch\]'"):
        load(path)


TORCH_REASON = ("torch is not installed (pip install 'passlab[torch]', which pins the CPU "
                "build torch==2.13.0)")


def _torch_cnn():
    torch = pytest.importorskip("torch", reason=TORCH_REASON)
    torch.manual_seed(0)
    return torch, torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10)).eval()


def test_torch_module_builds_and_matches_torch():
    torch, net = _torch_cnn()
    x = torch.randn(1, 3, 16, 16)
    mod = load(net, example_inputs=(x,))
    got = passlab.build(mod).run(x.numpy())
    with torch.no_grad():
        expected = net(x).numpy()
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-5)


def test_torch_exported_program_and_pt2_file(tmp_path):
    torch, net = _torch_cnn()
    x = torch.randn(1, 3, 16, 16)
    program = torch.export.export(net, (x,))
    with torch.no_grad():
        expected = net(x).numpy()
    np.testing.assert_allclose(passlab.build(load(program)).run(x.numpy()), expected,
                               rtol=RTOL, atol=1e-5)
    path = tmp_path / "net.pt2"
    torch.export.save(program, str(path))
    np.testing.assert_allclose(passlab.build(load(path)).run(x.numpy()), expected,
                               rtol=RTOL, atol=1e-5)


def test_torch_dim_names_are_kept_for_symbolic_dimensions():
    torch = pytest.importorskip("torch", reason=TORCH_REASON)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 4), torch.nn.ReLU()).eval()
    seq = torch.export.Dim("seq", min=2, max=64)
    program = torch.export.export(net, (torch.randn(1, 8, 16),), dynamic_shapes=({1: seq},))
    assert [str(s) for s in program.range_constraints] != ["seq"]  # torch says s27 or so
    mod = load(program)
    main = mod["main"]
    assert str(main.params[0].ty.shape) == "R.shape([1, seq, 16])"
    assert {k: {str(n): int(v) for n, v in main.attrs[k].items()}
            for k in ("tir_var_lower_bound", "tir_var_upper_bound")} == {
        "tir_var_lower_bound": {"seq": 2}, "tir_var_upper_bound": {"seq": 64}}
    from passlab.models._source_names import source_names

    assert source_names(main)["lv"] == ("0", "view")  # the source names survive
    build = passlab.build(mod)
    graph = passlab.fused_graph(build.trace.find("FuseTIR"), bounds={"seq": 16})
    assert graph.edges[0].shape == (1, "seq", 16) and graph.edges[0].bytes == 1024
    assert passlab.buffers(build.trace.find("CallTIRRewrite"), bounds={"seq": 16}).peak_bytes == 512
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        expected = net(x).numpy()
    np.testing.assert_allclose(build.run(x.numpy()), expected, rtol=RTOL, atol=1e-5)


def test_torch_module_needs_example_inputs():
    _, net = _torch_cnn()
    with pytest.raises(TypeError, match=r"a torch.nn.Module needs example_inputs= to trace "
                                        r"with"):
        load(net)


def _fake_torch(monkeypatch):
    """Stand-ins for torch and TVM's torch frontend, to check load()'s PyTorch path where
    torch is not installed (the real thing is tested above when it is)."""
    import contextlib
    import types

    seen: dict = {}
    program_cls = type("ExportedProgram", (), {"__module__": "torch.export.exported_program"})
    module_cls = type("Module", (), {"__module__": "torch.nn.modules.module", "training": True,
                                     "eval": lambda self: self.train(False),
                                     "train": lambda self, mode=True: (
                                         setattr(self, "training", mode), self)[1]})

    def export(model, args):
        seen["export"] = (model.training, args)
        return program_cls()

    def from_exported_program(program, keep_params_as_input, unwrap_unit_return_tuple):
        seen["import"] = (type(program).__name__, keep_params_as_input, unwrap_unit_return_tuple)
        return passlab.models.mlp()

    torch = types.SimpleNamespace(no_grad=contextlib.nullcontext,
                                  export=types.SimpleNamespace(export=export))
    frontend = types.ModuleType("tvm.relax.frontend.torch")
    frontend.from_exported_program = from_exported_program
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "tvm.relax.frontend.torch", frontend)
    return seen, module_cls, program_cls


def test_torch_path_exports_then_imports(monkeypatch):
    seen, module_cls, program_cls = _fake_torch(monkeypatch)
    net = module_cls()
    load(net, example_inputs="x", keep_params_in_input=True)
    assert seen["export"] == (False, ("x",))  # exported in eval mode, inputs as a tuple
    assert net.training  # the user's module is handed back in training mode
    assert seen["import"] == ("ExportedProgram", True, True)
    load(program_cls())
    assert seen["import"] == ("ExportedProgram", False, True)
    with pytest.raises(TypeError, match="an ExportedProgram already holds its inputs"):
        load(program_cls(), example_inputs=("x",))
    with pytest.raises(TypeError, match=r"input shapes \(x\) given for a PyTorch model"):
        load(net, x=(1, 2))


# ------------------------------------------------------------------------- doctests
def test_docstring_examples():
    result = doctest.testmod(importers, extraglobs={"passlab": passlab},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
