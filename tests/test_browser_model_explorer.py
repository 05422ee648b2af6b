"""passlab's Model Explorer export in the pinned app itself: the ``ai-edge-model-explorer``
package's own server on 127.0.0.1 (offline), Debian's Chromium through Playwright.

The file and both node-data overlays load through the app's URL (as ``model-explorer
graphs.json --node_data_paths ...`` opens them), the graph page shows the exported node
count, the overlays are listed with their values, and once every layer is expanded the
nodes are drawn in the overlay's colours. Takes docs/screenshots/model-explorer.png.
The ONNX ResNet-18 of the corpus (weights as graph inputs), exported with its source
groups, opens as collapsible layers (``layer1/layer1.0``): checked through the app's
own UI state, its search and its layer info (docs/screenshots/model-explorer-groups*.png).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time

import pytest
from browser_helpers import SHOTS, _free_port, marks

import passlab

pytestmark = [*marks(), pytest.mark.skipif(
    __import__("importlib").util.find_spec("model_explorer") is None,
    reason="pip install 'passlab[model-explorer]'")]

# count the pixels of the graph area drawn in the overlay's high colour (#e8590c, orange)
# or near it: decoded in the page, since no image library is installed
_ORANGE = """async (src) => {
    const img = new Image(); img.src = src; await img.decode();
    const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
    for (let i = 0; i < d.length; i += 4)
        if (d[i] > 120 && d[i] - d[i + 2] > 60 && d[i] - d[i + 1] > 25) n++;
    return n; }"""

# count the pixels drawn within 8 of an RGB colour (here the selected layer's fill,
# (194, 231, 255), which covers a closed layer's box or an open layer's whole frame)
_NEAR = """async ([src, rgb]) => {
    const img = new Image(); img.src = src; await img.decode();
    const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
    for (let i = 0; i < d.length; i += 4)
        if (Math.abs(d[i] - rgb[0]) < 8 && Math.abs(d[i + 1] - rgb[1]) < 8
            && Math.abs(d[i + 2] - rgb[2]) < 8) n++;
    return n; }"""


def _selected_fill(page) -> int:
    """Pixels of the graph drawn in the selected layer's fill colour."""
    import base64

    shot = page.screenshot(clip=page.locator("webgl-renderer canvas").first.bounding_box())
    src = "data:image/png;base64," + base64.b64encode(shot).decode()
    return page.evaluate(_NEAR, [src, [194, 231, 255]])


