"""The Explorer's IR reading aids on the Python side: what the diff and buffers HTML
carries for the front end's function list, search and links (ir.js, panes.js)."""

from __future__ import annotations

import html.parser
import importlib
import json
import re

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import passlab
from passlab.analysis import _diff_render
from passlab.analysis.diff import diff
from passlab.views.explorer_panes import PaneRenderer

# the module (``passlab.analysis.diff`` is the function: the package exports it)
diff_module = importlib.import_module("passlab.analysis.diff")


class _Page(html.parser.HTMLParser):
    """Elements with their (unescaped) attributes, and the text of each code cell."""

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.cells: list[str] = []
        self._depth = 0  # > 0 inside a td.pl-code
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a))
        if self._depth:
            self._depth += 1
        elif tag == "td" and "pl-code" in a.get("class", "").split():
            self._depth = 1
            self.cells.append("")

    def handle_endtag(self, tag):
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.cells[-1] += data

    def find(self, tag: str, attr: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and attr in a]


@pytest.fixture(scope="module")
def trace(mlp_build):
    return mlp_build.trace


@pytest.fixture(scope="module")
def mods():
    mod = passlab.models.mlp()
    return mod, relax.transform.LegalizeOps()(mod)


def test_function_blocks_name_themselves_in_reading_order(trace):
    panes = PaneRenderer(trace)
    fuse = trace.find("FuseOps").index
    page = _Page(panes.pane("diff", fuse))
    blocks = page.find("details", "data-fn")
    assert [(b["data-fn"], b["data-status"], b["data-kind"]) for b in blocks] == [
        ("forward", "modified", "relax"), ("fused_matmul1_add1", "added", "relax"),
        ("fused_matmul_add_relu", "added", "relax")]
    assert [b["id"] for b in blocks] == ["plx-diff-0-forward", "plx-diff-1-fused_matmul1_add1",
                                         "plx-diff-2-fused_matmul_add_relu"]
    # the compare pane is in the same page: its ids differ
    compare = _Page(panes.pane("compare", -1, a=fuse, b=fuse)).find("details", "data-fn")
    assert [b["data-fn"] for b in compare] == [b["data-fn"] for b in blocks]
    assert all(b["id"].startswith("plx-compare-") for b in compare)


def test_ids_are_unique_and_names_escaped():
    # names that reduce to one id, and names that are markup
    names = ['a"b', "a<b", "a>b", "<script>alert(1)</script>", "x' onclick='y"]
    func = relax.transform.LegalizeOps()(passlab.models.mlp())["forward"]
    old = tvm.IRModule({})
    new = tvm.IRModule({tvm.ir.GlobalVar(n): func for n in names})
    d = diff(old, new)
    for html_text in (d.to_html(anchors="p"), d.to_html("unified", anchors="p"),
                      d.to_html(max_functions=2, anchors="p")):
        assert "<script>" not in html_text and "onclick='y" not in html_text
        page = _Page(html_text)
        named = page.find("details", "data-fn") + page.find("li", "data-fn")
        assert sorted(a["data-fn"] for a in named) == sorted(names)
        ids = [a["id"] for a in page.find("details", "id")]
        assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[\w-]+", i) for i in ids)
    assert _diff_render.anchor_id("p", 3, 'a"<b>') == "p-3-a__b_"


def test_first_view_lists_the_functions_it_does_not_print(mods):
    d = diff(*mods)
    page = _Page(d.to_html(max_functions=2, anchors="p"))
    shown = [a["data-fn"] for a in page.find("details", "data-fn")]
    unshown = [a["data-fn"] for a in page.find("li", "data-fn")]
    assert shown + unshown == [fd.name for fd in d] and len(shown) == 2
    assert ("ul", {"class": "pl-unshown", "hidden": ""}) in page.elements
    assert all(a["data-status"] in ("added", "modified") for a in page.find("li", "data-fn"))
    # a notebook output (no anchors) has neither ids nor the hidden list
    plain = d.to_html(max_functions=2)
    assert "pl-unshown" not in plain and " id=" not in plain and "pl-var" not in plain


def test_relax_bindings_mark_the_variable_they_define(trace):
    panes = PaneRenderer(trace)
    blocks = panes.pane("diff", trace.find("FuseOps").index).split("<details")[1:]
    linked = {_Page("<details" + b).find("details", "data-fn")[0]["data-fn"]:
              [a["data-var"] for a in _Page("<details" + b).find("span", "data-var")]
              for b in blocks}
    # the entry's bindings, old and new (the front end links the new ones); the fused
    # functions' local names would point at other nodes; cls = Module is no tensor
    assert linked == {
        "forward": ["permute_dims", "matmul", "add", "relu", "lv", "permute_dims1", "matmul1",
                    "add1", "gv", "lv1", "gv"],
        "fused_matmul1_add1": [], "fused_matmul_add_relu": []}
    # TIR kernels have no Relax bindings to link
    legal = _Page(panes.pane("diff", trace.find("LegalizeOps").index, all_functions=True))
    tir = legal.find("details", "data-kind")
    assert {a["data-kind"] for a in tir} == {"relax", "tir"}
    assert _diff_render.bound_var('    gv: R.Tensor((4, 8), dtype="float32") = lv1') == "gv"
    assert _diff_render.bound_var("        lv3 = R.call_tir(cls.add, (x,))") == "lv3"
    assert _diff_render.bound_var("    return gv") is None
    assert _diff_render.bound_var('    R.func_attr({"num_input": 1})') is None
    assert _diff_render.bound_var("def main(x: R.Tensor((4,), dtype='float32')):") is None


