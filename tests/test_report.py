"""The static HTML report: structure and content of the file, escaping, failures, the CLI.

The page is the Explorer's front end over a static model: the HTML is parsed with
``html.parser``, and the state and the panes the report keeps (JSON data blocks, large
ones gzip+base64) are decoded the way the page does (``_report_state.read_report``).
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

import passlab
from passlab import cli
from passlab.views import _embed, _snapshots, write_report
from passlab.views._report_state import read_report

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
    """Every element's attributes and ids, the page's text outside scripts, and the
    report's data (``data``: state, block keys, notes) and kept panes (``panes``: text by
    key), decoded the way the page does."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, dict[str, str]]] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.scripts = 0
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.attrs.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "script":
            self.scripts += 1
            self._in_script = True

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if not self._in_script:
            self.text.append(data)

    @property
    def rows(self) -> list[dict]:
        return self.data["state"]["steps"]

    @property
    def state(self) -> dict:
        return self.data["state"]


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.data, page.panes = read_report(text) if 'id="plx-data"' in text else ({}, {})
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
    from passlab.recording.numbering import name_of

    main = [name_of(s, trace) for s in trace if s.kind == "pass"]  # as every pane names them
    assert [r["label"] for r in page.rows if r["kind"] == "pass"] == main
    assert len(page.rows) == len(trace)  # inner and wrapper steps too, hidden by default
    assert {r["kind"] for r in page.rows if r["kind"] != "pass"} == {"container", "inner"}
    # the list opens on the main chain, as the Explorer's does
    assert page.state["visible"] == [s.index for s in trace if s.kind == "pass"]
    assert page.state["selected"] == trace.find("LegalizeOps").index  # first change
    assert 'id="plx-root"' in mlp_report[1]


def test_changed_passes_have_diffs_and_unchanged_ones_say_no_change(mlp_report):
    trace, _, page = mlp_report
    changed = [s for s in trace if s.kind == "pass" and s.changed]
    # one pane per pass, side by side: the page makes the unified layout from it
    # (static/report/unified.js; tests/test_browser_report.py compares it with Python's)
    assert ({f"diff:{s.index}:side-by-side" for s in changed}
            == {k for k in page.panes if k.startswith("diff:")})
    fuse = trace.find("FuseOps")
    diff_html = page.panes[f"diff:{fuse.index}:side-by-side"]
    assert "<b>FuseOps</b>" in diff_html and "fused_matmul_add_relu" in diff_html
    # token colours are the page's (plx-untokenized), the functions anchored for the
    # pane's function list
    assert diff_html.startswith('<div class="plx-untokenized">') and 'id="plx-diff-' in diff_html
    assert 'class="pl-t pl-sbs"' in diff_html and 'class="pl-t pl-unified"' not in diff_html
    # it opens on the change: the decorator, signature and func_attr fold
    assert diff_html.count('aria-label="show 3 unchanged lines">') == 1
    # a small diff is whole: no first-screen note
    assert "plx-first-screen" not in diff_html
    row = next(r for r in page.rows if r["label"] == "FoldConstant")
    assert row["changed"] is False and f"diff:{row['i']}:side-by-side" not in page.panes
    # the page's model then says "No change" (tests/test_browser_report.py)
    model_js = Path(passlab.views.__file__).parent / "static" / "report" / "model.js"
    assert "No change: the module after this pass" in model_js.read_text("utf-8")


def _snap(trace, name):
    return trace.find(name).index


