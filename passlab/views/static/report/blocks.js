// The report's data blocks: JSON script elements (type application/json) written by
// passlab/views/_embed.py, large ones gzip+base64 (unpacked with the browser's
// DecompressionStream). A block is parsed only when a pane asks for it, once.

const cache = new Map();

// the text of block `id` (a promise), null when the page has no such block
export function readBlock(id) {
  if (!cache.has(id)) cache.set(id, unpack(id));
  return cache.get(id);
}

async function unpack(id) {
  const el = document.getElementById(id);
  if (!el) return null;
  const value = JSON.parse(el.textContent);
  if (el.dataset.encoding !== "gzip+base64") return value;
  if (typeof DecompressionStream === "undefined") {
    throw new Error("this browser cannot unpack compressed panels " +
      "(DecompressionStream is missing: use a current Chrome, Firefox or Safari)");
  }
  const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}
