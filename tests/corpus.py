"""A corpus of real architectures, built from their own libraries with random weights
(nothing is downloaded), small enough to build in seconds: torchvision ResNet-50,
MobileNetV3, ConvNeXt, ViT, Swin and DenseNet-121 (dense blocks: every layer reads all
earlier outputs, the densest graph of the set); Hugging Face GPT-2, BERT and a GQA Llama
(static and dynamic sequence length) from configs; an ONNX export whose weights are graph
inputs.

``tests/test_corpus.py`` builds each once; ``python tests/corpus.py [NAME...]`` prints
how long each takes to make, load and build.

torchvision: the torchvision 0.28.0 wheel that pairs with torch 2.13 is a CUDA build whose
compiled operators do not load against the CPU torch, so ``import torchvision`` fails
("operator torchvision::nms does not exist"), and ``import transformers`` fails too while
torchvision sits in site-packages (transformers imports it when it finds it). So the Makefile
installs the wheel outside site-packages, into ``.venv/passlab-torchvision`` (``pip install
--no-deps --target``), where nothing finds it by itself, and :func:`torchvision_models`
loads the pure-Python architecture modules from there without running
``torchvision/__init__.py`` (which loads the compiled operators): ``torchvision`` and
``torchvision.models`` are made empty packages whose ``__path__`` is the wheel's folder,
then only the architecture submodules are imported. That folder is on ``sys.path`` only
while they are imported (for Pillow, which ``torchvision.transforms`` imports).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TORCHVISION_DIR = ROOT / ".venv" / "passlab-torchvision"
IMAGE = (1, 3, 64, 64)
SEQ = 16
#: the tolerance every corpus model's output meets against torch eager / onnxruntime
ATOL, RTOL = 1e-4, 1e-4

_ARCHITECTURES = ("resnet", "mobilenetv2", "mobilenetv3", "efficientnet", "convnext",
                  "vision_transformer", "swin_transformer", "densenet")


def torchvision_models() -> types.SimpleNamespace:
    """torchvision's architecture modules (``resnet``, ``mobilenetv2``, ``mobilenetv3``,
    ``efficientnet``, ``convnext``, ``vision_transformer``, ``swin_transformer``; the
    benchmarks' ONNX models use two of them), imported from
    :data:`TORCHVISION_DIR` without torchvision's compiled operators (see the module
    docstring). Raises ImportError when the folder is missing."""
    found = sys.modules.get("torchvision")
    if found is not None and not getattr(found, "_passlab_stub", False):
        raise ImportError("a real torchvision is already imported")
    if found is None:
        if not (TORCHVISION_DIR / "torchvision" / "models").is_dir():
            raise ImportError(f"no torchvision in {TORCHVISION_DIR} (make installs it)")
        sys.path.insert(0, str(TORCHVISION_DIR))
        try:
            for name in ("torchvision", "torchvision.models"):
                spec = importlib.util.find_spec(name)
                assert spec is not None and spec.submodule_search_locations is not None
                pkg = types.ModuleType(name)
                pkg.__path__ = list(spec.submodule_search_locations)
                pkg.__spec__ = spec
                pkg._passlab_stub = True  # type: ignore[attr-defined]
                sys.modules[name] = pkg
            for arch in _ARCHITECTURES:
                importlib.import_module(f"torchvision.models.{arch}")
        finally:
            sys.path.remove(str(TORCHVISION_DIR))
    return types.SimpleNamespace(**{a: sys.modules[f"torchvision.models.{a}"]
                                    for a in _ARCHITECTURES})


# --------------------------------------------------------------------------- the models
@dataclass
class Model:
    """One corpus model: ``make()`` returns ``(torch module, example inputs)``, the inputs
    a dict of keyword arguments for the Hugging Face models (``input_ids`` and
    ``attention_mask``, as a tokenizer gives them)."""

    name: str
    make: Callable[[], tuple[Any, Any]]
    #: "torch" (torch.export, then passlab.load of the ExportedProgram) or "onnx"
    #: (torch.onnx.export with the weights as graph inputs, then passlab.load of the file)
    via: str = "torch"
    #: a dynamic sequence length (torch.export.Dim("seq") on every input's axis 1)
    dynamic: bool = False
    #: a source model name (ONNX node, torch module path) provenance must lead to kernels
    source: str = ""


def _vision(fn: Callable[[types.SimpleNamespace], Any]) -> Callable[[], tuple[Any, tuple]]:
    def vision() -> tuple[Any, tuple]:
        import torch

        tv = torchvision_models()
        torch.manual_seed(0)
        return fn(tv).eval(), (torch.randn(*IMAGE),)
    return vision


def _resnet50(tv):
    return tv.resnet.resnet50(weights=None, num_classes=10)


def _mobilenet(tv):
    return tv.mobilenetv3.mobilenet_v3_small(weights=None, num_classes=10)


def _convnext(tv):
    # ConvNeXt's blocks at a fraction of convnext_tiny's widths and depths (96-768, 3-3-9-3)
    c = tv.convnext.CNBlockConfig
    return tv.convnext.ConvNeXt([c(24, 48, 1), c(48, 96, 1), c(96, None, 1)], num_classes=10)


def _vit(tv):
    import torch

    vit = tv.vision_transformer.VisionTransformer(
        image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
        num_classes=10)
    torch.nn.init.normal_(vit.heads.head.weight)  # torchvision starts it at zero: output 0
    return vit


def _swin(tv):
    # one stage of two blocks (the second one's windows shifted, with its attention mask):
    # two stages cost twice the build (FoldConstant folds each block's mask and indices)
    return tv.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=32, depths=[2], num_heads=[2], window_size=[4, 4],
        num_classes=10)


def _text(cls_name: str, config: Callable[[Any], Any]) -> Callable[[], tuple[Any, tuple]]:
    def make() -> tuple[Any, tuple]:
        import torch
        import transformers

        torch.manual_seed(0)
        model = getattr(transformers, cls_name)(config(transformers)).eval()
        return model, text_inputs(SEQ)
    return make


def text_inputs(seq: int) -> dict[str, Any]:
    """``input_ids`` and an all-ones ``attention_mask`` of ``seq`` tokens. Without the mask
    transformers looks for packed sequences with a ``cumsum`` of a boolean tensor, whose
    kernel TVM 0.27's LLVM code generator refuses (an integer add on ``bool``)."""
    import torch

    ids = torch.randint(0, 128, (1, seq), generator=torch.Generator().manual_seed(seq))
    return {"input_ids": ids, "attention_mask": torch.ones(1, seq, dtype=torch.int64)}


