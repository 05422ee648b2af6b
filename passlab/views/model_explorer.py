"""Write fused graphs of recorded steps for Google Model Explorer.

Model Explorer (`pip install ai-edge-model-explorer`, then `model-explorer
graphs.json`) opens a JSON graph collection, `{"label": ..., "graphs": [Graph, ...]}`
(its loader refuses a file without the `label`); node-data files
(`{graph id: {"results": {node id: {"value": v}}, ...}}`) colour nodes by a value. One
graph per chosen step lets a reader flip between, say, FuseOps, FuseTIR and
StaticPlanBlockMemory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from passlab.analysis._graph_export import node_data
from passlab.analysis.graph import fused_graph
from passlab.recording.trace import Step, Trace

__all__ = ["to_model_explorer", "DEFAULT_STEPS"]

#: Steps exported when a whole trace is given: the points where the graph changes shape.
DEFAULT_STEPS = ("LegalizeOps", "FuseOps", "FuseTIR", "StaticPlanBlockMemory")

#: Overlays written next to the graph file, and what each holds.
OVERLAYS = {"bytes_out": "bytes of the tensors each node produces",
            "bytes_in": "bytes of the tensors each node reads"}


def _steps(what: Trace | Step | Iterable[Any], names: Sequence[str] | None) -> list[Step]:
    if isinstance(what, Step):
        return [what]
    if isinstance(what, Trace):
        wanted = names or [n for n in DEFAULT_STEPS if n in what.names]
        if not wanted:
            raise ValueError("the trace has none of the passes "
                             f"{', '.join(DEFAULT_STEPS)}; name the steps: steps=[...]")
        return [what.find(n) for n in wanted]
    steps = list(what) if isinstance(what, Iterable) else []
    if not steps or not all(isinstance(s, Step) for s in steps):
        raise TypeError("to_model_explorer takes a Trace, a Step or a list of Steps, not "
                        f"{type(what).__name__}")
    return steps


def _grouped(g: Any, step: Step, provs: dict[int, Any]) -> Any:
    """`g` with its calls grouped by the model's node paths (Model Explorer's
    namespaces) when the step's trace has them; `provs` keeps one provenance per trace."""
    from passlab.analysis._graph_groups import has_sources
    from passlab.analysis.provenance import provenance

    trace = step.owner
    if trace is None:
        return g
    key = id(trace)
    if key not in provs:
        try:
            provs[key] = provenance(trace) if has_sources(trace) else None
        except Exception:  # noqa: BLE001 - no provenance: no source namespaces
            provs[key] = None
    return g if provs[key] is None else g.with_sources(provs[key], step)


def to_model_explorer(what: Trace | Step | Iterable[Step], path: str | os.PathLike, *,
                      steps: Sequence[str] | None = None, params: str = "collapse",
                      inputs: Sequence[str] | None = None, label: str | None = None,
                      profile: Any = None) -> list[Path]:
    """Write the fused graph after each chosen step as one Model Explorer file, and one
    node-data overlay per metric beside it (`<name>.bytes_out.json`,
    `<name>.bytes_in.json`), and with `profile` a time overlay (`<name>.time.json`).

    Parameters
    ----------
    what
        A trace (then `steps` names the passes, default `DEFAULT_STEPS` that it
        ran), one step, or a list of steps (e.g. from two traces).
    path
        The graph file to write (`.json`).
    params
        How the entry function's weights are drawn: `"collapse"` (folded into the
        kernels that use them), `"show"` or `"hide"`, as in
        `fused_graph`.
    inputs
        The entry function's real inputs, when the module does not say (TVM's
        `num_input` attribute): every other parameter is a weight.
    label
        The collection's name in Model Explorer's graph selector; default the file's stem.
    profile
        A `build.profile()` of the build the steps come from: adds the overlay
        `time`, the median seconds per call of the kernel each node runs (nodes are
        matched to kernels by name, so it shows from FuseOps on).

    Returns
    -------
    list of Path
        The graph file, then the overlays.

    Examples
    --------
    >>> import passlab, tempfile, pathlib
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "mlp.json"
    >>> [p.name for p in passlab.to_model_explorer(trace, out)]
    ['mlp.json', 'mlp.bytes_out.json', 'mlp.bytes_in.json']
    """
    chosen = _steps(what, steps)
    out = Path(path)
    graphs: list[Any] = []
    overlays: dict[str, dict[str, Any]] = {m: {} for m in OVERLAYS}
    if profile is not None:
        overlays["time"] = {}
    per_call = {} if profile is None else {k.kernel: k.median_s for k in profile if k.calls}
    seen: set[str] = set()
    provs: dict[int, Any] = {}
    for s in chosen:
        if s.after is None:
            raise ValueError(f"step {s.label!r} failed: it has no module after it")
        gid = f"{s.index:03d} {s.label}"
        if gid in seen:
            continue
        seen.add(gid)
        g = _grouped(fused_graph(s, params=params, inputs=inputs), s, provs)
        graphs.append(g.to_model_explorer(gid))
        for metric, data in overlays.items():
            if metric == "time":
                found = {n.id: {"value": per_call[n.label]} for n in g.nodes
                         if n.kind in ("kernel", "fused") and n.label in per_call}
                data[gid] = {"name": "time: seconds per call of the node's kernel "
                                     "(build.profile)", "results": found,
                             "gradient": [{"stop": 0, "bgColor": "#e7f5ff"},
                                          {"stop": 1, "bgColor": "#e8590c"}]}
                continue
            data[gid] = {"name": f"{metric}: {OVERLAYS[metric]}", "results": node_data(g, metric),
                         "gradient": [{"stop": 0, "bgColor": "#e7f5ff"},
                                      {"stop": 1, "bgColor": "#e8590c"}]}
    out.write_text(json.dumps({"label": out.stem if label is None else str(label),
                               "graphs": graphs}))
    written = [out]
    for metric, data in overlays.items():
        p = out.with_name(f"{out.stem}.{metric}.json")
        p.write_text(json.dumps(data))
        written.append(p)
    return written
