"""Recording a build: the PassInstrument, the one recorded run, the trace it yields,
`build`/`record` and the invariant checks.

Bottom to top: `recorder` (the instrument: before/after
references, a depth stack), `trace` (Step and Trace: data only),
`checks`, `run` (a recorder in a copy of
the user's PassContext; failures become a BuildError carrying the trace) and
`build` (`build`, `record`, `Build.run`).
"""

from __future__ import annotations

from passlab.recording.build import Build, Recording, build, max_abs_diff, record
from passlab.recording.trace import Changes, Failure, Step, Trace

__all__ = ["Build", "Recording", "build", "record", "max_abs_diff", "Step", "Trace",
           "Changes", "Failure"]
