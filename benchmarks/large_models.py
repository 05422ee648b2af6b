"""Large real-library models for the view benchmarks (issue 24), made offline with random
weights: nothing is downloaded.

- ``swin``: Hugging Face ``transformers``' Swin-T (``SwinConfig()``'s defaults: 4 stages of
  2, 2, 6, 2 blocks, 96 channels, 224x224), through ``torch.export`` and
  ``passlab.load``. Its weights are constants, so FoldConstant runs a TIR build for each
  folded weight transform: about 15,000 pass calls, most of them inner steps.
- ``llama7b``: the built-in transformer shaped like a 7B Llama (32 layers, hidden 4096,
  32 heads, FFN 11008, vocabulary 32000, dynamic sequence length ``n``); weights are
  function parameters, so nothing of 7B parameters is allocated.

``trace(name, cache)`` builds once and saves the trace in ``cache`` (a build of Swin-T
takes minutes on 2 cores); later calls load the saved file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import passlab

NAMES = ("swin", "llama7b")


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


def trace(name: str, cache: str | Path | None = None) -> passlab.Trace:
    """The recorded trace of model ``name``, from ``cache`` when saved there before."""
    if name not in NAMES:
        from passlab.errors import unknown

        raise unknown("large model", name, NAMES)
    path = Path(cache) / f"{name}.trace.zip" if cache is not None else None
    if path is not None and path.exists():
        return passlab.load_trace(path)
    build = passlab.build(swin() if name == "swin" else llama7b())
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
