// The fused-graph pane: a pan/zoom viewport over the SVG passlab draws (or the table
// without Graphviz), tools (zoom, parameters, overlay), a minimap for large graphs, the
// change marks' legend above it, and the clicked kernel's TIR, generated code and links
// (its diff, the passes that made it, its buffers) below. Zoom and pan survive a new
// step (`view` keeps them across renders), and the graph stays put: an anchor node keeps
// its place on screen and the other nodes glide to theirs (carryOver).

const READABLE = 0.75;  // the smallest scale a first view opens at: 10 pt labels at 10 px; scroll the rest
const MINIMAP_NODES = 40;

// Pan (drag) and zoom (wheel, buttons) for the SVG inside `view`. `state` ({k, x, y}) is
// the view to restore, or null to open fitted; `onChange(state)` follows every move.
function panZoom(view, svg, state, onClickNode, onChange) {
  let { k, x, y } = state || { k: 1, x: 0, y: 0 };
  let drag = null, moved = false;
  svg.style.transformOrigin = "0 0";
  const size = () => ({ w: svg.width.baseVal.value, h: svg.height.baseVal.value });
  // the centre of an element of the SVG, in unscaled SVG pixels
  const centreOf = (el) => {
    const r = el.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return [(r.left + r.width / 2 - s.left) / k, (r.top + r.height / 2 - s.top) / k];
  };
  const apply = () => {
    svg.style.transform = `translate(${x}px, ${y}px) scale(${k})`;
    onChange({ k, x, y });
  };
  // "all": the whole graph, centred; "open": the whole graph when it fits at a readable
  // scale, else the width from the top (at least READABLE: centred on the first node)
  const fit = (mode) => {
    const { w, h } = size();
    const vw = view.clientWidth, vh = view.clientHeight;
    if (!vw || !vh || !w || !h) return false;  // hidden: fit when shown
    const kw = (vw - 8) / w, kh = (vh - 8) / h;
    const whole = Math.min(1.5, kw, kh);
    if (mode === "all" || whole >= READABLE) {
      k = whole;
      x = (vw - w * k) / 2; y = Math.max(4, (vh - h * k) / 2);
    } else {
      const first = svg.querySelector("g.node");
      const cx = first ? centreOf(first)[0] : 0;
      k = Math.max(READABLE, Math.min(1, kw));
      y = 4;
      x = w * k <= vw ? (vw - w * k) / 2 : 4;
      if (w * k > vw && first) {  // centre the top of the graph, not its left margin
        x = Math.min(4, Math.max(vw - w * k - 4, vw / 2 - cx * k));
      }
    }
    apply();
    return true;
  };
  // a view kept from another step that shows none of this graph: open fitted instead
  const lost = () => {
    const { w, h } = size();
    return x > view.clientWidth || y > view.clientHeight || x + w * k < 0 || y + h * k < 0;
  };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.05, k * factor));
    x = cx - (cx - x) * (nk / k);
    y = cy - (cy - y) * (nk / k);
    k = nk;
    apply();
  };
  const centreOn = (sx, sy) => {  // svg pixel coordinates to the middle of the view
    x = view.clientWidth / 2 - sx * k;
    y = view.clientHeight / 2 - sy * k;
    apply();
  };
  const onWheel = (e) => {
    e.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  };
  const onDown = (e) => {
    if (e.button !== 0) return;
    drag = { sx: e.clientX, sy: e.clientY, x, y };
    moved = false;
    view.classList.add("plx-dragging");
  };
  const onMove = (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.sx, dy = e.clientY - drag.sy;
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    x = drag.x + dx; y = drag.y + dy;
    apply();
  };
  const onUp = () => { drag = null; view.classList.remove("plx-dragging"); };
  const onClick = (e) => {
    if (moved) { moved = false; return; }  // the end of a drag is not a click
    const g = e.target.closest("g.node");
    const title = g && g.querySelector("title");
    if (title) onClickNode(title.textContent, g);
  };
  view.addEventListener("wheel", onWheel, { passive: false });
  view.addEventListener("mousedown", onDown);
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  svg.addEventListener("click", onClick);
  let placed = false;
  const place = () => {
    if (placed) return;
    if (state && view.clientWidth && !lost()) { apply(); placed = true; } else placed = fit("open");
  };
  svg.style.transform = `translate(${x}px, ${y}px) scale(${k})`;
  requestAnimationFrame(place);
  // a view not yet laid out (a widget drawn before it is attached, a hidden tab): place
  // the graph when it gets a size
  const sized = new ResizeObserver(() => { if (!placed && view.clientWidth) place(); });
  sized.observe(view);
  return {
    zoomIn: () => zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2),
    zoomOut: () => zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2),
    fit: () => fit("all"),
    place,
    centreOn,
    // a focus (a buffer row, a provenance kernel) is shown at a readable scale at least:
    // centring on it never leaves the graph zoomed far out
    centreOnEl: (el) => {
      const [sx, sy] = centreOf(el);
      if (k < READABLE) k = READABLE;
      centreOn(sx, sy);
    },
    panBy: (dx, dy) => { x += dx; y += dy; apply(); },
    get: () => ({ k, x, y }),
    cleanup: () => {
      sized.disconnect();
      view.removeEventListener("wheel", onWheel);
      view.removeEventListener("mousedown", onDown);
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
    },
  };
}

