"""Notebooks exported to one HTML file keep their widgets, offline.

A small notebook showing an Explorer is executed once (nbclient, widget state saved) and
exported; the page is checked for its structure, and then opened from a file:// URL in
headless Chromium with every other request aborted.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs the 'notebook' extra")
nbclient = pytest.importorskip("nbclient", reason="needs the 'notebook' extra")
pytest.importorskip("nbconvert", reason="needs the 'notebook' extra")
pytest.importorskip("ipykernel", reason="needs the 'notebook' extra")
pytest.importorskip("anywidget", reason="needs the 'notebook' extra")

from browser_helpers import missing  # noqa: E402

from passlab.cli import main  # noqa: E402
from passlab.views._embed import decode_block  # noqa: E402
from passlab.views.export import export_notebook, script_text  # noqa: E402

STATIC = Path(__file__).resolve().parent.parent / "passlab" / "views" / "static"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SOURCE = "import passlab\npasslab.Explorer(passlab.build(passlab.models.mlp()).trace)"


def _notebook(folder: Path, name: str, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = folder / name
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> Path:
    """explorer.ipynb, executed by nbclient with its widget state saved."""
    folder = tmp_path_factory.mktemp("export")
    path = _notebook(folder, "explorer.ipynb", SOURCE)
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                            store_widget_state=True,
                            resources={"metadata": {"path": str(folder)}}).execute()
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def page_html(executed) -> Path:
    return export_notebook(executed, executed.parent / "out" / "explorer.html")


class _Scripts(HTMLParser):
    """Every <script>'s attributes and text, and every <link>'s attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self.links: list[dict] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))
        elif tag == "link":
            self.links.append(dict(attrs))

    def handle_data(self, data):
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


def _parse(path: Path) -> _Scripts:
    parser = _Scripts()
    parser.feed(path.read_text("utf-8"))
    return parser


def test_page_loads_nothing_from_the_network(page_html):
    page = _parse(page_html)
    assert [attrs for attrs, _ in page.scripts if "src" in attrs] == []
    assert [attrs for attrs in page.links if "href" in attrs] == []
    text = page_html.read_text("utf-8")
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com", "mathjax"):
        assert cdn not in text.lower()
    # ~1.35 MB of JavaScript, plus the notebook
    assert 1_300_000 < len(text.encode()) < 2_500_000


def test_page_carries_the_widget_javascript(page_html):
    page = _parse(page_html)
    types = [attrs.get("type") for attrs, _ in page.scripts]
    assert types.count(WIDGET_STATE) == 1 and types.count(WIDGET_VIEW) == 1
    inline = [text for attrs, text in page.scripts if "type" not in attrs]
    require_js = (STATIC / "widgets" / "require.js").read_text("utf-8")
    anywidget_js = (STATIC / "widgets" / "anywidget.js").read_text("utf-8")
    assert inline[0] == require_js
    # the same module, named so that the renderer's loader finds it before a CDN
    assert inline[1] == anywidget_js.replace(
        'define(["@jupyter-widgets/base"], widget_default);',
        'define("anywidget", ["@jupyter-widgets/base"], widget_default);')
    assert "DecompressionStream" in inline[2]
    [(attrs, payload)] = [(a, t) for a, t in page.scripts
                          if a.get("id") == "passlab-widget-renderer"]
    assert attrs["data-encoding"] == "gzip+base64"
    assert decode_block(payload, attrs["data-encoding"]) == (
        STATIC / "widgets" / "embed-amd.js").read_text("utf-8")


def test_page_holds_the_explorer_state_with_its_module(page_html):
    page = _parse(page_html)
    [state] = [json.loads(t) for a, t in page.scripts if a.get("type") == WIDGET_STATE]
    [view] = [json.loads(t) for a, t in page.scripts if a.get("type") == WIDGET_VIEW]
    model = state["state"][view["model_id"]]
    assert (model["model_module"], model["model_name"]) == ("anywidget", "AnyModel")
    from passlab.views.explorer import JS_PARTS, bundle

    assert model["state"]["_esm"] == bundle(JS_PARTS)
    assert model["state"]["summary"].startswith("Trace of 96 pass calls")
    assert "LegalizeOps" in model["state"]["diff_html"]
    assert "<title>explorer</title>" in page_html.read_text("utf-8")


