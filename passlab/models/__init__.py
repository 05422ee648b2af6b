"""Models: the built-in networks, the importers, and the one model resolution.

* `builtin`: small, download-free networks (`mlp`, `resnet`,
  `transformer`, `mobilenet`) written with `tvm.relax.frontend.nn`;
* `importers`: `load` (ONNX, PyTorch, TVMScript, nn.Module)
  and `as_module`, which every entry point uses to turn "a model" into an IRModule.

Examples
--------
>>> import passlab
>>> [gv.name_hint for gv in passlab.models.mlp().get_global_vars()]
['forward']
"""

from __future__ import annotations

from passlab.models.builtin import (
                                    NAMES,
                                    by_name,
                                    mlp,
                                    mobilenet,
                                    resnet,
                                    transformer,
                                    with_constant_weights,
)
from passlab.models.importers import SUFFIXES, as_module, load, resolve_model

__all__ = ["NAMES", "by_name", "mlp", "resnet", "transformer", "mobilenet",
           "with_constant_weights", "load", "as_module", "resolve_model", "SUFFIXES"]
