"""Views over recorded traces: the Explorer widget (`explorer*.py`) and the static HTML
report (`report.py`), one front end (`static/explorer/`, joined by `_bundle.py`) over
the widget's synced traits or, in the report, a page model fed from saved pane data
(`_report_state.py`, `static/report/`); and the Model Explorer export.

Views sit on top of the analyses and the trace; nothing below imports them.
"""

from __future__ import annotations

from passlab.views.report import write_report

__all__ = ["write_report"]