def test_key_snapshots_have_a_graph_or_its_fallback_and_buffers(mlp_report):
    trace, _, page = mlp_report
    for name in ("FuseTIR", "CallTIRRewrite", "StaticPlanBlockMemory"):
        i = _snap(trace, name)
        graph, bufs = page.panes[f"graph:{i}:collapse:none"], page.panes[f"buffers:{i}"]
        assert "<svg" in graph or "the graph is shown as a table" in graph
        assert "fused graph of forward" in graph and "buffers of forward" in bufs
    # the kernel panels of the graph after fusion (a kernel's links cost a buffer
    # analysis each); the later graphs' nodes fall back to them (kernels:default)
    fused = _snap(trace, "FuseTIR")
    kernels = json.loads(page.panes[f"kernels:{fused}:collapse"])  # node id -> panel
    assert any(k[0] == "TIR of fused_matmul_add_relu (after #6 FuseTIR)" for k in kernels.values())
    assert [k for k in page.panes if k.startswith("kernels:")] == [
        f"kernels:{fused}:collapse", "kernels:default"]
    assert page.data["blocks"]["kernels:default"] == page.data["blocks"][f"kernels:{fused}:collapse"]
    # the graph after fusion is kept with its overlays; only these graphs are kept
    assert {k for k in page.panes if k.startswith(f"graph:{fused}:")} == {
        f"graph:{fused}:{p}" for p in ("collapse:none", "collapse:bytes", "collapse:flops",
                                       "show:none")}
    assert len({k.split(":")[1] for k in page.panes if k.startswith("graph:")}) == 3


def test_graph_marks_and_kernel_panel_come_from_the_explorer_panes(mlp_report):
    from passlab.views.explorer_panes import PaneRenderer

    trace, _, page = mlp_report
    fused = _snap(trace, "FuseTIR")
    from passlab.views._report_state import _inline_svg

    assert page.panes[f"graph:{fused}:collapse:none"] == _inline_svg(
        PaneRenderer(trace).pane("graph", fused))
    assert "Against #5 FuseOps" in page.panes[f"graph:{fused}:collapse:none"]  # change marks
    [(title, tir, links, code_title, code)] = [k for k in json.loads(
        page.panes[f"kernels:{fused}:collapse"]).values() if "fused_matmul_add_relu" in k[0]]
    assert title == "TIR of fused_matmul_add_relu (after #6 FuseTIR)"
    assert "def fused_matmul_add_relu(" in tir
    assert "plx-step-link" in links and code_title.startswith("llvm generated for")
    assert code.startswith("; ") or "define" in code


