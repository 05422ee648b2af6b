"""Graph layouts kept on disk beside a saved trace, so that a report written from the file
and an Explorer opened on it later (another process, another day) lay each graph out
once: `model.trace.zip` keeps them in the folder `model.trace.zip.layouts/`, one
`<key>.svg` per layout (`passlab._render.layout_key`: the DOT source and the
layout program).

The folder is data from disk like the trace itself, and what it holds goes into HTML: a
file is used only when it is SVG as Graphviz writes it (`is_graphviz_svg`: its
elements and attributes from a short list, no script, no event handler, no link, no
entity, no CDATA), else it is laid out again and replaced. The folder is opened without
following links (`passlab.io._files.Folder`) and written under fresh names
renamed into place; a store that cannot be read or written is skipped, never an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from passlab.errors import UnsafePathError
from passlab.io._files import Folder

__all__ = ["LayoutStore", "store_for", "is_graphviz_svg", "MAX_LAYOUT_BYTES"]

#: A layout file larger than this is not read (DenseNet-121's fused graph: 0.6 MB).
MAX_LAYOUT_BYTES = 32 << 20
_SUFFIX = ".layouts"
_KEY = re.compile(r"[0-9a-f]{64}")
_SVG, _XLINK = "{http://www.w3.org/2000/svg}", "{http://www.w3.org/1999/xlink}"
#: What Graphviz's SVG output holds (dot and graphviz-pure, for the attributes passlab's
#: DOT uses): elements and attributes.
_ELEMENTS = frozenset({"svg", "g", "title", "polygon", "polyline", "path", "ellipse", "text",
                       "a", "defs", "linearGradient", "radialGradient", "stop"})
_ATTRIBUTES = frozenset({
    "id", "class", "width", "height", "viewBox", "transform", "points", "d", "fill",
    "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity", "x", "y",
    "cx", "cy", "rx", "ry", "x1", "y1", "x2", "y2", "offset", "font-family", "font-size",
    "font-weight", "font-style", "text-anchor", "text-decoration", "baseline-shift",
    "stop-color", "stop-opacity", "gradientUnits", "preserveAspectRatio", "version",
    _XLINK + "title", "{http://www.w3.org/XML/1998/namespace}space"})


def is_graphviz_svg(text: str) -> bool:
    """Whether `text` is an `<svg>` element as Graphviz writes it, safe to put into a
    page: well-formed XML of the listed elements and attributes only (no `<script>`,
    no `on*` handler, no `href`, no `style`), without a document type, entities or
    CDATA (which HTML parses differently)."""
    if not text.startswith("<svg") or any(m in text for m in ("<!DOCTYPE", "<!ENTITY", "<?",
                                                              "<![CDATA[")):
        return False
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return False
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if not tag.startswith(_SVG) or tag[len(_SVG):] not in _ELEMENTS:
            return False
        if any(name not in _ATTRIBUTES for name in el.attrib):
            return False
    return True


class LayoutStore:
    """The layouts kept in `folder` (made on the first `put`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _open(self, create: bool) -> Folder | None:
        try:
            return Folder(self.folder.parent, [self.folder.name], create=create)
        except (OSError, UnsafePathError, ValueError):
            return None

    def get(self, key: str) -> str | None:
        """The layout kept under `key`, or None (absent, unreadable, or not SVG as
        Graphviz writes it)."""
        if not _KEY.fullmatch(key):
            return None
        folder = self._open(create=False)
        if folder is None:
            return None
        with folder:
            try:
                data = folder.read(key + ".svg", MAX_LAYOUT_BYTES)
            except (OSError, UnsafePathError):
                return None
        try:
            text = data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            return None
        return text if text is not None and is_graphviz_svg(text) else None

    def put(self, key: str, svg: str) -> None:
        """Keep `svg` under `key`; best effort (a folder that cannot be written is
        left as it is)."""
        if not _KEY.fullmatch(key) or not svg.startswith("<svg"):
            return
        folder = self._open(create=True)
        if folder is None:
            return
        with folder:
            try:
                folder.write(key + ".svg", svg.encode("utf-8"))
            except (OSError, UnsafePathError):
                pass


def store_for(trace: Any) -> LayoutStore | None:
    """The layout store beside the file `trace` was loaded from (`<file>.layouts`), or
    None for a trace that was not loaded from a file."""
    file = getattr(trace, "_meta", {}).get("file")
    if not isinstance(file, str) or not file:
        return None
    path = Path(file)
    return LayoutStore(path.with_name(path.name + _SUFFIX))
