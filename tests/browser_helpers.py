"""JupyterLab on loopback and Debian's Chromium through Playwright, for the browser tests.

Follows the verified recipe (shared/recipes/jupyter-in-a-real-browser.md): isolated
JupyterLab settings, a fixed token, readiness via /api/status, a clean shutdown via
/api/shutdown, and the system Chromium (never a browser a tool downloads).

One server and one browser per test run (per xdist worker): tests take conftest's
``lab`` fixture (their own folder of the shared server, its own workspace, kernels shut
down and settings reset afterwards) and ``page`` / ``new_page`` (a fresh browser context
each: no cookies, storage or cache from another test). :func:`jupyter_lab` and
:func:`chromium` still start a server or a browser of their own, for scripts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
#: Where the browser tests save their screenshots (the README shows them).
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TOKEN = "passlab-browser-test"


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    for module, extra in (("playwright", "test"), ("jupyterlab", "notebook"),
                          ("ipykernel", "notebook"), ("anywidget", "notebook")):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install 'passlab[{extra}]')"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    port: int
    #: the folder the notebooks of this test live in (the kernel's working directory)
    root: Path
    process: subprocess.Popen
    log: Path
    #: JupyterLab's user settings, which it reads from disk on each request
    settings: Path
    #: ``root`` relative to the server's root folder ("" for the server itself)
    folder: str = ""
    workspace: str = "default"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={TOKEN}"

    def notebook_url(self, name: str) -> str:
        """The page of notebook ``name`` of :attr:`root`, in this test's own workspace
        (a shared workspace would reopen the notebooks of earlier tests)."""
        path = f"{self.folder}/{name}" if self.folder else name
        return self.url(f"lab/workspaces/{self.workspace}/tree/{path}")

    def for_test(self, name: str) -> Lab:
        """This server seen from one test: its own folder and workspace, both ``name``
        made safe for a path."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:100]
        sub = Lab(self.port, self.root / safe, self.process, self.log, self.settings,
                  safe, safe)
        sub.root.mkdir(parents=True, exist_ok=True)
        return sub

    def set_theme(self, theme: str) -> None:
        """The theme the next page load opens in ("JupyterLab Dark")."""
        d = self.settings / "@jupyterlab" / "apputils-extension"
        d.mkdir(parents=True, exist_ok=True)
        (d / "themes.jupyterlab-settings").write_text(json.dumps({"theme": theme}))

    def reset(self) -> None:
        """What one test leaves behind goes: its kernels (and their sessions) shut down,
        every user setting but the news opt-out removed (a theme a test chose)."""
        for session in self.api("/api/sessions") or []:
            self.api(f"/api/sessions/{session['id']}", method="DELETE")
        for kernel in self.api("/api/kernels") or []:
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
        for f in self.settings.rglob("*.jupyterlab-settings"):
            if f.name != "notification.jupyterlab-settings":
                f.unlink()

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
            return json.loads(body) if body else None


@contextmanager
def jupyter_lab(base: Path, notebooks: list[Path]) -> Iterator[Lab]:
    """A JupyterLab server serving copies of ``notebooks``; shut down cleanly on exit."""
    root = base / "root"
    root.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, root / nb.name)
    settings = base / "settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"))
    port = _free_port()
    log = base / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
             f"--port={port}", "--port-retries=0", "--allow-root",
             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    lab = Lab(port, root, process, log, settings)
    try:
        deadline = time.time() + 60
        while True:
            try:
                lab.api("/api/status")
                break
            except Exception:
                if process.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"jupyter lab did not start:\n{log.read_text()[-3000:]}") from None
                time.sleep(0.2)
        yield lab
    finally:
        _stop(lab)


def _stop(lab: Lab) -> None:
    if lab.process.poll() is not None:
        return
    try:
        lab.api("/api/shutdown", method="POST")  # also shuts the kernels down
        lab.process.wait(timeout=30)
    except Exception:
        os.killpg(lab.process.pid, signal.SIGTERM)
        lab.process.wait(timeout=10)


@contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 1100):
    """A Playwright page in headless Debian Chromium; page errors collect in
    ``page.errors``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height})
        ctx.set_default_timeout(60_000)
        page = ctx.new_page()
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)[:300]))
        try:
            yield page
        finally:
            ctx.close()


class Browser:
    """One headless Chromium for a test run, started by the first page asked of it.

    Playwright's sync API keeps an asyncio loop running in this thread while it is up,
    and ``asyncio.run()`` then refuses to start: conftest stops the browser before any
    test that is not a browser test (browser tests run last, so that happens once)."""

    def __init__(self) -> None:
        self._playwright = None
        self._browser = None
        self.starts = 0

    def page(self, width: int = 1400, height: int = 1100):
        """A page in a fresh context (its own cookies, storage and cache); page errors
        collect in ``page.errors``. Close it with ``page.context.close()``."""
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            self.starts += 1
        ctx = self._browser.new_context(viewport={"width": width, "height": height})
        ctx.set_default_timeout(60_000)
        page = ctx.new_page()
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)[:300]))
        return page

    def stop(self) -> None:
        if self._browser is not None:
            try:
                self._browser.close()
            finally:
                self._browser = None
                self._playwright.stop()
                self._playwright = None


def set_theme(page, name: str) -> None:
    """Switch JupyterLab's theme through its Settings menu ("JupyterLab Dark"/"Light")."""
    import re

    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(name)}$")).click()


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A notebook of code ``cells`` with the ipykernel kernelspec, written to ``path``."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def marks() -> list:
    """The ``pytestmark`` of every browser test module: browser and slow, skipped with the
    reason when Chromium or a Python package is missing."""
    import pytest

    why = missing()
    return [pytest.mark.browser, pytest.mark.slow,
            pytest.mark.skipif(why is not None, reason=str(why))]


def open_notebook(page, lab: Lab, name: str, expect) -> None:
    """Open notebook ``name`` of ``lab`` in ``page`` and run all its cells."""
    page.goto(lab.notebook_url(name))
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    run_all(page, expect)


def resize(page, width: int, height: int = 1100) -> None:
    """Narrow (or widen) an open JupyterLab page as a user resizes the window. Lab keeps
    an open left side panel at its width, which leaves a narrowed notebook a sliver (a
    page loaded at 800 px opens without it), so below 1000 px the side panel is closed."""
    page.set_viewport_size({"width": width, "height": height})
    current = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if width < 1000 and current.count():
        current.first.click()
        expect_closed = page.locator("#jp-left-stack")
        expect_closed.wait_for(state="hidden")


def run_all(page, expect) -> None:
    """Run every cell of the open notebook once its kernel is idle."""
    import re

    # The status-bar kernel item, not the toolbar's idle dot: that one reads idle before
    # the session has a kernel, and Run All then opens a "Select Kernel" dialog.
    expect(page.locator('.jp-StatusBar-TextItem[title^="Change kernel"]')).to_have_text(
        "Python 3 (ipykernel) | Idle")
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def count_list_draws(root) -> None:
    """From now on, count the draws of the pass list under ``root`` (a locator of the
    Explorer's root): each time its rows are replaced (list.js renderList), seen by a
    MutationObserver; :func:`list_draws` reads the count. A search that changes both
    `search` and `visible` draws the list once, not once for each."""
    root.locator(".plx-list").evaluate("""(list) => {
      window.plxListDraws = 0;
      new MutationObserver((records) => {
        for (const r of records) if (r.target === list && r.removedNodes.length) window.plxListDraws++;
      }).observe(list, { childList: true });
    }""")


def list_draws(page) -> int:
    """The pass list's draws since :func:`count_list_draws`."""
    return page.evaluate("() => window.plxListDraws")


