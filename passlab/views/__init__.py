"""Views over recorded traces: the static HTML report (and, separately, the Explorer).

Views sit on top of the analyses and the trace; nothing below imports them.
"""

from __future__ import annotations

from passlab.views.report import write_report

__all__ = ["write_report"]
