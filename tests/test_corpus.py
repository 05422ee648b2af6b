"""Real architectures from their own libraries (tests/corpus.py): each builds through
passlab.load and passlab.build without a word on stderr, computes what torch eager or
onnxruntime computes, and reads well in the views: the fused graph after FuseTIR has no
weight node, and provenance leads from the source model's names to the kernels.

Each model is made, loaded and built once (a module-scoped fixture, one model at a time)."""

from __future__ import annotations

import html
import importlib
import sys

import numpy as np
import pytest

import passlab
from passlab import _render, _tvm
from passlab._tvm.logs import BENIGN
from passlab.analysis.graph import fused_graph

pytest.importorskip("torch", reason="the corpus needs passlab[torch]")
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import corpus  # noqa: E402

pytestmark = pytest.mark.slow

VISION = ("resnet50", "mobilenet_v3", "convnext", "vit", "swin", "onnx_resnet18", "densenet121")


@pytest.fixture(scope="module", params=corpus.NAMES)
def built(request) -> corpus.Built:
    name = request.param
    if name in VISION and not (corpus.TORCHVISION_DIR / "torchvision").is_dir():
        pytest.skip(f"no torchvision in {corpus.TORCHVISION_DIR}: `make` installs it")
    if name.startswith("onnx"):
        pytest.importorskip("onnxruntime", reason="needs passlab[onnx]")
    return corpus.build_once(name)


def test_build_prints_nothing(built):
    assert (built.stderr, built.warnings) == ("", [])
    # TVM's benign log lines went into the trace instead, each one once
    kept = built.build.trace.warnings
    benign = [sentence.split("{")[0] for _, sentence in BENIGN]
    assert all(any(w.startswith(b) for b in benign) for w in kept), kept
    if built.name == "gpt2":  # its GELU's x ** 3
        assert any(w.startswith("TVM warned that pow(x, y) with y >= 3") for w in kept)


def test_outputs_match_the_reference(built):
    got = built.build.run(*built.inputs)
    got = got[0] if isinstance(got, tuple) else got
    ref = np.asarray(built.expected)
    assert got.shape == ref.shape
    # random weights can make tiny outputs (MobileNetV3's are ~1e-9): the tolerance is
    # relative to the output's scale
    scale = float(np.max(np.abs(ref)))
    assert scale > 0
    np.testing.assert_allclose(got, ref, rtol=corpus.RTOL, atol=corpus.ATOL * scale)


def test_fused_graph_has_no_weight_node(built):
    g = fused_graph(built.build.trace.find("FuseTIR"), max_nodes=None)
    kinds = [n.kind for n in g.nodes]
    assert kinds.count("weight") == 0 and kinds.count("constant") == 0
    assert [n.label for n in g.nodes if n.kind == "input"] == corpus.INPUTS[built.name]
    assert any(n.params for n in g.nodes)  # the weights are noted on their kernels
    if corpus.MODELS[built.name].via == "onnx":  # weights as graph inputs: every one
        main = built.build.module[built.build.entry]
        assert int(main.attrs["num_input"]) == 1
        noted = {p for n in g.nodes for p in n.params}
        assert noted == {p.name for p in main.params[1:]}


def test_provenance_names_the_source(built):
    model = corpus.MODELS[built.name]
    prov = passlab.provenance(built.build.trace)
    assert model.source in prov.sources or prov.by_source(model.source)
    # kernels_of also lists runtime functions (vm.builtin.reshape): not graph kernels
    kernels = [k for k in prov.kernels_of(model.source) if not k.startswith("vm.builtin.")]
    assert kernels
    labels = {n.label for n in fused_graph(built.build.trace.find("FuseTIR"),
                                           max_nodes=None).nodes}
    assert set(kernels) <= labels


#: source groups of the FuseTIR graph: (groups, top-level groups, nodes drawn closed)
GROUPS = {"onnx_resnet18": (12, 4, 12), "resnet50": (20, 4, 12)}


def test_fused_graph_groups_by_the_models_node_paths(built):
    if built.name not in GROUPS:
        pytest.skip("exact groups are checked on the two ResNets")
    from passlab.analysis._graph_groups import fold

    prov = passlab.provenance(built.build.trace)
    step = built.build.trace.find("FuseTIR")
    g = fused_graph(step, max_nodes=None).with_sources(prov, step)
    calls = [n for n in g.nodes if n.kind not in ("input", "weight", "constant", "output")]
    assert all(n.source for n in calls)

    top = [grp for grp in g.groups if grp.parent is None]
    assert (len(g.groups), len(top), len(fold(g).nodes)) == GROUPS[built.name]
    first = "/layer1" if built.name.startswith("onnx") else "layer1"
    blocks = [grp.label for grp in g.groups if grp.parent == first]
    assert blocks == ([f"layer1.{i}" for i in range(2)] if built.name.startswith("onnx")
                      else [f"layer1.{i}" for i in range(3)])


#: the Explorer's graph pane after FuseTIR, first view: (groups drawn open, closed group
#: boxes, nodes drawn): DenseNet-121's one group `features` opens on its 4 dense blocks
#: and 3 transitions, a ResNet's four stages on their blocks
FIRST_VIEW = {"densenet121": (["features"], 7, 20),
              "onnx_resnet18": (["/layer1", "/layer2", "/layer3", "/layer4"], 8, 16)}


def test_graph_pane_opens_on_its_first_views_groups(built):
    if built.name not in FIRST_VIEW:
        pytest.skip("the first view is checked on DenseNet-121 and the ONNX ResNet-18")
    if _render.layout_program() is None:
        pytest.skip("needs Graphviz's dot")
    import json
    import re

    trace = built.build.trace
    ex = passlab.Explorer(trace, tab="graph", selected=trace.find("FuseTIR").index)
    page = ex.graph_html
    meta = re.search(r'data-open="([^"]*)"', page)
    assert meta is not None
    opened = json.loads(html.unescape(meta.group(1)))
    nodes = len(re.findall(r'<g id="node\d+" class="node', page))
    assert (opened, page.count('class="node plx-group'), nodes) == FIRST_VIEW[built.name]
    assert ex.graph_open is None  # the first view's, until a click opens or closes one
    ex.close()


def test_dynamic_sequence_length_runs_at_other_lengths(built):
    if not corpus.MODELS[built.name].dynamic:
        pytest.skip("a static model")
    (_, shape, _), *_ = _tvm.params(built.build.module[built.build.entry])
    assert shape == (1, "seq")  # symbolic, named as the user's torch.export.Dim
    for seq in (5, 40):
        example = corpus.text_inputs(seq)
        got = built.build.run(*(t.numpy() for t in example.values()))
        got = got[0] if isinstance(got, tuple) else got
        ref = corpus.reference(built.module, example)
        np.testing.assert_allclose(got, ref, rtol=corpus.RTOL,
                                   atol=corpus.ATOL * float(np.max(np.abs(ref))))


def test_transformers_imports_beside_torchvision_architectures():
    """The loader's torchvision (no compiled ops) leaves transformers importable."""
    tv = corpus.torchvision_models()
    transformers = importlib.import_module("transformers")
    assert transformers.GPT2Model.__name__ == "GPT2Model"
    assert tv.resnet.resnet50.__module__ == "torchvision.models.resnet"