#: The layout rule of every pane (issue 34), checked in the page on the widget's root:
#: `wide` lists the boxes whose content is wider than the box (scrollWidth > clientWidth)
#: that are no declared scroller (`data-plx-scroll`: a box that scrolls sideways by
#: design, or a pan/zoom viewport) and no cut text with its whole value on hover
#: (text-overflow: ellipsis and a title); what lies inside a declared scroller scrolls
#: with it. `sticky` lists the sticky or fixed elements that overlap a control, `covered`
#: the controls in sight (in the window and in every scroll box around them) whose middle
#: is painted over by something else. Each entry names the pane, the element and why.
LAYOUT_JS = """(root) => {
  const shown = (el) => el.getClientRects().length > 0
    && getComputedStyle(el).visibility !== "hidden";
  const name = (el) => {
    const pane = el.closest("[data-pane]");
    const cls = typeof el.className === "string" && el.className.trim()
      ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    const text = (el.textContent || el.value || "").trim().replace(/\\s+/g, " ").slice(0, 40);
    return `${pane ? pane.dataset.pane + ": " : ""}${el.tagName.toLowerCase()}${cls} "${text}"`;
  };
  const out = { wide: [], sticky: [], covered: [] };
  for (const el of root.querySelectorAll("*")) {
    if (el instanceof SVGElement || !shown(el)) continue;
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const style = getComputedStyle(el);
    if (style.display === "inline" || style.display === "contents") continue;
    const scroller = el.closest("[data-plx-scroll]");
    if (scroller && scroller !== el) continue;  // scrolls with its declared box
    if (scroller === el && (["auto", "scroll"].includes(style.overflowX)
                            || el.dataset.plxScroll === "pan")) continue;
    if (el.title && style.textOverflow === "ellipsis") continue;  // whole on hover
    out.wide.push(`${name(el)}: content ${el.scrollWidth} px in a box of ${el.clientWidth} px`);
  }
  const controls = [...root.querySelectorAll(
    "button, select, input, a[href], summary, label, [role=tab], [tabindex='0']")]
    .filter((el) => shown(el) && getComputedStyle(el).pointerEvents !== "none");
  const sticky = [...root.querySelectorAll("*")].filter((el) => shown(el)
    && ["sticky", "fixed"].includes(getComputedStyle(el).position));
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  for (const s of sticky) {
    for (const c of controls) {
      if (!s.contains(c) && !c.contains(s) && overlap(s.getBoundingClientRect(), c.getBoundingClientRect())) {
        out.sticky.push(`${name(s)} (${getComputedStyle(s).position}) overlaps ${name(c)}`);
      }
    }
  }
  // the part of an element in sight: the window, clipped by each scroll box around it
  const inSight = (el) => {
    let r = el.getBoundingClientRect();
    let box = { left: Math.max(r.left, 0), top: Math.max(r.top, 0),
                right: Math.min(r.right, innerWidth), bottom: Math.min(r.bottom, innerHeight) };
    for (let p = el.parentElement; p; p = p.parentElement) {
      const st = getComputedStyle(p);
      if (st.overflowX === "visible" && st.overflowY === "visible") continue;
      const q = p.getBoundingClientRect();
      box = { left: Math.max(box.left, q.left), top: Math.max(box.top, q.top),
              right: Math.min(box.right, q.right), bottom: Math.min(box.bottom, q.bottom) };
    }
    return box.right - box.left > 2 && box.bottom - box.top > 2 ? box : null;
  };
  for (const c of controls) {
    const r = c.getBoundingClientRect();
    if (r.width <= 2 || r.height <= 2) continue;  // a visually hidden checkbox
    const box = inSight(c);
    if (!box) continue;
    const x = (box.left + box.right) / 2, y = (box.top + box.bottom) / 2;
    const hit = document.elementFromPoint(x, y);
    if (hit && hit !== c && !c.contains(hit) && !(hit.closest && hit.closest("label") === c)) {
      out.covered.push(`${name(c)} is under ${name(hit)}`);
    }
  }
  return out;
}"""
