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
    class Broken:
        def to_text(self):
            raise ValueError("no text")

        def to_html(self):
            raise ValueError("<no html>")

    bundle = _render.mimebundle(Broken())
    assert bundle["text/plain"] == "<Broken: could not display: ValueError('no text')>"
    assert "could not display Broken: ValueError: &lt;no html&gt;" in bundle["text/html"]


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
