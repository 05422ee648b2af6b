"""The static HTML report: structure and content of the file, escaping, failures, the CLI.

The HTML is parsed with ``html.parser``; diffs and snapshots sit in JSON data blocks
(large ones gzip+base64), which the tests decode the way the page does.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import pytest

import passlab
from passlab import cli
from passlab.views import _embed, _snapshots, write_report

HOSTILE_PASS = "<script>x</script>"
HOSTILE_ATTR = "<script>alert(1)</script>"
FAILING_PASS = "<b>boom</b>"

# A hand-made module with one Relax function, which a user pass marks with a hostile string.
SCRIPT = """
from tvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        with R.dataflow():
            z = R.add(x, y)
            w = R.multiply(z, y)
            R.output(w)
        return w
"""

TIR_ONLY = """
from tvm.script import ir as I, tir as T

@I.ir_module
class Module:
    @T.prim_func
    def add_one(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            b[i] = a[i] + T.float32(1)
"""


class _Page(HTMLParser):
    """Rows of the pass list, data blocks and every element's attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict[str, str]] = []
        self.blocks: dict[str, str] = {}
        self.attrs: list[tuple[str, dict[str, str]]] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self._block: tuple[str, str | None] | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.attrs.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "tr" and "data-i" in a:
            self.rows.append(a)
        if tag == "script" and a.get("type") == "application/json":
            self._block = (a["id"], a.get("data-encoding"))

    def handle_data(self, data):
        if self._block is not None:
            block_id, encoding = self._block
            self.blocks[block_id] = _embed.decode_block(data, encoding)
            self._block = None
        else:
            self.text.append(data)


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def _mark(mod):
    """A user pass that puts a hostile string into the IR (a function attribute)."""
    import tvm

    funcs = dict(mod.functions_items())
    gv = mod.get_global_var("main")
    funcs[gv] = funcs[gv].with_attr("note", HOSTILE_ATTR)
    return tvm.IRModule(funcs, attrs=mod.attrs)


def _boom(mod):
    raise ValueError(f"broken on purpose: {HOSTILE_ATTR}")


@pytest.fixture(scope="module")
def mlp_report(mlp_build, tmp_path_factory) -> tuple[passlab.Trace, str, _Page]:
    path = write_report(mlp_build.trace, tmp_path_factory.mktemp("r") / "mlp.html")
    text = path.read_text("utf-8")
    return mlp_build.trace, text, parse(text)


@pytest.fixture(scope="module")
def failed_report(tmp_path_factory) -> tuple[passlab.Trace, str, _Page]:
    pipe = (passlab.Pipeline.default("llvm")
            .insert(_mark, after="legalize", name=HOSTILE_PASS)
            .insert(_boom, after="CallTIRRewrite", name=FAILING_PASS))
    with pytest.raises(passlab.BuildError) as info:
        passlab.build(SCRIPT, pipe)
    trace = info.value.trace
    path = write_report(trace, tmp_path_factory.mktemp("r") / "failed.html", title=HOSTILE_PASS)
    text = path.read_text("utf-8")
    return trace, text, parse(text)


# --------------------------------------------------------------------------- content
def test_write_report_returns_the_path_and_to_html_writes_it(mlp_build, tmp_path):
    out = write_report(mlp_build.trace, tmp_path / "sub" / "r.html")
    assert out == tmp_path / "sub" / "r.html" and out.stat().st_size > 0
    assert mlp_build.trace.write_report(tmp_path / "w.html", title="T") == tmp_path / "w.html"
    assert "<title>T</title>" in (tmp_path / "w.html").read_text("utf-8")
    # the old form still writes the report, with a DeprecationWarning naming the new one
    with pytest.warns(DeprecationWarning, match=r"use Trace\.write_report\(path\)"):
        assert mlp_build.trace.to_html(tmp_path / "t.html") == tmp_path / "t.html"
    stamp = re.compile(r"\d\d:\d\d:\d\d")  # the page says when it was written
    assert (stamp.sub("", (tmp_path / "t.html").read_text("utf-8"))
            == stamp.sub("", out.read_text("utf-8")))
    # to_html() with no path is the pass table's HTML, no file written
    assert mlp_build.trace.to_html().startswith('<style>') and '<table class="passlab-table">' in mlp_build.trace.to_html()


def test_pass_list_has_every_main_chain_pass(mlp_report):
    trace, _, page = mlp_report
    main = [s.label for s in trace if s.kind == "pass"]
    listed = [r["data-name"] for r in page.rows if r["data-main"] == "1"]
    assert listed == main
    assert len(page.rows) == len(trace)  # inner and wrapper steps too, hidden by default
    assert {r["data-kind"] for r in page.rows if r["data-main"] == "0"} == {"container", "inner"}


def test_changed_passes_have_diffs_and_unchanged_ones_say_no_change(mlp_report):
    trace, text, page = mlp_report
    changed = [s for s in trace if s.kind == "pass" and s.changed]
    # one block per layout (the page's side by side / unified toggle)
    assert ({f"pl-{kind}-{s.index}" for s in changed for kind in ("diff", "udiff")}
            == {k for k in page.blocks if "diff" in k})
    fuse = trace.find("FuseOps")
    diff_html = page.blocks[f"pl-diff-{fuse.index}"]
    assert "<b>FuseOps</b>" in diff_html and "fused_matmul_add_relu" in diff_html
    unified = page.blocks[f"pl-udiff-{fuse.index}"]
    assert 'class="pl-t pl-unified"' in unified and 'class="pl-t pl-sbs"' not in unified
    assert 'class="pl-t pl-sbs"' in diff_html
    # both open on the change: the decorator, signature and func_attr fold
    for block in (diff_html, unified):
        assert block.count('aria-label="show 3 unchanged lines">') == 1
    row = next(r for r in page.rows if r["data-name"] == "FoldConstant")
    assert row["data-changed"] == "0" and row["data-diff"] == "0" and "same" in row["class"]
    assert re.search(r'<tr id="step-9" [^>]*>.*?<td>no change</td>', text)


def test_key_snapshots_have_a_graph_or_its_fallback_and_buffers(mlp_report):
    _, _, page = mlp_report
    assert {"snap-fusion", "snap-calltir", "snap-memplan"} <= page.ids
    for key in ("fusion", "calltir", "memplan"):
        body = page.blocks[f"pl-snap-{key}"]
        assert "<svg" in body or _snapshots.NO_LAYOUT_NOTE in body
        assert "fused graph of forward" in body and "buffers of forward" in body


def test_graph_falls_back_to_a_table_without_a_layout_program(mlp_build, monkeypatch):
    monkeypatch.setattr(_snapshots, "layout_program", lambda: None)
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    page = parse(passlab.views.report.render_report(mlp_build.trace))
    body = page.blocks["pl-snap-fusion"]
    graph, bufs = body.split("<h3>Buffers</h3>")
    assert "<svg" not in graph and 'class="passlab-bufplot"' in bufs  # the buffer picture
    #   is hand-written SVG: it needs no layout program
    assert "or the pip package graphviz-pure for pictures" in body
    assert "<table" in body and "fused_matmul_add_relu" in body


@pytest.mark.skipif(_snapshots.layout_program() is None, reason="no dot or graphviz-pure")
def test_graph_is_an_inline_svg_with_a_layout_program(mlp_report):
    body = mlp_report[2].blocks["pl-snap-fusion"].split("<h3>Buffers</h3>")[0]
    shown, hidden = body.split('<template class="pl-weights-svg">')
    assert shown.count("<svg") == 1 and hidden.count("<svg") == 1
    assert "<?xml" not in body and "<!DOCTYPE" not in body and "xmlns" not in body


@pytest.mark.skipif(_snapshots.layout_program() is None, reason="no dot or graphviz-pure")
def test_report_graphs_fold_weights_with_a_button_to_show_them(mlp_report):
    body = mlp_report[2].blocks["pl-snap-fusion"].split("<h3>Buffers</h3>")[0]
    shown, hidden = body.split('<template class="pl-weights-svg">')
    assert '<button type="button" class="pl-weights" aria-pressed="false">show weights' in shown
    # the weights are drawn only in the graph the button swaps in
    assert "fc1.weight" not in shown
    assert "<title>fc1.weight</title>" in hidden


def test_pipeline_table_and_header(mlp_report):
    trace, text, page = mlp_report
    assert "pl-pipeline" in page.ids and "TVM&#x27;s default pipeline, unedited" in text
    assert "<title>passlab report</title>" in text
    assert "26 of 71 main-chain passes changed the module" in text
    assert len([s for s in trace if s.kind == "pass" and s.changed]) == 26


def test_self_contained_no_network_resources(mlp_report, failed_report):
    for _, text, page in (mlp_report, failed_report):
        for tag, attrs in page.attrs:
            for key in ("src", "href"):
                assert not re.match(r"\s*(https?:)?//", attrs.get(key, "")), (tag, attrs)
            assert not (tag == "script" and "src" in attrs)
            assert tag != "link"
        for body in [text, *page.blocks.values()]:
            assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", body)
            assert "@import" not in body and "url(" not in body


# --------------------------------------------------------------------------- escaping
def test_hostile_strings_are_escaped_everywhere(failed_report):
    trace, text, page = failed_report
    assert trace.find(HOSTILE_PASS).changed
    for body in [text, *page.blocks.values()]:
        assert HOSTILE_PASS not in body and HOSTILE_ATTR not in body and FAILING_PASS not in body
    assert "&lt;script&gt;x&lt;/script&gt;" in text  # the pass list, pipeline and title
    assert f"<title>{'&lt;script&gt;x&lt;/script&gt;'}</title>" in text
    assert [r["data-name"] for r in page.rows if r["data-origin"] == "user"] == [
        HOSTILE_PASS, FAILING_PASS]
    step = trace.find(HOSTILE_PASS)
    diff_html = page.blocks[f"pl-diff-{step.index}"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in diff_html
    # The only script elements are the data blocks and the page's own code.
    assert text.count("<script") == text.count("</script>") == len(page.blocks) + 1


def test_json_in_script_cannot_close_the_element():
    text = _embed.json_for_script("a</script><!--b")
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == "a</script><!--b"


def test_large_blocks_are_compressed_and_round_trip():
    html = "<p>" + "x &lt; y</p><p>" * 5000
    block = _embed.data_block("b", html)
    assert 'data-encoding="gzip+base64"' in block and len(block) < len(html) / 10
    assert parse(block).blocks["b"] == html
    small = _embed.data_block("s", "</script>")
    assert "</script>" not in small[:-len("</script>")] and parse(small).blocks["s"] == "</script>"


# ---------------------------------------------------------------- failures and edges
def test_failure_panel_highlights_the_failing_pass(failed_report):
    trace, text, page = failed_report
    assert "pl-failure" in page.ids
    failing = [r for r in page.rows if "failing" in r["class"]]
    assert [r["data-name"] for r in failing] == [FAILING_PASS]
    assert failing[0]["data-i"] == str(trace.failure.step.index)
    assert re.search(r'<pre class="pl-fail-msg">ValueError: broken on purpose: '
                     r"&lt;script&gt;alert\(1\)&lt;/script&gt;</pre>", text)
    assert f'data-step="{trace.failure.step.index}"' in text  # "show the failing pass"
    # Passes before the failure keep their diffs and snapshots.
    assert f"pl-diff-{trace.find('FuseOps').index}" in page.blocks
    assert "pl-snap-calltir" in page.blocks and "pl-snap-memplan" not in page.blocks


def test_empty_trace_says_so(tmp_path):
    text = write_report(passlab.Trace([]), tmp_path / "empty.html").read_text()
    page = parse(text)
    assert page.rows == [] and not page.blocks
    assert "This trace is empty: no pass was recorded" in text
    assert "No snapshot: no main-chain pass finished" in text
    assert "No pipeline was recorded with this trace" in text


def test_a_module_without_relax_functions_says_so(tmp_path):
    trace = passlab.build(TIR_ONLY).trace
    page = parse(write_report(trace, tmp_path / "tir.html").read_text())
    body = page.blocks["pl-snap-fusion"]
    assert "has no Relax function (1 TIR PrimFunc only)" in body
    assert "passlab-error" not in body


def test_analysis_errors_become_a_short_panel(mlp_build, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("analysis <b>down</b>")

    monkeypatch.setattr(_snapshots, "fused_graph", broken)
    monkeypatch.setattr(_snapshots, "buffers", broken)
    page = parse(passlab.views.report.render_report(mlp_build.trace))
    body = page.blocks["pl-snap-fusion"]
    assert "could not display the fused graph: RuntimeError: analysis &lt;b&gt;down&lt;/b&gt;" in body
    assert "could not display the buffer table" in body


# ------------------------------------------------------------------------------- CLI
def test_cli_report_writes_the_file(tmp_path, capsys):
    out = tmp_path / "mlp.html"
    assert cli.main(["report", "mlp", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.exists() and f"wrote {out} (" in printed and " KB)" in printed
    assert re.search(r"recorded \d+ pass calls in [\d.]+ s; wrote the report in [\d.]+ s", printed)
    assert "<title>mlp (fused, llvm)</title>" in out.read_text()


def test_cli_report_inserts_a_user_pass(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_report_passes.py").write_text("def count(mod):\n    return mod\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "r.html"
    spec = "my_report_passes:count@after=legalize"
    assert cli.main(["report", "mlp", "--insert", spec, "-o", str(out)]) == 0
    text = out.read_text()
    assert "+ user: inserted after legalize" in text
    assert any(r["data-name"] == "count" and r["data-origin"] == "user" for r in parse(text).rows)


@pytest.mark.parametrize("args, message", [
    (["--insert", "nocolon"], "--insert 'nocolon' is not of the form module:function@after="),
    (["--insert", "no_such_mod_xyz:f@after=legalize"],
     "cannot import module 'no_such_mod_xyz': ModuleNotFoundError"),
    (["--insert", "os:no_such_fn@before=FuseOps"], "'os' has no attribute 'no_such_fn'"),
    (["--insert", "os:getcwd@after=legalise"], "unknown pass or stage 'legalise'; did you mean"),
])
def test_cli_report_errors_are_one_line_and_exit_2(args, message, tmp_path, capsys):
    out = tmp_path / "x.html"
    assert cli.main(["report", "mlp", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passlab: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_cli_report_unknown_model(tmp_path, capsys):
    assert cli.main(["report", "mpl", "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err == (
        "passlab: error: unknown model 'mpl'; did you mean 'mlp'? Known model names: "
        f"{', '.join(passlab.models.NAMES)}. A model is a built-in name or the path of a "
        ".onnx, .pt2, .py file.\n")


def test_cli_report_of_a_failing_build_still_writes_it(tmp_path, capsys):
    out = tmp_path / "f.html"
    assert cli.main(["report", "mlp", "--insert", "os:getcwd@before=FuseOps",
                     "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "passlab: build failed: pass 'getcwd'" in captured.err
    assert 'id="pl-failure"' in out.read_text()


def test_cli_passes_still_works(capsys):
    assert cli.main(["passes"]) == 0
    assert "FuseOps" in capsys.readouterr().out


# --------------------------------------------------------------------------- browser
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_report_in_a_real_browser(failed_report, mlp_build, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    if _chromium() is None:
        pytest.skip("no chromium on PATH")
    # Compress every block so that the browser's gzip path is exercised too.
    path = tmp_path / "r.html"
    original = _embed.COMPRESS_OVER
    try:
        _embed.COMPRESS_OVER = 0
        write_report(mlp_build.trace, path)
    finally:
        _embed.COMPRESS_OVER = original
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        page = browser.new_page()
        errors: list[str] = []
        requests: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        selected = lambda: page.eval_on_selector("tr.selected", "e => e.dataset.name")  # noqa: E731
        assert selected() == "LegalizeOps"  # the first pass with a diff
        page.wait_for_selector("#pl-detail .passlab-diff")
        page.keyboard.press("ArrowDown")
        assert selected() == "AnnotateTIROpPattern"
        page.keyboard.press("j")
        assert selected() == "FoldConstant"
        assert "No change" in page.inner_text("#pl-detail")
        page.check("#pl-changed")
        page.fill("#pl-search", "fuse")
        assert page.inner_text("#pl-count") == f"2 of {len(mlp_build.trace)} steps shown"
        page.click("#step-10")
        page.wait_for_selector("#pl-detail .passlab-diff")
        assert "FuseOps" in page.inner_text("#pl-detail")
        page.click("#snap-fusion > summary")
        page.wait_for_selector("#snap-fusion .pl-slot h3")
        assert "Buffers" in page.inner_text("#snap-fusion")
        # The failed build: the failing pass is selected and shows its error as text.
        failed = tmp_path / "failed.html"
        failed.write_text(failed_report[1], "utf-8")
        page.goto(failed.as_uri())
        assert selected() == FAILING_PASS
        assert "broken on purpose: " + HOSTILE_ATTR in page.inner_text("#pl-detail")
        index = failed_report[0].failure.step.index
        assert page.inner_text(f"#step-{index} .pl-name") == FAILING_PASS
        assert page.evaluate("document.title") == HOSTILE_PASS
        browser.close()
    assert errors == []
    assert all(u.startswith("file:") for u in requests)


def test_report_caps_functions_per_diff_and_names_the_rest(mlp_build, tmp_path, capsys):
    from passlab.views.report import render_report

    legal = mlp_build.trace.find("LegalizeOps")  # 8 changed functions
    capped = parse(render_report(mlp_build.trace, max_functions=3)).blocks[f"pl-diff-{legal.index}"]
    assert "shown 3 of 8 changed functions; not printed: " in capped
    assert capped.count('class="pl-status"') == 3
    full = parse(render_report(mlp_build.trace, max_functions=None)).blocks[f"pl-diff-{legal.index}"]
    assert "shown" not in full and full.count('class="pl-status"') == 8
    assert cli.main(["report", "mlp", "--all-functions", "-o", str(tmp_path / "a.html")]) == 0
    assert "wrote " in capsys.readouterr().out
