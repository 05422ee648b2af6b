"""Hand-made tiny traces: a three-operator Relax model written in TVMScript and a few
steps over it, made without a build, a pipeline or a recorder, so that the analyses and
the pane renderer are tested on exact, small data (which operator lands in which kernel,
which pass is blamed, which rows the pass table has).

The snapshots after each step are the input with single TVM passes applied to it
(LegalizeOps, AnnotateTIROpPattern, FuseOps, FuseTIR: a few milliseconds on this model);
a no-op step (``FoldConstant``, before == after) and a user step (``tag_kernels``,
written here, with its docstring) complete the chain.
"""

from __future__ import annotations

import functools

import tvm
from tvm import relax
from tvm.script import ir as I  # noqa: N812
from tvm.script import relax as R  # noqa: N812

from passlab.recording.recorder import RawEvent
from passlab.recording.trace import Trace, from_events


@I.ir_module
class Tiny:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 3), "float32"),
             b: R.Tensor((3,), "float32")) -> R.Tensor((2, 3), "float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            mm = R.matmul(x, w)
            biased = R.add(mm, b)
            out = R.nn.relu(biased)
            R.output(out)
        return out


def tag_kernels(mod: tvm.IRModule) -> tvm.IRModule:
    """Tag every fused kernel with the device it should run on (``my.device``)."""
    out = tvm.IRModule(dict(mod.functions))
    for gv, fn in mod.functions.items():
        if gv.name_hint.startswith("fused_") and isinstance(fn, tvm.tirx.PrimFunc):
            out[gv] = fn.with_attr("my.device", "npu")
    return out


@functools.cache
def snapshots() -> dict[str, tvm.IRModule]:
    """The module after each step ("input" first)."""
    mod = Tiny
    out = {"input": mod}
    with tvm.target.Target("llvm"):
        for name, p in (("LegalizeOps", relax.transform.LegalizeOps()),
                        ("AnnotateTIROpPattern", relax.transform.AnnotateTIROpPattern()),
                        ("FoldConstant", None),
                        ("FuseOps", relax.transform.FuseOps()),
                        ("FuseTIR", relax.transform.FuseTIR()),
                        ("tag_kernels", tag_kernels)):
            mod = mod if p is None else p(mod)
            out[name] = mod
    return out


STEPS = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR",
         "tag_kernels")


def tiny_trace(steps: tuple[str, ...] = STEPS) -> Trace:
    """``steps`` as the main chain of one container (``passlab.pipeline``), in the
    ``legalize`` stage; ``tag_kernels`` is a user pass."""
    s = snapshots()
    events = [RawEvent("passlab.pipeline", 0, None, s["input"], 0.0, s[steps[-1]], 1.0),
              RawEvent("legalize", 1, 0, s["input"], 0.0, s[steps[-1]], 0.9)]
    before = s["input"]
    for k, name in enumerate(steps):
        events.append(RawEvent(name, 2, 1, before, k * 0.1, s[name], k * 0.1 + 0.05))
        before = s[name]
    return from_events(events, {"input": s["input"], "target": "llvm"}, "passlab.pipeline",
                       stage_names=("legalize",), user_names=("tag_kernels",))