// Screen centres of the drawn nodes: node id -> {g, x, y}, read in one pass (one layout).
function nodeCentres(svg) {
  const out = new Map();
  for (const g of svg.querySelectorAll("g.node")) {
    const t = g.firstElementChild && g.firstElementChild.tagName === "title"
      ? g.firstElementChild : g.querySelector("title");
    if (!t) continue;
    const r = g.getBoundingClientRect();
    out.set(t.textContent, { g, x: r.left + r.width / 2, y: r.top + r.height / 2 });
  }
  return out;
}

// The nodes of a new graph that were drawn before: new id -> old id, by id, else by kernel
// name (a variable a pass renamed, as FuseTIR turns lv1 into gv; as passlab marks them).
function matchNodes(before, now, labelsBefore, labelsNow) {
  const byLabel = new Map();
  for (const id of before.keys()) {
    const label = labelsBefore[id];
    if (now.has(id) || !label) continue;
    if (!byLabel.has(label)) byLabel.set(label, []);
    byLabel.get(label).push(id);
  }
  const out = new Map();
  for (const id of now.keys()) {
    if (before.has(id)) { out.set(id, id); continue; }
    const free = byLabel.get(labelsNow[id]);
    if (free && free.length) out.set(id, free.shift());
  }
  return out;
}

// Screen pixels per user unit of the nodes' coordinates (the SVG's viewBox, Graphviz's
// scale on g.graph and the pan/zoom scale together).
function svgUnit(svg) {
  const vb = svg.viewBox && svg.viewBox.baseVal;
  const r = svg.getBoundingClientRect();
  const base = vb && vb.width ? r.width / vb.width : r.width / (svg.width.baseVal.value || 1);
  const graph = svg.querySelector("g.graph");
  const m = graph && graph.transform.baseVal.consolidate();
  return base * (m ? Math.abs(m.matrix.a) || 1 : 1);
}

const FLIP_MS = 300, FADE_MS = 200;  // nodes glide, then edges fade in
const reducedMotion = () => window.matchMedia
  && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

