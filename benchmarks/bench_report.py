"""Time to write the static report, its file size, and (with Chromium) time to open it.

For the largest built-in models, builds once with the default fused pipeline, then writes
the report twice (the first write prints every function; the second reuses the diff
printer's cache, as a second report of the same trace would) and prints its size against
the 5 MB budget. When Playwright and a ``chromium`` executable are available it also times
opening the file (until the page's script has run and selected a pass) and opening the
first snapshot.

Run: ``python benchmarks/bench_report.py`` (exits 1 when a report is over budget).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import passlab  # noqa: E402
from passlab.views import _snapshots, write_report  # noqa: E402

BUDGET_BYTES = 5_000_000
REPEAT = 2
MODELS = {
    "mlp": lambda: passlab.models.mlp(),
    "transformer(layers=8)": lambda: passlab.models.transformer(layers=8),
    "resnet": lambda: passlab.models.resnet(),
    "mobilenet": lambda: passlab.models.by_name("mobilenet"),
}


def _open_times(path: Path) -> tuple[float, float] | None:
    """(ms until a pass is selected, ms until the first snapshot is drawn), or None."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if exe is None:
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("tr.selected")
        opened = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        page.click("details.pl-snap > summary")
        page.wait_for_selector("details.pl-snap .pl-slot h3")
        snap = (time.perf_counter() - start) * 1e3
        browser.close()
    return opened, snap


def main() -> int:
    program = _snapshots.layout_program()
    print(f"graph layout: {program or 'none (tables)'}")
    print(f"{'model':24} {'build s':>8} {'steps':>6} {'write s':>8} {'again s':>8} {'size MB':>8} "
          f"{'open ms':>8} {'snap ms':>8}")
    over = False
    out_dir = Path(tempfile.mkdtemp(prefix="passlab-bench-report-"))
    for label, make in MODELS.items():
        start = time.perf_counter()
        trace = passlab.build(make()).trace
        built = time.perf_counter() - start
        path = out_dir / (label.split("(")[0] + ".html")
        times = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            write_report(trace, path, title=label)
            times.append(time.perf_counter() - start)
        size = path.stat().st_size
        over |= size > BUDGET_BYTES
        opened = _open_times(path)
        o, s = (f"{opened[0]:8.0f}", f"{opened[1]:8.0f}") if opened else ("       -",) * 2
        print(f"{label:24} {built:8.2f} {len(trace):6d} {times[0]:8.2f} {min(times[1:]):8.2f} "
              f"{size / 1e6:8.3f} {o} {s}"
              + ("  OVER BUDGET" if size > BUDGET_BYTES else ""))
    print(f"reports in {out_dir}; budget {BUDGET_BYTES / 1e6:.0f} MB per report")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
