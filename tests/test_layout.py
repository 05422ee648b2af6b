"""Graph layout (passlab/_render.py, passlab/io/_layout_store.py): Graphviz's work bounded
on large graphs so that it grows about linearly with the edges, each layout made once per
process and kept beside a saved trace's file, and a kept layout used only when it is SVG
as Graphviz writes it."""

from __future__ import annotations

import os
import random
import resource
import shutil

import pytest

import passlab
from passlab import _render
from passlab.analysis import _graph_render
from passlab.analysis.graph import Edge, FusedGraph, Node
from passlab.io._layout_store import LayoutStore, is_graphviz_svg, store_for
from passlab.views.explorer_panes import PaneRenderer

pytestmark = pytest.mark.skipif(_render.layout_program() is None,
                                reason="no layout program (dot or graphviz-pure)")


def layered(layers: int, width: int, per_node: int, span: int = 4, seed: int = 0) -> FusedGraph:
    """A layered DAG of kernels: each node feeds `per_node` random nodes of the next
    `span` layers (long edges, as a dense block's concatenations make)."""
    rnd = random.Random(seed)
    nodes = [Node(f"n{k}_{w}", f"kernel{k}_{w}", "kernel") for k in range(layers)
             for w in range(width)]
    edges = []
    for k in range(layers - 1):
        for w in range(width):
            targets = {(rnd.randint(k + 1, min(layers - 1, k + span)), rnd.randrange(width))
                       for _ in range(per_node)}
            edges += [Edge(f"n{k}_{w}", f"n{t}_{u}", f"t{k}_{w}", (1, 64, 8, 8), "float32",
                           16384) for t, u in sorted(targets)]
    return FusedGraph("main", tuple(nodes), tuple(edges), max_nodes=None)


def _layout_cpu(dot: str) -> float:
    """CPU seconds of the layout program laying `dot` out (the least of two runs)."""
    exe = _render.layout_program()
    assert exe is not None
    spent = []
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _render._lay_out(exe, dot)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(spent)


def test_layout_time_grows_about_linearly_with_the_edges():
    # 30 layers of 8 nodes, each node feeding 1, 2, 4, 8 others: 232 to 1,662 edges. dot's
    # defaults took 0.04 s and 17 s of CPU on the sparsest and the densest (measured)
    graphs = [layered(30, 8, d) for d in (1, 2, 4, 8)]
    edges = [len(g.edges) for g in graphs]
    assert edges == [232, 462, 882, 1662]
    dots = [_graph_render.to_dot(g) for g in graphs]
    assert all("nslimit=0, mclimit=0.1, remincross=false, searchsize=10, splines=line" in d
               for d in dots)
    cpu = [_layout_cpu(d) for d in dots]
    per_edge = [c / e for c, e in zip(cpu, edges)]
    print("edges", edges, "cpu s", [round(c, 3) for c in cpu])
    # ratios, not seconds: the densest graph costs at most ~2x per edge what the sparsest
    # does (dot starts in ~10 ms, which the sparsest pays per fewer edges)
    assert per_edge[-1] <= 2.5 * min(per_edge)
    assert cpu[-1] / cpu[0] <= 2.5 * edges[-1] / edges[0]


def test_a_small_graph_keeps_dots_defaults():
    small = layered(6, 4, 2)
    assert len(small.edges) <= _render.BOUNDED_OVER_EDGES
    assert "nslimit" not in _graph_render.to_dot(small)
    assert _render.layout_attrs(101) == ("nslimit=0, mclimit=0.1, remincross=false, "
                                         "searchsize=10, splines=line")


def test_each_graph_is_laid_out_once(monkeypatch):
    calls = []
    real = _render._lay_out
    monkeypatch.setattr(_render, "_lay_out", lambda exe, src: calls.append(src) or real(exe, src))
    _render.LAYOUTS.clear()
    g = passlab.fused_graph(passlab.models.mlp())
    first = g.to_svg()
    assert first.startswith("<svg") and g.to_svg() == first
    assert _graph_render.to_svg(g) == first  # the views' drawing of the same DOT
    assert len(calls) == 1
    g.to_svg("bytes")  # another drawing: its own layout
    assert len(calls) == 2


