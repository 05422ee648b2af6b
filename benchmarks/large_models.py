"""Large real-library models for the view benchmarks (issue 24), made offline with random
weights: nothing is downloaded.

- ``swin``: Hugging Face ``transformers``' Swin-T (``SwinConfig()``'s defaults: 4 stages of
  2, 2, 6, 2 blocks, 96 channels, 224x224), through ``torch.export`` and
  ``passlab.load``. Its weights are constants, so FoldConstant runs a TIR build for each
  folded weight transform: about 15,000 pass calls, most of them inner steps.
- ``llama7b``: the built-in transformer shaped like a 7B Llama (32 layers, hidden 4096,
  32 heads, FFN 11008, vocabulary 32000, dynamic sequence length ``n``); weights are
  function parameters, so nothing of 7B parameters is allocated.
- ``onnx-resnet18``, ``onnx-efficientnet``: torchvision's ResNet-18 and EfficientNet-B0
  (224x224) exported to ONNX by torch's exporter without their values, so the weights are
  graph inputs, as many exported files have them (96 steps each);
- ``onnx-mobilenetv2``: torchvision's MobileNetV2 exported with its weights as
  initializers, which ``passlab.load`` makes constants: FoldConstant then runs a TIR build
  for each folded weight, about 8,400 steps.
- ``densenet121``: torchvision's DenseNet-121 (1x3x64x64, ``tests/corpus.py``'s), through
  ``torch.export``: 155 steps, but every layer of a dense block reads all earlier outputs,
  so its fused graph (250 kernels, 784 edges) is what an unbounded Graphviz layout cannot
  draw in time.

torchvision's architectures come from ``tests/corpus.py``'s loader (the wheel's compiled
operators do not load against the CPU torch; see there), ONNX export needs the ``onnx``
extra.

``trace(name, cache)`` builds once and saves the trace in ``cache`` (a build of Swin-T
takes minutes on 2 cores); later calls load the saved file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import passlab

NAMES = ("swin", "llama7b", "onnx-resnet18", "onnx-efficientnet", "onnx-mobilenetv2",
         "densenet121")
#: the ONNX models: torchvision architecture, and whether the file holds the weights
_ONNX = {"onnx-resnet18": ("resnet", "resnet18", False),
         "onnx-efficientnet": ("efficientnet", "efficientnet_b0", False),
         "onnx-mobilenetv2": ("mobilenetv2", "mobilenet_v2", True)}


def swin() -> Any:
    """Swin-T from ``transformers`` with random weights, as an IRModule."""
    import torch
    from transformers import SwinConfig, SwinModel

    torch.manual_seed(0)
    model = SwinModel(SwinConfig()).eval()
    x = torch.randn(1, 3, 224, 224)
    return passlab.load(model, example_inputs=(x,))


def llama7b() -> Any:
    """The built-in transformer with a 7B Llama's shape."""
    return passlab.models.transformer(layers=32, seq_len="n", hidden=4096, heads=32,
                                      ffn=11008, vocab=32000)


def _corpus() -> Any:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        import corpus
    finally:
        sys.path.pop(0)
    return corpus


def densenet121() -> Any:
    """tests/corpus.py's DenseNet-121 (random weights, 1x3x64x64), as an IRModule."""
    corpus = _corpus()
    module, example = corpus.MODELS["densenet121"].make()
    return passlab.load(corpus._export(module, example, False))


def onnx(name: str) -> Any:
    """ONNX model ``name`` (see :data:`_ONNX`) with random weights, as an IRModule."""
    import tempfile
    import warnings

    import torch

    corpus = _corpus()
    module, make, params = _ONNX[name]
    torch.manual_seed(0)
    model = getattr(getattr(corpus.torchvision_models(), module), make)(weights=None).eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's deprecation notes
            torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), str(path),
                              export_params=params, dynamo=False, do_constant_folding=False,
                              input_names=["input"], output_names=["output"])
        return passlab.load(path)


def trace(name: str, cache: str | Path | None = None) -> passlab.Trace:
    """The recorded trace of model ``name``, from ``cache`` when saved there before."""
    if name not in NAMES:
        from passlab.errors import unknown

        raise unknown("large model", name, NAMES)
    path = Path(cache) / f"{name}.trace.zip" if cache is not None else None
    if path is not None and path.exists():
        return passlab.load_trace(path)
    makers = {"swin": swin, "llama7b": llama7b, "densenet121": densenet121}
    model = makers[name]() if name in makers else onnx(name)
    build = passlab.build(model)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        build.trace.save(path)
    return build.trace


if __name__ == "__main__":
    import sys
    import time

    for n in sys.argv[2:] or NAMES:
        start = time.perf_counter()
        t = trace(n, sys.argv[1])
        print(n, len(t), "steps", f"{time.perf_counter() - start:.1f} s", flush=True)