def test_graph_falls_back_to_a_table_without_a_layout_program(mlp_build, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    page = parse(passlab.views.report.render_report(mlp_build.trace))
    i = _snap(mlp_build.trace, "FuseTIR")
    graph, bufs = page.panes[f"graph:{i}:collapse:none"], page.panes[f"buffers:{i}"]
    assert "<svg" not in graph and 'class="passlab-bufplot"' in bufs  # the buffer picture
    #   is hand-written SVG: it needs no layout program
    assert "<table" in graph and "fused_matmul_add_relu" in graph


@pytest.mark.skipif(_snapshots.layout_program() is None, reason="no dot or graphviz-pure")
def test_graph_is_an_inline_svg_with_a_layout_program(mlp_report):
    graph = mlp_report[2].panes[f"graph:{_snap(mlp_report[0], 'FuseTIR')}:collapse:none"]
    assert graph.count("<svg") == 1
    assert "<?xml" not in graph and "<!DOCTYPE" not in graph and "xmlns" not in graph


@pytest.mark.skipif(_snapshots.layout_program() is None, reason="no dot or graphviz-pure")
def test_report_graphs_fold_weights_and_keep_them_drawn_too(mlp_report):
    i = _snap(mlp_report[0], "FuseTIR")
    folded, shown = (mlp_report[2].panes[f"graph:{i}:{p}:none"] for p in ("collapse", "show"))
    assert "<title>fc1.weight</title>" not in folded  # the pane's "weights" select
    assert "<title>fc1.weight</title>" in shown


def test_pipeline_pane_and_header(mlp_report):
    trace, text, page = mlp_report
    assert "No user pass in this build: the pipeline is TVM&#x27;s default." in page.panes["pipeline"]
    assert "<title>passlab report</title>" in text
    assert "26 of 71 main-chain passes changed the module" in text
    assert len([s for s in trace if s.kind == "pass" and s.changed]) == 26
    assert page.panes["provenance:default"].count('class="passlab-prov"') == 1


def test_panes_needing_a_kernel_say_so(mlp_report):
    notes = mlp_report[2].data["notes"]
    assert "Compare needs a kernel" in notes["compare"]
    assert "Editing and re-running the pipeline need the build and a kernel" in notes["edit"]
    assert notes["graph"].startswith("This report draws the fused graph after #6 FuseTIR, "
                                     "#10 CallTIRRewrite, #11 StaticPlanBlockMemory")


def test_self_contained_no_network_resources(mlp_report, failed_report):
    for _, text, page in (mlp_report, failed_report):
        for tag, attrs in page.attrs:
            for key in ("src", "href"):
                assert not re.match(r"\s*(https?:)?//", attrs.get(key, "")), (tag, attrs)
            assert not (tag == "script" and "src" in attrs)
            assert tag != "link"
        for body in [text, *page.panes.values()]:
            assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", body)
            assert "@import" not in body and "url(" not in body
        assert "import(" not in text and "fetch(" not in text


# --------------------------------------------------------------------------- escaping
def test_hostile_strings_are_escaped_everywhere(failed_report):
    trace, text, page = failed_report
    assert trace.find(HOSTILE_PASS).changed
    # HTML (the page and every pane) holds them escaped; the state holds them as data,
    # which the front end sets with textContent
    for body in [text, *page.panes.values()]:
        assert HOSTILE_PASS not in body and HOSTILE_ATTR not in body and FAILING_PASS not in body
    assert f"<title>{'&lt;script&gt;x&lt;/script&gt;'}</title>" in text
    assert [r["label"] for r in page.rows if r["origin"] == "user"] == [HOSTILE_PASS, FAILING_PASS]
    assert "&lt;script&gt;x&lt;/script&gt;" in page.panes["pipeline"]
    step = trace.find(HOSTILE_PASS)
    diff_html = page.panes[f"diff:{step.index}:side-by-side"]
    assert "&lt;script&gt;alert(<wbr>1)&lt;/script&gt;" in diff_html  # (a place to wrap)
    # The only script elements are the data blocks and the page's own code.
    blocks = len(set(page.data["blocks"].values())) + 1  # and plx-data
    assert text.count("</script>") == page.scripts == blocks + 1


def test_json_in_script_cannot_close_the_element():
    text = _embed.json_for_script("a</script><!--b")
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == "a</script><!--b"


def _block(text: str, block_id: str) -> str:
    m = re.search(rf'<script type="application/json" id="{block_id}"'
                  r'(?: data-encoding="([^"]+)")?>(.*?)</script>', text, re.S)
    return _embed.decode_block(m.group(2), m.group(1))


def test_large_blocks_are_compressed_and_round_trip():
    html = "<p>" + "x &lt; y</p><p>" * 5000
    block = _embed.data_block("b", html)
    assert 'data-encoding="gzip+base64"' in block and len(block) < len(html) / 10
    assert _block(block, "b") == html
    small = _embed.data_block("s", "</script>")
    assert "</script>" not in small[:-len("</script>")] and _block(small, "s") == "</script>"


# ---------------------------------------------------------------- failures and edges
def test_failure_panel_highlights_the_failing_pass(failed_report):
    trace, text, page = failed_report
    assert "pl-failure" in page.ids
    failing = [r for r in page.rows if r["failed"] and r["kind"] != "container"]
    assert [r["label"] for r in failing] == [FAILING_PASS]
    assert failing[0]["i"] == trace.failure.step.index == page.state["selected"]
    assert re.search(r'<pre class="pl-fail-msg">ValueError: broken on purpose: '
                     r"&lt;script&gt;alert\(1\)&lt;/script&gt;</pre>", text)
    assert f'data-step="{trace.failure.step.index}"' in text  # "show the failing pass"
    assert "broken on purpose" in page.state["failure"]  # the Explorer's failure line
    # Passes before the failure keep their diffs and snapshots.
    assert f"diff:{trace.find('FuseOps').index}:side-by-side" in page.panes
    calltir = trace.find("CallTIRRewrite").index
    assert f"graph:{calltir}:collapse:none" in page.panes
    assert len({k.split(":")[1] for k in page.panes if k.startswith("graph:")}) == 2  # no
    #   memory planning ran


def test_empty_trace_says_so(tmp_path):
    text = write_report(passlab.Trace([]), tmp_path / "empty.html").read_text()
    page = parse(text)
    assert page.rows == [] and page.state["selected"] == -1
    assert "Empty trace: no pass was recorded." in text
    assert page.panes["pipeline"] == '<div class="plx-note">This trace is empty: no pass was recorded.</div>'
    assert not any(k.startswith(("diff:", "graph:")) for k in page.panes)


def test_a_module_without_relax_functions_says_so(tmp_path):
    trace = passlab.build(TIR_ONLY).trace
    page = parse(write_report(trace, tmp_path / "tir.html").read_text())
    keys = [k for k in page.panes if k.startswith("graph:")]
    assert keys and all("has only TIR functions (TVM&#x27;s TIR stage)" in page.panes[k]
                        and "passlab-error" not in page.panes[k] for k in keys)


def test_analysis_errors_become_a_short_panel(mlp_build, monkeypatch):
    import sys

    def broken(*args, **kwargs):
        raise RuntimeError("analysis <b>down</b>")

    monkeypatch.setattr(sys.modules["passlab.analysis.graph"], "fused_graph", broken)
    monkeypatch.setattr(sys.modules["passlab.analysis.buffers"], "buffers", broken)
    page = parse(passlab.views.report.render_report(mlp_build.trace))
    i = _snap(mlp_build.trace, "FuseTIR")
    assert ("could not display the fused graph after FuseTIR: RuntimeError: analysis "
            "&lt;b&gt;down&lt;/b&gt;") in page.panes[f"graph:{i}:collapse:none"]
    assert "could not display the buffers after FuseTIR" in page.panes[f"buffers:{i}"]


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
    page = parse(out.read_text())
    assert "+ user: inserted after legalize" in page.panes["pipeline"]
    assert any(r["label"] == "count" and r["origin"] == "user" for r in page.rows)


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


def test_report_caps_functions_per_diff_and_names_the_rest(mlp_build, tmp_path, capsys):
    from passlab.views.report import render_report

    legal = mlp_build.trace.find("LegalizeOps")  # 8 changed functions
    key = f"diff:{legal.index}:side-by-side"
    capped = parse(render_report(mlp_build.trace, max_functions=3)).panes[key]
    assert "shown 3 of 8 changed functions; not printed: " in capped
    assert capped.count('class="pl-status"') == 3
    full = parse(render_report(mlp_build.trace, max_functions=None)).panes[key]
    assert "shown" not in full and full.count('class="pl-status"') == 8
    assert cli.main(["report", "mlp", "--all-functions", "-o", str(tmp_path / "a.html")]) == 0
    assert "wrote " in capsys.readouterr().out


def test_the_cycle_collector_pauses_while_a_report_renders(mlp_build, monkeypatch):
    # a loaded trace holds some 300,000 objects, which every collection rescans; the
    # collector comes back as it was, also when rendering fails
    import gc

    from passlab.views import report

    seen = []
    real = report._render_report
    monkeypatch.setattr(report, "_render_report",
                        lambda *a: seen.append(gc.isenabled()) or real(*a))
    assert gc.isenabled()
    assert "FuseOps" in report.render_report(mlp_build.trace)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        report.render_report(mlp_build.trace)
        assert seen == [False, False] and not gc.isenabled()  # the user's choice stays
    finally:
        gc.enable()
    monkeypatch.setattr(report, "_render_report", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        report.render_report(mlp_build.trace)
    assert gc.isenabled()


def test_the_report_draws_a_bar_of_its_phases_only_when_asked(mlp_build, tmp_path, capsys):
    mlp_build.trace.write_report(tmp_path / "quiet.html")
    assert capsys.readouterr().err == ""  # the default, on a stderr that is no terminal
    out = mlp_build.trace.write_report(tmp_path / "shown.html", progress=True)
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    size = len(out.read_text(encoding="utf-8")) / 1e6
    assert last.startswith("report: 100%") and " 5/5 [" in last
    assert last.endswith(f"shown.html, {size:.1f} MB]"), last