# token ids inside the small vocabulary (the defaults, 50256 and such, make transformers log)
_TOKENS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}


def _gpt2(t):
    return t.GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=128,
                        use_cache=False, return_dict=False, **_TOKENS)


def _bert(t):
    return t.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=2,
                        intermediate_size=128, vocab_size=128, max_position_embeddings=64,
                        return_dict=False, **_TOKENS)


def _llama(t):
    # grouped-query attention: 4 query heads share 2 key/value heads
    return t.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                         max_position_embeddings=64, use_cache=False, return_dict=False,
                         **_TOKENS)


def _resnet18(tv):
    return tv.resnet.resnet18(weights=None, num_classes=10)


def _densenet121(tv):
    # every layer of a dense block concatenates all earlier outputs: ~250 kernels and a
    # graph with many long edges, the case where an unbounded Graphviz layout blows up
    return tv.densenet.densenet121(weights=None, num_classes=10)


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("resnet50", _vision(_resnet50), source="layer1.0.conv1"),
    Model("mobilenet_v3", _vision(_mobilenet), source="features.1.block.0"),
    Model("convnext", _vision(_convnext), source="features.1.0.block"),
    Model("vit", _vision(_vit), source="encoder.layers.encoder_layer_0"),
    Model("swin", _vision(_swin), source="features.1.0.attn"),
    Model("gpt2", _text("GPT2Model", _gpt2), source="h.0.attn"),
    Model("bert", _text("BertModel", _bert), source="encoder.layer.0.attention"),
    Model("llama", _text("LlamaModel", _llama), source="layers.0.self_attn"),
    Model("llama_dynamic", _text("LlamaModel", _llama), dynamic=True,
          source="layers.0.self_attn"),
    Model("onnx_resnet18", _vision(_resnet18), via="onnx",
          source="/layer1/layer1.0/conv1/Conv"),
    Model("densenet121", _vision(_densenet121),
          source="features.denseblock1.denselayer1.conv1"),
)}
NAMES = tuple(MODELS)
#: the entry function's real inputs, as the fused graph shows them
INPUTS = {n: ["input"] if m.via == "onnx" else ["x"] if m.make.__name__ == "vision"
          else ["input_ids", "attention_mask"] for n, m in MODELS.items()}


# --------------------------------------------------------------------------- building
@dataclass
class Built:
    """A corpus model made, loaded and built, with what it printed and its reference."""

    name: str
    module: Any
    build: Any
    inputs: list[np.ndarray]
    expected: Any
    #: what reached file descriptor 2, and the warnings a user would see (not the
    #: DeprecationWarnings Python hides outside __main__), while loading and building
    stderr: str
    warnings: list[str]
    seconds: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def stderr_text(out: list[str]) -> Iterator[None]:
    """Everything written to file descriptor 2 inside the block (C++ logs included)
    lands in ``out[0]`` instead."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def _onnx_file(module: Any, example: tuple, path: Path) -> None:
    import torch

    # the legacy exporter, as most users still call it (the new one needs onnxscript);
    # without constant folding BatchNormalization stays a node: folded into the Conv it
    # would make new weights, whose values export_params=False does not keep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "legacy TorchScript-based"
        torch.onnx.export(module, example, str(path), export_params=False, dynamo=False,
                          do_constant_folding=False, input_names=["input"],
                          output_names=["output"])


def weights_of(module: Any, names: list[str]) -> list[np.ndarray]:
    """The values of a torch module's parameters and buffers, by their names (those of an
    ONNX export's weight inputs)."""
    named = dict(module.named_parameters()) | dict(module.named_buffers())
    return [named[n].detach().numpy() for n in names]