// A small copy of the SVG with the viewport drawn on it; click or drag on it to pan.
function minimap(box, view, svg, pz) {
  const copy = svg.cloneNode(true);
  for (const el of copy.querySelectorAll("[id]")) el.removeAttribute("id");
  copy.removeAttribute("style");
  const w = svg.width.baseVal.value, hgt = svg.height.baseVal.value;
  const m = Math.min(160 / w, 120 / hgt);
  copy.setAttribute("width", String(w * m));
  copy.setAttribute("height", String(hgt * m));
  const rect = h("div", { class: "plx-minimap-view" });
  const map = h("div", { class: "plx-minimap", title: "click or drag to pan" }, rect);
  map.prepend(copy);
  map.style.width = `${w * m}px`;
  map.style.height = `${hgt * m}px`;
  box.append(map);
  const update = ({ k, x, y }) => {
    rect.style.left = `${(-x / k) * m}px`;
    rect.style.top = `${(-y / k) * m}px`;
    rect.style.width = `${(view.clientWidth / k) * m}px`;
    rect.style.height = `${(view.clientHeight / k) * m}px`;
  };
  let dragging = false;
  const go = (e) => {
    const r = map.getBoundingClientRect();
    pz.centreOn((e.clientX - r.left) / m, (e.clientY - r.top) / m);
  };
  map.addEventListener("mousedown", (e) => { e.stopPropagation(); dragging = true; go(e); });
  const onMove = (e) => { if (dragging) go(e); };
  const onUp = () => { dragging = false; };
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  return {
    update,
    cleanup: () => {
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
      map.remove();
    },
  };
}

function graphSelect(label, cls, options, value, onChange) {
  const sel = h("select", { class: cls, "aria-label": label });
  for (const [v, text] of options) sel.append(h("option", { value: v, text }));
  sel.value = value;
  sel.addEventListener("change", () => onChange(sel.value));
  return h("label", { class: "plx-graph-opt" }, h("span", { text: `${label}:` }), sel);
}