def test_script_text_cannot_close_its_element():
    assert script_text('s = "</script><!-- </SCRIPT>";') == (
        's = "<\\/script>\\x3c!-- <\\/SCRIPT>";')


def test_warns_about_widgets_it_cannot_render(executed, tmp_path):
    nb = nbformat.read(executed, as_version=4)
    state = nb.metadata.widgets[WIDGET_STATE]["state"]
    explorer = next(m for m in state.values() if m["model_module"] == "anywidget")
    del explorer["state"]["_esm"]  # as with drop_defaults=True
    state["x"] = {"model_module": "bqplot", "model_module_version": "^0.5",
                  "model_name": "FigureModel", "state": {}}
    path = tmp_path / "stripped.ipynb"
    nbformat.write(nb, path)
    with pytest.warns(UserWarning) as seen:
        export_notebook(path, tmp_path / "stripped.html")
    messages = sorted(str(w.message) for w in seen)
    assert len(messages) == 2
    assert messages[0].startswith("stripped.ipynb: the saved state of anywidget(s) ")
    assert "has no ES module (_esm)" in messages[0]
    assert messages[1] == ("stripped.ipynb: widget modules bqplot are not shipped with "
                           "passlab; the page loads them from cdn.jsdelivr.net and, offline, "
                           "does not render those widgets")


def test_cli_executes_and_exports(tmp_path, capsys):
    path = _notebook(tmp_path, "sums.ipynb", "print(20 + 22)")
    assert main(["export", str(path), "--execute"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {tmp_path / 'sums.html'} (") and "render offline" in out
    assert "<pre>42\n</pre>" in (tmp_path / "sums.html").read_text("utf-8")
    # the notebook itself is left as it was
    assert nbformat.read(path, as_version=4).cells[0].outputs == []


def test_cli_reports_a_failing_cell_and_a_missing_notebook(tmp_path, capsys):
    path = _notebook(tmp_path, "fails.ipynb", "1 / 0")
    assert main(["export", str(path), "--execute", "-o", str(tmp_path / "f.html")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"passlab: error: a cell of {path} failed:\n")
    assert "ZeroDivisionError" in err
    assert not (tmp_path / "f.html").exists()
    assert main(["export", str(tmp_path / "nope.ipynb")]) == 2
    assert capsys.readouterr().err == f"passlab: error: no notebook at {tmp_path / 'nope.ipynb'}\n"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_exported_explorer_renders_offline(page_html, page):
    from playwright.sync_api import expect

    blocked: list[str] = []

    def only_files(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.goto(page_html.as_uri())
    widget = page.locator(".jp-OutputArea-output .plx")
    expect(widget).to_have_count(1, timeout=30_000)
    label = widget.locator(".plx-row .plx-label", has_text=re.compile(r"^FuseOps$"))
    expect(label).to_be_visible(timeout=30_000)
    expect(widget.locator(".plx-summary")).to_contain_text("Trace of 96 pass calls")
    expect(widget.locator(".plx-count")).to_have_text("71 of 71 passes")
    expect(widget.locator(".plx-pane-diff")).to_contain_text("LegalizeOps: ")
    expect(page.get_by_text("[anywidget] Failed")).to_have_count(0)
    # no kernel behind a static page: a click says so instead of waiting silently
    expect(widget.locator(".plx-no-kernel")).to_be_hidden()
    label.click()
    expect(widget.locator(".plx-no-kernel")).to_be_visible(timeout=10_000)
    expect(widget.locator(".plx-no-kernel")).to_contain_text("In an exported page there is none")
    assert page.errors == []
    assert blocked == []
