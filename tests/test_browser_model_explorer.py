"""passlab's Model Explorer export in the pinned app itself: the ``ai-edge-model-explorer``
package's own server on 127.0.0.1 (offline), Debian's Chromium through Playwright.

The file and both node-data overlays load through the app's URL (as ``model-explorer
graphs.json --node_data_paths ...`` opens them), the graph page shows the exported node
count, the overlays are listed with their values, and once every layer is expanded the
nodes are drawn in the overlay's colours. Takes docs/screenshots/model-explorer.png.
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
        page.locator(".expand-all").first.click()
        page.wait_for_timeout(3000)
        box = page.locator("canvas").first.bounding_box()
        shot = page.screenshot(clip=box, path=str(tmp_path / "graph.png"))
        import base64

        src = "data:image/png;base64," + base64.b64encode(shot).decode()
        assert page.evaluate(_ORANGE, src) > 200, "no node drawn in the overlay's colours"
        page.screenshot(path=str(SHOTS / "model-explorer.png"))
        assert not page.errors, page.errors
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
