"""The report's "Run time" section (`trace.write_report(path, profile=p)`): a profile's bar
chart, its kernel table and the time per source operator; the data and its HTML come
from `passlab.research.profile.Profile`, this module only places them."""

from __future__ import annotations

from typing import Any


def runtime_section(profile: Any) -> str:
    """The section's HTML; empty without a profile."""
    if profile is None:
        return ""
    by_source = profile.by_source()
    return (f'<section id="pl-runtime"><h2>Run time</h2>'
            '<div class="pl-note">Each kernel is timed where it runs, inside the real run '
            "(its \"alone\" column: on copies of its arguments); the runtime's own work is "
            "the same program with empty kernels. Hover a bar for its sources and passes, a "
            "table cell for the whole list.</div>"
            f'<div style="overflow-x:auto">{profile.plot().to_svg()}</div>'
            f"{profile.to_html()}<h3>Time per source operator</h3>{by_source.to_html()}"
            "</section>")
