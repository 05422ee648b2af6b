from __future__ import annotations

import shutil

import pytest

from passlab import _render


def test_text_table_aligns_and_elides():
    out = _render.text_table(["name", "n"], [["a", 1], ["bbb", 22], ["c", 3]], max_rows=2)
    assert out.splitlines() == ["name   n", "----  --", "a      1", "bbb   22", "... shown 2 of 3 rows"]


def test_html_table_escapes():
    html = _render.html_table(["<th>"], [["<script>x</script>"]], caption="<b>")
    assert "<script>x" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<caption>&lt;b&gt;</caption>" in html


def test_mimebundle_never_raises():
    class Broken(_render.Displayable):
        def to_text(self):
            raise ValueError("no text")

        def to_html(self):
            raise ValueError("<no html>")

    bundle = Broken()._repr_mimebundle_()
    assert bundle["text/plain"] == "<Broken: could not display: ValueError('no text')>"
    assert "could not display Broken: ValueError: &lt;no html&gt;" in bundle["text/html"]


class Counted(_render.Displayable):
    """Records which conversions a display asked for."""

    def __init__(self):
        self.calls = []

    def to_text(self):
        self.calls.append("text")
        return "plain"

    def to_html(self):
        self.calls.append("html")
        return "<b>rich</b>"


def test_mimebundle_computes_only_the_requested_mimetypes():
    c = Counted()
    assert c._repr_mimebundle_() == {"text/plain": "plain", "text/html": "<b>rich</b>"}
    assert c.calls == ["text", "html"]
    c = Counted()
    assert c._repr_mimebundle_(include={"text/html"}) == {"text/html": "<b>rich</b>"}
    assert c.calls == ["html"]
    c = Counted()
    assert c._repr_mimebundle_(exclude={"text/html"}) == {"text/plain": "plain"}
    assert c.calls == ["text"]
    c = Counted()
    assert c._repr_mimebundle_(include={"text/plain", "text/html"},
                               exclude={"text/plain"}) == {"text/html": "<b>rich</b>"}
    assert c.calls == ["html"]


def test_every_displayable_uses_the_one_mixin():
    """No class in passlab writes its own _repr_mimebundle_ (the explorer widget's is
    anywidget's, extended), and every class with to_text and to_html is Displayable."""
    import ast
    from pathlib import Path

    root = Path(_render.__file__).parent
    own, missing = [], []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            where = f"{path.relative_to(root)}:{node.name}"
            if "_repr_mimebundle_" in methods and node.name not in ("Displayable", "Explorer"):
                own.append(where)
            bases = {ast.unparse(b) for b in node.bases}
            if ({"to_text", "to_html"} <= methods and node.name != "Displayable"
                    and not any("Displayable" in b for b in bases)):
                missing.append(where)
    assert own == []
    assert missing == []


def test_graphviz_pure_lays_out_without_debian_dot(monkeypatch):
    """Views must not need Debian's graphviz: the pip package graphviz-pure is a layout
    program of its own."""
    real_which = shutil.which

    def which(name, path=None):
        return None if name == "dot" else real_which(name, path=path)

    monkeypatch.setattr(shutil, "which", which)
    exe = _render.layout_program()
    if exe is None:
        pytest.fail("graphviz-pure (a passlab dependency) is not installed")
    assert exe.endswith("graphviz-pure")
    svg = _render.dot_to_svg('digraph { a -> b [label="x"]; }')
    assert "<svg" in svg and ">a<" in svg and ">b<" in svg


def test_no_layout_program_says_what_to_install(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    with pytest.raises(RuntimeError, match="install Graphviz's `dot`.*graphviz-pure"):
        _render.dot_to_svg("digraph { a }")


def test_no_cycle_collection_pauses_and_restores_the_collector():
    import gc

    assert gc.isenabled()
    with _render.no_cycle_collection():
        assert not gc.isenabled()
        with _render.no_cycle_collection():  # nested: the outer one restores
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a user's disabled collector stays disabled
    try:
        with _render.no_cycle_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
