"""Put data inside one HTML file safely: JSON data blocks, optional gzip.

A report keeps each diff and snapshot as a `<script type="application/json">` data block
that the page parses only when it is shown, so a large report still opens at once. Large
blocks are gzip-compressed and base64-encoded (the page unpacks them with the browser's
`DecompressionStream`): TVMScript diffs shrink about fifteen-fold.
"""

from __future__ import annotations

import base64
import gzip
import json

from passlab._render import esc

__all__ = ["json_for_script", "data_block", "decode_block", "ENCODING_GZIP"]

#: ``data-encoding`` of a block holding base64 of gzip-compressed UTF-8 text.
ENCODING_GZIP = "gzip+base64"
#: Text blocks longer than this (in characters) are compressed.
COMPRESS_OVER = 20_000


def json_for_script(value: object) -> str:
    """JSON that cannot end the `<script>` element it sits in.

    `</` becomes `<\\/` and `<!--` becomes `<\\u0021--` (both still mean the same
    to `JSON.parse`), so neither `</script>` nor a comment opener survives.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def data_block(block_id: str, text: str, compress_over: int = COMPRESS_OVER) -> str:
    """A JSON data block holding `text`; gzip+base64 when it is longer than
    `compress_over` characters."""
    if len(text) > compress_over:
        packed = base64.b64encode(gzip.compress(text.encode("utf-8"), 6, mtime=0)).decode()
        return (f'<script type="application/json" id="{esc(block_id)}" '
                f'data-encoding="{ENCODING_GZIP}">"{packed}"</script>')
    return f'<script type="application/json" id="{esc(block_id)}">{json_for_script(text)}</script>'


def decode_block(payload: str, encoding: str | None) -> str:
    """The text of a data block (`payload` is its JSON); for tests and tools."""
    value = json.loads(payload)
    if encoding == ENCODING_GZIP:
        return gzip.decompress(base64.b64decode(value)).decode("utf-8")
    return value