def reference(module: Any, example: Any, path: Path | None = None) -> np.ndarray:
    """What the model computes: onnxruntime on the ONNX file when ``path`` is given,
    else torch eager (the first output)."""
    import torch

    if path is not None:
        import onnxruntime as ort

        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()[1:]]
        feeds = dict(zip(names, weights_of(module, names)), input=example[0].numpy())
        return sess.run(None, feeds)[0]
    with torch.no_grad():
        out = module(**example) if isinstance(example, dict) else module(*example)
    out = out[0] if isinstance(out, tuple) else out
    return out.numpy()


def _export(module: Any, example: Any, dynamic: bool) -> Any:
    import torch

    args, kwargs = ((), example) if isinstance(example, dict) else (tuple(example), {})
    shapes = None
    if dynamic:
        seq = torch.export.Dim("seq", min=2, max=64)
        shapes = {k: {1: seq} for k in kwargs}
    with torch.no_grad():
        return torch.export.export(module, args, kwargs, dynamic_shapes=shapes)


@functools.lru_cache(maxsize=1)
def build_once(name: str) -> Built:
    """:func:`build` of `name`, kept until another model is built in this process: the
    corpus tests and tests/test_trace_store.py's DenseNet test share one build
    (tests/conftest.py schedules them on one worker)."""
    return build(name)


def build(name: str, workdir: Path | None = None) -> Built:
    """Make, load and build the corpus model ``name``; time each part, keep stderr."""
    import passlab

    model = MODELS[name]
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(part: str) -> Iterator[None]:
        wall, proc = time.perf_counter(), time.process_time()
        yield
        seconds[part] = time.perf_counter() - wall
        cpu[part] = time.process_time() - proc

    with timed("make"):
        module, example = model.make()
    text: list[str] = []
    tmp = tempfile.TemporaryDirectory() if workdir is None else None
    folder = Path(tmp.name) if tmp is not None else workdir
    assert folder is not None
    try:
        with stderr_text(text), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path, weight_names = None, []
            with timed("load"):
                if model.via == "onnx":
                    path = folder / f"{name}.onnx"
                    _onnx_file(module, example, path)
                    mod = passlab.load(path)
                    import onnx

                    weight_names = [i.name for i in onnx.load(str(path)).graph.input][1:]
                else:
                    mod = passlab.load(_export(module, example, model.dynamic))
            with timed("build"):
                b = passlab.build(mod)
        expected = reference(module, example, path)
    finally:
        if tmp is not None:
            tmp.cleanup()
    hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not issubclass(w.category, hidden)]
    values = list(example.values()) if isinstance(example, dict) else list(example)
    inputs = [t.numpy() for t in values]
    if model.via == "onnx":  # main takes the weights in the ONNX inputs' order
        inputs += weights_of(module, weight_names)
    return Built(name, module, b, inputs, expected, text[0], shown, seconds, cpu)


if __name__ == "__main__":
    names = sys.argv[1:] or NAMES
    print(f"{'model':15} {'make s':>7} {'load s':>7} {'build s':>8} {'total s':>8} "
          f"{'cpu make':>9} {'cpu load':>9} {'cpu build':>9} {'steps':>6}  max abs diff")
    import passlab

    # calibration: the README's plain resnet build takes ~3.1 s on an idle machine
    wall, proc = time.perf_counter(), time.process_time()
    passlab.build(passlab.models.resnet())
    print(f"{'(built-in resnet)':15} {'':7} {'':7} {time.perf_counter() - wall:8.1f} {'':8} "
          f"{'':9} {'':9} {time.process_time() - proc:9.1f}", flush=True)
    for n in names:
        b = build(n)
        got = b.build.run(*b.inputs)
        got = got[0] if isinstance(got, tuple) else got
        s, c = b.seconds, b.cpu
        print(f"{n:15} {s['make']:7.1f} {s['load']:7.1f} {s['build']:8.1f} "
              f"{sum(s.values()):8.1f} {c['make']:9.1f} {c['load']:9.1f} {c['build']:9.1f} "
              f"{len(b.build.trace):6d}  {float(np.max(np.abs(got - b.expected))):.2e} "
              f"(max |ref| {float(np.max(np.abs(b.expected))):.2e})", flush=True)
        if b.stderr or b.warnings:
            print("  stderr:", b.stderr[:300].replace("\n", " | "), b.warnings[:3])