def test_the_cache_keeps_at_most_its_limit():
    cache = _render.LayoutCache(10)
    cache.put("a", "12345")
    cache.put("b", "12345")
    cache.put("c", "123")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, "12345", "123")


@pytest.fixture(scope="module")
def saved(mlp_build, tmp_path_factory):
    return mlp_build.trace.save(tmp_path_factory.mktemp("layouts") / "mlp.trace.zip")


def test_layouts_are_kept_beside_a_saved_trace_and_read_back(saved, monkeypatch):
    folder = saved.with_name(saved.name + ".layouts")
    shutil.rmtree(folder, ignore_errors=True)
    _render.LAYOUTS.clear()
    trace = passlab.load_trace(saved)
    step = trace.find("FuseTIR").index
    pane = PaneRenderer(trace).pane("graph", step)
    kept = sorted(os.listdir(folder))
    assert len(kept) == 1 and kept[0].endswith(".svg") and len(kept[0]) == 68
    # another process, another day: nothing in memory, nothing laid out again
    _render.LAYOUTS.clear()

    def no_layout(exe, src):
        raise AssertionError("laid out again")

    monkeypatch.setattr(_render, "_lay_out", no_layout)
    assert PaneRenderer(passlab.load_trace(saved)).pane("graph", step) == pane


HOSTILE = [
    '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><g/></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
    '<a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div>x</div></foreignObject></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"><g style="background:url(x)"/></svg>',
    '<svg xmlns="http://www.w3.org/2000/svg"><text><![CDATA[</svg><img src=x onerror=a()>]]>'
    "</text></svg>",
    '<!DOCTYPE svg [<!ENTITY a "b">]><svg xmlns="http://www.w3.org/2000/svg"/>',
    '<svg xmlns="http://www.w3.org/2000/svg"><g><text>unclosed</g></svg>',
    "<svg><g/></svg>",  # no SVG namespace
    "<html><body>x</body></html>",
]


def test_only_svg_as_graphviz_writes_it_is_taken_from_disk():
    g = passlab.fused_graph(passlab.models.mlp())
    assert is_graphviz_svg(_render._lay_out(_render.layout_program(),
                                            _graph_render.to_dot(g, overlay_by="bytes")))
    for text in HOSTILE:
        assert not is_graphviz_svg(text), text


def test_a_planted_layout_is_laid_out_again_and_replaced(saved, monkeypatch):
    folder = saved.with_name(saved.name + ".layouts")
    shutil.rmtree(folder, ignore_errors=True)
    trace = passlab.load_trace(saved)
    step = trace.find("FuseTIR").index
    _render.LAYOUTS.clear()
    clean = PaneRenderer(trace).pane("graph", step)
    (name,) = os.listdir(folder)
    (folder / name).write_text(HOSTILE[0])
    _render.LAYOUTS.clear()
    calls = []
    real = _render._lay_out
    monkeypatch.setattr(_render, "_lay_out", lambda exe, src: calls.append(1) or real(exe, src))
    assert PaneRenderer(trace).pane("graph", step) == clean
    assert len(calls) == 1 and "onload" not in (folder / name).read_text()


def test_a_link_in_place_of_the_folder_is_never_followed(saved, tmp_path):
    folder = saved.with_name(saved.name + ".layouts")
    shutil.rmtree(folder, ignore_errors=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere)
    try:
        store = store_for(passlab.load_trace(saved))
        assert isinstance(store, LayoutStore) and store.folder == folder
        key = "a" * 64
        store.put(key, '<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>')
        assert os.listdir(elsewhere) == [] and store.get(key) is None
    finally:
        folder.unlink()


def test_a_built_trace_keeps_its_layouts_in_memory_only(mlp_build):
    assert store_for(mlp_build.trace) is None
