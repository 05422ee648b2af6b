"""Export a notebook to one HTML file whose widgets still render, offline.

nbconvert's own pages load require.js and the widget renderer from public CDNs, so with
no network an Explorer shows nothing. Here the page carries its JavaScript inside it,
from copies of the npm packages in `static/widgets` (see the README there):

- `require.js` (the AMD loader the widget renderer expects), inline;
- `anywidget.js` (anywidget's front end), inline, registered as the AMD module
  `anywidget` so that the renderer's loader finds it before it tries a CDN;
- `embed-amd.js` (@jupyter-widgets/html-manager: base and controls widgets and the
  renderer), 3.6 MB, stored gzip-compressed and base64-encoded (1.2 MB) and unpacked by
  the browser's `DecompressionStream`, as the report does with its large blocks.

The widgets' state (saved by nbclient with `store_widget_state=True`, or by JupyterLab)
holds each anywidget's ES module (`_esm`), so the page needs no kernel. Python
callbacks do not run there: what the page shows is what the kernel last rendered.

Needs the `notebook` extra (nbformat, nbconvert, and nbclient to execute).
"""

from __future__ import annotations

import re
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

from passlab.views._embed import data_block

__all__ = ["export_notebook"]

_NEEDS = ("passlab.views.export needs nbformat and nbconvert (and nbclient to execute) "
          "(the 'notebook' extra): pip install 'passlab[notebook]'")
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Modules the page carries; any other widget module would be fetched from jsDelivr.
_SHIPPED = ("@jupyter-widgets/base", "@jupyter-widgets/controls", "@jupyter-widgets/output",
            "anywidget")
# anywidget's bundle ends with an anonymous AMD define; inline, it needs a name.
_ANON_DEFINE = 'define(["@jupyter-widgets/base"], widget_default);'
_NAMED_DEFINE = 'define("anywidget", ["@jupyter-widgets/base"], widget_default);'

# Extends JupyterLab's nbconvert template: scripts inline instead of from CDNs, and no
# MathJax or Mermaid (both would come from a CDN; offline they cannot load anyway).
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}
<script>{{ resources.passlab_js.requirejs }}</script>
{%- endblock html_head_js_requirejs -%}
{% block jupyter_widgets %}
{%- if "widgets" in nb.metadata -%}
<script>{{ resources.passlab_js.anywidget }}</script>
{{ resources.passlab_js.renderer_block }}
<script>{{ resources.passlab_js.renderer_loader }}</script>
{%- endif -%}
{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

# Unpacks embed-amd.js and runs it; it renders every widget view once the page has loaded.
_LOADER = """(function () {
  var block = document.getElementById("passlab-widget-renderer");
  var bytes = Uint8Array.from(atob(JSON.parse(block.textContent)), function (c) {
    return c.charCodeAt(0);
  });
  var text = new Response(new Blob([bytes]).stream().pipeThrough(
    new DecompressionStream("gzip"))).text();
  text.then(function (js) {
    var script = document.createElement("script");
    script.textContent = js;
    document.head.appendChild(script);
  }).catch(function (err) {
    console.error("passlab: could not unpack the widget renderer", err);
  });
})();"""

_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


def script_text(js: str) -> str:
    """JavaScript that cannot end (or confuse) the inline `<script>` it sits in.

    `</script` becomes `<\\/script` and `<!--` becomes `\\x3c!--`: the same text
    inside a string, template or regular expression literal, where alone they can occur.
    """
    return _SCRIPT_END.sub(r"<\\/\1", js).replace("<!--", "\\x3c!--")


def _vendored(name: str) -> str:
    static = resources.files("passlab.views").joinpath("static")
    return static.joinpath("widgets").joinpath(name).read_text("utf-8")


def page_scripts() -> dict[str, str]:
    """The inline pieces of an exported page: `requirejs`, `anywidget`,
    `renderer_block` (the compressed embed-amd.js) and `renderer_loader`."""
    anywidget_js = _vendored("anywidget.js")
    if anywidget_js.count(_ANON_DEFINE) != 1:
        raise RuntimeError("static/widgets/anywidget.js does not end with the AMD define "
                           f"{_ANON_DEFINE!r}; was it replaced by another version?")
    return {
        "requirejs": script_text(_vendored("require.js")),
        "anywidget": script_text(anywidget_js.replace(_ANON_DEFINE, _NAMED_DEFINE)),
        "renderer_block": data_block("passlab-widget-renderer", _vendored("embed-amd.js"),
                                     compress_over=0),
        "renderer_loader": _LOADER,
    }


def _check_widget_state(nb: Any, source: Path) -> None:
    """Warn about saved widgets the page cannot render offline."""
    state = nb.metadata.get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {})
    elsewhere = sorted({m for model in state.values()
                        for m in (model.get("model_module"),
                                  model.get("state", {}).get("_view_module"))
                        if m and m not in _SHIPPED})
    if elsewhere:
        warnings.warn(f"{source.name}: widget modules {', '.join(elsewhere)} are not "
                      "shipped with passlab; the page loads them from cdn.jsdelivr.net and, "
                      "offline, does not render those widgets", stacklevel=3)
    no_esm = sorted(mid for mid, model in state.items()
                    if model.get("model_module") == "anywidget"
                    and not model.get("state", {}).get("_esm"))
    if no_esm:
        warnings.warn(f"{source.name}: the saved state of anywidget(s) {', '.join(no_esm)} has "
                      "no ES module (_esm), so the page shows '[anywidget] Failed to "
                      "initialize model' for them; export with execute=True (nbclient saves "
                      "the full state)", stacklevel=3)


def export_notebook(notebook_path: str | Path, output_html: str | Path, *,
                    execute: bool = False, timeout: int = 120) -> Path:
    """Write a notebook as one self-contained HTML file whose widgets render offline.

    Parameters
    ----------
    notebook_path : str or Path
        The `.ipynb` file. It is not modified.
    output_html : str or Path
        The HTML file to write (its folder is created).
    execute : bool
        Run the notebook first (nbclient, in its folder, saving the widget state);
        otherwise the saved outputs and widget state are exported as they are.
    timeout : int
        Seconds each cell may run when executing.

    Returns
    -------
    Path
        `output_html`.

    Examples
    --------
    >>> from passlab.views.export import export_notebook
    >>> export_notebook("notebooks/01-tour.ipynb", "tour.html", execute=True)  # doctest: +SKIP
    PosixPath('tour.html')
    """
    try:
        import nbformat
        from nbconvert import HTMLExporter
    except ImportError as exc:
        raise ImportError(_NEEDS) from exc
    source = Path(notebook_path)
    nb = nbformat.read(source, as_version=4)
    folder = str(source.resolve().parent)
    if execute:
        try:
            from nbclient import NotebookClient
        except ImportError as exc:
            raise ImportError(_NEEDS) from exc
        NotebookClient(nb, timeout=timeout, startup_timeout=60, store_widget_state=True,
                       resources={"metadata": {"path": folder}}).execute()
    _check_widget_state(nb, source)
    exporter = HTMLExporter(template_name="lab")
    exporter.raw_template = _TEMPLATE
    body, _ = exporter.from_notebook_node(
        nb, resources={"metadata": {"name": source.stem, "path": folder},
                       "passlab_js": page_scripts()})
    out = Path(output_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out
