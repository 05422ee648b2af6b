// passlab static report: filters, selection, keyboard and lazy panels.
// Strings from the trace are only ever set with textContent; the only markup inserted
// is the precomputed (escaped on the Python side) HTML of the data blocks.
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  // <html data-theme="dark"> forces the dark colours (report.css); the TVMScript token
  // colours (passlab/analysis/_highlight.py) follow the body's pl-dark class
  if (document.documentElement.dataset.theme === "dark") document.body.classList.add("pl-dark");
  const rows = Array.from(document.querySelectorAll("#pl-list tr.pl-row"));

  // TVMScript token colours for a diff when it is shown (the page would be seconds slower
  // to write if every line were coloured in Python). The same token classes and rules as
  // passlab/analysis/_highlight.py; text is only wrapped in spans, never parsed as HTML.
  const KEYWORDS = "def|return|with|for|in|if|elif|else|while|lambda|and|or|not|is|as|" +
    "assert|from|import|class|pass|break|continue|yield";
  const TOKEN = new RegExp(
    "(?<c1>#.*)|(?<s2>\"(?:[^\"\\\\]|\\\\.)*\"?|'(?:[^'\\\\]|\\\\.)*'?)|(?<nd>@[\\w.]+)" +
    "|(?<k>\\b(?:" + KEYWORDS + ")\\b)|(?<kc>\\b(?:True|False|None)\\b)" +
    "|(?<mf>\\b\\d+\\.\\d*(?:[eE][-+]?\\d+)?|\\b\\d+[eE][-+]?\\d+\\b)|(?<mi>\\b\\d+\\b)" +
    "|(?<name>[A-Za-z_]\\w*)|(?<o>[-+*/%=<>!&|^~]+)", "g");

  function tokenSpans(text, afterDef) {
    const frag = document.createDocumentFragment();
    let pos = 0;
    for (const m of text.matchAll(TOKEN)) {
      if (m.index > pos) frag.appendChild(document.createTextNode(text.slice(pos, m.index)));
      let kind = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
      if (kind === "name") kind = afterDef.value ? "nf" : "";
      afterDef.value = kind === "k" && (m[0] === "def" || m[0] === "class");
      if (kind) {
        const span = document.createElement("span");
        span.className = "tok-" + kind;
        span.textContent = m[0];
        frag.appendChild(span);
      } else {
        frag.appendChild(document.createTextNode(m[0]));
      }
      pos = m.index + m[0].length;
    }
    if (pos < text.length) frag.appendChild(document.createTextNode(text.slice(pos)));
    return frag;
  }

  function highlightCode(root) {
    for (const cell of root.querySelectorAll("td.pl-code")) {
      const afterDef = { value: false };
      for (const node of Array.from(cell.childNodes)) {
        if (node.nodeType === Node.TEXT_NODE) {
          node.replaceWith(tokenSpans(node.textContent, afterDef));
        } else if (node.classList && node.classList.contains("pl-hl") &&
                   node.childNodes.length === 1 && node.firstChild.nodeType === Node.TEXT_NODE) {
          const text = node.textContent;  // a changed span: colour inside the mark
          node.textContent = "";
          node.appendChild(tokenSpans(text, afterDef));
        }
      }
    }
  }
  const detail = $("#pl-detail");
  const cache = new Map();
  let current = null;
  let token = 0;

  // ------------------------------------------------------------------ data blocks
  async function block(id) {
    if (cache.has(id)) return cache.get(id);
    const el = document.getElementById(id);
    if (!el) return null;
    let text = JSON.parse(el.textContent);
    if (el.dataset.encoding === "gzip+base64") {
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser cannot unpack compressed panels " +
          "(DecompressionStream is missing: use a current Chrome, Firefox or Safari)");
      }
      const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      text = await new Response(stream).text();
    }
    cache.set(id, text);
    return text;
  }

  function plain(text, cls) {
    const d = document.createElement("div");
    d.className = cls || "pl-plain";
    d.textContent = text;
    return d;
  }

  // ---------------------------------------------------------------------- filters
  const search = $("#pl-search"), stage = $("#pl-stage");
  const onlyChanged = $("#pl-changed"), inner = $("#pl-inner");
  const count = $("#pl-count"), none = $("#pl-list .pl-none");

  function visible() { return rows.filter((r) => !r.hidden); }

  function applyFilters() {
    const q = search ? search.value.trim().toLowerCase() : "";
    const st = stage ? stage.value : "";
    const showInner = inner && inner.checked;
    document.body.classList.toggle("pl-show-inner", !!showInner);
    for (const r of rows) {
      const d = r.dataset;
      r.hidden = !((showInner || d.main === "1") &&
        (!onlyChanged || !onlyChanged.checked || d.changed === "1" || d.failed === "1") &&
        (!st || d.stage === st) &&
        (!q || d.name.toLowerCase().includes(q)));
    }
    const n = visible().length;
    if (count) count.textContent = n + " of " + rows.length + " steps shown";
    if (none) none.hidden = n > 0;
  }
  for (const el of [search, stage, onlyChanged, inner]) {
    if (el) el.addEventListener(el === search ? "input" : "change", applyFilters);
  }

  // -------------------------------------------------------------------- selection
  function header(row) {
    const d = row.dataset, cells = row.cells;
    const h = document.createElement("div");
    h.className = "pl-detail-head";
    const name = document.createElement("b");
    name.textContent = d.name;
    h.appendChild(name);
    const bits = ["step #" + d.i, "stage " + d.stage, d.kind === "pass" ? "main chain" : d.kind,
      d.origin === "user" ? "your pass" : "TVM pass",
      d.failed === "1" ? "failed" : cells[3].textContent + " ms"];
    if (cells[5].textContent) bits.push("functions " + cells[5].textContent);
    if (cells[6].textContent) bits.push("Relax bindings " + cells[6].textContent);
    h.appendChild(document.createTextNode(" \u2014 " + bits.join(", ")));
    if (d.snap) {
      const a = document.createElement("a");
      a.href = "#snap-" + d.snap;
      a.className = "pl-snap-link";
      a.textContent = "fused graph and buffers after this pass";
      h.appendChild(document.createTextNode(" "));
      h.appendChild(a);
    }
    return h;
  }

  async function show(row) {
    const mine = ++token;
    const d = row.dataset;
    detail.replaceChildren(header(row));
    // the Explain strip (escaped by passlab): what this pass does, what it changed here
    if (document.getElementById("pl-explain-" + d.i)) {
      const strip = document.createElement("div");
      strip.className = "pl-explain-box";
      detail.appendChild(strip);
      block("pl-explain-" + d.i).then((html) => {
        if (mine === token && html !== null) strip.innerHTML = html;
      }).catch((err) => {
        if (mine === token) strip.replaceChildren(plain("could not show the explanation: " + err.message, "passlab-error"));
      });
    }
    if (d.failed === "1") {
      const fail = $("#pl-failure .pl-fail-msg");
      if (row.classList.contains("failing") && fail) {
        detail.appendChild(plain("This pass failed with:"));
        detail.appendChild(fail.cloneNode(true));
      } else {
        detail.appendChild(plain("This pass did not finish: a pass inside it failed."));
      }
      return;
    }
    if (d.diff !== "1") {
      let why = "No change: the module after this pass is the module it received.";
      if (d.changed === "1") {
        why = d.kind === "pass" ? "Changed, but no diff was kept." :
          "Changed, but this is " + (d.kind === "inner" ? "an inner step (a pass run " +
          "inside another pass, on a partial or temporary module)" : "a wrapper of other " +
          "passes") + ": the report keeps diffs of main-chain passes only. In Python: " +
          "passlab.diff(trace[" + d.i + "]).";
      }
      detail.appendChild(plain(why));
      return;
    }
    detail.appendChild(modeBar(() => { if (mine === token) showDiff(d, mine); }));
    const slot = plain("loading the diff\u2026");
    slot.dataset.diffSlot = "1";
    detail.appendChild(slot);
    await showDiff(d, mine);
  }

  // the diff of the selected pass in the chosen layout (one data block per layout),
  // scrolled to its first changed line
  let diffMode = "side-by-side";
  function modeBar(onChange) {
    const bar = document.createElement("div");
    bar.className = "pl-diff-modes";
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", "diff layout");
    for (const [mode, label] of [["side-by-side", "side by side"], ["unified", "unified"]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.dataset.mode = mode;
      b.setAttribute("aria-pressed", String(mode === diffMode));
      b.addEventListener("click", () => {
        if (diffMode === mode) return;
        diffMode = mode;
        for (const o of bar.children) o.setAttribute("aria-pressed", String(o.dataset.mode === mode));
        onChange();
      });
      bar.appendChild(b);
    }
    return bar;
  }

  async function showDiff(d, mine) {
    const slot = detail.querySelector("[data-diff-slot]");
    if (!slot) return;
    try {
      const html = await block((diffMode === "unified" ? "pl-udiff-" : "pl-diff-") + d.i);
      if (mine !== token || html === null) return;
      const box = document.createElement("div");
      box.className = "pl-diff-box";
      box.dataset.diffSlot = "1";
      box.innerHTML = html;
      highlightCode(box);
      slot.replaceWith(box);
      openAtChange(box);
    } catch (err) {
      if (mine === token) {
        const msg = plain("could not show the diff: " + err.message, "passlab-error");
        msg.dataset.diffSlot = "1";
        slot.replaceWith(msg);
      }
    }
  }

  // the box scrolls itself: bring its first changed line near its top, with a few lines
  // of context above, unless it is already on the box's first screen
  function openAtChange(box) {
    const first = box.querySelector("tr.pl-del, tr.pl-add, tr.pl-move, td.pl-del, td.pl-add, td.pl-move");
    if (!first) return;
    const row = first.closest("tr");
    const top = row.getBoundingClientRect().top - box.getBoundingClientRect().top;
    if (top + row.offsetHeight <= box.clientHeight) return;
    box.scrollTop = Math.max(0, top - 4 * row.offsetHeight);
  }

  function select(row, opts) {
    if (!row) return;
    if (current) { current.classList.remove("selected"); current.removeAttribute("aria-selected"); }
    current = row;
    row.classList.add("selected");
    row.setAttribute("aria-selected", "true");
    if (!opts || opts.scroll !== false) row.scrollIntoView({ block: "nearest" });
    if (history.replaceState) history.replaceState(null, "", "#step-" + row.dataset.i);
    show(row);
  }

  function move(delta) {
    const vis = visible();
    if (!vis.length) return;
    let i = vis.indexOf(current);
    i = i < 0 ? (delta > 0 ? 0 : vis.length - 1) : Math.min(vis.length - 1, Math.max(0, i + delta));
    select(vis[i]);
  }

  for (const r of rows) r.addEventListener("click", () => select(r, { scroll: false }));

  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const t = ev.target;
    const typing = t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      if (t && t.tagName === "SELECT") return;
      ev.preventDefault();
      move(ev.key === "ArrowDown" ? 1 : -1);
    } else if (!typing && (ev.key === "j" || ev.key === "k")) {
      move(ev.key === "j" ? 1 : -1);
    } else if (!typing && ev.key === "/" && search) {
      ev.preventDefault();
      search.focus();
    } else if (t === search && ev.key === "Escape") {
      search.value = "";
      applyFilters();
    }
  });

  document.addEventListener("click", (ev) => {
    const go = ev.target.closest && ev.target.closest(".pl-goto");
    if (go) {
      const row = document.getElementById("step-" + go.dataset.step);
      if (row) {
        if (row.hidden && inner) { inner.checked = true; applyFilters(); }
        select(row);
        $("#pl-passes").scrollIntoView();
      }
    }
    // "show weights": swap the folded graph and the one with its parameters drawn (kept
    // in a <template> beside it, so the page lays out one SVG at a time)
    const weights = ev.target.closest && ev.target.closest(".pl-weights");
    if (weights) {
      const box = weights.closest(".pl-graph-head").parentElement;
      const svg = box.querySelector(".pl-svg");
      const other = box.querySelector("template.pl-weights-svg");
      if (svg && other) {
        const shown = document.createElement("template");
        shown.innerHTML = svg.innerHTML;
        svg.replaceChildren(other.content.cloneNode(true));
        other.content.replaceChildren(shown.content);
        const on = weights.getAttribute("aria-pressed") !== "true";
        weights.setAttribute("aria-pressed", on ? "true" : "false");
        weights.textContent = on ? "fold weights" : "show weights";
      }
    }
    const zoom = ev.target.closest && ev.target.closest(".pl-zoom");
    if (zoom) {
      const box = zoom.closest(".pl-snap, .pl-graph-box") || zoom.parentElement.parentElement;
      const svg = box.querySelector(".pl-svg");
      if (svg) {
        const actual = svg.classList.toggle("actual");
        zoom.textContent = actual ? "fit width" : "actual size";
      }
    }
  });

  // -------------------------------------------------------------------- snapshots
  async function openSnapshot(det) {
    if (det.dataset.loaded) return;
    det.dataset.loaded = "1";
    const slot = det.querySelector(".pl-slot");
    try {
      const html = await block(det.dataset.block);
      slot.innerHTML = html === null ? "" : html;
      if (html === null) slot.appendChild(plain("nothing recorded for this snapshot"));
    } catch (err) {
      slot.replaceChildren(plain("could not show this snapshot: " + err.message, "passlab-error"));
    }
  }
  for (const det of document.querySelectorAll("details.pl-snap")) {
    det.addEventListener("toggle", () => { if (det.open) openSnapshot(det); });
  }
  // a click on a kernel in a fused graph opens its generated code (section "Generated code")
  document.addEventListener("click", (ev) => {
    const node = ev.target.closest && ev.target.closest(".pl-svg g.node");
    if (!node) return;
    // an operator of the provenance input graph opens the kernels it ended in
    const names = node.closest(".passlab-prov-input") ? provList(node.dataset.kernels) :
      [node.querySelector("title"), ...node.querySelectorAll("text")]
        .filter(Boolean).map((t) => t.textContent.trim());
    for (const name of names) {
      const det = document.getElementById("code-" + name);
      if (det && det.tagName === "DETAILS") {
        det.open = true;
        openSnapshot(det);
        det.scrollIntoView({ block: "nearest" });
        return;
      }
    }
  });

  // ------------------------------------------------------------------- provenance
  // The input graph beside the fused graph: operators and op-table rows carry data-op and
  // data-kernels (JSON list), kernels data-kernel and data-ops (passlab's
  // _provenance_view.py); hovering one marks what it links to.
  function provList(text) {
    try { const v = JSON.parse(text || "[]"); return Array.isArray(v) ? v : []; } catch (e) { return []; }
  }
  let provShown = null;
  function provHighlight(root, el) {
    if (el === provShown) return;
    provShown = el;
    for (const n of root.querySelectorAll(".passlab-prov-hl")) n.classList.remove("passlab-prov-hl");
    root.classList.toggle("passlab-prov-active", !!el);
    if (!el) return;
    const isKernel = el.dataset.kernel !== undefined;
    const ops = isKernel ? provList(el.dataset.ops) : [el.dataset.op];
    const kernels = isKernel ? [el.dataset.kernel] : provList(el.dataset.kernels);
    for (const n of root.querySelectorAll("[data-op]")) {
      if (ops.includes(n.dataset.op)) n.classList.add("passlab-prov-hl");
    }
    for (const n of root.querySelectorAll("[data-kernel]")) {
      if (kernels.includes(n.dataset.kernel)) n.classList.add("passlab-prov-hl");
    }
  }
  document.addEventListener("mouseover", (ev) => {
    const root = ev.target.closest && ev.target.closest(".passlab-prov");
    if (root) provHighlight(root, ev.target.closest("[data-op], [data-kernel]"));
    else if (provShown) provHighlight(provShown.closest(".passlab-prov"), null);
  });
  // the op table's search: rows whose ops, kernels or source names hold every word
  document.addEventListener("input", (ev) => {
    const box = ev.target;
    if (!box.classList || !box.classList.contains("passlab-prov-search")) return;
    const words = box.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const root = box.closest(".passlab-prov-table") || document;
    for (const tr of root.querySelectorAll("tr[data-search]")) {
      tr.hidden = !words.every((w) => tr.dataset.search.includes(w));
    }
  });

  // ------------------------------------------------------------------------ start
  function fromHash() {
    const h = location.hash.slice(1);
    if (h.startsWith("snap-") || h.startsWith("code-")) {
      const det = document.getElementById(h);
      if (det && det.tagName === "DETAILS") { det.open = true; openSnapshot(det); }
      return true;
    }
    if (h.startsWith("step-")) {
      const row = document.getElementById(h);
      if (row) {
        if (row.hidden && inner) { inner.checked = true; applyFilters(); }
        select(row);
        return true;
      }
    }
    return false;
  }
  window.addEventListener("hashchange", fromHash);

  applyFilters();
  if (!fromHash() && rows.length) {
    const first = rows.find((r) => r.classList.contains("failing")) ||
      rows.find((r) => !r.hidden && r.dataset.diff === "1") || visible()[0];
    select(first, { scroll: false });
    if (history.replaceState) history.replaceState(null, "", location.pathname + location.search);
  }
})();