def test_a_linked_line_reads_as_the_line(trace):
    """The variable's span only wraps: the text, and its highlighting, stay the same."""
    rd = PaneRenderer(trace)
    fuse = trace.find("FuseOps").index
    linked = _Page(rd.pane("diff", fuse)).cells
    plain = _Page(rd.module_diff(fuse).to_html("unified")).cells
    assert linked == plain and len(linked) > 10
    line = '    lv: R.Tensor((4, 32), dtype="float32") = cls.f(x)'
    html_text = _diff_render._linked(_diff_render.line_html)(line, [(4, 6), (30, 40)])
    assert html_text.startswith('    <span class="pl-var" data-var="lv"><span class="pl-hl">lv')
    assert _Page(f'<table><tr><td class="pl-code">{html_text}</td></tr></table>').cells == [line]


def test_buffer_rows_name_their_producer_and_consumers(trace):
    from passlab.analysis.buffers import buffers

    step = trace.find("FuseOps")
    rows = _Page(PaneRenderer(trace).pane("buffers", step.index)).find("tr", "data-focus")
    report = buffers(step)
    assert [r["data-tensor"] for r in rows] == [t.name for t in report.tensors]
    for r, t in zip(rows, report.tensors):
        assert json.loads(r["data-focus"]) == [k for k in (t.producer, *t.consumers) if k]
        assert r["data-function"] == t.function
    lv = next(r for r in rows if r["data-tensor"] == "lv" and r["data-function"] == "forward")
    assert json.loads(lv["data-focus"]) == ["fused_matmul_add_relu", "fused_matmul1_add1"]


def test_search_counts_what_show_all_would_show(trace, monkeypatch):
    monkeypatch.setattr(diff_module, "FIRST_VIEW", 2)
    rd = PaneRenderer(trace)
    legal = trace.find("LegalizeOps").index
    for mode in ("unified", "side-by-side"):
        first = _Page(rd.pane("diff", legal, mode=mode))
        everything = _Page(rd.pane("diff", legal, mode=mode, all_functions=True))
        assert len(first.find("li", "data-fn")) == 6
        for query in ("T.", "t_BUFFER", "R.call_tir", "no such text"):
            needle = query.lower()
            seen = sum(c.lower().count(needle) for c in first.cells)
            total = sum(c.lower().count(needle) for c in everything.cells)
            hits, functions = rd.search_unshown(query, legal, mode=mode)
            assert hits == total - seen, (mode, query)
            assert (functions > 0) == (hits > 0)
    assert rd.search_unshown("T.", legal)[1] == 6
    assert rd.search_unshown("", legal) == (0, 0)
    # compare: from LegalizeOps' input to FuseOps' output
    fuse = trace.find("FuseOps").index
    assert rd.search_unshown("T.", legal, b=fuse)[0] > 0


def test_explorer_counts_the_search_in_unprinted_functions(trace, monkeypatch):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    monkeypatch.setattr(diff_module, "FIRST_VIEW", 2)
    legal = trace.find("LegalizeOps").index
    ex = Explorer(trace, selected=legal)
    ex.set_state({"ir_search": "T.prim_func"})
    more = ex.ir_search_more
    assert more == dict(query="T.prim_func", where=f"diff:{legal}:None:unified:False",
                        hits=6, functions=6)
    ex.set_state({"diff_all": True})  # everything printed: nothing more to find
    assert ex.ir_search_more["hits"] == 0
    assert ex.ir_search_more["where"].endswith(":True")
    ex.set_state({"diff_all": False, "tab": "compare"})
    assert ex.ir_search_more["where"] == f"compare:{ex.compare_a}:{ex.compare_b}:unified:False"


@I.ir_module
class _Relax:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        return y


def test_kernel_text_highlights_like_diffs():
    from passlab.analysis._highlight import block_html

    text = _Relax.script()
    out = block_html(text + "\n# <b>x</b>")
    assert '<span class="tok-nd">@R.function</span>' in out
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert _Page(f'<table><tr><td class="pl-code">{out}</td></tr></table>').cells == [
        text + "\n# <b>x</b>"]
