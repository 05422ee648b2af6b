"""Research tools over recorded builds.

* `bisect`: the first pass after which the model computes something else;
* `compare`: two pipelines aligned pass by pass, with diffs and final deltas;
* `blame`: the passes that created, rewrote or removed a function or a binding;
* `rerun`: rebuild after a pipeline edit from the recorded snapshot before it;
* `sweep`: many models times many pipelines, in worker processes, as one table;
* `edit_session`: live editing's model (pending edits, re-runs,
  A/B results), which the Explorer's Edit pane draws;
* `predicates`: ready tests for `trace.first(...)`.

Examples
--------
>>> import passlab
>>> from passlab.research import compare
>>> a = passlab.build(passlab.models.mlp())
>>> compare(a, passlab.build(passlab.models.mlp())).identical
True
"""

from __future__ import annotations

from passlab.research import predicates
from passlab.research.bisect import BisectReport, BisectRow, bisect
from passlab.research.blame import Blame, Event, blame
from passlab.research.compare import Comparison, Delta, Point, compare
from passlab.research.rerun import Rerun, rerun
from passlab.research.sweep import Sweep, SweepRow, sweep

__all__ = [
    "bisect", "BisectReport", "BisectRow", "compare", "Comparison", "Point", "Delta",
    "blame", "Blame", "Event", "rerun", "Rerun", "predicates",
    "sweep", "Sweep", "SweepRow",
]
