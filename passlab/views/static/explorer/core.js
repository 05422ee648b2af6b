// passlab Explorer front end: the helpers every module shares. The front end is ES
// modules with explicit imports, joined by passlab/views/_bundle.py into one module for
// anywidget (main.js is the entry) and one script for the report. A pane module exports
// a factory (ctx, paneElement) => ({ onShow?() }); main.js imports them and calls each
// once. Python owns the state; the modules render the synced traits and send the user's
// choices back (ctx.send). Labels from IR are set with textContent; pane HTML comes from
// Python already escaped.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

// a pass as every pane names it: its pipeline position (row.n), else its step index
export function stepText(row) {
  return row.n == null ? `${row.label} (step ${row.i})` : `#${row.n} ${row.label}`;
}

// What every part shares: the model, change listeners removed on cleanup, sending the
// user's choices, and the busy flag (panes dim until the kernel answers).
export function makeContext(model) {
  const off = [];  // [event, handler] pairs to remove on cleanup
  const cleanups = [];
  const ctx = {
    model,
    on(ev, fn) { model.on(ev, fn); off.push([ev, fn]); },
    send(changes) {
      for (const [k, v] of Object.entries(changes)) model.set(k, v);
      model.save_changes();
    },
    busy() {},  // set by main.js once the panes exist
    onCleanup(fn) { cleanups.push(fn); },
    cleanup() {
      for (const [ev, fn] of off) model.off(ev, fn);
      for (const fn of cleanups) fn();
    },
  };
  return ctx;
}

// Every table of `root` (HTML from passlab: buffers, pipeline, a kernel's buffers) in a
// box of its own that scrolls sideways when the table is wider than the pane, after its
// names have wrapped at their token boundaries: the pane itself never scrolls sideways.
// Tables already in a scroll box of their own are left as they are.
export function boxTables(root) {
  for (const table of root.querySelectorAll("table.passlab-table")) {
    if (table.closest("[data-plx-scroll]")) continue;
    const box = h("div", { class: "plx-table-box", "data-plx-scroll": "" });
    table.replaceWith(box);
    box.append(table);
  }
}

// More places where a line of code may wrap (the kernel panel's code; a side-by-side
// diff gets them from passlab: _diff_render.soft_breaks, whose rule this is), so that a
// call wider than a narrow column wraps between its arguments, not inside a name: after
// each "(", "[" and "," (not before a space or a closing bracket), and inside a long name
// (16 characters or more: "cls.fused_reshape_cast_reshape1") after its "." and "_" (5
// characters or more from either end). The places are found in each cell's whole
// text (highlighting splits it into many text nodes); a <wbr> copies as nothing and
// leaves every text offset as it was, and no text becomes markup.
export function softBreaks(cells) {
  for (const cell of cells) {
    const text = cell.textContent;
    const at = new Set();
    for (const m of text.matchAll(/[([,](?=[^\s)\]])/g)) at.add(m.index + 1);
    for (const m of text.matchAll(/[\w.]{16,}/g)) {
      for (let k = 5; k < m[0].length - 5; k++) if ("._".includes(m[0][k])) at.add(m.index + k + 1);
    }
    if (!at.size) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    let start = 0;
    for (const node of nodes) {
      const end = start + node.data.length;
      const cuts = [...at].filter((p) => p > start && p <= end).sort((a, b) => a - b);
      if (cuts.length) {
        const frag = document.createDocumentFragment();
        let pos = start;
        for (const p of cuts) {
          frag.append(node.data.slice(pos - start, p - start), h("wbr"));
          pos = p;
        }
        if (pos < end) frag.append(node.data.slice(pos - start));
        node.replaceWith(frag);
      }
      start = end;
    }
  }
}