def _serve(paths, port):
    """Start Model Explorer's server; return it and the URL it prints for the files."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_explorer", str(paths[0]),
         "--node_data_paths", ",".join(str(p) for p in paths[1:]),
         "--no_open_in_browser", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found: list[str] = []
    lines: list[str] = []

    def read():
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"(http://127\.0\.0\.1:\d+/\?data=\S+)", line)
            if m and not found:
                found.append(m.group(1))

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 90
    while not found and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not found:
        proc.kill()
        pytest.fail("model-explorer printed no URL:\n" + "".join(lines)[-2000:])
    return proc, found[0]


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_export_opens_in_model_explorer_with_its_overlays(tmp_path, resnet_build, new_page,
                                                          expect):
    paths = passlab.to_model_explorer(resnet_build.trace, tmp_path / "resnet.json")
    data = json.loads(paths[0].read_text())
    first = data["graphs"][0]
    overlay = json.loads(paths[1].read_text())[first["id"]]
    proc, url = _serve(paths, _free_port())
    try:
        page = new_page(height=900)
        page.goto(url)
        info = page.locator("text=op node count").first
        expect(info).to_be_visible(timeout=90_000)
        # the model list of the landing page marks a file it cannot read "Error"
        assert page.get_by_text("Error", exact=True).count() == 0
        body = page.inner_text("body")
        assert re.search(rf"op node count\s+{len(first['nodes'])}\b", body), body[:600]
        assert "resnet" in body and first["id"] in body
        for name in ("bytes_out: bytes of the tensors each node produces",
                     "bytes_in: bytes of the tensors each node reads"):
            expect(page.get_by_text(name).first).to_be_visible()
        # the node-data table lists the input's bytes as exported
        x_bytes = int(overlay["results"]["x"]["value"])
        assert str(x_bytes) in body
        # a model without source groups has every node at the graph's root, and the app
        # fits the whole (tall) graph into view: locate one operator (alt+click in the
        # search results) so that the app zooms to where the nodes can be seen
        kernel = next(n for n in first["nodes"] if n["id"] in overlay["results"]
                      and n["attrs"][0]["value"] not in ("input", "weight", "constant"))
        page.locator("search-bar input").fill(f"^{re.escape(kernel['label'])}$")
        hit = page.locator(f"mat-tree-node[data-id={json.dumps(kernel['id'])}]")
        expect(hit).to_have_count(1)
        hit.click(modifiers=["Alt"])
        page.wait_for_function(f"() => ({_UI_STATE})().selectedNodeId === "
                               f"{json.dumps(kernel['id'])}")
        page.locator("search-bar input").fill("")
        page.keyboard.press("Escape")
        page.wait_for_timeout(1500)  # the pan and zoom settle
        box = page.locator("canvas").first.bounding_box()
        shot = page.screenshot(clip=box, path=str(tmp_path / "graph.png"))
        import base64

        src = "data:image/png;base64," + base64.b64encode(shot).decode()
        assert page.evaluate(_ORANGE, src) > 200, "no node drawn in the overlay's colours"
        page.screenshot(path=str(SHOTS / "model-explorer.png"))
        assert not page.errors, page.errors
    finally:
        _stop(proc)


# the app's own state, which it writes into the page's URL as it changes: the deepest
# groups drawn open and the node selected (group nodes are "<namespace>___group___")
_UI_STATE = """() => JSON.parse(new URL(location.href).searchParams.get('data'))
    .uiState.paneStates[0]"""


def _group(namespace: str) -> str:
    return f"{namespace}___group___"


def test_onnx_resnet18_namespaces_are_collapsible_groups_in_model_explorer(
        tmp_path, new_page, expect):
    """The FuseTIR graph of an ONNX ResNet-18 whose weights are graph inputs, exported with
    its source groups: the app opens on the stages (``layer1`` ... ``layer4``), each one
    closed layer at the graph's root beside the stem and the head (the graph is the
    function: no layer wraps it), and opening ``layer1`` draws its two blocks
    ``layer1.0`` and ``layer1.1``, closed. Takes
    docs/screenshots/model-explorer-groups.png (the stages closed) and
    model-explorer-groups-open.png (layer1 open)."""
    import corpus

    if not (corpus.TORCHVISION_DIR / "torchvision").is_dir():
        pytest.skip(f"no torchvision in {corpus.TORCHVISION_DIR}: `make` installs it")
    pytest.importorskip("onnxruntime", reason="needs passlab[onnx]")
    trace = corpus.build("onnx_resnet18").build.trace
    paths = passlab.to_model_explorer(trace, tmp_path / "resnet18.json", steps=["FuseTIR"])
    graph = json.loads(paths[0].read_text())["graphs"][0]
    spaces = [n["namespace"] for n in graph["nodes"]]
    # every path the nodes sit under is one layer of the app: 4 stages, 8 blocks
    layers = {"/".join(s.split("/")[:i + 1]) for s in spaces if s
              for i in range(s.count("/") + 1)}
    stages = sorted(p for p in layers if "/" not in p)
    assert stages == ["layer1", "layer2", "layer3", "layer4"]
    blocks = sorted(p for p in layers if p.startswith("layer1/"))
    assert blocks == ["layer1/layer1.0", "layer1/layer1.1"]
    in_layer1 = sum(s.startswith("layer1/") for s in spaces) + len(blocks)
    assert not any(n["id"].startswith("onnx::") for n in graph["nodes"])  # no weight node
    proc, url = _serve(paths, _free_port())
    try:
        page = new_page(height=900)
        page.goto(url)
        expect(page.locator("text=op node count").first).to_be_visible(timeout=90_000)
        assert page.get_by_text("Error", exact=True).count() == 0
        body = page.inner_text("body")
        assert re.search(rf"op node count\s+{len(graph['nodes'])}\b", body), body[:600]
        assert re.search(rf"layer count\s+{len(layers)}\b", body), body[:600]
        # it opens with every layer closed: the four stages are root-level nodes, beside
        # the nodes of the stem and the head
        state = page.evaluate(_UI_STATE)
        assert state["deepestExpandedGroupNodeIds"] == [], state
        roots = body.split("Root-level nodes stats")[1].split("Node data")[0]
        names = [name for _, name in re.findall(r"^(\d+)\t(\S+)\t", roots, re.M)]
        assert set(stages) <= set(names) and len(names) > len(stages), roots
        # the app's search finds the four stages as layers (group nodes)
        page.locator("search-bar input").fill(r"^layer\d$")
        found = page.locator("mat-tree-node[data-id$='___group___']")
        expect(found).to_have_count(4)
        assert sorted(found.evaluate_all("els => els.map(e => e.dataset.id)")) == [
            _group(s) for s in stages]
        # alt+click: locate and select layer1, at the root, still closed
        found.filter(has_text="layer1").click(modifiers=["Alt"])
        page.wait_for_function(f"() => ({_UI_STATE})().selectedNodeId === "
                               f"{_group('layer1')!r}")
        state = page.evaluate(_UI_STATE)
        assert state["deepestExpandedGroupNodeIds"] == [], state
        info = page.locator("info-panel")
        expect(info).to_contain_text(re.compile("layer info", re.I))
        text = info.inner_text()
        assert re.search(r"name\s+layer1\s+(?:namespace\s+\S*\s+)?#children\s+2\s+"
                         rf"#descendants\s+{in_layer1}\b", text), text[:400]
        assert re.search(r"0\s+layer1\.0\s.*\n1\s+layer1\.1\s", text), text[:1200]
        page.locator("search-bar input").fill("")
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)  # the pan to layer1 settles
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "model-explorer-groups.png"))
        closed = _selected_fill(page)
        # a double click on layer1 (located at the canvas' centre) opens it: its blocks drawn
        box = page.locator("webgl-renderer canvas").first.bounding_box()
        page.mouse.dblclick(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function(f"() => ({_UI_STATE})().deepestExpandedGroupNodeIds"
                               f".includes({_group('layer1')!r})")
        state = page.evaluate(_UI_STATE)
        assert state["deepestExpandedGroupNodeIds"] == [_group("layer1")], state
        page.wait_for_timeout(1000)
        page.screenshot(path=str(SHOTS / "model-explorer-groups-open.png"))
        # drawn open: the selected layer's fill grows from its box to a frame holding two
        # (3,100 -> 31,900 pixels at 1400 x 900)
        opened = _selected_fill(page)
        assert closed < 8000 and opened > 3 * closed, (closed, opened)
        assert page.get_by_text("Error", exact=True).count() == 0
        assert page.locator("mat-snack-bar-container").count() == 0
        assert not page.errors, page.errors
    finally:
        _stop(proc)