function graphPane(ctx, pane) {
  const { model, on, send } = ctx;
  const graphHead = h("div", { class: "plx-graph-headbox" });
  const graphView = h("div", { class: "plx-graph-view" });
  const graphBox = h("div", { class: "plx-graph-box" }, graphView);
  const graphTools = h("div", { class: "plx-graph-tools" });
  const kernelTitle = h("div", { class: "plx-kernel-title" });
  const kernelText = h("div", { class: "plx-kernel-text" });
  const kernelLinks = h("div", { class: "plx-kernel-links" });
  // the code the target generated for that kernel, beside its TIR
  const codeTitle = h("div", { class: "plx-code-title" });
  const codeText = h("div", { class: "plx-code-text" });
  const codeCol = h("div", { class: "plx-kernel-col plx-code" }, codeTitle, codeText);
  // the kernel panel: maximise it over the graph (the button, or Escape to restore), or
  // drag the bar above it to share the pane's height with the graph
  const maxButton = h("button", { class: "plx-zoom plx-kernel-max-btn", type: "button",
    text: "maximise", title: "show the kernel panel over the whole pane", "aria-pressed": "false" });
  const split = h("div", { class: "plx-kernel-split", role: "separator", "aria-orientation": "horizontal",
    title: "drag to resize the kernel panel" });
  const kernelBar = h("div", { class: "plx-kernel-bar" }, maxButton);
  const kernel = h("div", { class: "plx-kernel" }, split, kernelBar, kernelLinks,
    h("div", { class: "plx-kernel-cols" },
      h("div", { class: "plx-kernel-col" }, kernelTitle, kernelText), codeCol));
  pane.append(graphTools, graphHead, graphBox, kernel);
  const setMax = (on) => {
    pane.classList.toggle("plx-kernel-maxed", on);
    maxButton.textContent = on ? "restore" : "maximise";
    maxButton.setAttribute("aria-pressed", on ? "true" : "false");
    if (!on && pz) pz.place();
  };
  maxButton.addEventListener("click", () => setMax(!pane.classList.contains("plx-kernel-maxed")));
  kernel.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && pane.classList.contains("plx-kernel-maxed")) { e.stopPropagation(); setMax(false); }
  });
  split.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    const y0 = e.clientY, h0 = kernel.getBoundingClientRect().height;
    const onMove = (ev) => {
      const hgt = Math.max(160, Math.min(pane.clientHeight - 120, h0 - (ev.clientY - y0)));
      kernel.style.flex = `0 0 ${hgt}px`;
    };
    const onUp = () => { window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp); };
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
  });

  let pz = null, mini = null;
  let view = null;  // {k, x, y}: kept across renders (steps, parameter modes, overlays)
  const labels = () => {  // node id -> kernel name, from the pane's data-nodes
    const meta = graphView.querySelector(".plx-graph-meta");
    try { return meta ? JSON.parse(meta.dataset.nodes) : {}; } catch { return {}; }
  };
  const nodeEls = () => {
    const out = new Map();
    for (const g of graphView.querySelectorAll("g.node")) {
      const t = g.querySelector("title");
      if (t) out.set(t.textContent, g);
    }
    for (const tr of graphView.querySelectorAll("table tbody tr")) out.set(tr.cells[0].textContent, tr);
    return out;
  };
  const markPicked = () => {
    const id = model.get("node");
    for (const n of graphView.querySelectorAll(".plx-picked")) n.classList.remove("plx-picked");
    const el = id ? nodeEls().get(id) : null;
    if (el) el.classList.add("plx-picked");
  };
  // `focus`: node ids, Relax variable names (an id without its "#2" suffix) or kernel names.
  // The view centres on the first hit when `centre`, or when the focus is not the one it
  // last centred on (a re-render for another step keeps the view instead); true if it did.
  let focusShown = "[]";
  const markFocus = (centre) => {
    for (const n of graphView.querySelectorAll(".plx-focus")) n.classList.remove("plx-focus");
    const key = JSON.stringify(model.get("focus") || []);
    centre = centre || key !== focusShown;
    focusShown = key;
    const want = new Set(model.get("focus") || []);
    if (!want.size) return false;
    const names = labels();
    const hits = [];
    for (const [id, el] of nodeEls()) {
      if (want.has(id) || want.has(id.replace(/#\d+$/, "")) || want.has(names[id])) {
        el.classList.add("plx-focus");
        hits.push(el);
      }
    }
    if (!hits.length || !centre) return false;
    if (pz && graphView.clientWidth) pz.centreOnEl(hits[0]);  // into view
    else hits[0].scrollIntoView({ block: "center" });
    return true;
  };

  // The drawn graph as the user sees it (null when none is drawn or the pane is hidden):
  // node centres, kernel names, edges, the view's centre, the drawing and its zoom and pan.
  const capture = () => {
    const svg = graphView.querySelector("svg");
    if (!svg || !pz || !graphView.clientWidth) return null;
    const v = graphView.getBoundingClientRect();
    const edges = new Set();
    for (const t of svg.querySelectorAll("g.edge > title")) edges.add(t.textContent);
    return { svg, view: pz.get(), nodes: nodeCentres(svg), labels: labels(), edges,
      cx: v.left + v.width / 2, cy: v.top + v.height / 2 };
  };
  // The graph is captured when the user asks for another one (a step, the weights mode,
  // the overlay): the answer can move the whole pane before the graph is redrawn (a
  // longer Explain strip above it), and the anchor holds a node where the user saw it.
  // Not while nodes glide; used if the same drawing is shown at the same zoom and pan.
  let asked = null, settled = 0;
  const ask = () => { asked = performance.now() >= settled ? capture() : null; };
  const snapshot = () => {
    const a = asked, svg = graphView.querySelector("svg");
    asked = null;
    const now = pz && pz.get();
    if (a && now && a.svg === svg && ["k", "x", "y"].every((key) => a.view[key] === now[key])) return a;
    return capture();
  };
  // The node to hold in place: the picked one, else a focused one, else the unchanged
  // node (drawn before, not marked new or rewritten) nearest the old view's centre.
  const anchorOf = (now, from, old) => {
    const picked = model.get("node");
    if (picked && now.has(picked) && from(picked)) return picked;
    for (const [id, n] of now) if (n.g.classList.contains("plx-focus") && from(id)) return id;
    for (const unchangedOnly of [true, false]) {
      let best = null, bestD = Infinity;
      for (const [id, n] of now) {
        const f = from(id);
        if (!f || (unchangedOnly && (n.g.classList.contains("plx-new")
          || n.g.classList.contains("plx-rewritten")))) continue;
        const d = (f.x - old.cx) ** 2 + (f.y - old.cy) ** 2;
        if (d < bestD) { best = id; bestD = d; }
      }
      if (best !== null) return best;
    }
    return null;
  };
  // Continuity across a re-render (FLIP): the view pans so that the anchor node keeps its
  // place on screen (zoom is kept); nodes drawn before glide from their old places, new
  // ones fade in, and edges that are new or moved fade in once the nodes have settled.
  // An unchanged graph does not move at all. All positions are read before any write.
  // Returns how many nodes glide or fade in (data-moved on the view).
  const carryOver = (old, svg, anchored) => {
    const now = nodeCentres(svg);
    const unit = svgUnit(svg);
    const match = matchNodes(old.nodes, now, old.labels, labels());
    const from = (id) => (match.has(id) ? old.nodes.get(match.get(id)) : null);
    let dx = 0, dy = 0;
    const a = anchored ? anchorOf(now, from, old) : null;
    const still = reducedMotion();
    if (a !== null) {
      dx = from(a).x - now.get(a).x;
      dy = from(a).y - now.get(a).y;
      if (Math.abs(dx) + Math.abs(dy) > 0.01) pz.panBy(dx, dy);
    }
    const moved = new Set();
    for (const [id, n] of now) {
      const f = from(id);
      if (!f) {
        moved.add(id);
        if (!still) n.g.animate([{ opacity: 0 }, { opacity: 1 }], { duration: FLIP_MS, easing: "ease-in" });
        continue;
      }
      const mx = f.x - n.x - dx, my = f.y - n.y - dy;
      if (Math.abs(mx) < 0.5 && Math.abs(my) < 0.5) continue;
      moved.add(id);
      if (still) continue;
      n.g.animate([{ transform: `translate(${mx / unit}px, ${my / unit}px)` }, { transform: "none" }],
        { duration: FLIP_MS, easing: "ease-in-out" });
    }
    const fade = [];
    for (const t of svg.querySelectorAll("g.edge > title")) {
      const text = t.textContent, i = text.indexOf("->");
      const src = text.slice(0, i), dst = text.slice(i + 2);
      if (i < 0 || moved.has(src) || moved.has(dst)
        || !old.edges.has(`${match.get(src)}->${match.get(dst)}`)) fade.push(t.parentNode);
    }
    if (moved.size) fade.push(...svg.querySelectorAll("g.cluster"));
    for (const el of still ? [] : fade) {
      el.animate([{ opacity: 0 }, { opacity: 1 }], { duration: FADE_MS, delay: FLIP_MS, fill: "backwards" });
    }
    if (moved.size || fade.length) settled = performance.now() + FLIP_MS + FADE_MS;
    return moved.size;
  };

  const render = () => {
    const t0 = performance.now();  // the swap's time (to the transition's start): data-render-ms
    const old = snapshot();
    if (pz) { view = pz.get(); pz.cleanup(); pz = null; }
    const oldMini = mini;
    mini = null;
    graphView.innerHTML = model.get("graph_html");  // escaped by passlab
    graphHead.replaceChildren(...graphView.querySelectorAll(".plx-graph-head"));
    graphTools.replaceChildren();
    const svg = graphView.querySelector("svg");
    const pick = (id, elNode) => {
      for (const n of graphView.querySelectorAll(".plx-picked")) n.classList.remove("plx-picked");
      if (elNode) elNode.classList.add("plx-picked");
      kernel.style.display = "";
      kernelTitle.textContent = `looking up ${id} ...`;
      kernelText.textContent = "";
      kernelLinks.replaceChildren();
      codeTitle.textContent = codeText.textContent = "";
      send({ node: id });
    };
    if (svg) {
      graphView.classList.add("plx-has-svg");
      const nodes = svg.querySelectorAll("g.node").length;
      pz = panZoom(graphView, svg, view, pick, (s) => { view = s; if (mini) mini.update(s); });
      // the minimap copies the drawing: made after the swap (the old one shows until then)
      requestAnimationFrame(() => {
        if (oldMini) oldMini.cleanup();
        if (nodes <= MINIMAP_NODES || !svg.isConnected || !pz) return;
        mini = minimap(graphBox, graphView, svg, pz);
        mini.update(pz.get());
      });
      for (const [text, fn, cls] of [["+", pz.zoomIn, "plx-zoom-in"], ["\u2212", pz.zoomOut, "plx-zoom-out"],
        ["fit", pz.fit, "plx-zoom-fit"]]) {
        const b = h("button", { class: `plx-zoom ${cls}`, text, title: cls.slice(4).replace("-", " ") });
        b.addEventListener("click", fn);
        graphTools.append(b);
      }
    } else {
      if (oldMini) oldMini.cleanup();
      graphView.classList.remove("plx-has-svg");
      // without `dot` the graph is a table: the first cell of a row is the node id
      for (const tr of graphView.querySelectorAll("table tbody tr")) {
        tr.classList.add("plx-clickable");
        tr.addEventListener("click", () => pick(tr.cells[0].textContent, tr));
      }
    }
    if (svg || graphView.querySelector("table")) {
      graphTools.append(
        graphSelect("weights", "plx-graph-params",
          [["collapse", "fold into consumers"], ["show", "show"], ["hide", "hide"]],
          model.get("graph_params"), (v) => { ctx.busy(); send({ graph_params: v }); }),
        graphSelect("colour by", "plx-graph-overlay", [["none", "none"], ["bytes", "bytes"], ["flops", "FLOPs"]],
          model.get("graph_overlay"), (v) => { ctx.busy(); send({ graph_overlay: v }); }),
        h("span", { class: "plx-hint", text: svg ? "drag to pan, wheel to zoom, click a kernel"
          : "click a row to see its kernel" }));
    }
    markPicked();
    const centred = markFocus(!old);
    if (svg && old) {
      pz.place();  // the kept zoom and pan, now
      const spent = performance.now() - t0;
      // the carry-over measures the new drawing once every change of this message is
      // drawn (the Explain strip above may grow), still before the browser paints
      queueMicrotask(() => {
        if (!svg.isConnected || !pz) return;
        const t1 = performance.now();
        graphView.dataset.moved = String(carryOver(old, svg, !centred));
        // this pane's own time (not the other panes' redraws in between)
        graphView.dataset.renderMs = (spent + performance.now() - t1).toFixed(1);
      });
    } else {
      delete graphView.dataset.moved;
      graphView.dataset.renderMs = (performance.now() - t0).toFixed(1);
    }
  };

  const renderKernel = () => {
    kernelTitle.textContent = model.get("kernel_title");
    // highlighted TVMScript (escaped by passlab), the plain text where there is none
    if (model.get("kernel_text_html")) kernelText.innerHTML = model.get("kernel_text_html");
    else kernelText.textContent = model.get("kernel_text");
    kernelLinks.innerHTML = model.get("kernel_html");  // escaped by passlab
    kernel.style.display = model.get("kernel_title") ? "" : "none";
    codeTitle.textContent = model.get("code_title");
    codeText.textContent = model.get("code_text");
    codeCol.style.display = model.get("code_text") ? "" : "none";
  };
  // "created by #10 FuseOps": a link selects that pass
  kernelLinks.addEventListener("click", (e) => {
    const a = e.target.closest("a.plx-step-link");
    if (!a) return;
    e.preventDefault();
    ctx.busy();
    send({ selected: Number(a.dataset.step) });
  });

  render();
  renderKernel();
  on("change:graph_html", render);
  on("change:node", markPicked);
  on("change:focus", () => markFocus(true));
  for (const name of ["selected", "graph_params", "graph_overlay"]) on(`change:${name}`, ask);
  for (const name of ["kernel_title", "kernel_text", "kernel_text_html", "kernel_html", "code_text"]) {
    on(`change:${name}`, renderKernel);
  }
  ctx.onCleanup(() => { if (pz) pz.cleanup(); if (mini) mini.cleanup(); });
  return { onShow: () => { if (pz) pz.place(); markFocus(true); } };
}
PANES.graph = graphPane;
